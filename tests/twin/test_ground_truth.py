"""Ground truth: marginal costs and Shapley values of the noiseless engine."""

from __future__ import annotations

import numpy as np
import pytest

from shadowd.twin import marginal_costs, shapley_estimates, shapley_exact, shapley_values


def mixed_step(rng, n):
    new = np.where(rng.random(n) < 0.25, rng.integers(32, 1500, n), 1)
    pre = new > 1
    ctx = np.where(pre & (rng.random(n) < 0.5), 0, rng.integers(50, 6000, n))
    return new, ctx, pre


@pytest.mark.parametrize("platform", ["h100_sxm", "builtin"])
def test_shapley_efficiency(engine, platform):
    e = engine(platform)
    rng = np.random.default_rng(0)
    for n in (1, 5, 40, 200):
        new, ctx, pre = mixed_step(rng, n)
        phi = shapley_values(e, new, ctx, pre, permutations=16, seed=n)
        assert phi.sum() == pytest.approx(e.expected_ms(new, ctx, pre), rel=1e-12)


def test_monte_carlo_matches_exact(engine):
    e = engine("h100_sxm")
    new, ctx, pre = mixed_step(np.random.default_rng(4), 9)
    exact = shapley_exact(e, new, ctx, pre)
    assert exact.sum() == pytest.approx(e.expected_ms(new, ctx, pre), rel=1e-12)
    mc = shapley_values(e, new, ctx, pre, permutations=400, seed=1)
    assert np.abs(mc - exact).max() < 0.05 * exact.max()


def test_symmetry(engine):
    e = engine("h100_sxm")
    # two identical prefills, three identical decodes, one odd decode
    new, ctx, pre = [700, 700, 1, 1, 1, 1], [0, 0, 3000, 3000, 3000, 9000], [True, True] + [False] * 4
    exact = shapley_exact(e, new, ctx, pre)
    assert exact[0] == pytest.approx(exact[1], rel=1e-12)
    assert exact[2] == pytest.approx(exact[3], rel=1e-12) == pytest.approx(exact[4], rel=1e-12)
    mc = shapley_values(e, new, ctx, pre, permutations=200, seed=2)
    assert mc[0] == pytest.approx(mc[1], rel=0.03)
    assert mc[2] == pytest.approx(mc[4], rel=0.05)
    assert exact[0] > exact[5] > exact[2]  # a prefill outweighs a long decode, which outweighs a short one


def test_seeded(engine):
    e = engine("builtin")
    new, ctx, pre = mixed_step(np.random.default_rng(1), 30)
    a = shapley_values(e, new, ctx, pre, permutations=8, seed=5)
    b = shapley_values(e, new, ctx, pre, permutations=8, seed=5)
    np.testing.assert_array_equal(a, b)


def test_marginal_costs(engine):
    e = engine("h100_sxm")
    new, ctx, pre = [2048, 1, 1, 1], [0, 1000, 1000, 30000], [True, False, False, False]
    m = marginal_costs(e, new, ctx, pre)
    t = e.expected_ms(new, ctx, pre)
    assert m[0] > 10 * max(m[1], m[2])  # the prefill is most of the step
    assert m[3] > m[1]  # a 30k-token KV costs more than a 1k one
    assert m[1] == pytest.approx(m[2])
    assert m.sum() < t  # the fixed cost is nobody's marginal
    alone = marginal_costs(e, [1], [500], [False])
    assert alone[0] == pytest.approx(e.expected_ms([1], [500], [False]))


def test_empty_batch(engine):
    assert shapley_values(engine("builtin"), [], [], []).shape == (0,)


@pytest.mark.parametrize("platform", ["h100_sxm", "builtin"])
def test_estimates_enumerate_every_ordering_of_a_small_batch(engine, platform):
    """Up to 6 requests every ordering is taken: the exact Shapley values, to rounding."""
    e = engine(platform)
    rng = np.random.default_rng(7)
    for n in range(1, 7):
        for _ in range(3):
            new, ctx, pre = mixed_step(rng, n)
            est = shapley_estimates(e, new, ctx, pre, pairs=4, seed=n)
            assert est.shape == (1, n)
            np.testing.assert_allclose(est[0], shapley_exact(e, new, ctx, pre), rtol=0, atol=1e-9)


def test_estimates_are_independent_unbiased_and_efficient(engine):
    """Above the enumeration limit each row is one antithetic pair: it sums to T(B) exactly, the
    rows average to the exact values, and their spread predicts the spread of their mean."""
    e = engine("h100_sxm")
    new, ctx, pre = mixed_step(np.random.default_rng(3), 9)
    exact = shapley_exact(e, new, ctx, pre)
    rows, means, var_hat = [], [], []
    for seed in range(150):
        est = shapley_estimates(e, new, ctx, pre, pairs=6, seed=seed)
        assert est.shape == (6, 9)
        np.testing.assert_allclose(est.sum(axis=1), e.expected_ms(new, ctx, pre), rtol=1e-12)
        rows.append(est)
        means.append(est.mean(axis=0))
        var_hat.append(est.var(axis=0, ddof=1) / est.shape[0])
    pooled = np.concatenate(rows)
    se = pooled.std(axis=0, ddof=1) / np.sqrt(len(pooled))
    assert np.all(np.abs(pooled.mean(axis=0) - exact) < 4 * se + 1e-12), (pooled.mean(axis=0) - exact) / se
    ratio = np.var(means, axis=0, ddof=1) / np.mean(var_hat, axis=0)
    assert np.all((ratio > 0.6) & (ratio < 1.6)), ratio
