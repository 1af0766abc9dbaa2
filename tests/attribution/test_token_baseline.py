import numpy as np

from shadowd.attribution import TokenBaseline, vtc_counters
from shadowd.steps.batch import StepBatch


def _batch():
    return StepBatch.from_rows(
        [dict(latency_ms=20.0), dict(latency_ms=8.0)],
        [
            [
                dict(new_tokens=1000, context_tokens=0, prefill=True, tenant="a"),
                dict(new_tokens=1, context_tokens=500, prefill=False, tenant="b"),
            ],
            [
                dict(new_tokens=1, context_tokens=1001, prefill=False, tenant="a"),
                dict(new_tokens=3, context_tokens=501, prefill=False, tenant="b"),
            ],
        ],
    )


def test_vtc_weights_and_counters():
    b = _batch()
    assert vtc_counters(b) == {"a": 1002.0, "b": 8.0}
    assert vtc_counters(b, w_p=2.0, w_q=1.0) == {"a": 2001.0, "b": 4.0}


def test_token_shares_sum_to_measured(version, workload):
    later = workload[1]
    tb = version.token_baseline
    shares = tb.shares(later)
    assert (shares >= 0).all()
    np.testing.assert_allclose(later.per_step_sum(shares), later.latency_ms, rtol=1e-12)


def test_fit_per_class_and_round_trip(version):
    tb = version.token_baseline
    assert set(tb.gamma) == {"prefill", "decode", "mixed"}
    assert all(g0 >= 0 and g1 >= 0 for g0, g1 in tb.gamma.values())
    assert TokenBaseline.from_dict(tb.to_dict()).to_dict() == tb.to_dict()


def test_sparse_class_falls_back_to_all_steps():
    b = _batch()
    tb = TokenBaseline.fit(b, min_class_steps=10)
    assert tb.gamma["prefill"] == tb.gamma["decode"] == tb.gamma["mixed"]
