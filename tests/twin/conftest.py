"""Engines shared by the reference-engine tests (construction interpolates tables once)."""

from __future__ import annotations

from functools import cache

import pytest

from shadowd.twin import ReferenceEngine


@cache
def _engine(platform: str, model: str, tp: int) -> ReferenceEngine:
    return ReferenceEngine(platform, model, tp, seed=0, jitter=False)


@pytest.fixture(scope="session")
def engine():
    """``engine(platform, model="llama-3.1-8b", tp=1)``: a cached, noiseless engine."""
    return lambda platform, model="llama-3.1-8b", tp=1: _engine(platform, model, tp)
