"""Compiled scanner for large MoonGen histogram files (``value,count`` lines).

Used by benchbook.tools.moongen_histogram.read_moongen_histogram for big files; the line-by-line
reader there reports errors: this scanner only says *whether* and where the input stops being
simple (the tests compare both with the reference reader in tests/moongen_reference.py).
"""

from __future__ import annotations

import numpy as np

from benchbook.kernels import njit

MAX_INT_DIGITS = 18
MAX_FRAC_DIGITS = 12


@njit(cache=True, inline="always")
def _digits(buf, i, n):  # pragma: no cover - compiled
    """The decimal digits from buf[i] on: their value, how many there are, and the index after them."""
    v = 0
    nd = 0
    while i < n and 48 <= buf[i] <= 57:
        v = v * 10 + (buf[i] - 48)
        nd += 1
        i += 1
    return v, nd, i


@njit(cache=True)
def scan_histogram(buf):  # pragma: no cover - compiled
    """Parse bytes `buf` of lines ``[ws]digits[.digits][ws],[ws]digits[ws][\\r]\\n``.

    Returns (int_part, frac_value, frac_len, count, bad_offset): per data line the integer part,
    the fractional digits as an integer and their number, and the count; blank lines are skipped.
    bad_offset is -1 when everything parsed, else the byte offset of the first line that did not
    (exponents, signs, too many digits, garbage, a truncated line): the caller falls back to the
    reference reader for those."""
    n = buf.shape[0]
    lines = 1
    for j in range(n):
        if buf[j] == 10:
            lines += 1
    ip = np.empty(lines, np.int64)
    fv = np.empty(lines, np.int64)
    fl = np.empty(lines, np.int64)
    cnt = np.empty(lines, np.int64)
    k = 0
    i = 0
    while i < n:
        start = i
        while i < n and (buf[i] == 32 or buf[i] == 9 or buf[i] == 13):
            i += 1
        if i >= n:
            break
        if buf[i] == 10:
            i += 1
            continue
        v, nd, i = _digits(buf, i, n)  # integer part
        if nd == 0 or nd > MAX_INT_DIGITS:
            return ip[:k], fv[:k], fl[:k], cnt[:k], start
        f = 0
        nf = 0
        if i < n and buf[i] == 46:
            f, nf, i = _digits(buf, i + 1, n)
            if nf > MAX_FRAC_DIGITS:
                return ip[:k], fv[:k], fl[:k], cnt[:k], start
        while i < n and (buf[i] == 32 or buf[i] == 9):
            i += 1
        if i >= n or buf[i] != 44:
            return ip[:k], fv[:k], fl[:k], cnt[:k], start
        i += 1
        while i < n and (buf[i] == 32 or buf[i] == 9):
            i += 1
        c, nc, i = _digits(buf, i, n)
        if nc == 0 or nc > MAX_INT_DIGITS:
            return ip[:k], fv[:k], fl[:k], cnt[:k], start
        while i < n and (buf[i] == 32 or buf[i] == 9 or buf[i] == 13):
            i += 1
        if i < n and buf[i] != 10:
            return ip[:k], fv[:k], fl[:k], cnt[:k], start
        i += 1
        ip[k] = v
        fv[k] = f
        fl[k] = nf
        cnt[k] = c
        k += 1
    return ip[:k], fv[:k], fl[:k], cnt[:k], -1
