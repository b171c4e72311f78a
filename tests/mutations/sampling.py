"""A seeded sample of a module's mutants, and the score estimated from it (score.py --sample; mutmut_config).

A module whose every mutant recompiles the TCP kernels (a minute each here) cannot be measured whole in one sitting:
`--sample FRACTION` tests the mutants not measured yet only when they fall in a seeded Bernoulli sample (each with
probability FRACTION, from the sha256 of the seed, the run's stamp, its line and index). The score is then estimated
from two strata: the mutants measured before (exact) and the rest, of which the sample is a simple random sample.
The run's stamp makes each run's draw new: the mutants an earlier sample left out are the rest because of that
earlier draw, and a draw by line and index alone (the first version of this file) can never pick them again at a
smaller fraction, so the sample of the rest held none from the lines the earlier run had reached.

The lower bound takes the Clopper-Pearson 95 % interval
(two-sided; its lower end, scipy.stats.beta) of the killed share among the sample's non-equivalent mutants, and the
least favourable number of non-equivalent mutants the unsampled rest can hold (the score is monotone in it), so it
holds at 97.5 % or more whatever the share of equivalents among the rest."""

from __future__ import annotations

import hashlib

SEED = 20261127


def in_sample(line_number: int, text: str, index: int, fraction: float, stamp: str, seed: int = SEED) -> bool:
    """Whether mutant `index` of line `line_number` (1-based; its text as it is now) is in the sample of the run
    `stamp`."""
    h = hashlib.sha256(f"{seed}\0{stamp}\0{line_number}\0{text}\0{index}".encode()).digest()
    return int.from_bytes(h[:8], "big") / 2.0**64 < fraction


def estimate(killed_a: int, survived_a: int, killed_b: int, survived_b: int, equivalent_b: int, unsampled_b: int,
             alpha: float = 0.05) -> tuple[float, float]:
    """(point estimate, lower bound) of killed / non-equivalent over both strata: a (measured whole: its kills and
    non-equivalent survivors) and b (the sample's kills, non-equivalent survivors and equivalents, and how many of
    b were not sampled)."""
    from scipy.stats import beta  # noqa: PLC0415 only the report needs scipy; mutmut_config imports this module

    m = killed_b + survived_b  # the sample's non-equivalent mutants
    n = m + equivalent_b
    if m == 0:
        raise ValueError("the sample holds no non-equivalent mutant: no estimate")
    total_b = n + unsampled_b
    share = killed_b / m
    ne_b = m / n * total_b
    est = (killed_a + share * ne_b) / (killed_a + survived_a + ne_b)
    share_lo = float(beta.ppf(alpha / 2, killed_b, m - killed_b + 1)) if killed_b > 0 else 0.0
    lower = min((killed_a + share_lo * ne) / (killed_a + survived_a + ne) for ne in (m, total_b - equivalent_b))
    return est, lower
