"""Platforms, model shapes and the ``twin step`` entry point."""

from __future__ import annotations

import json

import numpy as np
import pytest

from shadowd.paths import data_dir
from shadowd.twin import ModelShape, load_platform, twin_step
from shadowd.twin.csv_columns import read_columns
from shadowd.twin.step_command import parse_decode, parse_prefill

H100 = data_dir() / "kernels/aiconfigurator-vllm-0.14.0/h100_sxm"


def test_platform_specs_and_keys():
    assert load_platform("builtin").key == "analytic:h100_sxm"
    assert load_platform("builtin:a100").key == "analytic:a100_sxm"
    by_name, by_dir = load_platform("h100_sxm"), load_platform(str(H100))
    assert by_name.key == by_dir.key == "aiconfigurator-vllm-0.14.0:h100_sxm"
    assert load_platform("a100").gpu == "a100_sxm"
    assert by_name.fingerprint() == by_dir.fingerprint() != load_platform("h200_sxm").fingerprint()
    assert load_platform("builtin").fingerprint() != load_platform("builtin:a100").fingerprint()
    with pytest.raises((FileNotFoundError, KeyError)):
        load_platform("/no/such/dir")


def test_tables_reproduced_at_measured_points():
    k = load_platform("h100_sxm").kernels
    g = read_columns(H100 / "gemm_perf.csv")
    for m, n, kk in [(1, 4096, 4096), (256, 6144, 4096), (2048, 16384, 4096), (8192, 4096, 12288)]:
        row = (g["m"] == m) & (g["n"] == n) & (g["k"] == kk)
        assert k.gemm_ms(np.array([m]), n, kk)[0] == pytest.approx(g["latency"][row][0], rel=1e-9)
    a = read_columns(H100 / "generation_attention_perf.csv")
    row = (
        (a["batch_size"] == 64)
        & (a["step"] == 4095)
        & (a["num_heads"] == 32)
        & (a["num_key_value_heads"] == 8)
    )
    got = k.generation_attention_ms(np.array([64]), np.array([4096]), 32, 8, 128)[0, 0]
    assert got == pytest.approx(a["latency"][row][0], rel=1e-9)
    c = read_columns(H100 / "context_attention_perf.csv")
    row = (
        (c["batch_size"] == 4) & (c["isl"] == 2048) & (c["num_heads"] == 32) & (c["num_key_value_heads"] == 8)
    )
    got = k.context_attention_ms(np.array([4]), np.array([2048]), 32, 8, 128)[0, 0]
    assert got == pytest.approx(c["latency"][row][0], rel=1e-9)


def test_gemm_between_grid_points_is_stepped_not_smooth():
    k = load_platform("h100_sxm").kernels
    m = np.arange(257, 513)
    t = k.gemm_ms(m, 6144, 4096)
    assert len(np.unique(t)) <= 5  # tile-height plateaus between 256 and 512
    assert np.all(np.diff(t) >= -1e-12)
    # an unmeasured width sits between its measured neighbours
    mid = k.gemm_ms(np.array([1, 1024]), 28672, 4096)
    lo, hi = k.gemm_ms(np.array([1, 1024]), 16384, 4096), k.gemm_ms(np.array([1, 1024]), 65536, 4096)
    assert np.all(lo < mid) and np.all(mid < hi)


def test_unmeasured_head_counts_interpolate():
    k = load_platform("h100_sxm").kernels
    b, L = np.array([8]), np.array([2048])
    t16, t20, t24 = (k.generation_attention_ms(b, L, h, 4, 128)[0, 0] for h in (16, 20, 24))
    assert min(t16, t24) <= t20 <= max(t16, t24)


def test_model_shapes(tmp_path):
    q = ModelShape.resolve("qwen2.5-14b")
    g = q.per_gpu(2)
    assert (g.heads, g.kv_heads, g.qkv_out, g.down_in, g.vocab_out) == (20, 4, 3584, 6912, 76032)
    llama = ModelShape.resolve("llama-3.1-8b")
    assert llama.per_gpu(16).kv_heads == 1  # KV heads replicated past tp = 8
    assert 350_000 < llama.kv_capacity_tokens(79.1) < 500_000
    cfg = {
        "hidden_size": 2048,
        "num_attention_heads": 16,
        "num_key_value_heads": 4,
        "head_dim": 256,
        "num_hidden_layers": 4,
        "intermediate_size": 8192,
        "vocab_size": 1000,
    }
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    s = ModelShape.resolve(tmp_path)
    assert s.head_dim == 256 and s.per_gpu(1).qkv_out == (16 + 8) * 256
    with pytest.raises(FileNotFoundError):
        ModelShape.resolve("no-such-model")
    with pytest.raises(ValueError):
        llama.per_gpu(3)


def test_twin_step_command():
    r = twin_step("h100_sxm", "llama-3.1-8b", 1, prefills=["2048"], decodes=["8x1000"])
    assert set(r) >= {"latency_ms", "breakdown", "platform"}
    assert r["platform"] == "aiconfigurator-vllm-0.14.0:h100_sxm" and r["requests"] == 9
    assert r["breakdown"]["attention_prefill_ms"] > 0 and r["breakdown"]["attention_decode_ms"] > 0
    json.dumps(r)
    assert parse_prefill("512@3072") == (512, 3072) and parse_prefill("64") == (64, 0)
    assert parse_decode("128x4096") == (128, 4096) and parse_decode("2X10") == (2, 10)
    for bad in ("0", "x", "5@-1"):
        with pytest.raises(ValueError):
            parse_prefill(bad)
    for bad in ("128", "0x5", "ax5"):
        with pytest.raises(ValueError):
            parse_decode(bad)
    with pytest.raises(ValueError):
        twin_step("builtin", "llama-3.1-8b", 1)
