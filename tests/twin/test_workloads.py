"""Workloads from the real trace files and the built-in synthetic mix."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from shadowd.paths import data_dir
from shadowd.twin import DEFAULT_TENANTS, RequestSpec, TenantSpec, build_workload, load_stream
from shadowd.twin.load_profile import LoadProfile
from shadowd.twin.request_spec import BLOCK_TOKENS
from shadowd.twin.traces import length_pairs, load_azure, load_mooncake, load_servegen, servegen_paths


def lengths(reqs):
    return (
        np.array([r.prompt_tokens for r in reqs]),
        np.array([r.output_tokens for r in reqs]),
        np.array([r.arrival_s for r in reqs]),
    )


@pytest.mark.parametrize("name, rows, p_med, o_med", [("code", 8819, 1469, 13), ("conv", 19366, 1020, 129)])
def test_azure_matches_the_published_medians(name, rows, p_med, o_med):
    reqs = load_azure(data_dir() / f"traces/azure-2023/AzureLLMInferenceTrace_{name}.csv", "t")
    p, o, t = lengths(reqs)
    assert len(reqs) == rows and t[0] == 0.0 and np.all(np.diff(t) >= 0)
    assert np.median(p) == p_med and np.median(o) == o_med
    assert 3000 < t[-1] < 3700  # one hour
    assert all(r.prefix_blocks is None for r in reqs[:10])


def test_azure_limit_and_duration():
    path = data_dir() / "traces/azure-2023/AzureLLMInferenceTrace_conv.csv"
    assert len(load_azure(path, "t", limit=25)) == 25
    assert max(r.arrival_s for r in load_azure(path, "t", duration_s=30.0)) <= 30.0


def test_mooncake_hash_ids_become_shared_prefixes():
    reqs = load_mooncake(data_dir() / "traces/mooncake/conversation_trace.jsonl", "docs", limit=2000)
    p, o, t = lengths(reqs)
    assert len(reqs) == 2000 and np.median(p) > 4000  # long contexts
    assert all(len(r.prefix_blocks) == -(-r.prompt_tokens // BLOCK_TOKENS) for r in reqs)
    firsts = Counter(r.prefix_blocks[0] for r in reqs)
    assert firsts.most_common(1)[0][1] > 100  # a shared leading block (system prompt)
    pairs = Counter(r.prefix_blocks[:4] for r in reqs if len(r.prefix_blocks) >= 4)
    assert any(n >= 2 for n in pairs.values())  # multi-block prefixes are reused
    other = load_mooncake(data_dir() / "traces/mooncake/conversation_trace.jsonl", "other", limit=5)
    assert not set(other[0].prefix_blocks) & set(reqs[0].prefix_blocks)  # tenants never collide


@pytest.mark.parametrize("name, rows", [("sharegpt", 30731), ("arxiv", 28257)])
def test_length_statistics_tenant_draws_real_pairs_at_the_stated_rate(name, rows):
    """The lengths files have no arrivals: real (prompt, output) pairs, Poisson at RATE."""
    pairs = length_pairs(name)
    assert pairs.shape == (rows, 2) and pairs.min() >= 1
    reqs = load_stream(f"t=lengths:{name}:4", seed=5, duration_s=500.0)
    p, o, t = lengths(reqs)
    assert t[0] == 0.0 and np.all(np.diff(t) >= 0) and t[-1] <= 500.0
    assert len(reqs) == pytest.approx(2000, rel=0.1)  # 4 req/s for 500 s
    real = set(map(tuple, pairs.tolist()))
    assert all((a, b) in real for a, b in zip(p.tolist(), o.tolist()))
    assert load_stream(f"t=lengths:{name}:4", seed=5, duration_s=50.0) == [
        r for r in reqs if r.arrival_s <= 50
    ]
    with pytest.raises(KeyError, match="sharegpt, arxiv"):
        load_stream("t=lengths:wiki:1", duration_s=10.0)


def test_servegen_client_stream():
    trace, dataset = servegen_paths(18)
    assert trace.name == "chunk-18-trace.csv" and dataset.exists()
    reqs = load_servegen(18, "acme", seed=1, limit=500, duration_s=None)
    p, o, t = lengths(reqs)
    assert len(reqs) == 500 and np.all(np.diff(t) >= 0) and t[0] >= 0
    assert p.min() >= 1 and o.min() >= 1
    again = load_servegen(18, "acme", seed=1, limit=500, duration_s=None)
    assert reqs == again
    by_path = load_servegen(trace, "acme", seed=1, limit=500, duration_s=None)
    assert by_path == reqs


def test_synthetic_mix_three_tenant_shapes():
    w = build_workload(DEFAULT_TENANTS, seed=2, duration_s=600.0)
    by = {name: [r for r in w if r.tenant == name] for name in ("chat", "code", "docs")}
    rate = {k: len(v) / 600.0 for k, v in by.items()}
    assert rate["chat"] > rate["code"] > rate["docs"] > 0.1
    med = {k: np.median([r.prompt_tokens for r in v]) for k, v in by.items()}
    out = {k: np.median([r.output_tokens for r in v]) for k, v in by.items()}
    assert med["docs"] > med["code"] > med["chat"]
    assert out["code"] < out["chat"]
    # every tenant shares prompt prefixes so the prefix cache gets real hits
    for name, reqs in by.items():
        firsts = Counter(r.prefix_blocks[:1] for r in reqs)
        assert firsts.most_common(1)[0][1] >= 2, name
    assert [r.arrival_s for r in w] == sorted(r.arrival_s for r in w)


def test_workload_seeded_and_capped():
    a = build_workload(DEFAULT_TENANTS, seed=9, limit=300)
    assert a == build_workload(DEFAULT_TENANTS, seed=9, limit=300)
    assert a != build_workload(DEFAULT_TENANTS, seed=10, limit=300)
    assert len(a) == 300
    capped = build_workload(["d=mooncake-conversation"], limit=200, max_context=4096)
    assert all(r.prompt_tokens + r.output_tokens <= 4096 for r in capped)
    assert all(len(r.prefix_blocks) <= 4096 // BLOCK_TOKENS for r in capped)


def test_adding_a_tenant_keeps_the_others():
    base = build_workload(["chat=synthetic:chat"], seed=1, duration_s=60)
    more = build_workload(["chat=synthetic:chat", "x=azure-code"], seed=1, duration_s=60)
    assert [r for r in more if r.tenant == "chat"] == base


@pytest.mark.parametrize(
    "spec, rate", [("a=azure-code:10", 10.0), ("b=servegen:14:5", 5.0), ("c=synthetic:chat:8", 8.0)]
)
def test_rate_rescales_arrivals(spec, rate):
    reqs = load_stream(spec, seed=0, duration_s=120.0)
    assert 0.6 * rate < len(reqs) / 120.0 < 1.4 * rate


def test_tenant_spec_parsing():
    assert TenantSpec.parse("a=azure-conv") == TenantSpec("a", "azure-conv", None)
    assert TenantSpec.parse("a=azure-conv:2.5").rate == 2.5
    assert TenantSpec.parse("s=servegen:27") == TenantSpec("s", "servegen:27", None)
    assert TenantSpec.parse("s=servegen:27:3") == TenantSpec("s", "servegen:27", 3.0)
    assert TenantSpec.parse("p=/tmp/x.jsonl:4").trace == "/tmp/x.jsonl"
    for bad in ("noequals", "=azure-code", "a=", "a=azure-code:-1", "a=synthetic:chat:1:2"):
        with pytest.raises(ValueError):
            TenantSpec.parse(bad)
    with pytest.raises(FileNotFoundError):
        load_stream("a=/no/such/trace.csv")
    with pytest.raises(KeyError):
        load_stream("a=synthetic:nope", limit=3)
    with pytest.raises(ValueError):
        build_workload(["a=synthetic:chat", "a=synthetic:code"], limit=3)


def test_request_capping():
    r = RequestSpec(1.0, "t", 10_000, 300, tuple(range(20)))
    c = r.capped(8192)
    assert c.prompt_tokens + c.output_tokens <= 8192 and c.output_tokens >= 1
    assert len(c.prefix_blocks) == -(-c.prompt_tokens // BLOCK_TOKENS)
    assert r.capped(None) is r and r.capped(100_000) is r


def test_load_profile_retimes_arrivals_to_follow_the_rate_multiplier():
    """A swing between x0.3 and x3 packs arrivals densely at its peak and thinly at its trough,
    keeping every request and their order (held-out regimes in benchmarks/gate_scenarios.py)."""
    reqs = build_workload(("a=synthetic:chat:10",), seed=5, limit=4000)
    swing = LoadProfile.parse("swing:0.3:3:100")
    out = swing.apply(reqs)
    t = np.array([r.arrival_s for r in out])
    assert len(out) == len(reqs) and np.all(np.diff(t) >= 0)
    assert [r.prompt_tokens for r in out] == [r.prompt_tokens for r in reqs]
    phase = np.mod(t, 100.0)
    peak = np.sum((phase > 40) & (phase < 60))  # around m = 3
    trough = np.sum((phase < 10) | (phase > 90))  # around m = 0.3
    assert peak > 5 * trough
    with pytest.raises(ValueError, match="LOW/HIGH"):
        LoadProfile.parse("ramp:0:3:10")
