"""The reference run on a model with fewer positions than the default ``max_model_len``."""

from __future__ import annotations

import pytest

from shadowd.paths import REPO_ROOT
from shadowd.sim.reference_run import ReferenceRun, RunSpec

pytestmark = pytest.mark.usefixtures("vllm")


def test_a_4k_context_model_runs_with_its_own_max_model_len():
    """vLLM refuses a ``max_model_len`` beyond the model's positions; prompts are capped below it
    (held-out 9's llama-2-7b, benchmarks/gate_scenarios.py)."""
    run = ReferenceRun(
        RunSpec(model=str(REPO_ROOT / "benchmarks/models/llama-2-7b"), tenants=("a=lengths:arxiv:2",))
    )
    assert run.max_model_len == 4096
    reqs = run.workload(limit=200)
    assert reqs and max(r.prompt_tokens + 1 for r in reqs) <= 4096 - 1024
    run.run(300, reqs)
    steps = run.step_batch()
    assert steps.num_steps >= 300 and steps.prefill.any() and (~steps.prefill).any()
