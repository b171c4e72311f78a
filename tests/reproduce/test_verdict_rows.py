"""The verdict vocabulary and rows (reproduce/verdict_rows.py): the words verdict.json, the exit status and the
site use, how the tables print numbers and intervals, every field a row writes into verdict.json when nothing set
it (the defaults are part of the file format: a reader of a verdict.json, or of an older file lacking a field,
sees them), and each claim test in words."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from benchbook.reproduce import verdict_rows as vr
from benchbook.reproduce.verdict_rows import (
    ClaimResult,
    MeasuredRow,
    VerdictRow,
    fmt_interval,
    fmt_value,
    row_from_dict,
)

# -- the words ------------------------------------------------------------------------------------------------------


def test_status_words_and_their_groups():
    assert (vr.MATCH, vr.MISMATCH, vr.NOT_DERIVABLE, vr.INFO, vr.FIGURE_REDRAWN, vr.REPRODUCED, vr.INCONCLUSIVE,
            vr.NOT_COMPARABLE) == ("match", "mismatch", "not derivable", "info", "figure redrawn", "reproduced",
                                   "inconclusive", "not comparable")
    assert vr.FIGURE_ONLY_V1 == "figure only"
    assert vr.PUBLISHED_DATA_STATUSES == ("match", "mismatch", "not derivable", "figure redrawn", "info")
    assert vr.MEASURED_STATUSES == ("reproduced", "mismatch", "inconclusive", "not comparable", "not derivable",
                                    "figure redrawn", "info")
    assert vr.STATUSES == ("match", "reproduced", "mismatch", "inconclusive", "not comparable", "not derivable",
                           "figure redrawn", "info")
    assert vr.JUDGED_STATUSES == ("reproduced", "mismatch", "inconclusive")


def test_claim_verdict_words():
    assert (vr.HOLDS, vr.FAILS) == ("holds", "fails")
    assert vr.CLAIM_VERDICTS == ("holds", "fails", "inconclusive", "not derivable")


def test_outcomes_best_to_worst():
    """The outcomes of an entry (verdict.json "outcome", exit status, the site's badge classes), from best to worst
    as `reproduce --all` ranks them (docs/statistics.md: failed > mismatch > ... > reproduced)."""
    assert (vr.PARTIAL, vr.FAILED) == ("partial", "failed")
    assert vr.OUTCOMES == ("reproduced", "figure redrawn", "partial", "inconclusive", "mismatch", "failed")


# -- numbers as the tables print them -------------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "unit", "text"), [
    (None, "", "-"),
    (None, "ms", "-"),                      # no unit beside a missing value
    (2.5, "", "2.5"),                       # trailing zeros stripped ...
    (3.0, "", "3"),                         # ... and then the point
    (100.0, "", "100"),                     # zeros before the point stay
    (0.0, "", "0"),
    (0.123456, "", "0.1235"),               # 4 decimals at most
    (1234.5, "", "1,234.5"),                # thousands separators
    (-1234.5, "Mbit/s", "-1,234.5 Mbit/s"),
    (999_999.0, "", "999,999"),             # just below 1e6: still fixed-point
    (999_999.4, "", "999,999.4"),
    (1e6, "", "1e+06"),                     # from 1e6 on: 6 significant digits
    (-1e6, "", "-1e+06"),                   # by the magnitude
    (1.5e6, "", "1.5e+06"),
    (1_234_567.0, "", "1.23457e+06"),
    (1_234_567.0, "pkts", "1.23457e+06 pkts"),
    (np.float64(2.5), "", "2.5"),           # numpy floats are floats
    (1.5, "us", "1.5 µs"),                  # "us" is printed as µs
    (0.0, "us", "0 µs"),                    # (publish/measured_view reads the unit's display from this)
    (1.5, "ms", "1.5 ms"),                  # other units as given
    (12, "", "12"),                         # not a float: as str() gives it
    (12, "us", "12 µs"),
    ("n/a", "", "n/a"),
    ("n/a", "ms", "n/a ms"),
])
def test_fmt_value(value, unit, text):
    assert fmt_value(value, unit) == text


def test_fmt_value_unit_defaults_to_none():
    assert fmt_value(2.5) == "2.5"
    assert fmt_value(7) == "7"
    assert fmt_value(1_234_567.0) == "1.23457e+06"


@pytest.mark.parametrize(("value", "text"), [(math.nan, "nan"), (math.inf, "inf"), (-math.inf, "-inf")])
def test_fmt_value_non_finite_is_named_not_hidden(value, text):
    """A non-finite float reads as what it is (without a unit), not as "-" (which means no value at all)."""
    assert fmt_value(value) == text
    assert fmt_value(value, "us") == text


@pytest.mark.parametrize(("bounds", "unit", "text"), [
    (None, "", "-"),
    (None, "us", "-"),
    ([1.0, 2.0], "", "[1, 2]"),
    ((1.0, 2.0), "", "[1, 2]"),
    ([0.123456, 12345.678], "us", "[0.1235, 1.235e+04] µs"),   # 4 significant digits
    ([-0.5, 0.25], "Mbit/s", "[-0.5, 0.25] Mbit/s"),
    ([95.0, 105.0], "ms", "[95, 105] ms"),
])
def test_fmt_interval(bounds, unit, text):
    assert fmt_interval(bounds, unit) == text


def test_fmt_interval_unit_defaults_to_none():
    assert fmt_interval([1.0, 2.0]) == "[1, 2]"
    assert fmt_interval(None) == "-"


# -- the rows as verdict.json holds them --------------------------------------------------------------------------

VERDICT_ROW_DEFAULTS = {"name": "n", "published": 1.0, "computed": 2.0, "unit": "", "runs": "", "status": "info",
                        "note": "", "tolerance": ""}

MEASURED_ROW_DEFAULTS = VERDICT_ROW_DEFAULTS | {
    "kind": "measured", "arm": None, "run_statistic": None, "definition": "", "margin": {}, "run_ids": [],
    "values": [], "n_per_run": [], "runs_without_value": [], "estimate": None, "delta": None, "ci90": None,
    "ci95": None, "ci90_value": None, "ci95_value": None, "method": "", "seed": None, "alpha": 0.05,
    "runs_needed": None, "noise_floor": None, "p_equivalent": None, "p_different": None, "reason": ""}

CLAIM_DEFAULTS = {
    "id": "c", "text": "t", "principal": True, "test": "a > b", "verdict": "not derivable", "a": None, "b": None,
    "paired": None, "scale": None, "values_a": [], "values_b": [], "run_ids": [], "run_ids_a": [], "run_ids_b": [],
    "n_per_run_a": [], "n_per_run_b": [], "definition_a": "", "definition_b": "", "unit_a": "", "unit_b": "",
    "delta": None, "ci90": None, "ci95": None, "margin": None, "within": None, "successes": None, "trials": None,
    "q": None, "share": None, "counts": None, "method": "", "runs": None, "runs_needed": None, "seed": None,
    "alpha": 0.05, "reason": "", "note": ""}


def _exact(got: dict, want: dict) -> None:
    """Equal as dicts and as the JSON verdict.json holds (which also tells 1 from 1.0 and True from 1)."""
    assert got == want
    assert json.dumps(got) == json.dumps(want)


def test_verdict_row_defaults_as_written():
    row = VerdictRow("n", 1.0, 2.0)
    _exact(row.as_dict(), VERDICT_ROW_DEFAULTS)
    assert list(row.as_dict()) == ["name", "published", "computed", "unit", "runs", "status", "note", "tolerance"]


def test_measured_row_defaults_as_written():
    row = MeasuredRow("n", 1.0, 2.0)
    _exact(row.as_dict(), MEASURED_ROW_DEFAULTS)
    assert list(row.as_dict())[:8] == list(VERDICT_ROW_DEFAULTS)   # the published-data columns first


def test_measured_row_lists_are_its_own():
    a, b = MeasuredRow("a", 1.0, None), MeasuredRow("b", 1.0, None)
    a.values.append(1.0)
    a.margin["text"] = "5 %"
    assert b.values == [] and b.margin == {}


def test_claim_defaults_as_written():
    c = ClaimResult("c", "t", True, "a > b")
    _exact(c.as_dict(), CLAIM_DEFAULTS)


def test_claim_lists_are_its_own():
    a, b = ClaimResult("a", "t", True, "a > b"), ClaimResult("b", "t", True, "a > b")
    for name in ("values_a", "values_b", "run_ids", "run_ids_a", "run_ids_b", "n_per_run_a", "n_per_run_b"):
        getattr(a, name).append(1)
        assert getattr(b, name) == []


def test_a_row_missing_fields_reads_with_the_defaults():
    """An older verdict.json (or /1) row lacking fields reads back with the defaults and writes them out."""
    v1 = row_from_dict({"name": "n", "published": 1.0, "computed": 2.0})
    assert type(v1) is VerdictRow
    _exact(v1.as_dict(), VERDICT_ROW_DEFAULTS)
    measured = row_from_dict({"name": "n", "published": 1.0, "computed": 2.0, "kind": "measured"})
    assert type(measured) is MeasuredRow
    _exact(measured.as_dict(), MEASURED_ROW_DEFAULTS)
    claim = ClaimResult.from_dict({"id": "c", "text": "t", "principal": True, "test": "a > b"})
    _exact(claim.as_dict(), CLAIM_DEFAULTS)


def test_rows_round_trip_through_json_and_skip_unknown_keys():
    row = MeasuredRow("n", 100.0, 99.0, "us", 6, "reproduced", arm="a", run_statistic="rate",
                      margin={"text": "5 %"}, run_ids=[1, 2], values=[99.0, 99.5], ci90=[-0.01, 0.01], seed=7)
    data = json.loads(json.dumps(row.as_dict()))
    back = row_from_dict(data | {"from_a_later_version": 1})
    assert type(back) is MeasuredRow and back == row
    plain = VerdictRow("p", 1.0, 1.0, "ms", "3", "match", "note", "+-0.1")
    assert row_from_dict(json.loads(json.dumps(plain.as_dict())) | {"extra": 2}) == plain
    claim = ClaimResult("c", "t", False, "a ~ b", "holds", a="x:r", b="y:r", margin={"text": "5 %"}, runs=[3, 4])
    assert ClaimResult.from_dict(json.loads(json.dumps(claim.as_dict())) | {"extra": 3}) == claim


def test_status_checks():
    assert VerdictRow("n", None, None, status="figure only").status == "figure redrawn"   # verdict/1's word
    assert row_from_dict({"name": "n", "published": None, "computed": None, "status": "figure only"}).status \
        == "figure redrawn"
    for status in vr.STATUSES:
        assert VerdictRow("n", None, None, status=status).status == status
    with pytest.raises(ValueError, match="verdict status 'holds' is not one of match, reproduced"):
        VerdictRow("n", None, None, status="holds")
    with pytest.raises(ValueError, match="verdict status"):
        MeasuredRow("n", None, None, status="partial")
    for verdict in vr.CLAIM_VERDICTS:
        assert ClaimResult("c", "t", True, "a > b", verdict).verdict == verdict
    with pytest.raises(ValueError, match="claim verdict 'reproduced' is not one of holds, fails"):
        ClaimResult("c", "t", True, "a > b", "reproduced")


# -- a claim's test in words ------------------------------------------------------------------------------------------


def _claim(test: str, **kw) -> ClaimResult:
    return ClaimResult("c", "t", True, test, **kw)


@pytest.mark.parametrize(("test", "kw", "text"), [
    ("share >=", {"successes": "reno:acked", "trials": "reno:sent", "q": 0.9}, "reno:acked / reno:sent >= 0.9"),
    ("share >=", {"successes": "a:k", "trials": "a:n", "q": 0.95}, "a:k / a:n >= 0.95"),
    ("a / b within", {"a": "cubic:rate", "b": "reno:rate", "within": [0.8, 1.25]},
     "cubic:rate / reno:rate within [0.8, 1.25]"),
    ("a / b within", {"a": "x:r", "b": "y:r", "within": [1.1, 1.4]}, "x:r / y:r within [1.1, 1.4]"),
    ("a > b", {"a": "reno:a", "b": "reno:b"}, "reno:a > reno:b"),
    ("a < b", {"a": "reno:a", "b": "reno:b"}, "reno:a < reno:b"),
    ("a ~ b", {"a": "reno:a", "b": "reno:b"}, "reno:a ~ reno:b"),
    ("a > b", {"a": "reno:a", "b": "reno:b", "margin": {"text": "5 %"}}, "reno:a > reno:b within 5 %"),
    ("a < b", {"a": "reno:a", "b": "reno:b", "margin": {"text": "2 ms"}}, "reno:a < reno:b within 2 ms"),
    ("a ~ b", {"a": "reno:a", "b": "cubic:a", "margin": {"text": "10 %", "delta": 0.1}},
     "reno:a ~ cubic:a within 10 %"),
    ("a ~ b", {"a": "reno:a", "b": "reno:b", "margin": {}}, "reno:a ~ reno:b"),   # an empty margin: none
])
def test_relation(test, kw, text):
    assert _claim(test, **kw).relation() == text


def test_relation_reads_only_its_own_tests_fields():
    """A claim record with every field filled (as a from_dict of a rich file may give): each test words itself by
    its own fields only."""
    full = {"a": "x:r", "b": "y:r", "within": [0.5, 2.0], "margin": {"text": "5 %"}, "successes": "x:k",
            "trials": "x:n", "q": 0.75}
    assert _claim("share >=", **full).relation() == "x:k / x:n >= 0.75"
    assert _claim("a / b within", **full).relation() == "x:r / y:r within [0.5, 2]"
    # a verdict.json written before the judge kept the range on a claim it did not judge (statistic missing,
    # unresolvable, values <= 0): it still prints, naming the range it lacks, instead of a KeyError
    for within in (None, []):
        unjudged = _claim("a / b within", a="x:r", b="y:r", within=within)
        assert unjudged.relation() == "x:r / y:r within the claimed range"
    assert _claim("a > b", **full).relation() == "x:r > y:r within 5 %"
    assert _claim("a < b", **full).relation() == "x:r < y:r within 5 %"
    assert _claim("a ~ b", **full).relation() == "x:r ~ y:r within 5 %"


def test_relation_of_an_unknown_test_is_refused():
    with pytest.raises(KeyError):
        _claim("a >= b", a="x", b="y").relation()
