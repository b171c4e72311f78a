"""What the registry's types promise beyond each check of the loader (reproduce/registry.py): a value, claim, paper
or entry built in code with only its required fields equals the one loaded from a TOML text that gives only those
(the defaults are the loader's: notebooks and tests build them in code); what the loader returns cannot be changed;
every field's type is checked under its own name; each mode loads; the texts of the refusals list what is
allowed; a claim refuses every field of another test; the environment's published-data folder is where datasets
are looked up."""

from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path

import pytest

from benchbook.reproduce import registry
from benchbook.reproduce.registry import (
    Claim,
    FigureEntry,
    Paper,
    PublishedValue,
    RegistryError,
    StatisticRef,
    load_entry,
    load_entry_file,
    load_folder,
    load_paper,
    value_range_bounds,
)
from registry_entries import CLAIM, HEAD, MINIMAL, VALUE


def write(folder: Path, text: str, name: str = "demo") -> Path:
    p = folder / f"{name}.toml"
    p.write_text(text)
    return p


def refusal(src: Path) -> str:
    with pytest.raises(RegistryError) as err:
        load_entry_file(src)
    return str(err.value)


def test_a_minimal_entry_loads_to_the_defaults_of_its_types(tmp_path):
    src = write(tmp_path, MINIMAL)
    e = load_entry_file(src)
    assert e.published == (PublishedValue("x", 1.5, "us", decimals=1),)
    assert e == FigureEntry(id="demo", title="t", citation="c", notebook="x.ipynb", mode="published-data",
                            source=src, published=(PublishedValue("x", 1.5, "us", decimals=1),))
    assert not e.measured and e.dataset_dir is None and e.paper is None


def test_a_measured_value_and_a_claim_load_to_the_defaults_of_their_types(tmp_path):
    e = load_entry_file(write(tmp_path, HEAD + VALUE + CLAIM, "m"))
    assert e.published == (PublishedValue(
        "A throughput", 85.05, "Mbit/s", decimals=2, measured=True, arm="cubic-bbr",
        run_statistic="flow1_throughput_mbps", margin_rel=0.10, margin_source=("emulation allowance",),
        margin_note="a local dumbbell stands in for the paper's testbed", value_range="rate"),)
    assert e.claims == (Claim("c1", "Cubic takes more than BBR", "a > b", principal=True,
                              a=StatisticRef("cubic-bbr", "flow1_throughput_mbps"),
                              b=StatisticRef("cubic-bbr", "flow2_throughput_mbps")),)
    assert e.measured


def test_a_minimal_paper_loads_to_the_defaults_of_its_type(tmp_path):
    folder = tmp_path / "demo"
    folder.mkdir()
    (folder / "paper.toml").write_text('id = "demo"\ntitle = "t"\ncitation = "c"\n')
    assert load_paper(folder) == Paper("demo", "t", "c", folder)


def test_what_the_loader_returns_cannot_be_changed(tmp_path):
    e = load_entry_file(write(tmp_path, HEAD + VALUE + CLAIM, "m"))
    folder = tmp_path / "demo"
    folder.mkdir()
    (folder / "paper.toml").write_text('id = "demo"\ntitle = "t"\ncitation = "c"\n')
    for obj, name in ((e, "mode"), (e.published[0], "value"), (e.claims[0], "test"), (e.claims[0].a, "arm"),
                      (load_paper(folder), "citation")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(obj, name, "changed")


@pytest.mark.parametrize("mode", ["published-data", "local-measurement", "testbed-measurement"])
def test_every_mode_loads(tmp_path, mode):
    e = load_entry_file(write(tmp_path, HEAD.replace('"local-measurement"', f'"{mode}"'), "m"))
    assert e.mode == mode and not e.measured   # neither values nor claims: exact rows, as published data
    assert refusal(write(tmp_path, HEAD.replace('"local-measurement"', '"lab"'), "m")).endswith(
        "mode 'lab' is not one of published-data, local-measurement, testbed-measurement")


def test_a_measured_entry_with_claims_only_or_values_only_is_judged_across_runs(tmp_path):
    for name, text in (("claims", HEAD + CLAIM), ("values", HEAD + VALUE)):
        (tmp_path / name).mkdir()
        assert load_entry_file(write(tmp_path / name, text, "m")).measured, name


@pytest.mark.parametrize("field,text,want", [
    ("statistic", "5", "str"), ("rate_pps", '"fast"', "int"), ("folder", "1", "str"), ("note", "2", "str"),
    ("rounding", "3", "str"), ("repeat", "1.5", "str or int"), ("decimals", '"2"', "int"),
    ("tolerance_abs", '"x"', "int or float"), ("tolerance_rel", "true", "int or float")])
def test_each_published_field_is_type_checked_under_its_name(tmp_path, field, text, want):
    msg = refusal(write(tmp_path, MINIMAL.replace("decimals = 1\n", "") + f"{field} = {text}\n"))
    assert re.search(rf"field '{field}' must be {want}, got \w+$", msg), msg


def test_an_unknown_field_is_refused_with_the_allowed_ones(tmp_path):
    msg = refusal(write(tmp_path, MINIMAL + "colour = 1\n"))
    assert msg.endswith("unknown field 'colour' (allowed: decimals, folder, name, note, rate_pps, repeat, "
                        "rounding, statistic, tolerance_abs, tolerance_rel, unit, value)"), msg
    paper = tmp_path / "demo"
    paper.mkdir()
    (paper / "paper.toml").write_text('id = "demo"\ntitle = "t"\ncitation = "c"\nextra = 1\n')
    with pytest.raises(RegistryError, match=r"paper\.toml: unknown field 'extra' \(allowed: citation, datasets, id, "
                                            r"title, unstated\)$"):
        load_paper(paper)


def test_the_value_ranges_and_their_bounds():
    assert value_range_bounds("rate") == (0.0, math.inf) and value_range_bounds("share") == (0.0, 1.0)
    assert value_range_bounds("real") == (-math.inf, math.inf)
    assert value_range_bounds("jain:1") == (1.0, 1.0) and value_range_bounds("jain:4") == (0.25, 1.0)
    for bad in ("jain:0", "jain:", "jain:x", "Rate", "share:2"):
        with pytest.raises(ValueError, match=re.escape(f"value_range {bad!r} is not one of rate, share, jain:N, "
                                                       "real (N a whole number of flows)")):
            value_range_bounds(bad)


@pytest.mark.parametrize("value,ok", [(1.0, True), (0.0, True), (1.0000001, False), (-1e-9, False)])
def test_a_share_lies_in_zero_to_one(tmp_path, value, ok):
    text = (HEAD + VALUE.replace("value = 85.05", f"value = {value!r}").replace('value_range = "rate"',
                                                                               'value_range = "share"')
            .replace("margin_rel = 0.10", "margin_abs = 0.05").replace("decimals = 2", "decimals = 7"))
    src = write(tmp_path, text, "m")
    if ok:
        assert load_entry_file(src).published[0].value == value
    else:
        assert "lies outside its value_range 'share' [0, 1]" in refusal(src)


def test_a_measured_value_without_its_range_is_told_the_ranges(tmp_path):
    msg = refusal(write(tmp_path, HEAD + VALUE.replace('value_range = "rate"\n', ""), "m"))
    assert msg.endswith("a measured value needs value_range: the statistic's range, one of rate, share, jain:N, "
                        "real"), msg


@pytest.mark.parametrize("source", ["emulation allowance", "instrument resolution"])
def test_a_source_that_needs_words_is_refused_without_its_note(tmp_path, source):
    text = HEAD + VALUE.replace('"emulation allowance"', f'"{source}"').replace(
        'margin_note = "a local dumbbell stands in for the paper\'s testbed"\n', "")
    assert refusal(write(tmp_path, text, "m")).endswith(
        f"margin_source {source!r} needs margin_note saying why this margin (which allowance, which resolution), "
        "in words")


CLAIM_FIELDS = {"a": '"x:a"', "b": '"x:b"', "margin_rel": "0.1", "margin_abs": "0.1",
                "margin_source": '["paper spread"]', "margin_note": '"n"', "within": "[0.5, 2.0]",
                "successes": '"x:ok"', "trials": '"x:all"', "q": "0.5"}
CLAIM_TESTS = {"a > b": ("a", "b"), "share >=": ("successes", "trials", "q")}


@pytest.mark.parametrize("test,field", [(t, f) for t, need in CLAIM_TESTS.items() for f in CLAIM_FIELDS
                                        if f not in need])
def test_a_claim_refuses_every_field_of_another_test(tmp_path, test, field):
    need = CLAIM_TESTS[test]
    body = "".join(f"{k} = {CLAIM_FIELDS[k]}\n" for k in (*need, field))
    text = HEAD + f'[[claims]]\nid = "c"\ntext = "t"\nprincipal = true\ntest = "{test}"\n' + body
    assert refusal(write(tmp_path, text, "m")).endswith(
        f"[[claims]] 'c': {field!r} does not belong to test {test!r} (it takes {', '.join(sorted(need))})")


def test_datasets_are_looked_up_in_the_published_data_folder_the_environment_names(tmp_path, monkeypatch):
    monkeypatch.setenv("BENCHBOOK_PUBLISHED", str(tmp_path / "published"))
    e = load_entry_file(write(tmp_path, MINIMAL.replace('mode = "published-data"\n',
                                                        'mode = "published-data"\ndataset = "trace-a"\n')))
    assert e.dataset_dir == tmp_path / "published" / "trace-a"
    paper = Paper("p", "t", "c", tmp_path, datasets={"d": "elsewhere/d"})
    assert paper.dataset_path("d") == tmp_path / "published" / "elsewhere" / "d"
    (tmp_path / "elsewhere" / "d").mkdir(parents=True)
    assert paper.dataset_path("d") == (tmp_path / "elsewhere" / "d").resolve()   # the paper folder's own first
    assert paper.dataset_path("other") is None


def test_an_unknown_published_name_lists_the_known_ones(tmp_path):
    src = write(tmp_path, MINIMAL + '[[published]]\nname = "y"\nvalue = 2\nunit = "us"\ndecimals = 0\n')
    with pytest.raises(KeyError) as err:
        load_entry_file(src).published_value("z")
    assert err.value.args[0] == f"{src}: no [[published]] value named 'z' (known: 'x', 'y')"
    empty = write(tmp_path, HEAD, "m")
    with pytest.raises(KeyError) as err:
        load_entry_file(empty).published_value("z")
    assert err.value.args[0] == f"{empty}: no [[published]] value named 'z' (known: none)"


PRINTED = VALUE.replace('margin_rel = 0.10\nmargin_source = ["emulation allowance"]',
                        'margin_abs = 0.005\nmargin_source = ["print precision"]')


def test_a_margin_from_print_precision_alone_is_exactly_that_precision(tmp_path):
    """decimals = 2: half a unit is 0.005. Only a fifth wider (0.006), not only double, is already refused."""
    assert load_entry_file(write(tmp_path, HEAD + PRINTED, "m")).published[0].margin_abs == 0.005
    msg = refusal(write(tmp_path, HEAD + PRINTED.replace("margin_abs = 0.005", "margin_abs = 0.006"), "m"))
    assert msg.endswith("margin_abs 0.006 is larger than the print precision (0.005 Mbit/s), its only source: name "
                        "the other source(s) of the wider margin"), msg


def test_a_unitless_value_is_named_without_a_gap_in_the_refusal(tmp_path):
    text = HEAD + VALUE.replace('unit = "Mbit/s"', 'unit = ""').replace("value = 85.05", "value = 505").replace(
        "decimals = 2", "decimals = 0").replace("margin_rel = 0.10", "margin_rel = 0.0009")
    assert "smaller than the print precision (0.5 of 505, 0.099 %: half a unit of the last of 0 printed decimals)" \
        in refusal(write(tmp_path, text, "m"))


def _defaults(cls) -> dict:
    return {f.name: (f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default)
            for f in dataclasses.fields(cls) if (f.default, f.default_factory) != (dataclasses.MISSING,) * 2}


def test_the_defaults_a_value_claim_paper_or_entry_built_in_code_gets():
    """What a notebook or test that builds these in code relies on (the loader passes most fields itself): no
    tolerance, margin or decimals, an exact published-data value of any real range that is comparable."""
    assert _defaults(PublishedValue) == {
        "tolerance_abs": None, "tolerance_rel": None, "note": "", "decimals": None, "rounding": "half-up",
        "folder": None, "statistic": None, "rate_pps": None, "repeat": None, "measured": False, "arm": None,
        "run_statistic": None, "margin_rel": None, "margin_abs": None, "margin_source": (), "margin_note": "",
        "value_range": "real", "comparable": True, "not_comparable_reason": ""}
    assert _defaults(Claim) == {"principal": False, "a": None, "b": None, "margin_rel": None, "margin_abs": None,
                                "margin_source": (), "margin_note": "", "within": None, "successes": None,
                                "trials": None, "q": None, "note": ""}
    assert _defaults(Paper) == {"datasets": {}, "unstated": ""}
    assert _defaults(FigureEntry) == {"dataset": None, "requires": (), "parameters": {}, "published": (),
                                      "notes": "", "claim": "", "claim_rows": (), "paper": None, "claims": ()}
    v = PublishedValue("x", 1.0, "us")
    assert (v.tolerance_text(), v.matches(1.0), v.matches(1.0000001)) == ("exact", True, False)


def test_a_measured_margin_must_be_positive_and_is_needed_when_comparable(tmp_path):
    assert refusal(write(tmp_path, HEAD + VALUE.replace("margin_rel = 0.10", "margin_abs = 0"), "m")).endswith(
        "[[published]] 'A throughput': margin_abs must be a positive number, got 0")
    no_margin = VALUE.replace('margin_rel = 0.10\nmargin_source = ["emulation allowance"]\n', "").replace(
        'margin_note = "a local dumbbell stands in for the paper\'s testbed"\n', "")
    assert "'A throughput': needs a margin declared before the runs" in refusal(write(tmp_path, HEAD + no_margin,
                                                                                    "m"))


def test_a_value_or_claim_without_its_name_is_named_by_its_position(tmp_path):
    second = VALUE.replace('name = "A throughput"\n', "")
    assert refusal(write(tmp_path, HEAD + VALUE + second, "m")).endswith(
        "[[published]] '#2': missing required field 'name'")
    assert refusal(write(tmp_path, HEAD + CLAIM.replace('id = "c1"\n', ""), "m")).endswith(
        "[[claims]] '#1': missing required field 'id'")


def test_the_optional_fields_of_a_value_are_kept(tmp_path):
    e = load_entry_file(write(tmp_path, MINIMAL + 'note = "n"\nfolder = "vm"\nstatistic = "p99"\nrate_pps = 1000\n'
                                              'repeat = 3\n'))
    assert e.published == (PublishedValue("x", 1.5, "us", decimals=1, note="n", folder="vm", statistic="p99",
                                          rate_pps=1000, repeat=3),)
    m = load_entry_file(write(tmp_path, HEAD + VALUE + 'note = "from Fig. 3"\n', "m"))
    assert m.published[0].note == "from Fig. 3"


@pytest.mark.parametrize("notebook", ["benchbook:.", "benchbook:..", "benchbook:", "sub/../x.ipynb"])
def test_a_notebook_name_that_leaves_its_place_is_refused(tmp_path, notebook):
    assert f"notebook {notebook!r}" in refusal(write(tmp_path, MINIMAL.replace('"x.ipynb"', f'"{notebook}"')))


def test_an_equivalence_claim_loads_with_its_margin(tmp_path):
    text = HEAD + '''[[claims]]
id = "same"
text = "a and b alike"
principal = true
test = "a ~ b"
a = "x:t"
b = "y:t"
margin_rel = 0.05
margin_source = ["emulation allowance"]
margin_note = "n"
note = "as Fig. 2"
'''
    (c,) = load_entry_file(write(tmp_path, text, "m")).claims
    assert c == Claim("same", "a and b alike", "a ~ b", principal=True, a=StatisticRef("x", "t"),
                      b=StatisticRef("y", "t"), margin_rel=0.05, margin_source=("emulation allowance",),
                      margin_note="n", note="as Fig. 2")


@pytest.mark.parametrize("fields,fragment", [
    ('a = "x:"\nb = "x:b"\n', "a = 'x:': expected \"arm:statistic\""),
    ('a = ":t"\nb = "x:b"\n', "a = ':t': expected \"arm:statistic\""),
])
def test_a_statistic_needs_an_arm_and_a_name(tmp_path, fields, fragment):
    text = HEAD + f'[[claims]]\nid = "c"\ntext = "t"\nprincipal = true\ntest = "a > b"\n{fields}'
    assert fragment in refusal(write(tmp_path, text, "m"))


@pytest.mark.parametrize("within", ["[0, 2]", "[2, 2]", "[3, 2]", "[true, 2]", "[0.5, inf]", "[0.5]"])
def test_a_ratio_range_is_two_increasing_positive_numbers(tmp_path, within):
    text = HEAD + f'[[claims]]\nid = "c"\ntext = "t"\nprincipal = true\ntest = "a / b within"\na = "x:a"\n' \
                  f'b = "x:b"\nwithin = {within}\n'
    assert "expected [x, y] with 0 < x < y (the range of a / b)" in refusal(write(tmp_path, text, "m"))
    ok = text.replace(f"within = {within}", "within = [0.5, 2]")
    assert load_entry_file(write(tmp_path, ok, "m")).claims[0].within == (0.5, 2.0)


@pytest.mark.parametrize("q,ok", [(0.0, False), (1.0, False), (1e-9, True), (0.999, True)])
def test_a_share_claim_needs_a_share_strictly_inside(tmp_path, q, ok):
    text = HEAD + f'[[claims]]\nid = "c"\ntext = "t"\nprincipal = true\ntest = "share >="\nsuccesses = "x:ok"\n' \
                  f'trials = "x:all"\nq = {q!r}\n'
    src = write(tmp_path, text, "m")
    if ok:
        assert load_entry_file(src).claims[0].q == q
    else:
        assert refusal(src).endswith(f"q = {q!r}: expected a share strictly between 0 and 1")


def test_an_entrys_own_fields_are_kept_and_an_unknown_one_is_named(tmp_path):
    text = MINIMAL.replace('mode = "published-data"\n', 'mode = "published-data"\nnotes = "n"\nclaim = "c"\n'
                           '[parameters]\nrate_pps = 10\n')
    e = load_entry_file(write(tmp_path, text))
    assert (e.notes, e.claim, e.parameters) == ("n", "c", {"rate_pps": 10})
    msg = refusal(write(tmp_path, "colour = 1\n" + MINIMAL))
    assert msg.startswith(f"{tmp_path / 'demo.toml'}: unknown field 'colour' (allowed: "), msg


def test_a_duplicate_published_name_is_named_at_its_position(tmp_path):
    assert refusal(write(tmp_path, MINIMAL + MINIMAL[MINIMAL.index("[[published]]"):])).endswith(
        "[[published]] #2: duplicate published name 'x'")


def _paper_folder(tmp_path: Path, entries: dict[str, str]) -> Path:
    folder = tmp_path / "demo-paper"
    folder.mkdir()
    (folder / "paper.toml").write_text('id = "demo-paper"\ntitle = "T"\ncitation = "the paper\'s citation"\n')
    for name, text in entries.items():
        write(folder, text, name)
    return folder


def test_entries_of_a_paper_folder_get_its_paper_and_its_citation(tmp_path):
    folder = _paper_folder(tmp_path, {"demo": MINIMAL.replace('citation = "c"\n', ""),
                                      "demo2": MINIMAL.replace('id = "demo"', 'id = "demo2"')})
    e = load_folder(folder)["demo"]
    assert e.paper == load_paper(folder) and e.citation == "the paper's citation"
    assert load_folder(folder)["demo2"].citation == "c"
    with pytest.raises(RegistryError) as err:
        load_entry("other", folder)
    assert str(err.value) == f"{folder / 'other.toml'}: no registry entry 'other' (known: demo, demo2)"
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(RegistryError) as err:
        load_entry("other", empty)
    assert str(err.value).endswith("no registry entry 'other' (known: none)")


def test_the_search_path_reads_the_environment_by_default(tmp_path, monkeypatch):
    folder = _paper_folder(tmp_path, {"demo": MINIMAL})
    monkeypatch.setenv("BENCHBOOK_PAPERS", str(folder))
    assert folder.resolve() in registry.paper_dirs()
    assert folder.resolve() not in registry.paper_dirs(use_env=False)


def test_an_entry_names_its_paper(tmp_path):
    """An empty citation, with no paper folder to give one, is refused; in a paper folder the paper's counts."""
    for text in ('citation = ""', 'citation = "  "'):
        src = write(tmp_path, MINIMAL.replace('citation = "c"', text))
        assert refusal(src) == (f"{src}: citation is empty: say which paper the entry reproduces (here or in the "
                                "paper folder's paper.toml)")
    folder = _paper_folder(tmp_path, {"demo": MINIMAL.replace('citation = "c"', 'citation = ""')})
    assert load_folder(folder)["demo"].citation == "the paper's citation"


def test_a_margin_from_a_source_that_needs_no_words_has_no_note(tmp_path):
    text = HEAD + VALUE.replace('"emulation allowance"', '"paper spread"').replace(
        'margin_note = "a local dumbbell stands in for the paper\'s testbed"\n', "")
    assert load_entry_file(write(tmp_path, text, "m")).published[0].margin_note == ""
