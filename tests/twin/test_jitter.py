"""Jitter is seeded and at the scale Vidur measured."""

from __future__ import annotations

import numpy as np

from shadowd.twin import ReferenceEngine

ARGS = ([1] * 64, [2000] * 64, [False] * 64)


def draws(engine: ReferenceEngine, n: int) -> np.ndarray:
    return np.array([engine.latency_ms(*ARGS) for _ in range(n)])


def test_same_seed_same_values_other_seed_other_values():
    a, b = ReferenceEngine("builtin", seed=7), ReferenceEngine("builtin", seed=7)
    c = ReferenceEngine("builtin", seed=8)
    x, y, z = draws(a, 50), draws(b, 50), draws(c, 50)
    np.testing.assert_array_equal(x, y)
    assert not np.array_equal(x, z)
    a.reseed(7)
    np.testing.assert_array_equal(draws(a, 50), x)


def test_expected_ms_does_not_consume_the_jitter_stream():
    a, b = ReferenceEngine("builtin", seed=3), ReferenceEngine("builtin", seed=3)
    a.expected_ms(*ARGS)
    assert a.latency_ms(*ARGS) == b.latency_ms(*ARGS)


def test_jitter_scale_is_the_measured_one():
    e = ReferenceEngine("h100_sxm", "llama-3.1-8b", seed=1)
    truth = e.expected_ms(*ARGS)
    host = e.breakdown(*ARGS)["host_ms"]
    x = draws(e, 600)
    gpu_rel = np.std(x) / (truth - host)
    measured = e.platform.kernels.noise.gpu_rel_std  # Vidur: median sum(std)/sum(mean)
    assert 0.005 < measured < 0.05
    assert 0.5 * measured < gpu_rel < 2.0 * measured, (gpu_rel, measured)
    # log-normal GPU noise is mean-preserving; the host tail only adds
    assert truth < np.mean(x) < truth * 1.02
    assert not e.jitter or x.min() > 0.9 * truth


def test_jitter_off_is_deterministic():
    e = ReferenceEngine("builtin", jitter=False)
    assert len(set(draws(e, 5))) == 1
