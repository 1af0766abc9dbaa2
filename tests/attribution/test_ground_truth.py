"""Against a known latency function, per-tenant LLMVisor totals track the Shapley totals; tokens do not.

Ground truth per request is the Shapley value of the (noise-free) step-latency function over the
batch, estimated with Monte Carlo permutations on a sample of steps: each permutation's prefix
batches are evaluated in one vectorised call.  The reference engine repeats this on kernel tables.
"""

import numpy as np
import pytest

from shadowd.attribution.synthetic_steps import reference_latency
from shadowd.attribution.token_baseline import tenant_index
from shadowd.steps.batch import StepBatch


def shapley_values(batch: StepBatch, permutations: int, rng: np.random.Generator) -> np.ndarray:
    starts = np.searchsorted(batch.req_step, np.arange(batch.num_steps))
    out = np.zeros(batch.num_requests)
    for start, n in zip(starts, batch.batch_size()):
        sizes = np.arange(1, n + 1)
        for _ in range(permutations):
            perm = start + rng.permutation(n)
            rows = np.concatenate([perm[:k] for k in sizes])
            prefixes = StepBatch(
                latency_ms=np.zeros(n),
                req_step=np.repeat(sizes - 1, sizes),
                new_tokens=batch.new_tokens[rows],
                context_tokens=batch.context_tokens[rows],
                prompt_tokens=batch.prompt_tokens[rows],
                prefill=batch.prefill[rows],
            )
            out[perm] += np.diff(np.r_[0.0, reference_latency(prefixes, noise=0)]) / permutations
    return out


@pytest.fixture(scope="module")
def truth(version, workload):
    later = workload[1]
    rng = np.random.default_rng(0)
    picked = rng.choice(later.num_steps, 60, replace=False)
    sample = later.select_steps(np.isin(np.arange(later.num_steps), picked))
    sample.latency_ms = reference_latency(sample, noise=0)
    return sample, shapley_values(sample, 8, rng)


def test_tenant_totals_track_shapley(version, truth):
    sample, shapley = truth
    names, inv = tenant_index(sample)
    total = lambda x: np.bincount(inv, weights=x, minlength=len(names))  # noqa: E731
    att = version.attribute(sample, "equal")
    exact = total(shapley)
    np.testing.assert_allclose(exact.sum(), sample.latency_ms.sum(), rtol=1e-9)  # efficiency
    llmvisor_err = np.abs(total(att.llmvisor_measured_ms) / exact - 1)
    token_err = np.abs(total(att.vtc_ms) / exact - 1)
    assert llmvisor_err.max() <= 0.03
    assert token_err.max() >= 3 * llmvisor_err.max()
