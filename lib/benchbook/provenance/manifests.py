"""The environment's manifest files and their readers: the pip inputs and lock, environment.yml and the Guix
manifests, each read into {name: version} (names PEP 503-normalised for pip). `benchbook env check`
(:mod:`benchbook.provenance.envcheck`) compares them; the Guix index (:mod:`benchbook.provenance.guix_index`)
lists the names they use."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from benchbook.provenance.scheme import manifest_specifications, split_spec


def normalize(name: str) -> str:
    """PEP 503 normalised distribution name."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class EnvFiles:
    root: Path

    @property
    def requirements_in(self) -> Path: return self.root / "manifests" / "requirements.in"
    @property
    def lock(self) -> Path: return self.root / "manifests" / "requirements.lock"
    @property
    def environment_yml(self) -> Path: return self.root / "environment.yml"
    @property
    def analysis(self) -> Path: return self.root / "manifests" / "analysis.scm"
    @property
    def testbed(self) -> Path: return self.root / "manifests" / "testbed.scm"
    @property
    def exceptions(self) -> Path: return self.root / "manifests" / "exceptions.toml"
    @property
    def channels(self) -> Path: return self.root / "channels.scm"


def read_requirements_in(path: Path) -> list[str]:
    """The normalised distribution names manifests/requirements.in asks for."""
    names = []
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            names.append(normalize(re.split(r"[<>=!~\[; ]", line, maxsplit=1)[0]))
    return names


def read_lock(path: Path) -> dict[str, str]:
    """{normalised name: version} from a hashed pip lock (name==version lines)."""
    pins: dict[str, str] = {}
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line or line[0] in " #\t-":
            continue
        m = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==([^\s;\\]+)", line)
        if not m:
            raise ValueError(f"{path}: line {lineno}: expected 'name==version', got {line[:60]!r}")
        pins[normalize(m.group(1))] = m.group(2)
    return pins


def read_environment_yml(path: Path) -> tuple[dict[str, tuple[str, str]], dict[str, Any]]:
    """({name: (version, "conda"|"pip")}, whole document)."""
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else "?"
        raise ValueError(f"{path}: {where}: not valid YAML ({exc})") from None
    pins: dict[str, tuple[str, str]] = {}
    for i, dep in enumerate(doc.get("dependencies") or []):
        if isinstance(dep, dict) and "pip" in dep:
            for spec in dep["pip"]:
                m = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)$", str(spec).strip())
                if not m:
                    raise ValueError(f"{path}: pip dependency {spec!r}: expected 'name==version' (exact pin)")
                pins[normalize(m.group(1))] = (m.group(2), "pip")
        elif isinstance(dep, str):
            m = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:=+\s*([^\s=]+))?", dep.strip())
            if not m:
                raise ValueError(f"{path}: dependency {i + 1} {dep!r}: expected 'name=version'")
            pins[normalize(m.group(1))] = (m.group(2) or "", "conda")
        else:
            raise ValueError(f"{path}: dependency {i + 1}: expected a string or a 'pip:' list")
    return pins, doc


def read_manifest(path: Path) -> dict[str, str | None]:
    """{Guix package name: version or None} of a Guix manifest, one entry per specification."""
    out: dict[str, str | None] = {}
    for spec in manifest_specifications(path):
        name, version = split_spec(spec)
        out[name] = version
    return out
