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

from typing import TYPE_CHECKING

import numpy as np

from benchbook.analysis.tcp_flows import IV_NAMES, N_IV

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

DIRECTIONS = ("orig", "resp")
_MAX_COL = 3 + IV_NAMES.index("bytes_in_flight_max")


def interval_arrays(rows: np.ndarray, t0_ns: int, bin_ns: int) -> dict[str, np.ndarray]:
    """The dense per-interval columns from the kernel's interval rows (shape (n, N_IV)); ``direction`` holds
    codes into DIRECTIONS."""
    rows = np.asarray(rows, np.int64)[:, :N_IV]
    if rows.shape[0]:
        key = (rows[:, 0] * 2 + rows[:, 1]) * (1 << 32) + rows[:, 2] - rows[:, 2].min()
        order = np.argsort(key, kind="stable")
        rows = rows[order]
        key = key[order]
        starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
        summed = np.add.reduceat(rows, starts, axis=0)
        summed[:, :3] = rows[starts, :3]
        summed[:, _MAX_COL] = np.maximum.reduceat(rows[:, _MAX_COL], starts)
        rows = summed
        # fill the bins inside each (flow, direction) span with zero rows
        fd = rows[:, 0] * 2 + rows[:, 1]
        first = np.flatnonzero(np.r_[True, fd[1:] != fd[:-1]])
        last = np.r_[first[1:], rows.shape[0]] - 1
        span = rows[last, 2] - rows[first, 2] + 1
        dense = np.zeros((int(span.sum()), N_IV), np.int64)
        base = np.r_[0, np.cumsum(span)[:-1]]
        grp = np.repeat(np.arange(first.size), span)
        dense[:, 0] = rows[first[grp], 0]
        dense[:, 1] = rows[first[grp], 1]
        dense[:, 2] = rows[first[grp], 2] + (np.arange(dense.shape[0]) - base[grp])
        row_grp = np.repeat(np.arange(first.size), np.diff(np.r_[first, rows.shape[0]]))
        dense[base[row_grp] + rows[:, 2] - rows[first[row_grp], 2], 3:] = rows[:, 3:]
        rows = dense
    bin_s = bin_ns / 1e9
    out: dict[str, np.ndarray] = {
        "flow": rows[:, 0].copy(), "direction": rows[:, 1].astype(np.int8), "bin": rows[:, 2].copy(),
        "start_time_ns": t0_ns + rows[:, 2] * bin_ns,
    }
    for j, c in enumerate(IV_NAMES):
        out[c] = rows[:, 3 + j].copy()
    out["throughput_bps"] = out["wire_bytes"] * 8 / bin_s
    out["goodput_bps"] = out["goodput_bytes"] * 8 / bin_s
    with np.errstate(invalid="ignore", divide="ignore"):
        pay = out["payload_bytes"].astype(float)
        out["retransmission_score"] = np.where(pay > 0, out["retransmitted_bytes"] / pay, np.nan)
        n = out["ack_interarrival_count"].astype(float)
        out["ack_interarrival_mean_ns"] = np.where(n > 0, out["ack_interarrival_sum_ns"] / n, np.nan)
    return out


def interval_table(rows: np.ndarray, t0_ns: int, bin_ns: int) -> pd.DataFrame:
    """interval_arrays as a DataFrame (``direction`` categorical orig/resp)."""
    import pandas as pd  # noqa: PLC0415 pandas: `benchbook tcp` imports this module without it

    cols = interval_arrays(rows, t0_ns, bin_ns)
    df = pd.DataFrame(cols)
    df["direction"] = pd.Categorical.from_codes(cols["direction"].astype(np.int64), categories=list(DIRECTIONS))
    return df


def flow_goodput_series(cols: dict[str, np.ndarray], flows: np.ndarray | None = None,
                        column: str = "goodput_bps") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(flow, start_time_ns, value) per flow and bin, both directions summed; only ``flows`` when given."""
    sel = np.ones(cols["flow"].shape[0], bool) if flows is None else np.isin(cols["flow"], flows)
    f, t, v = cols["flow"][sel], cols["start_time_ns"][sel], cols[column][sel]
    if f.size == 0:
        return f, t, v.astype(float)
    order = np.lexsort((t, f))
    f, t, v = f[order], t[order], v[order]
    starts = np.flatnonzero(np.r_[True, (f[1:] != f[:-1]) | (t[1:] != t[:-1])])
    return f[starts], t[starts], np.add.reduceat(v.astype(float), starts)
