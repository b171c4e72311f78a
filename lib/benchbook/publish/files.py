"""What of a run directory goes onto the site: downloads, raw data (per --raw), and the RO-Crate zip."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from benchbook.experiment.rocrate_export import export_run

RAW_MODES = ("copy", "link", "none")
RAW_SUFFIXES = (".pcap", ".pcapng", ".pcap.zst", ".pcapng.zst", ".pcap.gz", ".pcapng.gz", ".erf")
# Each run directory carries its own plotly.js and standalone figure pages; the site has one
# plotly.js and draws the figures in the notebook's page.
NOT_PUBLISHED_SUFFIXES = (".html", ".js")
# stored in the crate zip as they are (deflating them again gains nothing)
COMPRESSED_SUFFIXES = (".png", ".parquet", ".zst", ".gz", ".zip", ".xz", ".bz2")


def is_raw(rel_path: str) -> bool:
    """Raw data: anything under raw/ and packet captures wherever the notebook wrote them."""
    return rel_path.startswith("raw/") or rel_path.lower().endswith(RAW_SUFFIXES)


def is_download(rel_path: str) -> bool:
    return not is_raw(rel_path) and not rel_path.lower().endswith(NOT_PUBLISHED_SUFFIXES)


def place_file(src: Path, dest: Path, mode: str = "copy") -> None:
    """Copy ``src`` to ``dest`` (mode copy) or symlink it there by its absolute path (mode link: the
    site then needs the run directory where it is)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    if mode == "link":
        os.symlink(src.resolve(), dest)
    else:
        shutil.copyfile(src, dest)


def _replace_ids(node: Any, renamed: dict[str, str]) -> Any:
    if isinstance(node, dict):
        if set(node) == {"@id"} and node["@id"] in renamed:
            return {"@id": renamed[node["@id"]]}
        return {k: _replace_ids(v, renamed) for k, v in node.items()}
    if isinstance(node, list):
        return [_replace_ids(v, renamed) for v in node]
    return node


def crate_zip(run_dir: Path, dest_zip: Path, include_raw: bool) -> Path:
    """The run's Workflow Run RO-Crate (benchbook.experiment.rocrate_export) as a zip.

    Without raw data, raw outputs stay in the crate's metadata with their SHA-256 and size as
    described entities ("#output-<path>"), not as files, so the crate stays valid and small.
    """
    with tempfile.TemporaryDirectory(prefix=".crate-", dir=dest_zip.parent) as tmp:
        crate_dir = Path(tmp) / "crate"
        export_run(run_dir, crate_dir)
        if not include_raw:
            meta_path = crate_dir / "ro-crate-metadata.json"
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            renamed: dict[str, str] = {}
            for ent in meta["@graph"]:
                ident = ent.get("@id", "")
                if ident.startswith("outputs/") and is_raw(ident[len("outputs/"):]):
                    renamed[ident] = f"#output-{ident[len('outputs/'):]}"
                    ent["@id"] = renamed[ident]
                    ent["description"] = "raw output, not included in this crate (published without raw data)"
                    (crate_dir / ident).unlink(missing_ok=True)
            graph = _replace_ids(meta["@graph"], renamed)
            for ent in graph:
                if isinstance(ent.get("hasPart"), list):
                    ent["hasPart"] = [p for p in ent["hasPart"] if p.get("@id") not in renamed.values()]
            meta["@graph"] = graph
            meta_path.write_text(json.dumps(meta, indent=1), encoding="utf-8")
        tmp_zip = dest_zip.with_name(f".{dest_zip.name}.tmp")
        with zipfile.ZipFile(tmp_zip, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
            for path in sorted(crate_dir.rglob("*")):
                if path.is_file():
                    stored = path.name.lower().endswith(COMPRESSED_SUFFIXES)
                    zf.write(path, path.relative_to(crate_dir).as_posix(),
                             compress_type=zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED)
        os.replace(tmp_zip, dest_zip)
    return dest_zip
