"""Flent data files of every data-format version (1 to 4), upgraded on load by the rules of Flent's loader.

A data file (``.flent.gz``; netperf-wrapper's ``.json.gz``; plain or bz2 JSON) holds ``metadata``,
``x_values`` (seconds from the start, one per step), ``results`` (one value or null per x value and
series) and, from version 2 on, ``raw_values`` (the samples as measured). Writers: netperf-wrapper
0.1-0.9 wrote version 1 (no ``version`` key), Flent 0.10-0.12 version 2, Flent 0.13-1.1 version 3,
Flent 1.2 and later version 4. Flent's loader (flent/resultset.py, ``unserialise_compat``) upgrades
older files when it reads them, and so does :func:`load_flent`:

- version 1: raw values move out of ``SERIES_META[name]["RAW_VALUES"]``; with none stored they are
  made from the results (``t`` = T0 (else TIME) + x, ``val`` = the result) and ``FAKE_RAW_VALUES`` is
  set; ``NETPERF_WRAPPER_VERSION`` becomes ``FLENT_VERSION``.
- versions 1-3, unless the raw values were made up: raw values of series whose name holds ``UDP``
  and whose samples have ``dur`` (netperf UDP_RR) go from transactions/s to ms (1000/x, None for 0);
  ``HTTP latency`` from s to ms; cumulative airtime (``stations``), qdisc ``dropped`` and ``ecn_mark``
  become per-interval differences (the first sample 0); a series whose SERIES_META has ``MEAN_VALUE``
  and UNITS ``bits/s`` gets MEAN_VALUE / 1e6 and UNITS ``Mbits/s``.
- every version: ``TOTAL_LENGTH`` missing or null becomes the largest x value; a version above 4 is
  refused as too new.

Flent's upgrade changes no ``results``: where it relabels UNITS from ``bits/s`` to ``Mbits/s`` the
results stay in bit/s. :meth:`FlentData.units_of` gives the unit the results were written in (the
file's own UNITS; a difference from Flent, which shows such results under the new label). Version-1
files name no units at all: netperf-wrapper took them from its test definitions, where every ``TCP
...`` throughput series is in Mbit/s (netperf's demo mode) and ``UDP upload`` (udp_flood, iperf -y C)
in bit/s; ``units_of`` says so with ``assumed`` True.
"""

from __future__ import annotations

import bz2
import copy
import gzip
import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from benchbook.errors import BenchbookError

FLENT_FORMAT_VERSION = 4
# netperf-wrapper 0.9's test definitions (version-1 files name no units): series name -> unit
_V1_UNITS = ((re.compile(r"^TCP (upload|download|totals)\b"), "Mbits/s"), (re.compile(r"^UDP (upload|download)\b"),
                                                                             "bits/s"))


class FlentFormatError(BenchbookError, ValueError):
    """Not a Flent data file, or one of a data-format version Flent itself refuses."""


@dataclass
class FlentData:
    """A Flent data file after the upgrade: ``version`` is the one it was written in."""

    path: str
    version: int
    metadata: dict[str, Any]
    x_values: list[float]
    results: dict[str, list[float | None]]
    raw_values: dict[str, list[dict[str, Any]]]
    written_units: dict[str, str | None] = field(default_factory=dict)  # SERIES_META UNITS before the upgrade
    upgrades: list[str] = field(default_factory=list)                  # what the upgrade changed, in words

    def units_of(self, name: str) -> tuple[str | None, bool]:
        """(unit of the results of series `name`, assumed?): the unit the file was written with; for
        version-1 files, which name none, netperf-wrapper's (assumed True); None when unknown."""
        unit = self.written_units.get(name)
        if not isinstance(unit, str):  # Flent's computed series copy a list of UNITS when their sources differ
            unit = None
        if unit is not None or self.version > 1:
            return unit, False
        for pattern, v1_unit in _V1_UNITS:
            if pattern.search(name):
                return v1_unit, True
        return None, False


def _open(p: Path):
    if p.name.endswith(".gz"):
        return gzip.open(p, "rt", encoding="utf-8")
    if p.name.endswith((".bz2", ".flnt")):
        return bz2.open(p, "rt", encoding="utf-8")
    return open(p, encoding="utf-8")


def load_flent(path: Path | str) -> FlentData:
    """Read a Flent data file of any data-format version and upgrade it as Flent's loader does."""
    p = Path(path)
    try:
        with _open(p) as fh:
            doc = json.load(fh)
    except (OSError, EOFError, ValueError) as exc:  # gzip/bz2/JSON/UTF-8 errors are ValueError or OSError
        raise FlentFormatError(f"{p}: not a Flent data file (gzip JSON): {exc}") from exc
    if not isinstance(doc, dict) or not {"metadata", "x_values", "results"} <= set(doc):
        raise FlentFormatError(f"{p}: not a Flent data file: expected keys metadata, x_values, results")
    if not isinstance(doc["metadata"], dict) or not isinstance(doc["results"], dict) \
            or not isinstance(doc["x_values"], list):
        raise FlentFormatError(f"{p}: not a Flent data file: metadata and results must be objects, x_values a list")
    try:
        version = int(doc["version"])
    except (KeyError, ValueError, TypeError):
        version = 1  # Flent's rule: no (or no integer) version is version 1
    if version > FLENT_FORMAT_VERSION:
        raise FlentFormatError(f"{p}: Flent data-format version {version} is newer than the {FLENT_FORMAT_VERSION} "
                               "that Flent 2.x and benchbook read")
    doc = copy.deepcopy(doc)
    meta = doc["metadata"]
    series_meta = meta.get("SERIES_META") if isinstance(meta.get("SERIES_META"), dict) else {}
    written = {k: v.get("UNITS") for k, v in series_meta.items() if isinstance(v, dict)}
    notes: list[str] = []
    try:
        if version < FLENT_FORMAT_VERSION:
            notes = _upgrade(doc, version)
        if meta.get("TOTAL_LENGTH") is None and doc["x_values"]:
            meta["TOTAL_LENGTH"] = max(doc["x_values"])
    except (TypeError, ValueError, KeyError, AttributeError, ZeroDivisionError) as exc:
        raise FlentFormatError(f"{p}: Flent data-format version {version}: cannot be upgraded: "
                               f"{type(exc).__name__}: {exc}") from exc
    raw = doc.get("raw_values") if isinstance(doc.get("raw_values"), dict) else {}
    return FlentData(path=str(p), version=version, metadata=meta, x_values=doc["x_values"], results=doc["results"],
                     raw_values=raw, written_units=written, upgrades=notes)


def _start_s(meta: dict[str, Any]) -> float:
    """T0 (else TIME) in seconds since the epoch: UTC with a trailing Z, otherwise local time (Flent's
    parse_date without data to guess the offset from)."""
    text = str(meta.get("T0", meta.get("TIME")))
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def _upgrade(doc: dict[str, Any], version: int) -> list[str]:
    meta = doc["metadata"]
    notes: list[str] = []
    fake_raw = False
    if version == 1:
        sm = meta.get("SERIES_META") or {}
        doc["raw_values"] = {k: v["RAW_VALUES"] for k, v in sm.items() if isinstance(v, dict) and "RAW_VALUES" in v}
        if doc["raw_values"]:
            notes.append("raw values moved out of SERIES_META")
        else:
            x0 = _start_s(meta)
            doc["raw_values"] = {name: [{"t": x0 + x, "val": r} for x, r in zip(doc["x_values"], vals, strict=False)]
                                 for name, vals in doc["results"].items()}
            meta["FAKE_RAW_VALUES"] = fake_raw = True
            notes.append("no raw values stored: made from the results (FAKE_RAW_VALUES)")
        if "NETPERF_WRAPPER_VERSION" in meta:
            meta["FLENT_VERSION"] = meta.pop("NETPERF_WRAPPER_VERSION")
            notes.append("NETPERF_WRAPPER_VERSION renamed FLENT_VERSION")
    if version < 4 and not fake_raw:
        converted = 0
        for name, values in doc.get("raw_values", {}).items():
            if "UDP" in name:
                for v in values:
                    if "dur" in v:  # netperf UDP_RR: transactions/s to ms
                        v["val"] = None if v["val"] == 0 else 1000.0 / v["val"]
                        converted += 1
            elif name == "HTTP latency":
                for v in values:
                    if "val" in v:
                        v["val"] = v["val"] * 1000.0
                        converted += 1
            elif values and "stations" in values[0]:
                converted += _airtime_per_interval(values)
            elif values and ("dropped" in values[0] or "ecn_mark" in values[0]):
                converted += _per_interval(values, ("dropped", "ecn_mark"))
        if converted:
            notes.append(f"{converted} raw values converted (RR to ms, s to ms, cumulative to per-interval)")
        for name, v in (meta.get("SERIES_META") or {}).items():
            if isinstance(v, dict) and "MEAN_VALUE" in v and v.get("UNITS") == "bits/s":
                v["MEAN_VALUE"] = v["MEAN_VALUE"] / 1e6
                v["UNITS"] = "Mbits/s"
                notes.append(f"{name}: MEAN_VALUE and UNITS from bits/s to Mbits/s (results unchanged)")
    return notes


def _per_interval(values: list[dict[str, Any]], keys: tuple[str, ...]) -> int:
    last: dict[str, float] = {}
    return sum(_per_interval_one(last, v, keys) for v in values)


def _airtime_per_interval(values: list[dict[str, Any]]) -> int:
    last: dict[str, dict[str, float]] = {}
    n = 0
    for v in values:
        for station, d in (v.get("stations") or {}).items():
            n += _per_interval_one(last.setdefault(station, {}), d, ("airtime_tx", "airtime_rx"))
    return n


def _per_interval_one(last: dict[str, float], d: dict[str, Any], keys: tuple[str, ...]) -> int:
    n = 0
    for k in keys:
        if k in d:
            n += 1
            if k not in last:
                last[k], d[k] = d[k], 0.0
            else:
                last[k], d[k] = d[k], d[k] - last[k]
    return n


__all__ = ["FLENT_FORMAT_VERSION", "FlentData", "FlentFormatError", "load_flent"]
