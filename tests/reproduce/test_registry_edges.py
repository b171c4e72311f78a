"""Edges of the figure registry the other registry tests leave out: how a computed value is printed and matched
(rounding modes, values that cannot be printed), the tolerance and margin texts, a claim as a dict, and the
refusals of files that cannot be read, items that are not tables, negative decimals and tolerances, margin_rel
on a value that is not a positive rate, bad claim_rows, a missing registry folder and an unknown entry id."""

from __future__ import annotations

import errno
import math
import os
import re
import tomllib
from decimal import Decimal, localcontext
from pathlib import Path

import pytest

from benchbook.reproduce import registry
from benchbook.reproduce.registry import (
    Claim,
    PublishedValue,
    RegistryError,
    StatisticRef,
    load_entry,
    load_entry_file,
    load_folder,
    load_paper,
    load_registry,
)
from registry_entries import GOOD, HEAD, VALUE


def write(folder: Path, text: str, name: str = "demo") -> Path:
    p = folder / f"{name}.toml"
    p.write_text(text)
    return p


def refused(src: Path, *fragments: str) -> str:
    """load_entry_file(src) is refused with a message that starts with the file and holds every fragment."""
    with pytest.raises(RegistryError, match=re.escape(fragments[0])) as err:
        load_entry_file(src)
    msg = str(err.value)
    assert msg.startswith(f"{src}: "), msg
    for f in fragments:
        assert f in msg, (f, msg)
    return msg


def pv(value: float = 1.0, unit: str = "", **kw) -> PublishedValue:
    return PublishedValue(name="x", value=value, unit=unit, **kw)


# --- printing and matching ---------------------------------------------------------------------------------


def test_as_printed_without_decimals_is_the_value_as_its_repr_shows_it():
    v = pv()
    for computed, shown in ((100.185, "100.185"), (0.1, "0.1"), (2.0, "2.0"), (-3.25, "-3.25")):
        got = v.as_printed(computed)
        assert isinstance(got, Decimal) and str(got) == shown, (computed, got)


@pytest.mark.parametrize(("rounding", "decimals", "computed", "shown"), [
    ("half-up", 2, 2.665, "2.67"),
    ("half-even", 2, 2.665, "2.66"),
    ("half-even", 2, 2.675, "2.68"),
    ("truncate", 2, 2.669, "2.66"),
    ("half-up", 2, 2.669, "2.67"),
    ("half-up", 2, 2.6649, "2.66"),
    ("truncate", 2, -2.669, "-2.66"),  # toward zero, not toward -inf
    ("half-up", 2, -2.665, "-2.67"),  # away from zero
    ("half-up", 0, 2.5, "3"),
    ("half-even", 0, 2.5, "2"),
    ("truncate", 0, 9.99, "9"),
    ("half-up", 2, 1.5, "1.50"),  # padded to the printed decimals
    ("half-up", 1, 0.05, "0.1"),
])
def test_as_printed_rounds_as_the_paper_printed(rounding, decimals, computed, shown):
    assert str(pv(decimals=decimals, rounding=rounding).as_printed(computed)) == shown


def test_matches_compares_the_printed_value():
    exact = pv(2.67, decimals=2)  # half-up, exact comparison
    assert exact.matches(2.665) and exact.matches(2.6749)
    assert not exact.matches(2.6649) and not exact.matches(2.675)
    even = pv(2.66, decimals=2, rounding="half-even")
    assert even.matches(2.665) and not even.matches(2.6651)
    trunc = pv(2.66, decimals=2, rounding="truncate")
    assert trunc.matches(2.6699) and not trunc.matches(2.67) and not trunc.matches(2.6599)
    assert pv(3, decimals=0).matches(2.5) and not pv(3, decimals=0, rounding="half-even").matches(2.5)
    # the tolerance applies to the printed value: 2.675 prints as 2.68 (0.01 off), 2.685 as 2.69 (0.02 off)
    tol = pv(2.67, decimals=2, tolerance_abs=0.01)
    assert tol.matches(2.675) and not tol.matches(2.685) and tol.matches(2.655) and not tol.matches(2.6549)


@pytest.mark.parametrize("computed", [math.inf, -math.inf, math.nan, 1e300, -1e300, 10 ** 400, "not a number"],
                         ids=["inf", "-inf", "nan", "1e300", "-1e300", "int-too-large-for-a-float", "text"])
def test_a_value_that_cannot_be_printed_does_not_match(computed):
    """inf cannot be quantized (InvalidOperation), nan quantizes to nan (not finite), an int beyond the float range
    overflows, text is no number, 1e300 is far off: none matches, and none raises."""
    for v in (pv(1.0, decimals=2, tolerance_abs=0.5), pv(1.0, decimals=0, rounding="truncate", tolerance_rel=0.5)):
        assert v.matches(computed) is False, (v, computed)


@pytest.mark.parametrize("computed", [10 ** 400, "not a number", math.nan, math.inf])
def test_a_value_that_is_no_finite_float_does_not_match_without_decimals(computed):
    assert pv(1.0, tolerance_abs=1e308).matches(computed) is False


@pytest.mark.parametrize(("value", "decimals"), [(1e27, 2), (1e300, 2), (-1e300, 3), (0.1, 40), (1.5e-30, 35)])
def test_every_digit_is_kept_when_printing(value, decimals):
    """Python's decimal context holds 28 digits; a value printed with more (1e27 with 2 decimals, 0.1 with 40)
    would not quantize and so never match, not even itself."""
    v = pv(value, decimals=decimals)
    assert v.matches(value)
    with localcontext(prec=400):
        assert v.as_printed(value) == Decimal(repr(value)).quantize(Decimal(1).scaleb(-decimals))
    assert not v.matches(value * (1 + 1e-3))


@pytest.mark.parametrize("field", ["value", "tolerance_abs", "tolerance_rel"])
@pytest.mark.parametrize("bad", ["nan", "inf", "-inf"])
def test_a_published_number_must_be_finite(tmp_path, field, bad):
    """TOML writes nan and inf; a published value of nan made matches() raise, a tolerance of inf matched anything."""
    text = GOOD.replace("value = 1.5", f"value = {bad}" if field == "value" else "value = 1.5")
    text = text.replace("tolerance_abs = 0.1", f"{field} = {bad}" if field != "value" else "tolerance_abs = 0.1")
    src = write(tmp_path, text)
    want = float(bad)
    assert refused(src, f"[[published]] #1: {field} must be a finite number") == \
        f"{src}: [[published]] #1: {field} must be a finite number, got {want!r}"


def test_the_same_values_match_an_ordinary_number():
    """The counterpart of the two tests above: the same published values do match a printable number."""
    assert pv(1.0, decimals=2, tolerance_abs=0.5).matches(1.4) is True
    assert pv(1.0, decimals=0, rounding="truncate", tolerance_rel=0.5).matches(1.99) is True
    assert pv(1.0, tolerance_abs=1e308).matches(1e300) is True


# --- texts ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "text"), [
    (pv(), "exact"),
    (pv(decimals=2), "printed with 2 decimals (half-up), exact"),
    (pv(decimals=0, rounding="truncate"), "printed with 0 decimals (truncate), exact"),
    (pv(unit="us", tolerance_abs=0.005), "±0.005 µs"),
    (pv(unit="ms", tolerance_abs=1), "±1 ms"),
    (pv(tolerance_abs=0.5), "±0.5"),
    (pv(unit="us", tolerance_rel=0.01), "±1 %"),
    (pv(unit="us", tolerance_abs=0.5, tolerance_rel=0.001), "±0.5 µs or ±0.1 % (the larger)"),
    (pv(unit="us", decimals=2, rounding="half-even", tolerance_abs=0.01),
     "printed with 2 decimals (half-even), ±0.01 µs"),
    (pv(unit="ms", decimals=1, tolerance_abs=0.1, tolerance_rel=0.02),
     "printed with 1 decimals (half-up), ±0.1 ms or ±2 % (the larger)"),
    (pv(decimals=3, tolerance_rel=0.07), "printed with 3 decimals (half-up), ±7 %"),
    # measured values: the margin with its sources; tolerances and decimals play no part
    (pv(measured=True), "no margin (not comparable)"),
    (pv(measured=True, decimals=2, tolerance_abs=0.1, comparable=False, not_comparable_reason="r"),
     "no margin (not comparable)"),
    (pv(unit="us", measured=True, margin_abs=0.1, margin_source=("paper spread", "print precision")),
     "±0.1 µs (paper spread, print precision)"),
    (pv(measured=True, margin_abs=2, margin_source=("instrument resolution",)), "±2 (instrument resolution)"),
    (pv(unit="us", measured=True, margin_rel=0.05, margin_source=("paper interval",)), "±5 % (paper interval)"),
])
def test_tolerance_text(value, text):
    assert value.tolerance_text() == text


def test_claim_margin_text_has_no_unit():
    assert Claim("c", "t", "a ~ b", margin_rel=0.1).margin_text() == "±10 %"
    assert Claim("c", "t", "a ~ b", margin_abs=0.5).margin_text() == "±0.5"
    assert Claim("c", "t", "a ~ b", margin_rel=0.25, margin_abs=0.5).margin_text() == "±25 %"
    assert Claim("c", "t", "a > b").margin_text() == ""


def test_claim_as_dict_leaves_out_what_is_not_given():
    assert Claim("c", "t", "a > b").as_dict() == {"id": "c", "text": "t", "principal": False, "test": "a > b"}
    full = Claim("c", "t", "a ~ b", principal=True, a=StatisticRef("reno", "x"), b=StatisticRef("cubic", "y"),
                 margin_abs=0.5, margin_source=("paper spread", "print precision"), margin_note="why",
                 note="n")
    assert full.as_dict() == {"id": "c", "text": "t", "principal": True, "test": "a ~ b", "a": "reno:x",
                              "b": "cubic:y", "margin_abs": 0.5, "margin_note": "why", "note": "n",
                              "margin_source": ["paper spread", "print precision"]}


CLAIMS = '''[[claims]]
id = "near"
text = "about equal"
principal = true
test = "a ~ b"
a = "reno:x"
b = "cubic:x"
margin_rel = 0.1
margin_source = ["emulation allowance"]
margin_note = "a local link"
[[claims]]
id = "ratio"
text = "half"
test = "a / b within"
a = "reno:x"
b = "cubic:x"
within = [0.4, 0.6]
note = "from fig. 3"
[[claims]]
id = "share"
text = "mostly"
principal = false
test = "share >="
successes = "reno:ok"
trials = "reno:n"
q = 0.9
[[claims]]
id = "abs"
text = "close"
test = "a ~ b"
a = "reno:x"
b = "cubic:x"
margin_abs = 2
margin_source = ["paper spread"]
'''


def test_parsed_claims_as_dicts(tmp_path):
    e = load_entry_file(write(tmp_path, HEAD + CLAIMS, "m"))
    assert [c.as_dict() for c in e.claims] == [
        {"id": "near", "text": "about equal", "principal": True, "test": "a ~ b", "a": "reno:x", "b": "cubic:x",
         "margin_rel": 0.1, "margin_note": "a local link", "margin_source": ["emulation allowance"]},
        {"id": "ratio", "text": "half", "principal": False, "test": "a / b within", "a": "reno:x", "b": "cubic:x",
         "note": "from fig. 3", "within": [0.4, 0.6]},
        {"id": "share", "text": "mostly", "principal": False, "test": "share >=", "successes": "reno:ok",
         "trials": "reno:n", "q": 0.9},
        {"id": "abs", "text": "close", "principal": False, "test": "a ~ b", "a": "reno:x", "b": "cubic:x",
         "margin_abs": 2.0, "margin_source": ["paper spread"]},
    ]
    assert [c.margin_text() for c in e.claims] == ["±10 %", "", "", "±2"]


# --- files that cannot be read --------------------------------------------------------------------------------


def test_an_entry_that_is_a_directory_cannot_be_read(tmp_path):
    src = tmp_path / "demo.toml"
    src.mkdir()
    with pytest.raises(RegistryError, match=re.escape(f"cannot read ({os.strerror(errno.EISDIR)})")) as err:
        load_entry_file(src)
    assert str(err.value) == f"{src}: cannot read ({os.strerror(errno.EISDIR)})"
    # load_folder reads every *.toml of the folder, a directory so named too (after a.toml, which loads)
    write(tmp_path, GOOD.replace('id = "demo"', 'id = "a"'), "a")
    assert load_entry_file(tmp_path / "a.toml").id == "a"
    with pytest.raises(RegistryError, match="cannot read") as err:
        load_folder(tmp_path)
    assert str(err.value) == f"{src}: cannot read ({os.strerror(errno.EISDIR)})"


def test_a_missing_entry_or_paper_file_cannot_be_read(tmp_path):
    src = tmp_path / "gone.toml"
    with pytest.raises(RegistryError, match=re.escape(f"cannot read ({os.strerror(errno.ENOENT)})")) as err:
        load_entry_file(src)
    assert str(err.value) == f"{src}: cannot read ({os.strerror(errno.ENOENT)})"
    with pytest.raises(RegistryError, match="cannot read") as err:
        load_paper(tmp_path)
    assert str(err.value) == f"{tmp_path / 'paper.toml'}: cannot read ({os.strerror(errno.ENOENT)})"


def _error_as_nobody(src) -> str:
    """load_entry_file(src)'s error in a forked child that gave up root for the user nobody (65534): root reads a
    file of mode 000, nobody does not."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        try:
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            load_entry_file(src)
            message = "read"
        except RegistryError as exc:
            message = str(exc)
        except BaseException as exc:  # anything else is the test's failure, told to the parent
            message = f"unexpected {exc!r}"
        os.write(write_end, message.encode())
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as fh:
        message = fh.read().decode()
    os.waitpid(pid, 0)
    return message


def test_an_unreadable_entry_cannot_be_read(tmp_path):
    src = write(tmp_path, GOOD)
    src.chmod(0)
    try:
        if os.geteuid() == 0:
            message = _error_as_nobody(src)
        else:
            with pytest.raises(RegistryError) as err:
                load_entry_file(src)
            message = str(err.value)
    finally:
        src.chmod(0o600)
    assert message == f"{src}: cannot read ({os.strerror(errno.EACCES)})"


def test_a_paper_toml_that_is_not_toml_names_the_file(tmp_path):
    folder = tmp_path / "p"
    folder.mkdir()
    (folder / "paper.toml").write_text('id = "p"\nid = "again"\n')
    write(folder, GOOD.replace('citation = "c"\n', ""))
    with pytest.raises(RegistryError, match="not valid TOML: ") as err:
        load_folder(folder)
    assert str(err.value).startswith(f"{folder / 'paper.toml'}: not valid TOML: ")
    assert isinstance(err.value.__cause__, tomllib.TOMLDecodeError)


# --- refusals of malformed entries ----------------------------------------------------------------------------


@pytest.mark.parametrize(("field", "bad"), [("tolerance_abs", "-1e-9"), ("tolerance_rel", "-1e-9"),
                                            ("decimals", "-1")])
def test_published_tolerances_and_decimals_must_not_be_negative(tmp_path, field, bad):
    src = write(tmp_path, GOOD.replace("tolerance_abs = 0.1", f"{field} = {bad}"))
    msg = refused(src, f"[[published]] #1: {field} must not be negative")
    assert msg == f"{src}: [[published]] #1: {field} must not be negative"
    zero = load_entry_file(write(tmp_path, GOOD.replace("tolerance_abs = 0.1", f"{field} = 0"))).published[0]
    assert getattr(zero, field) == 0
    assert zero.tolerance_text() == {"tolerance_abs": "±0 µs", "tolerance_rel": "±0 %",
                                     "decimals": "printed with 0 decimals (half-up), exact"}[field]


def test_rounding_needs_decimals(tmp_path):
    src = write(tmp_path, GOOD.replace("tolerance_abs = 0.1", 'tolerance_rel = 0.1\nrounding = "truncate"'))
    assert refused(src, "[[published]] #1: rounding needs decimals") == \
        f"{src}: [[published]] #1: rounding needs decimals (how many the paper printed)"
    ok = load_entry_file(write(tmp_path, GOOD.replace("tolerance_abs = 0.1", 'decimals = 1\nrounding = "truncate"')))
    assert (ok.published[0].decimals, ok.published[0].rounding) == (1, "truncate")
    assert ok.published[0].matches(1.59) and not ok.published[0].matches(1.6)


@pytest.mark.parametrize(("text", "where"), [
    (GOOD.split("[[published]]")[0] + "published = [3]\n", "#1"),
    (GOOD.split("[[published]]")[0] + 'published = [{name = "x", value = 1.5, unit = "us", tolerance_abs = 0.1}, '
                                      '"y"]\n', "#2"),
    (HEAD + "published = [true]\n", "#1"),  # a measured entry: refused before its measured checks
])
def test_a_published_item_that_is_not_a_table(tmp_path, text, where):
    name = "m" if "local-measurement" in text else "demo"
    src = write(tmp_path, text, name)
    assert refused(src, f"[[published]] {where}: must be a table") == f"{src}: [[published]] {where}: must be a table"


@pytest.mark.parametrize(("claims", "where"), [
    ("claims = [5]\n", "#1"),
    ('claims = [{id = "c1", text = "t", principal = true, test = "a > b", a = "x:y", b = "x:z"}, "c2"]\n', "#2"),
])
def test_a_claim_that_is_not_a_table(tmp_path, claims, where):
    src = write(tmp_path, HEAD + claims + VALUE, "m")
    assert refused(src, f"[[claims]] {where}: must be a table") == f"{src}: [[claims]] {where}: must be a table"


def test_measured_decimals_must_not_be_negative(tmp_path):
    src = write(tmp_path, HEAD + VALUE.replace("decimals = 2", "decimals = -1"), "m")
    assert refused(src, "[[published]] 'A throughput': decimals must not be negative") == \
        f"{src}: [[published]] 'A throughput': decimals must not be negative"
    zero = load_entry_file(write(tmp_path, HEAD + VALUE.replace("decimals = 2", "decimals = 0"), "m")).published[0]
    assert zero.decimals == 0 and zero.print_precision() == 0.5


@pytest.mark.parametrize(("value_range", "value"), [("share", "0.85"), ("jain:2", "0.85"), ("real", "85.05")])
def test_margin_rel_needs_a_rate(tmp_path, value_range, value):
    body = VALUE.replace('value_range = "rate"', f'value_range = "{value_range}"').replace("85.05", value)
    src = write(tmp_path, HEAD + body, "m")
    msg = refused(src, "[[published]] 'A throughput': margin_rel (a log ratio) needs value_range = \"rate\"")
    assert msg == (f"{src}: [[published]] 'A throughput': margin_rel (a log ratio) needs value_range = \"rate\" "
                   f"(values > 0); a statistic with value_range {value_range!r} is judged as a difference: give "
                   "margin_abs")
    # the same value with margin_abs is judged as a difference
    ab = load_entry_file(write(tmp_path, HEAD + body.replace("margin_rel = 0.10", "margin_abs = 0.1"), "m"))
    assert ab.published[0].margin_abs == 0.1 and ab.published[0].value_range == value_range


def test_margin_rel_needs_a_positive_published_value(tmp_path):
    src = write(tmp_path, HEAD + VALUE.replace("value = 85.05", "value = 0"), "m")
    assert refused(src, "margin_rel (a log ratio) needs a published value > 0, got 0") == \
        f"{src}: [[published]] 'A throughput': margin_rel (a log ratio) needs a published value > 0, got 0"
    tiny = VALUE.replace("value = 85.05", "value = 1e-9").replace("decimals = 2\n", "")
    got = load_entry_file(write(tmp_path, HEAD + tiny, "m")).published[0]
    assert (got.value, got.margin_rel, got.value_range) == (1e-9, 0.1, "rate")


@pytest.mark.parametrize("rows", ['[""]', "[1]", '["ok", ""]', "[true]", '[["nested"]]'])
def test_claim_rows_must_be_row_names(tmp_path, rows):
    src = write(tmp_path, f"claim_rows = {rows}\n" + GOOD)
    assert refused(src, "'claim_rows' must be a list of verdict row names (strings)") == \
        f"{src}: 'claim_rows' must be a list of verdict row names (strings)"


def test_claim_rows_accepted(tmp_path):
    e = load_entry_file(write(tmp_path, 'claim_rows = ["row a", "row b"]\n' + GOOD))
    assert e.claim_rows == ("row a", "row b")
    assert load_entry_file(write(tmp_path, GOOD)).claim_rows == ()


# --- folders and the search path ------------------------------------------------------------------------------


def test_load_folder_of_a_path_that_is_no_directory(tmp_path):
    missing = tmp_path / "missing"
    with pytest.raises(RegistryError, match="registry folder not found") as err:
        load_folder(missing)
    assert str(err.value) == f"{missing}: registry folder not found"
    afile = write(tmp_path, GOOD)
    with pytest.raises(RegistryError, match="registry folder not found") as err:
        load_folder(str(afile))
    assert str(err.value) == f"{afile}: registry folder not found"
    got = load_folder(str(tmp_path))  # a plain folder of entry TOMLs: no paper
    assert list(got) == ["demo"] and got["demo"].paper is None and got["demo"].citation == "c"


def paper_folder(root: Path, ids: list[str]) -> Path:
    folder = root / "my-paper"
    folder.mkdir()
    (folder / "paper.toml").write_text('id = "my-paper"\ntitle = "P"\ncitation = "A. Author"\n')
    for i in ids:
        write(folder, GOOD.replace('id = "demo"', f'id = "{i}"').replace('citation = "c"\n', ""), i)
    return folder


def test_unknown_id_on_an_empty_search_path_knows_none(monkeypatch):
    monkeypatch.delenv(registry.PAPERS_ENV, raising=False)
    monkeypatch.setattr(registry, "builtin_paper_dirs", lambda: [])
    with pytest.raises(RegistryError, match=re.escape("no registry entry 'nope' on the search path (known: none)")) \
            as err:
        load_entry("nope")
    assert str(err.value) == "no registry entry 'nope' on the search path (known: none)"


def test_unknown_id_on_the_search_path_names_the_known_ones(tmp_path, monkeypatch):
    monkeypatch.delenv(registry.PAPERS_ENV, raising=False)
    monkeypatch.setattr(registry, "builtin_paper_dirs", lambda: [])
    folder = paper_folder(tmp_path, ["b", "a"])
    with pytest.raises(RegistryError, match=re.escape("no registry entry 'nope' on the search path (known: a, b)")):
        load_entry("nope", papers=[folder])
    assert load_entry("a", papers=[folder]).citation == "A. Author"
    monkeypatch.setenv(registry.PAPERS_ENV, str(folder))  # BENCHBOOK_PAPERS is on the search path too
    with pytest.raises(RegistryError) as err:
        load_entry("nope")
    assert str(err.value) == "no registry entry 'nope' on the search path (known: a, b)"
    assert load_entry("b").source == (folder / "b.toml").resolve()


def test_unknown_id_lists_the_builtin_entries(monkeypatch):
    monkeypatch.delenv(registry.PAPERS_ENV, raising=False)
    known = list(load_registry(use_env=False))
    assert "wiedner-itc23-table3" in known and known == sorted(known)
    with pytest.raises(RegistryError, match=r"^no registry entry 'nope' on the search path \(known: ") as err:
        load_entry("nope")
    assert str(err.value) == f"no registry entry 'nope' on the search path (known: {', '.join(known)})"
