"""Fixtures for the alert tests; ``alertmanager`` is reusable by any test that can import this dir."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
# Helpers here (alertmanager_server, alert_http_stub, alert_fakes) import by name.
sys.path.insert(0, str(HERE))
# pytest puts tests/ on sys.path, where this directory is a namespace-package candidate
# called "alerts"; unless the project root is on sys.path too (plain `pytest` with an
# editable install), `import alerts` would find this directory instead of the library.
if str(ROOT) not in sys.path:
    sys.path.insert(1, str(ROOT))
if getattr(sys.modules.get("alerts"), "__file__", "") is None:
    del sys.modules["alerts"]

from alertmanager_server import AlertmanagerServer, start_alertmanager  # noqa: E402


@pytest.fixture(scope="module")
def alertmanager(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AlertmanagerServer]:
    """A real Alertmanager on loopback for this module; fails (never skips) if it cannot be had."""
    try:
        server = start_alertmanager(tmp_path_factory.mktemp("alertmanager"))
    except RuntimeError as err:
        problem = str(err)
    else:
        yield server
        server.stop()
        return
    pytest.fail(problem, pytrace=False)
