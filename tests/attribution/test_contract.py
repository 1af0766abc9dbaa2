"""Both latency models honour one contract: fit on steps, predict per step, survive a dict round trip."""

import numpy as np
import pytest

from shadowd.attribution import LLMVisorModel, TokenBaseline
from shadowd.attribution.synthetic_steps import synthetic_batch


@pytest.mark.parametrize("model_cls", [LLMVisorModel, TokenBaseline])
def test_latency_model_contract(model_cls, workload):
    earlier, later = workload
    model = model_cls.fit(earlier)
    predicted = model.predict(later)
    assert predicted.shape == (later.num_steps,) and (predicted > 0).all()
    back = model_cls.from_dict(model.to_dict())
    np.testing.assert_array_equal(back.predict(later), predicted)
    assert back.to_dict() == model.to_dict()


@pytest.mark.parametrize("model_cls", [LLMVisorModel, TokenBaseline])
def test_latency_model_handles_empty_steps(model_cls, workload):
    """A step without request rows is predicted at the fixed term and breaks nothing around it."""
    model = model_cls.fit(workload[0])
    b = synthetic_batch(steps=6, seed=9)
    keep = b.req_step != 2
    b.req_step, b.new_tokens, b.context_tokens = b.req_step[keep], b.new_tokens[keep], b.context_tokens[keep]
    b.prompt_tokens, b.prefill, b.tenant = b.prompt_tokens[keep], b.prefill[keep], b.tenant[keep]
    full = model.predict(synthetic_batch(steps=6, seed=9))
    got = model.predict(b)
    np.testing.assert_array_equal(np.delete(got, 2), np.delete(full, 2))
    assert np.isfinite(got[2])
