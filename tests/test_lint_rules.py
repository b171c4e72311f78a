"""`make lint` fails on what keeps the tree lean: an import inside a function without its reason, a noqa that
suppresses nothing, an import cycle, dead code. Each rule is shown failing on a planted snippet, with the
repository's own configuration (pyproject.toml), and passing on the tree."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from benchbook.paths import REPO_ROOT

LINT = REPO_ROOT / "tests" / "lint"
sys.path.insert(0, str(LINT))
import dead_code  # noqa: E402
import noqa_reasons  # noqa: E402

RUFF = str(Path(sys.executable).with_name("ruff"))

LAZY = textwrap.dedent('''\
    def f():
        import json
        return json
    ''')


def ruff_codes(code: str, as_file: str) -> list[str]:
    """The rule codes ruff reports for ``code`` checked as if it were ``as_file`` (its per-file rules apply)."""
    r = subprocess.run([RUFF, "check", "--output-format", "concise", "--stdin-filename", as_file, "-"],
                       input=code, capture_output=True, text=True, cwd=REPO_ROOT)
    return [line.split()[1] for line in r.stdout.splitlines() if line.startswith(as_file)]


def test_an_import_inside_a_function_fails_outside_commands_only():
    assert ruff_codes(LAZY, "lib/benchbook/analysis/planted.py") == ["PLC0415"]
    assert ruff_codes(LAZY, "tests/analysis/test_planted.py") == ["PLC0415"]
    assert ruff_codes(LAZY, "lib/benchbook/commands/planted.py") == []  # the lazy CLI


def test_a_kept_import_needs_its_reason_on_the_line():
    bare = LAZY.replace("import json\n", "import json  # noqa: PLC0415\n")
    why = LAZY.replace("import json\n", "import json  # noqa: PLC0415 json is only needed here\n")
    assert ruff_codes(bare, "lib/benchbook/analysis/planted.py") == []  # ruff is content with a bare noqa ...
    assert noqa_reasons.missing_reasons(bare) == [2]                   # ... this check is not
    assert noqa_reasons.missing_reasons(why) == []
    assert ruff_codes(why, "lib/benchbook/analysis/planted.py") == []


def test_a_noqa_that_suppresses_nothing_fails():
    code = "import json  # noqa: F401\n\nprint(json.dumps(1))\n"
    assert ruff_codes(code, "lib/benchbook/analysis/planted.py") == ["RUF100"]


def test_the_tree_passes_ruff_and_the_reason_check():
    r = subprocess.run([RUFF, "check", "."], capture_output=True, text=True, cwd=REPO_ROOT)
    assert r.returncode == 0, r.stdout[-2000:]
    assert noqa_reasons.main() == 0


def test_dead_code_fails_and_the_tree_has_none(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text(textwrap.dedent('''\
        def used():
            return 1


        def never_called():
            return used()


        def after_return():
            return used()
            print("unreachable")
        '''))
    found = dead_code.findings(extra=[planted], reported=(str(planted),))
    assert any("unused function 'never_called'" in f for f in found), found
    assert any("unreachable code after 'return'" in f for f in found), found
    assert not any("'used'" in f for f in found), found
    assert dead_code.findings() == []


@pytest.mark.parametrize("contract", ["No import cycles between sibling modules or packages"])
def test_the_import_contracts_hold(contract):
    r = subprocess.run([str(Path(sys.executable).with_name("lint-imports"))], capture_output=True, text=True,
                       cwd=REPO_ROOT)
    assert r.returncode == 0, r.stdout[-2000:]
    assert f"{contract} KEPT" in " ".join(r.stdout.split())
