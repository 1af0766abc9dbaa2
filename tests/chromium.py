"""Headless Chromium for the HTML pages (``shadowd report --html``, ``shadowd replay --html``).

Chromium is a system package (``make system-deps``); a test that needs it fails, never skips,
when it is missing.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--window-size=1200,3000",
]


def screenshot(page: str, tmp_path: Path) -> Path:
    """Headless Chromium screenshot of ``page``; fails (never skips) when Chromium is missing."""
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.fail(
            "headless Chromium is required: apt-get update && "
            "apt-get install -y --no-install-recommends chromium  (make system-deps does)"
        )
    png = tmp_path / f"{Path(page).stem}.png"
    profile = tempfile.mkdtemp(prefix="shd-chrome-")
    try:
        proc = subprocess.run(
            [
                exe,
                *CHROMIUM_FLAGS,
                f"--user-data-dir={profile}",
                f"--screenshot={png}",
                Path(page).resolve().as_uri(),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    assert png.exists() and png.stat().st_size > 1000, f"no screenshot: {proc.stderr[-2000:]}"
    return png


def read_png(path: Path) -> np.ndarray:
    from matplotlib.image import imread

    return imread(str(path))


def distinct_colours(image: np.ndarray) -> int:
    rgb = (image[..., :3] * 255).astype(np.uint8).reshape(-1, 3)
    return len(np.unique(rgb[:: max(1, len(rgb) // 200_000)], axis=0))
