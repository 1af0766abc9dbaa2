"""The fitted model's own Shapley values (``shadowd.attribution.model_shapley``): efficient step by
step, exact over every ordering, and the same game the model predicts with."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from shadowd.attribution.llmvisor import LLMVisorModel
from shadowd.attribution.model_shapley import _step_values, model_shapley_shares, row_prices
from shadowd.attribution.steprows import StepRows
from shadowd.attribution.synthetic_steps import synthetic_batch
from shadowd.steps.batch import StepBatch


@pytest.fixture(scope="module")
def scored(workload):
    return workload[1].select_steps(np.arange(workload[1].num_steps) < 300)


def _game(model: LLMVisorModel, batch: StepBatch, rows: list[int]) -> float:
    """``T̂`` of a sub-batch, from the model's own prediction on a one-step batch of those rows."""
    if not rows:
        return 0.0
    sub = StepBatch.from_rows(
        [dict(latency_ms=1.0)],
        [
            [
                dict(
                    new_tokens=int(batch.new_tokens[i]),
                    context_tokens=int(batch.context_tokens[i]),
                    prefill=bool(batch.prefill[i]),
                )
                for i in rows
            ]
        ],
    )
    return float(model.predict(sub)[0])


def _exact(model: LLMVisorModel, batch: StepBatch) -> np.ndarray:
    """Shapley values by the subset formula, over every sub-batch of a one-step batch."""
    n = batch.num_requests
    phi = np.zeros(n)
    for i in range(n):
        others = [j for j in range(n) if j != i]
        for k in range(n):
            for s in itertools.combinations(others, k):
                w = math.factorial(k) * math.factorial(n - k - 1) / math.factorial(n)
                phi[i] += w * (_game(model, batch, [*s, i]) - _game(model, batch, list(s)))
    return phi


def _one_step(version, workload, size: int, seed: int) -> StepBatch:
    """A step of ``size`` rows from the scored window that straddles the breakpoint."""
    batch = workload[1]
    sizes = batch.batch_size()
    tokens = batch.per_step_sum(batch.new_tokens)
    ok = np.flatnonzero((sizes == size) & (tokens > version.llmvisor.breakpoint))
    rng = np.random.default_rng(seed)
    return batch.select_steps(np.arange(batch.num_steps) == rng.choice(ok))


@pytest.mark.parametrize("size,seed", [(3, 0), (4, 1), (5, 2)])
def test_every_ordering_gives_the_exact_shapley_values_of_the_models_game(version, workload, size, seed):
    step = _one_step(version, workload, size, seed)
    model = version.llmvisor
    orders = np.array(list(itertools.permutations(range(size))))
    got = _step_values(
        step.new_tokens.astype(float), row_prices(model, step), model.coef[:, 0], model.breakpoint, orders
    )
    np.testing.assert_allclose(got, _exact(model, step), rtol=1e-9, atol=1e-9)


def test_a_steps_values_sum_to_its_prediction_and_repeat_with_the_seed(version, scored):
    model = version.llmvisor
    phi = model_shapley_shares(model, scored, permutations=16, seed=3)
    rows = StepRows(scored.req_step, scored.num_steps)
    np.testing.assert_allclose(rows.sum(phi), model.predict(scored), rtol=1e-9)
    assert (phi >= -1e-9).all()
    np.testing.assert_array_equal(phi, model_shapley_shares(model, scored, permutations=16, seed=3))
    assert not np.array_equal(phi, model_shapley_shares(model, scored, permutations=16, seed=4))


def test_identical_rows_share_alike_and_a_lone_row_pays_its_step():
    model = LLMVisorModel.from_dict(
        {
            "breakpoint_tokens": 256,
            "segments": [
                {"beta_ms": 4.0, "prefill": {"p": 0.001}, "decode": {"c": 4e-5}},
                {"beta_ms": 1.0, "prefill": {"p": 0.02}, "decode": {"c": 4e-5}},
            ],
        }
    )
    row = dict(new_tokens=1, context_tokens=5000, prefill=False)
    batch = StepBatch.from_rows(
        [dict(latency_ms=9.0), dict(latency_ms=30.0)],
        [[row, row, row], [dict(new_tokens=900, context_tokens=0, prefill=True)]],
    )
    phi = model_shapley_shares(model, batch, permutations=4000)  # symmetric in expectation
    np.testing.assert_allclose(phi[:3], model.predict(batch)[0] / 3, rtol=1e-2)
    assert phi[3] == pytest.approx(model.predict(batch)[1])


def test_more_orderings_bring_a_large_step_to_its_value(version):
    """Sampling error falls as orderings grow: 8 orderings against 512, then 64 against 512."""
    batch = synthetic_batch(steps=40, seed=5)
    big = batch.select_steps(batch.batch_size() >= 20)
    model = version.llmvisor
    ref = model_shapley_shares(model, big, permutations=512, seed=0)
    err8 = np.abs(model_shapley_shares(model, big, permutations=8, seed=1) - ref).mean()
    err64 = np.abs(model_shapley_shares(model, big, permutations=64, seed=1) - ref).mean()
    assert err64 < err8
