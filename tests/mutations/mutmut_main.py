"""mutmut's command line (score.py runs `mutmut_main.py run ...` instead of `python -m mutmut run ...`) with one
fix to mutmut 2.5.1.

Before a run mutmut asks its cache which mutants still need a test (``get_cached_mutation_statuses``). That function
looks each mutant's line up by its text and remembers the first hit by text alone, so a mutant on a line whose
text occurs earlier in the file (``continue``, ``return None``, ``raise``) gets the status of the first such line's
mutant with the same index: on a rerun, an untested mutant there is skipped when the first one was killed, and
stays untested however often the module runs (record.py's second ``continue`` at line 177). Asked one line number
at a time, the same function finds each line by its text and its number.

`mutmut_main.py restore FILE ROWS` writes saved statuses (ROWS: a JSON list of [line's text, index, 0-based line
number, status]) into the cache of the working directory (score.py's restore_results)."""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any


def statuses_line_by_line(lookup: Callable[[str, list, Any], dict]) -> Callable[[str, Iterable, Any], dict]:
    """``lookup`` (mutmut's get_cached_mutation_statuses) called once per line number, its answers merged."""

    def statuses(filename: str, mutations: Iterable, hash_of_tests: Any) -> dict:
        by_line: dict[int, list] = defaultdict(list)
        for mutation_id in mutations:
            by_line[mutation_id.line_number].append(mutation_id)
        out: dict = {}
        for group in by_line.values():
            out.update(lookup(filename, group, hash_of_tests))
        return out

    return statuses


def restore(filename: str, rows_file: str) -> None:
    """The statuses of ROWS into mutmut's cache, each mutant created first as mutmut would (untested)."""
    from mutmut import RelativeMutationID, cache  # noqa: PLC0415 from build/mutate-site, as in main()

    cache.update_line_numbers(filename)
    for text, index, line_number, status in json.loads(Path(rows_file).read_text()):
        mid = RelativeMutationID(text, index, line_number)
        cache.get_cached_mutation_statuses(filename, [mid], "")
        cache.update_mutant_status(filename, mid, status, "")


def main() -> None:
    if sys.argv[1:2] == ["restore"]:
        restore(sys.argv[2], sys.argv[3])
        return
    from mutmut import cache  # noqa: PLC0415 from build/mutate-site (score.py's PYTHONPATH), not in the venv
    from mutmut.__main__ import climain  # noqa: PLC0415 likewise

    cache.get_cached_mutation_statuses = statuses_line_by_line(cache.get_cached_mutation_statuses)
    sys.argv[0] = "mutmut"
    climain()


if __name__ == "__main__":
    main()
