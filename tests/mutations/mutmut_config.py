"""mutmut's hook (score.py copies this file to the root of the tree copy mutmut runs in): picks the tests for each
mutant from the coverage pass's selection (MUTATE_SELECTION), and names the mutant for run_tests.py's log (the
environment mutmut's test command inherits).

A mutant of a line that the selection maps to tests runs only those; any other runs the module's whole list.
mutmut runs with --rerun-all: a mutant that survives its selected tests runs the whole list too, so the selection
saves time and never turns a killed mutant into a survivor. A mutant outside the selection ran the whole list by
node id already; run_tests.py then collects the rerun's tests and runs them only if one was not in that list.
With score.py --sample, a mutant not measured before is tested only when it is in the seeded sample (sampling.py)."""

from __future__ import annotations

import functools
import json
import os
import shlex
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))  # the tree copy's root (score.py copies this file there)
sys.path[:0] = [os.path.join(_HERE, "tests", "mutations"), _HERE]
from sampling import in_sample  # noqa: E402 tests/mutations/ of the tree copy, put on sys.path just above


@functools.cache
def _selection() -> dict:
    with open(os.environ["MUTATE_SELECTION"], encoding="utf-8") as fh:
        return json.load(fh)


def pre_mutation(context) -> None:  # mutmut's Context
    sel = _selection()
    line = context.mutation_id.line_number + 1
    sample = sel.get("sample")
    os.environ["MUTATE_SAMPLED"] = ""
    if sample and f"{line}:{context.mutation_id.index}" not in sample["measured"]:
        if not in_sample(line, context.mutation_id.line, context.mutation_id.index, sample["fraction"],
                         sample["stamp"], sample["seed"]):
            context.skip = True  # mutmut records it skipped; score.py tests it again in a run without --sample
            return
        os.environ["MUTATE_SAMPLED"] = sample["stamp"]  # run_tests.py's log marks it as of this sample
    key = f"{line}:{context.mutation_id.index}"
    reviewed = sel.get("equivalent_survivors", {}).get(key)
    os.environ["MUTATE_EQUIVALENT"] = "1" if reviewed is not None and reviewed == context.mutation_id.line else ""
    tests = sel["lines"].get(str(line), sel["all"])
    os.environ["MUTATE_SELECTED"] = "line" if str(line) in sel["lines"] else "all"  # run_tests.py: no rerun twice
    os.environ["MUTATE_MUTANT"] = f"{line}:{context.mutation_id.index}"  # run_tests.py's log names it
    os.environ["MUTATE_MUTANT_LINE"] = context.mutation_id.line         # and the line's text (lines move)
    context.config.test_command = shlex.join([*sel["runner"], "--", *tests])
