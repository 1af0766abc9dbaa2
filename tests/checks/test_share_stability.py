"""Share stability: composition-dependent splits fail, composition-independent ones pass."""

from __future__ import annotations

import json

import numpy as np
import pytest

from checks.evidence import Evidence
from checks.policy import GatePolicy
from checks.rules import stability
from checks.share_stability import (
    Buckets,
    _design,
    composition_effect,
    cost_per_work_by_strata,
    log2_bucket,
    shape_bucket_codes,
    shape_buckets,
    stability_report,
)

# A known step-latency function (ms): fixed part, decode requests reading their KV, prefill
# chunks doing compute; busy-server batch sizes.
BETA, PER_REQ, PER_CTX, PER_PREFILL_TOK = 1.0, 0.02, 2e-4, 0.01


def synthetic_steps(n_steps=1500, seed=0):
    """Per-request rows of decode requests in decode-only and mixed steps, with three splits.

    'llmvisor' is the additive model split (own work, fixed part pro rata to work); 'token'
    is the VTC-style split of the measured latency by weighted tokens (decode token weight
    2, prompt token weight 1). Only decode rows are returned: that is whose share is judged.
    """
    rng = np.random.default_rng(seed)
    cols = {
        k: [] for k in ("step", "batch", "ctx", "others_ctx", "others_prefill", "llmvisor", "token", "tenant")
    }
    for step in range(n_steps):
        bs = int(rng.integers(8, 48))
        ctx = rng.integers(100, 8000, bs)
        chunk = int(rng.integers(256, 2048)) if rng.random() < 0.5 else 0
        work = PER_REQ + PER_CTX * ctx
        chunk_work = PER_PREFILL_TOK * chunk
        total_work = work.sum() + chunk_work
        T = (BETA + total_work) * rng.lognormal(0, 0.03)
        weights = 2.0 * np.ones(bs)
        cols["step"] += [step] * bs
        cols["batch"] += [bs + (chunk > 0)] * bs
        cols["ctx"] += ctx.tolist()
        cols["others_ctx"] += (ctx.sum() - ctx).tolist()
        cols["others_prefill"] += [chunk] * bs
        cols["llmvisor"] += (work * (1 + BETA / total_work)).tolist()
        cols["token"] += (T * weights / (weights.sum() + chunk)).tolist()
        cols["tenant"] += rng.choice(["acme", "globex"], bs).tolist()
    return {k: np.asarray(v) for k, v in cols.items()}


@pytest.fixture(scope="module")
def data():
    return synthetic_steps()


def inputs(d):
    n = len(d["step"])
    bucket = shape_buckets(np.full(n, "decode"), np.ones(n), d["ctx"])
    comp = {
        "batch_size": d["batch"],
        "others_prefill_tokens": d["others_prefill"],
        "others_context": d["others_ctx"],
    }
    return bucket, comp, {"context": d["ctx"]}


def test_splits_side_by_side_rank_composition_dependence(data):
    bucket, comp, own = inputs(data)
    fair = (PER_REQ + PER_CTX * data["ctx"]) * np.random.default_rng(1).lognormal(0, 0.02, len(data["ctx"]))
    rep = stability_report(
        {
            "fair": fair,
            "llmvisor": data["llmvisor"],
            "token_baseline": data["token"],
            "inverse_batch": 1.0 / data["batch"],
        },
        bucket,
        comp,
        own=own,
        groups=data["step"],
        n_boot=100,
    )
    json.dumps(rep)
    eff = {k: rep[k]["effect"] for k in ("fair", "llmvisor", "token_baseline", "inverse_batch")}
    assert eff["fair"] < 0.01
    assert eff["fair"] < eff["llmvisor"] < eff["token_baseline"]
    assert rep["differences"]["token_baseline - llmvisor"]["ci_low"] > 0
    assert rep["inverse_batch"]["slopes"]["batch_size"] < -0.2
    assert rep["token_baseline"]["slopes"]["others_prefill_tokens"] < -0.2
    assert rep["fair"]["ci_low"] <= rep["fair"]["effect"] <= rep["fair"]["ci_high"]

    policy = GatePolicy(max_composition_effect=0.10)

    def verdict(split):
        return stability(Evidence(stability={"llmvisor": rep[split]}), policy, 0.0)[0].status

    assert verdict("inverse_batch") == "fail"
    assert verdict("token_baseline") == "fail"
    assert verdict("llmvisor") == "pass"
    assert verdict("fair") == "pass"


def test_cluster_bootstrap_is_wider_than_row_bootstrap_when_rows_share_a_step(data):
    bucket, comp, own = inputs(data)
    rows = composition_effect(bucket, data["token"], comp, own=own, n_boot=80)
    steps = composition_effect(bucket, data["token"], comp, own=own, groups=data["step"], n_boot=80)
    assert (steps["ci_high"] - steps["ci_low"]) > (rows["ci_high"] - rows["ci_low"])


def test_rows_without_a_positive_share_and_small_buckets_are_accounted_for():
    bucket = np.array(["a"] * 40 + ["b"] * 5)
    share = np.r_[np.full(39, 1.0), 0.0, np.ones(5)]
    comp = {"batch_size": np.arange(45)}
    out = composition_effect(bucket, share, comp, n_boot=10)
    assert out["rows_dropped"] == 1 and out["buckets"] == 1 and out["rows_in_buckets_used"] == 39
    empty = composition_effect(bucket[:10], share[:10], {"batch_size": np.arange(10)}, n_boot=10)
    assert empty["effect"] is None and empty["ci_high"] is None


def test_log2_buckets():
    assert log2_bucket([0, 1, 2, 3, 1000]).tolist() == [0, 1, 1, 2, 9]
    assert shape_buckets(["prefill"], [512], [0]).tolist() == ["prefill|n9|c0"]


def test_cost_per_work_across_prefill_strata(data):
    out = {}
    for split in ("llmvisor", "token"):
        out[split] = cost_per_work_by_strata(
            data["tenant"],
            data[split],
            data["ctx"],
            data["others_prefill"],
            edges=[0],
            labels=["decode_only", "with_prefill"],
            groups=data["step"],
            n_boot=50,
        )
        json.dumps(out[split])
        assert set(out[split]["tenants"]) == {"acme", "globex"}
    tok, vis = out["token"]["tenants"]["acme"], out["llmvisor"]["tenants"]["acme"]
    # sharing a step with a prefill chunk makes the token split charge decodes far less
    assert tok["ci_high"] < 0.7
    assert 0.85 < vis["ci_low"] <= vis["ratio"] <= vis["ci_high"] < 1.15
    assert out["token"]["max_abs_log_ratio"] > out["llmvisor"]["max_abs_log_ratio"]


def test_strata_edges_and_labels_are_validated():
    with pytest.raises(ValueError, match="labels"):
        cost_per_work_by_strata(["a"], [1.0], [1.0], [1.0], edges=[1, 2], labels=["x", "y"])
    out = cost_per_work_by_strata(
        ["a"] * 3, [1.0, 2.0, 3.0], [1, 1, 1], [1, 5, 9], edges=[2, 6], labels=["s", "m", "l"]
    )
    assert out["tenants"]["a"]["ratio"] == 3.0 and out["tenants"]["a"]["m"]["rows"] == 1


def test_group_moments_are_the_row_moments_summed_per_bucket_and_step():
    """The bootstrap weighs steps, so ``_group_moments`` may sum rows per (bucket, step) first: a
    replicate's moments from those sums are those of the rows weighted by their step's weight."""
    from checks.share_stability import _group_moments

    rng = np.random.default_rng(3)
    n, d = 500, 4
    A = rng.normal(size=(n, d))
    b_idx, g_idx = rng.integers(0, 3, n), rng.integers(0, 40, n)
    M, seg_b, seg_g = _group_moments(A.copy(), b_idx, g_idx)  # it sorts the rows it is given
    assert np.all(np.diff(seg_b) >= 0) and len(set(zip(seg_b, seg_g))) == len(seg_b)
    w = rng.integers(0, 3, 40).astype(float)  # one replicate's weights per step
    for b in range(3):
        rows = b_idx == b
        want = (A[rows] * w[g_idx[rows], None]).T @ A[rows]
        got = np.einsum("s,sij->ij", w[seg_g[seg_b == b]], M[seg_b == b])
        assert np.allclose(got, want, rtol=1e-12, atol=1e-12)


def test_shape_bucket_labels_are_built_per_bucket_as_per_row():
    """Labels are built once per distinct bucket and mapped back: the same strings as per row."""
    rng = np.random.default_rng(4)
    phase = rng.choice(["decode", "prefill"], 2000)
    new, ctx = rng.integers(1, 5000, 2000), rng.integers(0, 40000, 2000)
    per_row = [f"{p}|n{n}|c{c}" for p, n, c in zip(phase, log2_bucket(new), log2_bucket(ctx))]
    assert shape_buckets(phase, new, ctx).tolist() == per_row
    assert shape_buckets([], [], []).tolist() == []


def test_bucket_codes_give_the_report_label_strings_give(data):
    """A window's buckets as codes (``shape_bucket_codes``, a few bytes a row) and as a label
    string per row: the same report to the last bit, buckets in the same order, for rows of
    both phases and some rows dropped (a non-positive share)."""
    rng = np.random.default_rng(5)
    n = len(data["step"])
    phase = rng.choice(["prefill", "decode"], n)
    new = np.where(phase == "prefill", rng.integers(16, 2048, n), 1)
    share = data["llmvisor"] * np.where(rng.random(n) < 0.01, -1.0, 1.0)
    codes = shape_bucket_codes(phase, new, data["ctx"])
    assert isinstance(codes, Buckets) and list(codes.labels) == sorted(codes.labels)
    assert codes.per_row().tolist() == shape_buckets(phase, new, data["ctx"]).tolist()
    _, comp, own = inputs(data)
    report = lambda b: stability_report(  # noqa: E731
        {"a": share, "b": data["token"]}, b, comp, own=own, groups=data["step"], n_boot=50
    )
    assert repr(report(codes)) == repr(report(codes.per_row()))


def test_the_design_matrix_built_in_place_is_the_stacked_one(data):
    """``_design`` fills one matrix in place (a window's rows are tens of millions); its values
    are those of the columns stacked and standardised as new arrays, to the last bit."""
    _, comp, own = inputs(data)
    share = data["llmvisor"].copy()
    share[::50] = 0.0  # dropped rows: the standardisation is over the rest
    A, ok, q, k = _design(share, comp, own)
    y = np.log(share, where=share > 0, out=np.full(len(share), np.nan))
    X = np.column_stack(
        [np.log1p(np.maximum(np.asarray(v, dtype=float), 0)) for v in (*own.values(), *comp.values())]
    )
    want_ok = np.isfinite(y) & np.all(np.isfinite(X), axis=1)
    X = (X - X[want_ok].mean(axis=0)) / X[want_ok].std(axis=0)
    assert (q, k) == (1, 3) and np.array_equal(ok, want_ok)
    assert np.array_equal(A, np.column_stack([np.ones(len(y)), X, y]), equal_nan=True)
