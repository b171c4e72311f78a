"""The noise floor of this testbed per statistic: the smallest effect an A/A calibration could detect (V7).

``benchbook calibrate ENTRY`` runs one arm's configuration as two interleaved arms and stores, per statistic,
the minimum detectable effect -- the largest |bound| of the 95 % interval of Delta between the two identical
arms -- in ``data/calibration/<entry>/<host key>.json`` (``BENCHBOOK_CALIBRATION`` moves the folder)::

    {"schema": "benchbook.calibration/1",
     "entry": "<entry id>",
     "host_key": "<16 hex digits: host_key(fingerprint)>",
     "fingerprint": {...},                      # benchbook.provenance.fingerprint.host_fingerprint()
     "runs": {"<arm>": <valid runs per arm>, ...},
     "seed": <the runner's seed>,
     "created": "<ISO 8601 UTC>",
     "statistics": {"<arm>:<statistic>" or "<statistic>": {"mde": <float>, "scale": "log-ratio" | "difference",
                                                         "ci95": [low, high], "method": "..."}}}

A measured verdict row whose margin delta is below the stored MDE of its statistic (looked up as
"<arm>:<statistic>", then "<statistic>") on this host is ``inconclusive: below the noise floor``
(benchbook.reproduce.judge). The host key hashes what makes a testbed's noise: host name, kernel release, CPU
model and count, and the versions of the measuring tools; anything else in the fingerprint (the time it was
taken, capabilities) does not change it.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchbook.atomic_write import write_json_atomic
from benchbook.errors import BenchbookError
from benchbook.paths import CALIBRATION_DIR
from benchbook.provenance.fingerprint import host_fingerprint

SCHEMA = "benchbook.calibration/1"
SCALES = ("log-ratio", "difference")


class CalibrationError(BenchbookError, ValueError):
    """A calibration file that cannot be read (the message names it)."""


def host_key(fingerprint: Mapping[str, Any]) -> str:
    """16 hex digits of the SHA-256 of the fingerprint's noise-relevant fields (see the module docstring)."""
    kernel = fingerprint.get("kernel") or {}
    cpu = fingerprint.get("cpu") or {}
    tools = fingerprint.get("tools") or {}
    stable = {"hostname": fingerprint.get("hostname"),
              "kernel": kernel.get("release") if isinstance(kernel, dict) else None,
              "cpu": [cpu.get("model"), cpu.get("count")] if isinstance(cpu, dict) else None,
              "tools": {name: (t.get("version") or t.get("debian_package")) if isinstance(t, dict) else None
                        for name, t in sorted(tools.items())} if isinstance(tools, dict) else None}
    return hashlib.sha256(json.dumps(stable, sort_keys=True).encode()).hexdigest()[:16]


def calibration_path(entry_id: str, key: str, root: Path | str | None = None) -> Path:
    return Path(root if root is not None else CALIBRATION_DIR) / entry_id / f"{key}.json"


@dataclass(frozen=True)
class NoiseFloor:
    """The MDE of one statistic on this host, on the scale of Delta (``scale``), from ``path``."""

    statistic: str
    mde: float
    scale: str
    path: Path
    runs: Any = None

    def on_scale(self, scale: str, level: float) -> float:
        """The MDE on ``scale``, converted at the value ``level`` (the published value) when the calibration
        was stored on the other scale: a log ratio m is a difference of level * (e^m - 1), a difference d a log
        ratio of ln(1 + d / level)."""
        if scale == self.scale:
            return self.mde
        if scale == "difference":
            return abs(level) * math.expm1(self.mde)
        return math.log1p(self.mde / abs(level)) if level else math.inf

    def as_dict(self) -> dict[str, Any]:
        return {"statistic": self.statistic, "mde": self.mde, "scale": self.scale, "file": str(self.path),
                "runs": self.runs}


def read_calibration(path: Path | str) -> dict[str, Any]:
    """A calibration file, checked (CalibrationError naming the file and what is wrong)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise CalibrationError(f"{path}: line {exc.lineno}: not valid JSON ({exc.msg})") from None
    except OSError as exc:
        raise CalibrationError(f"{path}: cannot read ({exc.strerror})") from None
    return _checked(path, data)


def _checked(path: Path, data: Any) -> dict[str, Any]:
    stats = data.get("statistics") if isinstance(data, dict) else None
    if not isinstance(stats, dict):
        raise CalibrationError(f"{path}: expected a JSON object with \"statistics\": {{\"<arm>:<statistic>\": "
                               "{\"mde\": ..., \"scale\": ...}}}")
    for name, s in stats.items():
        ok = isinstance(s, dict) and isinstance(s.get("mde"), (int, float)) and not isinstance(s.get("mde"), bool)
        if not ok or not math.isfinite(s["mde"]) or s["mde"] < 0 or s.get("scale") not in SCALES:
            raise CalibrationError(f"{path}: statistics[{name!r}]: expected {{\"mde\": a number >= 0, \"scale\": "
                                   f"one of {', '.join(SCALES)}}}, got {s!r}")
    return data


class NoiseFloors:
    """The stored noise floors of one entry on this host (empty when there is no calibration)."""

    def __init__(self, path: Path | None, data: dict[str, Any] | None) -> None:
        self.path = path
        self.data = data or {}

    def get(self, arm: str, statistic: str) -> NoiseFloor | None:
        stats = self.data.get("statistics", {})
        for name in (f"{arm}:{statistic}", statistic):
            if name in stats:
                s = stats[name]
                assert self.path is not None
                return NoiseFloor(name, float(s["mde"]), s["scale"], self.path, self.data.get("runs"))
        return None


def load_noise_floors(entry_id: str, root: Path | str | None = None,
                      fingerprint: Mapping[str, Any] | None = None) -> NoiseFloors:
    """The calibration of ``entry_id`` for this host (its fingerprint is taken only when the entry has a
    calibration folder with files in it)."""
    folder = Path(root if root is not None else CALIBRATION_DIR) / entry_id
    if not folder.is_dir() or not any(folder.glob("*.json")):
        return NoiseFloors(None, None)
    if fingerprint is None:
        fingerprint = host_fingerprint()
    path = folder / f"{host_key(fingerprint)}.json"
    return NoiseFloors(path, read_calibration(path)) if path.is_file() else NoiseFloors(None, None)


def write_calibration(entry_id: str, fingerprint: Mapping[str, Any], statistics: Mapping[str, Mapping[str, Any]],
                      runs: Mapping[str, int], seed: int | None = None, root: Path | str | None = None) -> Path:
    """Store an entry's noise floors for this host (``statistics``: name -> {"mde", "scale", ...}); the file is
    checked as read_calibration would and written atomically."""
    key = host_key(fingerprint)
    path = calibration_path(entry_id, key, root)
    data = {"schema": SCHEMA, "entry": entry_id, "host_key": key, "fingerprint": dict(fingerprint),
            "runs": dict(runs), "seed": seed, "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
            "statistics": {k: dict(v) for k, v in statistics.items()}}
    data = _checked(path, json.loads(json.dumps(data, default=str)))
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(path, data)
    return path


__all__ = ["CalibrationError", "NoiseFloor", "NoiseFloors", "SCHEMA", "calibration_path", "host_key",
           "load_noise_floors", "read_calibration", "write_calibration"]
