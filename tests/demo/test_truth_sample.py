"""The demo keeps only the steps its Shapley truth scores (``shadowd.demo.truth_sample``), and the
truth on them is the truth it gave when every step was kept: the memory fix changes no figure."""

from __future__ import annotations

import numpy as np
import pytest

from shadowd.attribution import fit
from shadowd.attribution.synthetic_steps import synthetic_batch
from shadowd.demo.truth_sample import TruthSample
from shadowd.sim.reference_run import ReferenceRun, RunSpec
from shadowd.sim.truth import tenant_truth_errors
from shadowd.twin import ReferenceEngine

PLATFORM = {"gpu": "H100-SXM", "model": "llama-3.1-8b", "dtype": "bf16", "tp": 1, "pp": 1}
FIRST, K, SEED = 700, 30, 3


@pytest.fixture(scope="module")
def engine() -> ReferenceEngine:
    return ReferenceEngine("h100_sxm", "llama-3.1-8b", jitter=False)


def _truth_every_step_kept(engine, batch, version):
    """What the demo did before: keep every step, score a spread sample of those past ``FIRST``."""
    scored = batch.select_steps(np.arange(batch.num_steps) >= FIRST)
    return tenant_truth_errors(engine, scored, version.attribute(scored, "equal"), sample_steps=K, seed=SEED)


def _truth_sampled(engine, batch, version, planned):
    """What the demo does now: record the sample's steps only, then score the run's plan."""
    sample = TruthSample(first=FIRST, planned=planned, k=K, seed=SEED)
    kept = batch.select_steps(np.isin(np.arange(batch.num_steps), sample.recorded))
    chosen = np.zeros(kept.num_steps, dtype=bool)
    chosen[sample.positions(batch.num_steps)] = True
    scored = kept.select_steps(chosen)
    truth = tenant_truth_errors(
        engine, scored, version.attribute(scored, "equal"), sample_steps=scored.num_steps, seed=SEED
    )
    return truth, sample


@pytest.mark.parametrize("overshoot", [0, 1])
def test_the_truth_on_the_kept_steps_is_the_truth_on_every_step(engine, overshoot):
    batch = synthetic_batch(steps=1500 + overshoot, seed=5)
    version = fit(batch.select_steps(np.arange(batch.num_steps) < FIRST), PLATFORM)
    truth, sample = _truth_sampled(engine, batch, version, planned=1500)
    assert truth == _truth_every_step_kept(engine, batch, version)
    assert truth["steps"] == K and len(sample.recorded) <= 2 * K  # 2 plans: the run may end one step late


def test_a_run_that_ran_dry_scores_the_planned_steps_that_ran():
    sample = TruthSample(first=FIRST, planned=1500, k=K, seed=SEED)
    pos = sample.positions(1100)
    plan = sample.plans[1500]
    assert list(sample.recorded[pos]) == list(plan[plan < 1100])
    assert 0 < pos.size < K


def test_the_engine_records_only_the_sampled_steps(vllm):
    """The driver's ``keep_step``: the same steps as a run that kept them all, and no others."""
    runs = [ReferenceRun(RunSpec(tenants=("a=synthetic:chat:6",), seed=2)) for _ in range(2)]
    sample = TruthSample(first=200, planned=500, k=20, seed=2)
    runs[1].driver.keep_step = sample.__contains__
    for run in runs:
        run.run(500, run.workload(limit=2000))
    every, kept = (run.step_batch() for run in runs)
    assert runs[1].driver.steps_formed == every.num_steps
    assert kept.num_steps == np.isin(sample.recorded, np.arange(every.num_steps)).sum()
    same = every.select_steps(np.isin(np.arange(every.num_steps), sample.recorded))
    assert np.array_equal(same.new_tokens, kept.new_tokens)
    assert np.array_equal(same.context_tokens, kept.context_tokens)
    assert np.array_equal(same.req_step, kept.req_step)
