"""Shared by the EVT tests, independent of benchbook.analysis.evt's own arithmetic: the profile negative
log-likelihood of a return level over many GPD shapes at once (the oracle of the interval searches), and a counter of
the profile evaluations evt's interval search makes (its cost: the real function, wrapped to count its calls)."""

from __future__ import annotations

import numpy as np

from benchbook.analysis import evt


def nll_at_shapes(d: float, log_mz: float, xis: np.ndarray, y: np.ndarray) -> np.ndarray:
    """GPD nll of y at sigma = d xi / ((m zeta)^xi - 1) (Coles 4.13 solved for sigma; d / log(m zeta) at xi = 0),
    for every shape in xis at once, written with log1p and expm1; +inf where sigma is not positive or a point lies
    outside the support."""
    xis = np.asarray(xis, dtype=np.float64)
    zero = xis == 0
    with np.errstate(all="ignore"):
        sigma = d / np.where(zero, log_mz, np.expm1(xis * log_mz) / np.where(zero, 1.0, xis))
        t = xis[:, None] * y[None, :] / sigma[:, None]
        bad = np.any(t <= -1.0, axis=1) | ~(sigma > 0) | ~np.isfinite(sigma)
        general = y.size * np.log(sigma) + (1.0 + 1.0 / xis) * np.log1p(t).sum(axis=1)
        exponential = y.size * np.log(sigma) + y.sum() / sigma
        return np.where(bad, np.inf, np.where(zero, exponential, general))


def counting_profile(monkeypatch) -> list[int]:
    """Wrap evt._profile_nll_at for the test; calls[0] counts its calls."""
    calls = [0]
    inner = evt._profile_nll_at

    def counted(*args, **kwargs):
        calls[0] += 1
        return inner(*args, **kwargs)

    monkeypatch.setattr(evt, "_profile_nll_at", counted)
    return calls
