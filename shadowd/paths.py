"""Where shared reference data lives.

The project never copies ``../shared`` into the repository; it reads it in
place.  ``SHADOWD_SHARED`` overrides the default (``<repo>/../shared``), which
is how CI's clean clone and an installed package find it.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def shared_dir() -> Path:
    """The shared data directory; raises with the fix when it is missing."""
    path = Path(os.environ.get("SHADOWD_SHARED", REPO_ROOT.parent / "shared"))
    if not path.is_dir():
        raise FileNotFoundError(
            f"shared reference data not found at {path}; set SHADOWD_SHARED to the "
            "directory holding data/ and models/"
        )
    return path


def data_dir() -> Path:
    return shared_dir() / "data"


def models_dir() -> Path:
    return shared_dir() / "models"
