"""The governor's in-engine share arithmetic equals the attribution code's, tenant by tenant."""

from __future__ import annotations

import numpy as np

from shadowd.attribution.model_version import fit
from shadowd.attribution.synthetic_steps import synthetic_batch
from shadowd.govern.price import StepPricer, TenantSums

KEY = {"gpu": "H100-SXM", "model": "llama-3.1-8b", "dtype": "bf16", "tp": 1}


def test_per_tenant_shares_match_model_version_attribute():
    version = fit(synthetic_batch(steps=1500, seed=3), KEY)
    assert np.isfinite(version.llmvisor.breakpoint)  # both segments in play
    batch = synthetic_batch(steps=300, seed=4)
    att = version.attribute(batch, "equal")
    pricer = StepPricer(version.llmvisor.to_dict())
    segs = set()
    for s in range(batch.num_steps):
        rows = np.flatnonzero(batch.req_step == s)
        tenants = sorted(set(batch.tenant[rows]))
        sums = {t: TenantSums() for t in tenants}
        for r in rows:
            sums[batch.tenant[r]].add(
                int(batch.new_tokens[r]), int(batch.context_tokens[r]), bool(batch.prefill[r])
            )
        got = pricer.shares([sums[t] for t in tenants])
        want = [att.llmvisor_ms[rows][batch.tenant[rows] == t].sum() for t in tenants]
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)
        assert abs(sum(got) - att.predicted_ms[s]) < 1e-9 * max(1.0, att.predicted_ms[s])
        segs.add(int(batch.new_tokens[rows].sum() > pricer.breakpoint))
    assert segs == {0, 1}


def test_vtc_tokens_price_prompt_and_generated_tokens():
    s = TenantSums()
    s.add(300, 0, True)  # a prompt chunk
    s.add(1, 900, False)  # a decode
    s.add(3, 900, False)  # a decode with two speculative tokens
    assert s.vtc_tokens(1.0, 2.0) == 300 + 2 * (1 + 3)


def test_bad_coefficients_are_refused():
    import pytest

    with pytest.raises(ValueError):
        StepPricer({"breakpoint_tokens": None, "segments": [{"beta_ms": -1.0}]})
    with pytest.raises(ValueError):
        StepPricer({"breakpoint_tokens": None, "segments": [{"beta_ms": 1.0, "decode": {"c": float("nan")}}]})
