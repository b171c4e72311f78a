"""pytest plugin of tests/mutations/score.py: which test runs each line of the module under mutation.

Loaded with ``-p coverage_contexts`` (tests/mutations on PYTHONPATH, coverage from build/mutate-site); coverage.py
measures only MUTATE_COVERAGE_INCLUDE and names each line's contexts by test node id, in MUTATE_COVERAGE_FILE.
Measuring starts when pytest loads the plugin, before conftest and the test modules import benchbook."""

from __future__ import annotations

import os
from collections.abc import Iterator

import coverage
import pytest

_cov = coverage.Coverage(data_file=os.environ["MUTATE_COVERAGE_FILE"],
                         include=[os.environ["MUTATE_COVERAGE_INCLUDE"]], config_file=False)
_cov.start()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    _cov.switch_context(item.nodeid)
    yield
    _cov.switch_context("")


def pytest_unconfigure(config: pytest.Config) -> None:
    _cov.stop()
    _cov.save()
