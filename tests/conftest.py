"""Shared fixtures.

Real-vLLM tests use the ``vllm`` fixture: when vLLM cannot be imported they
FAIL (the README's test command installs the ``vllm`` extra), unless
``SHADOWD_ALLOW_NO_VLLM=1`` is set by a developer who knowingly runs a
partial suite; CI never sets it.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")


@pytest.fixture(scope="session")
def vllm():
    try:
        import vllm as _vllm  # noqa: F401
        from vllm.v1.core.sched.async_scheduler import AsyncScheduler  # noqa: F401
    except Exception as exc:  # pragma: no cover - depends on the environment
        if os.environ.get("SHADOWD_ALLOW_NO_VLLM") == "1":
            pytest.skip(f"vLLM not importable ({exc}); SHADOWD_ALLOW_NO_VLLM=1")
        pytest.fail(
            f"vLLM is required for this test but cannot be imported: {exc}. "
            "Install the extra: pip install -e '.[vllm,test]' (make test does)."
        )
    return _vllm


@pytest.fixture
def ipc_endpoint():
    """A fresh ipc:// endpoint in a short temporary directory (ipc paths are length-limited)."""
    d = tempfile.mkdtemp(prefix="shd-")
    yield f"ipc://{d}/tap.sock"


@pytest.fixture
def db_path(tmp_path: Path) -> str:
    return str(tmp_path / "shadowd.duckdb")


@pytest.fixture(scope="session")
def llama_dir() -> str:
    from shadowd.paths import models_dir

    return str(models_dir() / "llama-3.1-8b")
