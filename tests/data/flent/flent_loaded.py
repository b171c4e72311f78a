"""What Flent's own loader makes of each Flent data file: the reference benchbook's reader is compared with
(tests/analysis/test_flent_data.py). Run with the Python of a venv holding Flent (make.sh makes one):

    /tmp/flent-venvs/f230/bin/python tests/data/flent/flent_loaded.py FILE... > tests/data/flent/flent-2.3.0-loaded.json

For each file: the version it was written in, the upgraded metadata benchbook checks, per series the UNITS
after Flent's load and the count, sum and first of the non-null results and of the raw values (Flent 2.3.0's
FairnessMeanReducer cannot be called on a loaded file alone: its meta/raw reducers index a series of None).
Summary numbers only: the files of Flent's sdist are GPL-3.0 and not copied."""

from __future__ import annotations

import gzip
import json
import math
import sys
from pathlib import Path

from flent import resultset
from flent.build_info import VERSION


def _stats(values):
    vals = [v for v in values if v is not None]
    return {"n": len(vals), "sum": math.fsum(vals), "first": vals[0] if vals else None}


def describe(path: Path) -> dict:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt") as fh:
        written = json.load(fh)
    rs = resultset.load(str(path))
    meta = rs.metadata
    series = {}
    for name in rs.series_names:
        units = (meta.get("SERIES_META", {}).get(name) or {}).get("UNITS")
        raw = rs.raw_values.get(name, [])
        series[name] = {"units": units, "results": _stats(rs.series(name)),
                        "raw": _stats([r.get("val") for r in raw if isinstance(r.get("val"), (int, float))])}
    return {
        "written_version": written.get("version", 1),
        "name": meta.get("NAME"),
        "FLENT_VERSION": meta.get("FLENT_VERSION"),
        "FAKE_RAW_VALUES": meta.get("FAKE_RAW_VALUES", False),
        "TOTAL_LENGTH": meta.get("TOTAL_LENGTH"),
        "x_values": len(rs.x_values),
        "series": series,
    }


if __name__ == "__main__":
    out = {"flent": VERSION, "files": {Path(f).name: describe(Path(f)) for f in sys.argv[1:]}}
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
