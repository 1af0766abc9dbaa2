"""Coefficient drift (refit vs calibrated) and the workload envelope."""

from __future__ import annotations

import json

import numpy as np
import pytest

from checks.coefficient_drift import CoefficientDrift, nnls_fit, ridge_fit
from checks.envelope import EnvelopeMonitor, WorkloadEnvelope


def decode_design(n, rng):
    """[1, Σcontext, batch size] of decode steps, the attribution model's decode features."""
    bs = rng.integers(1, 128, n)
    ctx = bs * rng.integers(200, 6000, n)
    return np.column_stack([np.ones(n), ctx, bs]).astype(float)


THETA = np.array([4.0, 2e-6, 0.03])  # ms: fixed, per context token, per request


@pytest.fixture
def check():
    rng = np.random.default_rng(0)
    return CoefficientDrift(THETA, decode_design(300, rng), tolerance=0.05, n_boot=100, step_class="decode")


def window(rng, slowdown=0.0, n=1000, noise=0.03):
    X = decode_design(n, rng)
    return X, (1 + slowdown) * (X @ THETA) * (1 + rng.normal(0, noise, n))


def test_no_coefficient_drift_on_a_stationary_window(check):
    res = check.compare(*window(np.random.default_rng(1)))
    assert res["status"] == "ok" and res["relative_change"] < 0.02
    assert res["ci_low"] <= res["relative_change"] <= res["ci_high"]
    json.dumps(res)


def test_an_8_percent_slowdown_is_coefficient_drift(check):
    events = check.check(*window(np.random.default_rng(2), slowdown=0.08), ts=5.0, step_seq=77)
    assert len(events) == 1
    e = events[0]
    assert (e.detector, e.step_class, e.step_seq) == ("coefficient", "decode", 77)
    assert e.threshold == 0.05
    assert abs(e.statistic - 0.08) < 0.02 and abs(e.details["signed_change"] - 0.08) < 0.02


def test_a_tiny_noisy_window_is_insufficient_not_drift(check):
    X, y = window(np.random.default_rng(3), slowdown=0.5, n=50)
    assert check.compare(X, y)["status"] == "insufficient"
    assert check.check(X, y, ts=0.0, step_seq=0) == []


def test_fit_functions_recover_coefficients():
    rng = np.random.default_rng(4)
    X = decode_design(2000, rng)
    y = X @ THETA
    np.testing.assert_allclose(nnls_fit(X, y), THETA, rtol=1e-6)
    np.testing.assert_allclose(ridge_fit(X, y, alpha=1e-12), THETA, rtol=1e-4)
    assert np.all(nnls_fit(X, y - 10.0) >= 0)


def test_caller_supplied_fit_and_shape_checks():
    rng = np.random.default_rng(5)
    X = decode_design(500, rng)
    doubled = CoefficientDrift(THETA, X[:50], fit=lambda X, y: 2 * THETA, n_boot=0, min_rows=10)
    assert doubled.compare(X, X @ THETA)["relative_change"] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="columns"):
        CoefficientDrift(THETA, X[:, :2])


def test_envelope_from_calibration_uses_p99_batch_size():
    bs = np.arange(1, 101)
    env = WorkloadEnvelope.from_calibration(
        context=[10, 5000], batch_size=bs, tokens_per_step=[8, 4096], tenants=["a"]
    )
    assert env.max_batch_size == pytest.approx(np.quantile(bs, 0.99))
    assert env.violations(max_context=5000, batch_size=99, tokens=4096) == {}
    assert env.violations(max_context=5001, tokens=5000) == {"context": 5001.0, "tokens": 5000.0}
    assert WorkloadEnvelope.from_dict(json.loads(json.dumps(env.to_dict()))) == env
    with pytest.raises(ValueError, match="max_ctx"):
        WorkloadEnvelope.from_dict({**env.to_dict(), "max_ctx": 1})


def test_a_batch_below_the_calibrated_floor_is_extrapolation():
    """Design r17: a window of saturated batches only sets a floor; a lighter batch lies outside
    (a fit there does not separate the step's fixed cost from its per-request costs)."""
    bs = np.arange(200, 301)
    env = WorkloadEnvelope.from_calibration(
        context=[4000], batch_size=bs, tokens_per_step=[1, 512], margin=0.5
    )
    assert env.min_batch_size == pytest.approx(np.quantile(bs, 0.01) / 1.5)
    assert env.violations(max_context=100, batch_size=100, tokens=100) == {"batch_floor": 100.0}
    assert env.violations(max_context=100, batch_size=env.min_batch_size, tokens=100) == {}
    mon = EnvelopeMonitor(env, cooldown_steps=100)
    small = np.r_[np.full(50, 250), np.full(150, 40)]
    events = mon.update_many(
        np.arange(200),
        np.arange(200) * 0.02,
        max_context=np.full(200, 4000),
        batch_size=small,
        tokens=small,
        step_class=["decode"] * 200,
    )
    assert [(e.detector, e.step_seq, e.statistic) for e in events] == [
        ("envelope.batch_floor", 50, 40.0),
        ("envelope.batch_floor", 150, 40.0),
    ]
    s = mon.summary()
    assert s["extrapolated_fraction"] == pytest.approx(0.75) and s["min_batch_seen"] == 40
    light_window = np.r_[np.ones(10), np.arange(1, 301)]  # lone requests are common when traffic is light
    light = WorkloadEnvelope.from_calibration(
        context=[4000], batch_size=light_window, tokens_per_step=light_window, margin=0.5
    )
    assert light.violations(max_context=100, batch_size=1, tokens=1) == {}  # no floor to speak of
    old = {k: v for k, v in env.to_dict().items() if k != "min_batch_size"}
    assert WorkloadEnvelope.from_dict(old).min_batch_size == 0.0  # bodies stored before r17


def test_new_tenant_with_long_contexts_is_reported_once_and_counted():
    env = WorkloadEnvelope(
        max_context=8192, max_batch_size=64, max_tokens_per_step=8192, tenants=frozenset({"acme", "globex"})
    )
    mon = EnvelopeMonitor(env, cooldown_steps=100)
    events = []
    for seq in range(1000):
        long_ctx = seq >= 500
        events += mon.update(
            seq,
            seq * 0.02,
            max_context=60_000 if long_ctx else 4000,
            batch_size=16,
            tokens=512,
            tenants=["acme", "initech"] if long_ctx else ["acme"],
        )
    kinds = [e.detector for e in events]
    assert kinds.count("envelope.new_tenant") == 1
    assert kinds.count("envelope.context") == 5  # 500 steps beyond, one event per 100-step cooldown
    s = mon.summary()
    assert s["extrapolated_fraction"] == pytest.approx(0.5)
    assert s["new_tenants"] == ["initech"] and s["max_seen"]["context"] == 60_000
    json.dumps(s)
    json.dumps([e.to_dict() for e in events])


def test_update_many_is_update_step_by_step():
    """The ingest path's batched form raises the same events and keeps the same counts."""
    rng = np.random.default_rng(3)
    env = WorkloadEnvelope(
        max_context=8192, max_batch_size=64, max_tokens_per_step=4096, tenants=frozenset({"acme"})
    )
    one, many = EnvelopeMonitor(env, cooldown_steps=50), EnvelopeMonitor(env, cooldown_steps=50)
    n = 600
    seq, ts = np.arange(n) + 10, np.arange(n) * 0.02
    ctx = rng.choice([4000, 9000], n, p=[0.9, 0.1])
    bs, tok = rng.integers(1, 80, n), rng.integers(1, 5000, n)
    kinds = rng.choice(["decode", "mixed"], n)
    tenants = {int(i): ["acme", f"t{i % 3}"] for i in rng.choice(n, 20, replace=False)}
    expected = []
    for i in range(n):
        expected += one.update(
            seq[i],
            ts[i],
            max_context=ctx[i],
            batch_size=bs[i],
            tokens=tok[i],
            tenants=tenants.get(i, ["acme"]),
            step_class=kinds[i],
        )
    got = []
    for lo in range(0, n, 128):  # in batches, as ingest hands them over
        part = {i - lo: t for i, t in tenants.items() if lo <= i < lo + 128}
        got += many.update_many(
            seq[lo : lo + 128],
            ts[lo : lo + 128],
            max_context=ctx[lo : lo + 128],
            batch_size=bs[lo : lo + 128],
            tokens=tok[lo : lo + 128],
            step_class=kinds[lo : lo + 128],
            tenants=part,
        )
    assert [e.to_dict() for e in got] == [e.to_dict() for e in expected]
    assert len(expected) > 10 and many.summary() == one.summary()


def test_a_decode_step_beyond_decode_steps_own_range_is_extrapolation():
    """Design r20: decode-only steps are judged on the batch range decode-only steps had in the
    window, not on the mixed steps' (those carry prompt chunks and sit in the other segment).
    A window without decode-only steps has none inside; bodies stored before r20 have no range."""
    mixed = np.arange(20, 201)
    env = WorkloadEnvelope.from_calibration(
        context=[4000],
        batch_size=mixed,
        tokens_per_step=[1, 4096],
        margin=0.5,
        decode_batch_size=np.arange(1, 41),
    )
    assert env.max_decode_batch_size == pytest.approx(np.quantile(np.arange(1, 41), 0.99) * 1.5)
    assert env.violations(max_context=100, batch_size=115, tokens=115, step_class="decode") == {
        "decode_batch": 115.0
    }
    assert env.violations(max_context=100, batch_size=115, tokens=600, step_class="mixed") == {}
    sizes = np.array([30, 115, 115, 200])
    decode = np.array([True, True, False, True])
    assert env.inside(
        max_context=np.full(4, 100), batch_size=sizes, tokens=sizes, decode=decode
    ).tolist() == [True, False, True, False]
    mon = EnvelopeMonitor(env, cooldown_steps=100)
    events = mon.update_many(
        np.arange(4),
        np.arange(4) * 0.02,
        max_context=np.full(4, 100),
        batch_size=sizes,
        tokens=sizes,
        step_class=["decode", "decode", "mixed", "decode"],
    )
    assert [(e.detector, e.step_seq, e.statistic) for e in events] == [("envelope.decode_batch", 1, 115.0)]
    assert mon.summary()["by_dimension"]["decode_batch"] == 2 and mon.extrapolated_steps == 2
    none = WorkloadEnvelope.from_calibration(
        context=[4000], batch_size=mixed, tokens_per_step=[1, 4096], margin=0.5, decode_batch_size=[]
    )
    assert none.violations(max_context=100, batch_size=30, tokens=30, step_class="decode") == {
        "decode_batch": 30.0
    }
    assert WorkloadEnvelope.from_dict(env.to_dict()) == env
    old = {k: v for k, v in env.to_dict().items() if "decode" not in k}
    assert WorkloadEnvelope.from_dict(old).violations(batch_size=500, step_class="decode") == {
        "batch_size": 500.0
    }


def test_a_decode_step_reading_more_kv_than_calibration_did_is_extrapolation():
    """Design r20: the KV tokens a decode-only step reads (its summed context) are a dimension of
    their own: a window of short conversations identifies the per-KV-token cost only up to what
    its batches read, however long one request's context may be (``max_context`` bounds one
    request).  Mixed steps are not judged on it."""
    env = WorkloadEnvelope.from_calibration(
        context=[4000],
        batch_size=np.arange(1, 101),
        tokens_per_step=[1, 4096],
        margin=0.5,
        decode_batch_size=np.arange(1, 101),
        decode_kv_tokens=np.linspace(1000, 20000, 100),
    )
    assert env.max_decode_kv_tokens == pytest.approx(np.quantile(np.linspace(1000, 20000, 100), 0.99) * 1.5)
    assert env.violations(batch_size=50, step_class="decode", kv_tokens=60000) == {"decode_kv": 60000.0}
    assert env.violations(batch_size=50, step_class="mixed", kv_tokens=60000) == {}
    kv = np.array([10000, 60000, 60000])
    sizes = np.array([50, 50, 50])
    assert env.inside(
        max_context=np.full(3, 100),
        batch_size=sizes,
        tokens=sizes,
        decode=np.array([True, True, False]),
        kv_tokens=kv,
    ).tolist() == [True, False, True]
    mon = EnvelopeMonitor(env)
    events = mon.update_many(
        np.arange(3),
        np.zeros(3),
        max_context=np.full(3, 100),
        batch_size=sizes,
        tokens=sizes,
        step_class=["decode", "decode", "mixed"],
        kv_tokens=kv,
    )
    assert [(e.detector, e.step_seq) for e in events] == [("envelope.decode_kv", 1)]
    assert mon.update(3, 0.0, batch_size=50, step_class="decode", kv_tokens=70000) == []  # cooldown
    assert mon.summary()["by_dimension"]["decode_kv"] == 2
    assert WorkloadEnvelope.from_dict(env.to_dict()) == env


def test_a_step_with_fewer_tokens_than_the_calibrated_floor_is_extrapolation():
    """Design r21: a window of steps near the token budget only sets a floor under tokens per
    step (its p1 over 1 + margin), as r17 does under batch size: the fixed cost and the per-token
    costs are not separated there, so a lighter step is extrapolation.  Bodies before r21: none."""
    tok = np.linspace(1000, 3072, 200)
    env = WorkloadEnvelope.from_calibration(
        context=[4000], batch_size=[100, 300], tokens_per_step=tok, margin=0.5
    )
    assert env.min_tokens_per_step == pytest.approx(np.quantile(tok, 0.01) / 1.5)
    assert env.violations(max_context=100, batch_size=200, tokens=400) == {"tokens_floor": 400.0}
    assert env.violations(max_context=100, batch_size=200, tokens=800) == {}
    assert env.inside(
        max_context=np.full(2, 100), batch_size=np.full(2, 200), tokens=np.array([400, 800])
    ).tolist() == [False, True]
    old = {k: v for k, v in env.to_dict().items() if k != "min_tokens_per_step"}
    assert WorkloadEnvelope.from_dict(old).violations(batch_size=200, tokens=400) == {}
