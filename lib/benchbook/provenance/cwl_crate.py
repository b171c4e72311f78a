"""A CWLProv research object (``cwltool --provenance DIR``) as a Workflow Run RO-Crate, by runcrate.

runcrate 0.2.0 (the version the lock can hold beside cwltool 3.3) was written against an older
environment; three differences are bridged here, in this process only and only while converting:

  * cwlprov imports ``pkg_resources`` (gone from setuptools >= 81) for one call,
    ``resource_filename(package, path)``: a stand-in module answers it from importlib.resources;
  * runcrate reads ``.type`` of cwl-utils parameter objects, which cwl-utils 0.45 names ``type_``:
    a read-only ``type`` property returns ``type_``;
  * schema-salad checks every class IRI of a hint with an HTTP HEAD request; the class of benchbook's
    own hint (:data:`benchbook.provenance.cwl.NAMESPACE`, never resolvable) is answered locally, so the
    conversion needs no network.
"""

from __future__ import annotations

import contextlib
import importlib.resources
import logging
import sys
import types
from collections.abc import Iterator
from pathlib import Path

from benchbook.errors import BenchbookError
from benchbook.provenance.cwl import NAMESPACE


class CrateConversionError(BenchbookError):
    """The research object could not be converted (names the directory and the reason)."""


def _resource_filename(package: str, path: str) -> str:
    return str(importlib.resources.files(package).joinpath(path))


@contextlib.contextmanager
def _bridged() -> Iterator[None]:
    added_module = False
    try:
        import pkg_resources  # noqa: F401,PLC0415 the probe: is pkg_resources importable
    except ImportError:
        stand_in = types.ModuleType("pkg_resources")
        stand_in.resource_filename = _resource_filename  # type: ignore[attr-defined]
        sys.modules["pkg_resources"] = stand_in
        added_module = True
    import schema_salad.fetcher as fetcher  # noqa: PLC0415 after the pkg_resources stand-in (_bridged)
    from cwl_utils.parser import cwl_v1_0, cwl_v1_1, cwl_v1_2  # noqa: PLC0415 after the stand-in

    aliased = []
    for module in (cwl_v1_0, cwl_v1_1, cwl_v1_2):
        for cls in vars(module).values():
            init = getattr(cls, "__init__", None)
            if (isinstance(cls, type) and "type" not in vars(cls) and not hasattr(cls, "type")
                    and "type_" in getattr(getattr(init, "__code__", None), "co_varnames", ())):
                cls.type = property(lambda self: self.type_)  # type: ignore[attr-defined]
                aliased.append(cls)
    original_check = fetcher.DefaultFetcher.check_exists

    def check_exists(self, url: str) -> bool:  # type: ignore[no-untyped-def]
        return True if url.startswith(NAMESPACE) else original_check(self, url)

    fetcher.DefaultFetcher.check_exists = check_exists  # type: ignore[method-assign]
    try:
        yield
    finally:
        fetcher.DefaultFetcher.check_exists = original_check  # type: ignore[method-assign]
        for cls in aliased:
            del cls.type
        if added_module:
            sys.modules.pop("pkg_resources", None)


def convert(ro_dir: Path, crate_dir: Path, workflow_name: str | None = None) -> list[str]:
    """Write the Workflow Run RO-Crate of the research object ``ro_dir`` into ``crate_dir`` (absent or empty);
    returns the warnings cwlprov logged while reading it (e.g. "Entity wf:main/latency_2 not found": the
    second run of a scattered step has no PROV entity of that name; its CreateAction is in the crate)."""
    ro_dir, crate_dir = Path(ro_dir), Path(crate_dir)
    if not (ro_dir / "metadata" / "manifest.json").is_file():
        raise CrateConversionError(f"{ro_dir}: not a CWLProv research object (no metadata/manifest.json; expected "
                                   "the directory given to cwltool --provenance)")
    if crate_dir.exists() and any(crate_dir.iterdir()):
        raise CrateConversionError(f"{crate_dir}: exists and is not empty")
    with _bridged():
        from runcrate.convert import ProvCrateBuilder  # noqa: PLC0415 after the pkg_resources stand-in (_bridged)

        notes = _Notes()
        logger = logging.getLogger("cwlprov")
        logger.addHandler(notes)
        propagate, logger.propagate = logger.propagate, False
        try:
            crate = ProvCrateBuilder(ro_dir, workflow_name, None, None).build()
        except Exception as exc:  # runcrate raises whatever its parsers raise
            raise CrateConversionError(f"{ro_dir}: runcrate could not convert it: {type(exc).__name__}: "
                                       f"{exc}") from exc
        finally:
            logger.removeHandler(notes)
            logger.propagate = propagate
        crate.write(crate_dir)
    return notes.messages


class _Notes(logging.Handler):
    """Keeps the warnings cwlprov logs while a research object is read."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())
