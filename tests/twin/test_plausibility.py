"""Step latencies against what these GPUs are known to do (issue 3's plausibility list)."""

from __future__ import annotations

import numpy as np
import pytest

from shadowd.twin import ReferenceEngine

PLATFORMS = ["h100_sxm", "builtin"]


def decodes(n: int, kv: int):
    return [1] * n, [kv] * n, [False] * n


@pytest.mark.parametrize("platform", PLATFORMS)
def test_one_decode_at_1k_kv(engine, platform):
    t = engine(platform).expected_ms(*decodes(1, 1024))
    assert 5.0 <= t <= 12.0, t


@pytest.mark.parametrize("platform", PLATFORMS)
def test_prefill_2048(engine, platform):
    t = engine(platform).expected_ms([2048], [0], [True])
    assert 30.0 <= t <= 80.0, t


@pytest.mark.parametrize("platform", PLATFORMS)
def test_128_decodes_at_4k_clearly_slower_than_one(engine, platform):
    e = engine(platform)
    one, many = e.expected_ms(*decodes(1, 4096)), e.expected_ms(*decodes(128, 4096))
    assert many > 2.0 * one, (one, many)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_chunk_after_cached_prefix_slower_than_cold_chunk(engine, platform):
    e = engine(platform)
    cold, warm = e.expected_ms([512], [0], [True]), e.expected_ms([512], [3072], [True])
    assert warm > cold, (cold, warm)
    b_cold, b_warm = e.breakdown([512], [0], [True]), e.breakdown([512], [3072], [True])
    assert b_warm["attention_prefill_ms"] > 1.3 * b_cold["attention_prefill_ms"]
    assert b_warm["gemm_ms"] == b_cold["gemm_ms"]  # the prefix adds attention only


@pytest.mark.parametrize("platform", ["a100_sxm", "builtin:a100_sxm"])
def test_a100_slower_than_h100(engine, platform):
    a100, h100 = engine(platform), engine("h100_sxm")
    assert 8.0 <= a100.expected_ms(*decodes(1, 1024)) <= 20.0
    # 312 vs 989 TFLOP/s: a long prefill is compute-bound, about 2.5-3.5x slower
    ratio = a100.expected_ms([4096], [0], [True]) / h100.expected_ms([4096], [0], [True])
    assert 2.0 < ratio < 4.0, ratio


def test_qwen_14b_sanity(engine):
    qwen, llama = engine("h100_sxm", "qwen2.5-14b"), engine("h100_sxm")
    t = qwen.expected_ms(*decodes(1, 1024))
    assert 9.0 <= t <= 20.0, t  # ~29 GB of weights at ~3 TB/s
    assert t > 1.5 * llama.expected_ms(*decodes(1, 1024))
    assert qwen.expected_ms([2048], [0], [True]) > 1.5 * llama.expected_ms([2048], [0], [True])


@pytest.mark.parametrize("platform", PLATFORMS)
def test_tp2_adds_allreduce_and_splits_weights(engine, platform):
    tp1, tp2 = engine(platform, tp=1), engine(platform, tp=2)
    b1, b2 = tp1.breakdown(*decodes(32, 2000)), tp2.breakdown(*decodes(32, 2000))
    assert b1["allreduce_ms"] == 0.0 and b2["allreduce_ms"] > 0.0
    assert b2["gemm_ms"] < 0.7 * b1["gemm_ms"]
    assert (
        tp1.expected_ms(*decodes(32, 2000)) / 2
        < tp2.expected_ms(*decodes(32, 2000))
        < tp1.expected_ms(*decodes(32, 2000))
    )
    big = tp2.breakdown([4096], [0], [True])
    assert big["allreduce_ms"] > b2["allreduce_ms"]  # message grows with the tokens


@pytest.mark.parametrize("platform", PLATFORMS)
def test_cuda_graph_padding(engine, platform):
    e = engine(platform)
    b17, b24 = e.breakdown(*decodes(17, 1000)), e.breakdown(*decodes(24, 1000))
    assert b17["padded_tokens"] == 24 and b17["gemm_ms"] == b24["gemm_ms"]
    # padding slots launch but hold no KV: attention sits between the real and the padded batch
    assert 17 / 24 * b24["attention_decode_ms"] < b17["attention_decode_ms"] <= b24["attention_decode_ms"]
    # above the largest captured size nothing is padded
    assert e.breakdown([600], [0], [True])["padded_tokens"] == 600


@pytest.mark.parametrize("platform", PLATFORMS)
def test_not_linear_in_tokens(engine, platform):
    """Per-token cost of a prefill falls steeply, then rises again with attention."""
    e = engine(platform)
    per_token = {m: e.expected_ms([m], [0], [True]) / m for m in (16, 256, 2048, 16384)}
    assert per_token[16] > 10 * per_token[2048]
    assert per_token[16384] > per_token[2048]


def test_heterogeneous_kv_between_its_extremes(engine):
    e = engine("h100_sxm")
    mixed = e.breakdown([1] * 64, [256] * 32 + [8192] * 32, [False] * 64)["attention_decode_ms"]
    short = e.breakdown(*decodes(64, 256))["attention_decode_ms"]
    long = e.breakdown(*decodes(64, 8192))["attention_decode_ms"]
    assert short < mixed < long


def test_slowdown_scales_kernels_not_host():
    e = ReferenceEngine("builtin", "llama-3.1-8b", jitter=False)
    args = decodes(64, 3000)
    base = e.breakdown(*args)
    e.slowdown = 0.2
    slow = e.breakdown(*args)
    assert slow["host_ms"] == base["host_ms"]
    assert slow["total_ms"] - slow["host_ms"] == pytest.approx(1.2 * (base["total_ms"] - base["host_ms"]))


def test_subset_latencies_match_single_calls(engine):
    e = engine("h100_sxm")
    rng = np.random.default_rng(5)
    n = 30
    new = np.where(rng.random(n) < 0.2, rng.integers(2, 3000, n), 1)
    pre = new > 1
    ctx = np.where(pre & (rng.random(n) < 0.5), 0, rng.integers(1, 9000, n))
    masks = rng.random((40, n)) < 0.5
    masks[0], masks[1], masks[2] = True, ~pre, pre
    masks[3] = False
    got = e.subset_latency_ms(new, ctx, pre, masks)
    want = [e.expected_ms(new[m], ctx[m], pre[m]) for m in masks]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_empty_step_costs_nothing(engine):
    assert engine("builtin").expected_ms([], [], []) == 0.0
