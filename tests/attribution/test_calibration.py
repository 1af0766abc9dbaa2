import json

import numpy as np
import pytest

from shadowd.attribution import ModelVersion, fit


def test_version_hash_is_deterministic(version, workload, platform):
    again = fit(workload[0], dict(reversed(list(platform.items()))))
    assert again.version == version.version and len(version.version) == 12
    int(version.version, 16)


def test_version_changes_with_coefficients_and_platform(version, platform):
    d = version.to_dict()
    d["llmvisor"]["segments"][0]["decode"]["c"] *= 1.0001
    del d["version"]
    assert ModelVersion.from_dict(d).version != version.version
    other = ModelVersion(dict(platform, gpu="A100-SXM"), version.llmvisor, version.token_baseline)
    assert other.version != version.version
    d = version.to_dict()
    d["token_baseline"]["w_q"] = 3.0
    del d["version"]
    assert ModelVersion.from_dict(d).version != version.version


def test_json_round_trip_gives_same_attribution(version, workload):
    text = version.to_json()
    json.loads(text)  # plain JSON, no NaN/Infinity
    back = ModelVersion.from_json(text)
    assert back.version == version.version and back.to_json() == text
    a, b = version.attribute(workload[1]), back.attribute(workload[1])
    for col in ("predicted_ms", "baseline_ms", "llmvisor_ms", "llmvisor_measured_ms", "vtc_ms", "vtc_tokens"):
        np.testing.assert_array_equal(getattr(a, col), getattr(b, col))


def test_tampered_json_is_rejected(version):
    d = json.loads(version.to_json())
    d["llmvisor"]["segments"][1]["beta_ms"] += 1.0
    with pytest.raises(ValueError):
        ModelVersion.from_dict(d)


def test_fit_window_and_metrics(version, workload):
    w = version.fit_window
    assert w["steps"] == workload[0].num_steps
    assert (w["first_step_seq"], w["last_step_seq"]) == (0, workload[0].num_steps - 1)
    assert set(version.fit_metrics["in_sample"]) == {"prefill", "decode", "mixed", "all"}
    assert sum(version.fit_metrics["breakpoint_search"]["segment_steps"]) == w["steps"]


def test_attribution_columns(version, workload):
    later = workload[1]
    a = version.attribute(later)
    assert a.model_version == version.version and a.policy == "equal"
    assert a.predicted_ms.shape == a.baseline_ms.shape == (later.num_steps,)
    for col in (a.llmvisor_ms, a.llmvisor_measured_ms, a.vtc_ms, a.vtc_tokens, a.variable_ms):
        assert col.shape == (later.num_requests,) and (col >= 0).all()
    np.testing.assert_allclose(later.per_step_sum(a.llmvisor_ms), a.predicted_ms, rtol=1e-12)
    np.testing.assert_allclose(later.per_step_sum(a.llmvisor_measured_ms), later.latency_ms, rtol=1e-12)
    np.testing.assert_allclose(later.per_step_sum(a.vtc_ms), later.latency_ms, rtol=1e-12)
    pr = a.with_policy("pro_rata")
    np.testing.assert_allclose(later.per_step_sum(pr.llmvisor_ms), a.predicted_ms, rtol=1e-12)
    np.testing.assert_allclose(later.per_step_sum(pr.llmvisor_measured_ms), later.latency_ms, rtol=1e-12)
    assert not np.allclose(pr.llmvisor_ms, a.llmvisor_ms)


def test_attribute_tolerates_step_without_rows(version):
    from shadowd.steps.batch import StepBatch

    b = StepBatch.from_rows(
        [dict(latency_ms=12.0), dict(latency_ms=3.0), dict(latency_ms=9.0)],
        [
            [dict(new_tokens=700, context_tokens=2048, prefill=True)],
            [],
            [
                dict(new_tokens=1, context_tokens=900, prefill=False),
                dict(new_tokens=1, context_tokens=90, prefill=False),
            ],
        ],
    )
    for policy in ("equal", "pro_rata"):
        a = version.attribute(b, policy)
        assert np.isfinite(a.llmvisor_ms).all() and np.isfinite(a.llmvisor_measured_ms).all()
        np.testing.assert_allclose(b.per_step_sum(a.llmvisor_ms)[[0, 2]], a.predicted_ms[[0, 2]])
        np.testing.assert_allclose(b.per_step_sum(a.llmvisor_measured_ms)[[0, 2]], [12.0, 9.0])
