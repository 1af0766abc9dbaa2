"""The Shapley census of many steps (``tenant_shapley``): exact where it enumerates, and an error
interval that covers the exact tenant totals as often as it claims where it samples.  The same
for the truth the accuracy studies score against (``step_shapley``, ``tenant_standard_errors``):
its standard error is what a tenant error is read against."""

from __future__ import annotations

import numpy as np
import pytest

from shadowd.sim.truth import step_shapley, tenant_shapley, tenant_standard_errors
from shadowd.steps.batch import StepBatch
from shadowd.twin import ReferenceEngine, shapley_exact

TENANTS = ["a", "b", "c"]


@pytest.fixture(scope="module")
def engine() -> ReferenceEngine:
    return ReferenceEngine("h100_sxm", "llama-3.1-8b", jitter=False)


def _batch(engine: ReferenceEngine, sizes: list[int], seed: int, stretch: float = 1.0) -> StepBatch:
    """Steps of mixed prefill chunks and decodes, three tenants; latency = stretch x noiseless T."""
    rng = np.random.default_rng(seed)
    new, ctx, pre, step, tenant, lat = [], [], [], [], [], []
    for s, n in enumerate(sizes):
        nw = np.where(rng.random(n) < 0.3, rng.integers(16, 1200, n), 1)
        p = nw > 1
        c = np.where(p & (rng.random(n) < 0.5), 0, rng.integers(50, 8000, n))
        new += nw.tolist()
        ctx += c.tolist()
        pre += p.tolist()
        step += [s] * n
        tenant += rng.choice(TENANTS, n).tolist()
        lat.append(stretch * engine.expected_ms(nw, c, p))
    return StepBatch(
        latency_ms=lat,
        req_step=step,
        new_tokens=new,
        context_tokens=ctx,
        prompt_tokens=np.maximum(np.array(new) + np.array(ctx), 1),
        prefill=pre,
        tenant=np.array(tenant, dtype=object),
    )


def _exact_totals(engine: ReferenceEngine, batch: StepBatch, stretch: float) -> np.ndarray:
    out = np.zeros((batch.num_steps, len(TENANTS)))
    for s in range(batch.num_steps):
        m = batch.req_step == s
        phi = stretch * shapley_exact(engine, batch.new_tokens[m], batch.context_tokens[m], batch.prefill[m])
        for j, t in enumerate(TENANTS):
            out[s, j] = phi[batch.tenant[m] == t].sum()
    return out


def test_small_steps_are_exact_and_rescaled_to_the_measured_latency(engine):
    batch = _batch(engine, [1, 2, 3, 4, 5, 6] * 3, seed=1, stretch=1.1)
    census = tenant_shapley(engine, batch, np.arange(batch.num_steps), TENANTS, pairs=4, seed=0)
    assert census.exact.all()
    np.testing.assert_allclose(census.per_step, _exact_totals(engine, batch, 1.1), rtol=0, atol=1e-9)
    np.testing.assert_allclose(census.per_step.sum(axis=1), batch.latency_ms, rtol=1e-12)
    assert not census.cov.any()  # nothing sampled, no error


def test_interval_covers_the_exact_totals(engine):
    """Steps of 7-10 requests (sampled), 40 of them; over 40 seeds the tenant totals' z-scores
    against the exact totals must look standard normal: the interval is neither too narrow nor
    too wide, and the estimate is not biased."""
    batch = _batch(engine, list(np.random.default_rng(2).integers(7, 11, 40)), seed=2)
    exact = _exact_totals(engine, batch, 1.0)
    scored = np.arange(batch.num_steps) >= 5  # the first steps are warm-up: not in the totals' error
    want = exact[scored].sum(axis=0)
    z = []
    for seed in range(40):
        c = tenant_shapley(
            engine, batch, np.arange(batch.num_steps), TENANTS, pairs=4, seed=seed, scored=scored
        )
        assert not c.exact.any()
        z.append((c.per_step[scored].sum(axis=0) - want) / np.sqrt(np.diag(c.cov)))
        np.testing.assert_allclose(c.per_step.sum(axis=1), batch.latency_ms, rtol=1e-12)  # efficient
    z = np.concatenate(z)
    assert 0.88 <= np.mean(np.abs(z) < 1.96) <= 0.995, np.mean(np.abs(z) < 1.96)
    assert 0.6 < np.mean(z**2) < 1.5, np.mean(z**2)
    assert abs(np.mean(z)) < 0.3


def test_unknown_tenant_is_refused(engine):
    batch = _batch(engine, [3, 4], seed=3)
    batch.tenant[0] = "c"
    with pytest.raises(ValueError, match="tenants not in names"):
        tenant_shapley(engine, batch, np.arange(2), ["a", "b"], pairs=2)


def test_the_truths_standard_error_covers_the_exact_totals(engine):
    """``tenant_truth_errors``' truth: the tenant sums of ``step_shapley`` and their standard
    errors (``shapley_se_ms``) from the same orderings.  Over 40 seeds the z-scores against the
    exact totals must look standard normal, as the census's do."""
    batch = _batch(engine, list(np.random.default_rng(4).integers(7, 11, 30)), seed=4)
    want = _exact_totals(engine, batch, 1.0).sum(axis=0)
    inv_all = np.array([TENANTS.index(t) for t in batch.tenant])
    z = []
    for seed in range(40):
        rows, values, estimates = step_shapley(
            engine, batch, np.arange(batch.num_steps), permutations=8, seed=seed
        )
        inv = inv_all[rows]
        got = np.bincount(inv, weights=values, minlength=len(TENANTS))
        se = tenant_standard_errors(estimates, inv, len(TENANTS))
        assert (se > 0).all() and [e.shape[0] for e in estimates] == [4] * batch.num_steps
        z.append((got - want) / se)
    z = np.concatenate(z)
    assert 0.85 <= np.mean(np.abs(z) < 1.96) <= 0.995, np.mean(np.abs(z) < 1.96)
    assert 0.6 < np.mean(z**2) < 1.6, np.mean(z**2)
    assert abs(np.mean(z)) < 0.3
