"""Where things live: the repository, its data folders and the shared material beside it."""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
REPO_ROOT = PACKAGE_DIR.parent.parent
DATA_DIR = REPO_ROOT / "data"
PUBLISHED_DIR = DATA_DIR / "published"
RUNS_DIR = Path(os.environ.get("BENCHBOOK_RUNS", DATA_DIR / "runs"))
# noise floors of this testbed per entry: data/calibration/<entry>/<host key>.json (benchbook.reproduce.noise_floor)
CALIBRATION_DIR = Path(os.environ.get("BENCHBOOK_CALIBRATION", DATA_DIR / "calibration"))
NOTEBOOKS_DIR = REPO_ROOT / "notebooks"
MANIFESTS_DIR = REPO_ROOT / "manifests"
BUILD_DIR = REPO_ROOT / "build"
# ../shared beside the checkout holds the seed papers, their digests and third-party datasets.
SHARED_DIR = Path(os.environ.get("BENCHBOOK_SHARED", REPO_ROOT.parent / "shared"))
SHARED_DATASETS = SHARED_DIR / "datasets"
