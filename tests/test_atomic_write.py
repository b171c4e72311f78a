"""benchbook.atomic_write: valid JSON always, the previous file kept when a write fails, no temporary left."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from benchbook.atomic_write import atomic_path, write_json_atomic


def test_json_is_valid_with_non_finite_floats_and_replaces_the_previous_file(tmp_path: Path) -> None:
    p = tmp_path / "m.json"
    p.write_text('{"old": true}\n')
    write_json_atomic(p, {"a": math.nan, "b": [math.inf, -math.inf], "c": (1, 2), "d": Path("/x")})
    assert json.loads(p.read_text()) == {"a": "NaN", "b": ["Infinity", "-Infinity"], "c": [1, 2], "d": "/x"}
    assert sorted(f.name for f in tmp_path.iterdir()) == ["m.json"]


def test_a_failed_write_leaves_the_previous_file_and_no_temporary(tmp_path: Path) -> None:
    p = tmp_path / "t.parquet"
    p.write_bytes(b"previous")
    with pytest.raises(RuntimeError, match="midway"), atomic_path(p) as tmp:
        tmp.write_bytes(b"half of the new")
        raise RuntimeError("midway")
    assert p.read_bytes() == b"previous"
    assert sorted(f.name for f in tmp_path.iterdir()) == ["t.parquet"]

    class Unprintable:
        def __str__(self) -> str:
            raise ValueError("cannot say")

    with pytest.raises(ValueError, match="cannot say"):
        write_json_atomic(tmp_path / "t.parquet", {"x": Unprintable()})
    assert p.read_bytes() == b"previous"
    assert sorted(f.name for f in tmp_path.iterdir()) == ["t.parquet"]


def test_an_os_error_names_the_target(tmp_path: Path) -> None:
    target = tmp_path / "missing-dir" / "x.json"
    with pytest.raises(OSError, match="missing-dir/x.json") as err:
        write_json_atomic(target, {})
    assert err.value.filename == str(target)
