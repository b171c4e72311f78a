"""Per-interval tables of the TCP analysis: throughput, goodput, retransmission score, ACK inter-arrival.

Rows come from the flow kernel (one per flow, direction and bin with traffic); this module sums duplicates,
fills the bins inside each direction's span with zeros, and derives the rates:

- ``throughput_bps``: wire (frame) bytes x 8 / bin length;
- ``goodput_bps``: payload bytes seen for the first time (sequence coverage) x 8 / bin length;
- ``retransmission_score``: retransmitted payload bytes / payload bytes of the bin under the chosen rule
  (bro-tcp's score; NaN where the bin carried no payload);
- ``ack_interarrival_mean_ns``: mean time between successive ACKs of this direction that advanced the
  cumulative ACK (NaN where fewer than two).

Bin ``k`` covers ``[t0 + k * bin_ns, t0 + (k + 1) * bin_ns)`` in integer nanoseconds, t0 = first packet.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchbook.analysis.tcp_flows import IV_NAMES, N_IV

DIRECTIONS = ("orig", "resp")


def interval_table(rows: np.ndarray, t0_ns: int, bin_ns: int) -> pd.DataFrame:
    """The dense per-interval table from the kernel's interval rows (shape (n, N_IV))."""
    cols = ["flow", "direction", "bin"] + list(IV_NAMES)
    if rows.shape[0] == 0:
        df = pd.DataFrame({c: np.zeros(0, np.int64) for c in cols})
    else:
        df = pd.DataFrame(rows[:, :N_IV], columns=cols)
        agg = {c: "sum" for c in IV_NAMES}
        agg["bytes_in_flight_max"] = "max"
        df = df.groupby(["flow", "direction", "bin"], as_index=False, sort=True).agg(agg)
        parts = []
        for (_f, _d), g in df.groupby(["flow", "direction"], sort=True):
            full = np.arange(int(g["bin"].min()), int(g["bin"].max()) + 1, dtype=np.int64)
            if full.size != len(g):
                g = g.set_index("bin").reindex(full, fill_value=0).rename_axis("bin").reset_index()
                g["flow"] = _f
                g["direction"] = _d
            parts.append(g[cols])
        df = pd.concat(parts, ignore_index=True)
    bin_s = bin_ns / 1e9
    out = pd.DataFrame({
        "flow": df["flow"].astype(np.int64),
        "direction": pd.Categorical.from_codes(df["direction"].astype(np.int64), categories=list(DIRECTIONS)),
        "bin": df["bin"].astype(np.int64),
        "start_time_ns": (t0_ns + df["bin"].astype(np.int64) * bin_ns).astype(np.int64),
    })
    for c in IV_NAMES:
        out[c] = df[c].astype(np.int64)
    out["throughput_bps"] = out["wire_bytes"] * 8 / bin_s
    out["goodput_bps"] = out["goodput_bytes"] * 8 / bin_s
    with np.errstate(invalid="ignore", divide="ignore"):
        pay = out["payload_bytes"].to_numpy(float)
        out["retransmission_score"] = np.where(pay > 0, out["retransmitted_bytes"].to_numpy(float) / pay, np.nan)
        n = out["ack_interarrival_count"].to_numpy(float)
        out["ack_interarrival_mean_ns"] = np.where(n > 0, out["ack_interarrival_sum_ns"].to_numpy(float) / n,
                                                   np.nan)
    return out


def flow_goodput_series(intervals: pd.DataFrame) -> pd.DataFrame:
    """Per flow and bin: goodput of both directions together (flow, start_time_ns, goodput_bps)."""
    g = intervals.groupby(["flow", "start_time_ns"], as_index=False, observed=True)["goodput_bps"].sum()
    return g
