"""MoonGen (libmoon) console output: throughput lines and histogram summary lines.

Throughput lines of libmoon's ``stats.lua`` (plain formatter, with ANSI colours)::

    [Device: id=0] TX: 14.88 Mpps, 7619 Mbit/s (9999 Mbit/s with framing)
    [Device: id=0] TX: 14.88 (StdDev 0.01) Mpps, 7619 (StdDev 3) Mbit/s (9999 Mbit/s with framing), \
total 148800000 packets with 9523200000 bytes (incl. CRC)

its CSV formatter (``Time,Device,Direction,PacketRate,Mbit,MbitWithFraming,TotalPackets,
TotalBytes``) and the old pre-libmoon ``Sent N packets, current rate ...`` lines; all read by
:func:`read_throughput_log` into one DataFrame. The summary lines ``hist:print()`` writes
(``Samples: N, Average: X ns, StdDev: Y ns, Quartiles: a/b/c ns``) are read by
:func:`parse_histogram_summaries`.
"""

from __future__ import annotations

import csv
import math
import os
import re
from pathlib import Path
from typing import Any

import pandas as pd

from benchbook.tools.moongen_histogram import MoonGenFormatError

_SUMMARY_RE = re.compile(
    r"(?:\[(?P<prefix>[^\]]*)\] )?Samples: (?P<n>\d+), Average: (?P<avg>\S+) ns, "
    r"StdDev: (?P<sd>\S+) ns, Quartiles: (?P<q1>[^/\s]+)/(?P<q2>[^/\s]+)/(?P<q3>[^/\s]+) ns"
)


def parse_histogram_summaries(text: str) -> list[dict[str, Any]]:
    """Every ``Samples: ..., Quartiles: a/b/c ns`` line in MoonGen output (colours removed)."""
    out = []
    for lineno, line in enumerate(strip_ansi(text).splitlines(), start=1):
        m = _SUMMARY_RE.search(line)
        if m:
            out.append({
                "line": lineno,
                "prefix": m["prefix"],
                "samples": int(m["n"]),
                "average_ns": _num(m["avg"]),
                "stddev_ns": _num(m["sd"]),
                "quartiles_ns": (_num(m["q1"]), _num(m["q2"]), _num(m["q3"])),
            })
    return out


_ANSI_RE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_NUM = r"(-?(?:\d+(?:\.\d*)?|nan|inf)|-?nan|-?inf)"
_UPDATE_RE = re.compile(
    r"\[(?P<name>[^\[\]]+)\] (?P<dir>TX|RX): " + _NUM.replace("(", "(?P<mpps>", 1) + r" Mpps, "
    + _NUM.replace("(", "(?P<mbit>", 1) + r" Mbit/s \(" + _NUM.replace("(", "(?P<wire>", 1)
    + r" Mbit/s with framing\)\s*$"
)
_FINAL_RE = re.compile(
    r"\[(?P<name>[^\[\]]+)\] (?P<dir>TX|RX): " + _NUM.replace("(", "(?P<mpps>", 1) + r" \(StdDev "
    + _NUM.replace("(", "(?P<mpps_sd>", 1) + r"\) Mpps, " + _NUM.replace("(", "(?P<mbit>", 1)
    + r" \(StdDev " + _NUM.replace("(", "(?P<mbit_sd>", 1) + r"\) Mbit/s \("
    + _NUM.replace("(", "(?P<wire>", 1) + r" Mbit/s with framing\), total (?P<pkts>\d+) packets "
    r"with (?P<bytes>\d+) bytes \(incl\. CRC\)\s*$"
)
_LEGACY_RE = re.compile(
    r"\[+(?P<name>[^\[\]]+)\]+ (?P<verb>Sent|Received) (?P<pkts>\d+) packets, current rate "
    + _NUM.replace("(", "(?P<mpps>", 1) + r" Mpps, " + _NUM.replace("(", "(?P<mbit>", 1)
    + r" MBit/s, " + _NUM.replace("(", "(?P<wire>", 1) + r" MBit/s wire rate\.?\s*$"
)
_LOOKS_LIKE_STATS = re.compile(r"\] (?:TX|RX): \S|\] (?:Sent|Received) \d+ packets, current rate")
_CSV_HEADER = "Time,Device,Direction,PacketRate,Mbit,MbitWithFraming,TotalPackets,TotalBytes"
_DEVICE_ID_RE = re.compile(r"\bid=(\d+)")

THROUGHPUT_COLUMNS = [
    "line", "device", "device_id", "direction", "kind", "seq", "time_s", "mpps", "mbit",
    "mbit_framing", "mpps_stddev", "mbit_stddev", "total_packets", "total_bytes",
]


def strip_ansi(text: str) -> str:
    """Remove ANSI colour escapes (libmoon colours the device name and direction)."""
    return _ANSI_RE.sub("", text)


def _num(s: str | None) -> float:
    if s is None:
        return math.nan
    s = s.strip()
    if s.lstrip("+-") == "nan":
        return math.nan
    return float(s)


def parse_throughput(text: str, source: str = "<text>"):
    """Throughput rows of MoonGen output text as a DataFrame (see :func:`read_throughput_log`)."""
    rows: list[dict[str, Any]] = []
    warnings: list[str] = []
    lines = text.splitlines()
    first = next((ln.strip() for ln in lines if ln.strip()), "")
    if strip_ansi(first) == _CSV_HEADER:
        rows, warnings = _parse_csv_stats(lines, source)
    else:
        for lineno, raw in enumerate(lines, start=1):
            line = strip_ansi(raw).replace("\r", "")
            m = _FINAL_RE.search(line)
            if m:
                rows.append(_row(lineno, m["name"], m["dir"], "final", m, total=True, sd=True))
                continue
            m = _UPDATE_RE.search(line)
            if m:
                rows.append(_row(lineno, m["name"], m["dir"], "update", m))
                continue
            m = _LEGACY_RE.search(line)
            if m:
                d = "TX" if m["verb"] == "Sent" else "RX"
                rows.append(_row(lineno, m["name"], d, "update", m, total=True, legacy=True))
                continue
            if _LOOKS_LIKE_STATS.search(line):
                warnings.append(f"{source}: line {lineno}: looks like a throughput line but does not "
                                f"parse (truncated?): {line.strip()[:100]!r}")
    df = pd.DataFrame(rows, columns=THROUGHPUT_COLUMNS)
    df = df.astype({
        "line": "int64", "device": "string", "device_id": "Int64", "direction": "string",
        "kind": "string", "seq": "Int64", "time_s": "float64", "mpps": "float64", "mbit": "float64",
        "mbit_framing": "float64", "mpps_stddev": "float64", "mbit_stddev": "float64",
        "total_packets": "Int64", "total_bytes": "Int64",
    })
    if len(df):
        upd = df["kind"] != "final"
        df.loc[upd, "seq"] = df[upd].groupby(["device", "direction"]).cumcount().astype("Int64")
    df.attrs["source"] = source
    df.attrs["warnings"] = warnings
    return df


def _row(lineno: int, name: str, direction: str, kind: str, m: re.Match, total: bool = False,
         sd: bool = False, legacy: bool = False) -> dict[str, Any]:
    dev_id = _DEVICE_ID_RE.search(name)
    return {
        "line": lineno,
        "device": name,
        "device_id": int(dev_id.group(1)) if dev_id else None,
        "direction": direction,
        "kind": kind,
        "seq": None,
        "time_s": math.nan,
        "mpps": _num(m["mpps"]),
        "mbit": _num(m["mbit"]),
        "mbit_framing": _num(m["wire"]),
        "mpps_stddev": _num(m["mpps_sd"]) if sd else math.nan,
        "mbit_stddev": _num(m["mbit_sd"]) if sd else math.nan,
        "total_packets": int(m["pkts"]) if total else None,
        "total_bytes": int(m["bytes"]) if (total and not legacy) else None,
    }


def _parse_csv_stats(lines: list[str], source: str) -> tuple[list[dict[str, Any]], list[str]]:
    rows: list[dict[str, Any]] = []
    warnings: list[str] = []
    for lineno, raw in enumerate(lines, start=1):
        line = strip_ansi(raw).strip()
        if not line or line == _CSV_HEADER:
            continue
        fields = next(csv.reader([line]))
        if len(fields) != 8:
            msg = (f"{source}: line {lineno}: {len(fields)} fields, expected 8 ({_CSV_HEADER})")
            if lineno == len(lines):
                warnings.append(msg + " - incomplete last line ignored")
                continue
            raise MoonGenFormatError(msg)
        try:
            t, dev, d, mpps, mbit, wire, pk, by = fields
            dev_id = _DEVICE_ID_RE.search(dev)
            rows.append({
                "line": lineno, "device": dev, "device_id": int(dev_id.group(1)) if dev_id else None,
                "direction": d, "kind": "csv", "seq": None, "time_s": float(t), "mpps": _num(mpps),
                "mbit": _num(mbit), "mbit_framing": _num(wire), "mpps_stddev": math.nan,
                "mbit_stddev": math.nan, "total_packets": int(float(pk)), "total_bytes": int(float(by)),
            })
        except ValueError as exc:
            raise MoonGenFormatError(f"{source}: line {lineno}: {exc}; expected {_CSV_HEADER}") from None
    return rows, warnings


def read_throughput_log(path: str | os.PathLike):
    """Read a MoonGen throughput log (captured stdout, or a stats CSV) into a DataFrame.

    One row per throughput line, in file order, with columns
    line (1-based line number), device ("Device: id=0", or the counter's name), device_id,
    direction ("TX"/"RX"), kind ("update" per-second line, "final" summary line, "csv" row of
    the CSV formatter, which does not mark its final row), seq (0, 1, ... per device and
    direction among non-final rows: the plain format has no clock, updates are ~1 s apart),
    time_s (CSV only), mpps, mbit, mbit_framing (Mbit/s with 20 B/packet preamble+IFG),
    mpps_stddev, mbit_stddev (final lines), total_packets, total_bytes (incl. CRC; final lines).
    Other output (log lines, the histogram) is skipped; ANSI colours and ^C are ignored. Lines
    that look like throughput lines but do not parse are listed in ``df.attrs["warnings"]``.
    """
    p = Path(path)
    text = p.read_bytes().decode("utf-8", errors="replace")
    return parse_throughput(text, str(p))


__all__ = ["THROUGHPUT_COLUMNS", "parse_histogram_summaries", "parse_throughput", "read_throughput_log", "strip_ansi"]
