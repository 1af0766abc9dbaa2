"""Shared synthetic workload for the attribution tests (built once per session: fitting costs ~0.3 s)."""

from __future__ import annotations

import pytest

from shadowd.attribution import fit
from shadowd.attribution.accuracy import split_window
from shadowd.attribution.synthetic_steps import synthetic_batch

PLATFORM = {
    "gpu": "H100-SXM",
    "model": "llama-3.1-8b",
    "dtype": "bf16",
    "tp": 1,
    "pp": 1,
    "vllm": "0.33.0",
    "attention_backend": "FLASH_ATTN",
}


@pytest.fixture(scope="session")
def workload():
    """4000 vLLM-like steps (see shadowd.attribution.synthetic_steps), split into fit and score windows."""
    return split_window(synthetic_batch(steps=4000, seed=11), 0.5)


@pytest.fixture(scope="session")
def version(workload):
    return fit(workload[0], PLATFORM)


@pytest.fixture(scope="session")
def platform():
    return dict(PLATFORM)
