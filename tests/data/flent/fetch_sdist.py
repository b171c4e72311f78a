"""Fetch the Flent data files that Flent ships in its source distribution (unittests/test_data/*.flent.gz:
real runs by Flent's authors, data-format versions 2, 3 and 4), pinned by SHA-256, into build/corpus/flent-2.3.0/.

    python3 tests/data/flent/fetch_sdist.py [DEST]

`make deps` runs it; the files are GPL-3.0 (Flent's licence, copied beside them) and are not committed.
pip downloads the sdist from PyPI and refuses it when its hash differs. Exit 0 also when PyPI cannot be
reached (the tests that need the files then skip and say why)."""

from __future__ import annotations

import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

PACKAGE = "flent==2.3.0"
SHA256 = "ab2f81bcca410c1b41a8410cf72124a3f19bda9bacc45fcbaa2bad48a952d9e1"
FILES = ("test-http-1up.flent.gz", "test-http.flent.gz", "test-rrul-icmp.flent.gz", "test-rrul.flent.gz",
         "test-rrul_be-socket_stats.flent.gz", "test-rtt-fair.flent.gz", "test-tcp_1up_noping-cpu_stats.flent.gz",
         "test-tcp_nup.flent.gz", "test-voip-1up.flent.gz", "test-voip-rrul.flent.gz")
ROOT = Path(__file__).resolve().parents[3]
DEFAULT_DEST = ROOT / "build" / "corpus" / "flent-2.3.0"


def fetch(dest: Path = DEFAULT_DEST) -> str | None:
    """Put FILES and LICENSE into dest; None when done, else why not."""
    if all((dest / f).is_file() for f in FILES + ("LICENSE",)):
        return None
    with tempfile.TemporaryDirectory() as tmp:
        req = Path(tmp) / "req.txt"
        req.write_text(f"{PACKAGE} --hash=sha256:{SHA256}\n")
        r = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--no-deps",
                            "--no-binary", ":all:", "--require-hashes", "-r", str(req), "-d", tmp],
                           capture_output=True, text=True, timeout=600)
        tars = list(Path(tmp).glob("flent-*.tar.gz"))
        if r.returncode != 0 or len(tars) != 1:
            return f"pip download {PACKAGE} failed: {(r.stderr or r.stdout).strip()[-300:]}"
        dest.mkdir(parents=True, exist_ok=True)
        with tarfile.open(tars[0]) as tar:
            for m in tar.getmembers():
                name = Path(m.name).name
                if m.isfile() and (name in FILES and "/unittests/test_data/" in m.name
                                   or m.name.count("/") == 1 and name == "LICENSE"):
                    data = tar.extractfile(m)
                    assert data is not None
                    part = dest / (name + ".part")
                    part.write_bytes(data.read())
                    part.replace(dest / name)
    missing = [f for f in FILES if not (dest / f).is_file()]
    return f"not in the sdist: {missing}" if missing else None


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_DEST
    why = fetch(target)
    print(f"flent corpus: {why}" if why else f"flent corpus: {len(FILES)} files in {target}")
