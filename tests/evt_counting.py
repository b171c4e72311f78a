"""Counting the profile-likelihood evaluations of benchbook.analysis.evt's interval search (its cost), shared by
the EVT tests: the real function, wrapped to count its calls."""

from __future__ import annotations

from benchbook.analysis import evt


def counting_profile(monkeypatch) -> list[int]:
    """Wrap evt._profile_nll_at for the test; calls[0] counts its calls."""
    calls = [0]
    inner = evt._profile_nll_at

    def counted(*args, **kwargs):
        calls[0] += 1
        return inner(*args, **kwargs)

    monkeypatch.setattr(evt, "_profile_nll_at", counted)
    return calls
