"""The within-run resolvability rule V2 against the table of statistics-rules.md and high-precision logs."""

from __future__ import annotations

from decimal import Decimal, localcontext

import numpy as np
import pytest

from benchbook.analysis.resolvability import (
    highest_resolvable_percent,
    resolve,
    resolved_percentiles,
    samples_needed,
)


def test_table_of_the_rules() -> None:
    # statistics-rules.md V2 and issue 21: p99 368, p99.9 3,688, p99.99 36,887, p99.999 368,887, p99.9999 3,688,878
    assert [samples_needed(p) for p in (99, 99.9, 99.99, 99.999, 99.9999)] == [368, 3688, 36887, 368887, 3688878]
    assert samples_needed(50) == 6  # the same six as the median's interval across runs
    assert samples_needed(1) == samples_needed(99) and samples_needed(10) == samples_needed(90) == 36
    assert samples_needed(100) is None and samples_needed(0) is None


@pytest.mark.parametrize("percent", ["50", "75", "90", "95", "99", "99.5", "99.9", "99.95", "99.99", "99.999",
                                     "99.9999", "99.99999", "25", "5", "0.1"])
@pytest.mark.parametrize("alpha", ["0.05", "0.01", "0.1"])
def test_needed_is_the_smallest_n_with_both_tails_at_alpha_half(percent: str, alpha: str) -> None:
    with localcontext() as ctx:
        ctx.prec = 60
        p = Decimal(percent) / 100
        half = (Decimal(alpha) / 2).ln()
        n = samples_needed(float(percent), float(alpha))
        for tail in (p, 1 - p):
            assert n * tail.ln() <= half  # tail^N <= alpha/2
        assert max((n - 1) * p.ln(), (n - 1) * (1 - p).ln()) > half  # and N - 1 falls short in one tail


def test_resolve_boundary_and_reason() -> None:
    assert resolve(99.99, 36887).ok and not resolve(99.99, 36886).ok
    r = resolve(99.999, 99881)
    assert not r.ok and r.reason == "not resolvable at N = 99881: p99.999 needs N >= 368887 for a 95 % interval"
    assert resolve(99.999, 10000).reason.startswith("not resolvable at N = 10000")
    assert "maximum has no confidence interval" in resolve(100, 10**9).reason
    assert highest_resolvable_percent(36887) >= 99.99 > highest_resolvable_percent(36886)


def test_meaning_by_simulation() -> None:
    """At N = needed, the largest of N samples lies above the true p99 with probability >= 1 - alpha/2."""
    rng = np.random.default_rng(3)
    n = samples_needed(99)
    below = np.mean(rng.random((20000, n)).max(axis=1) < 0.99)
    assert 0.99**n <= 0.025 and abs(below - 0.99**n) < 0.005
    below = np.mean(rng.random((20000, n - 10)).max(axis=1) < 0.99)
    assert below > 0.025


def test_resolved_percentiles_null_plus_reason() -> None:
    shown, why = resolved_percentiles({"50": 10, "99": 20, "99.9": 30, "99.999": 40}, 1000)
    assert shown == {"50": 10, "99": 20, "99.9": None, "99.999": None}
    assert set(why) == {"99.9", "99.999"} and why["99.9"].startswith("not resolvable at N = 1000")
