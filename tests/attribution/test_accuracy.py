import json

import pytest

from shadowd.attribution import accuracy_report, out_of_sample_report


@pytest.fixture(scope="module")
def report(version, workload):
    return accuracy_report(version, workload[1])


def test_report_shape(report):
    assert json.loads(json.dumps(report, allow_nan=False)) == report
    assert set(report["accuracy"]) == {"prefill", "decode", "mixed", "all"}
    for cls in report["accuracy"].values():
        assert set(cls) == {"steps", "llmvisor", "token_baseline", "ratio"}
        assert set(cls["llmvisor"]) == set(cls["token_baseline"]) == {"r2", "p50", "p90", "p99"}
        assert set(cls["ratio"]) == {"p50", "p90", "p99"}
    for row in report["tenants"]:
        assert set(row) == {
            "tenant",
            "llmvisor_ms",
            "llmvisor_measured_ms",
            "token_ms",
            "vtc_tokens",
            "requests",
        }
    steps = report["accuracy"]
    assert steps["all"]["steps"] == sum(steps[c]["steps"] for c in ("prefill", "decode", "mixed"))


def test_llmvisor_beats_token_baseline_out_of_sample(report):
    acc = report["accuracy"]
    assert acc["all"]["llmvisor"]["r2"] >= 0.99
    for cls in ("all", "mixed"):
        assert acc[cls]["ratio"]["p90"] >= 2 and acc[cls]["ratio"]["p99"] >= 2
    for cls in ("prefill", "decode", "mixed"):
        assert acc[cls]["llmvisor"]["p99"] <= 0.2
        for q in ("p50", "p90", "p99"):
            assert acc[cls]["token_baseline"][q] >= acc[cls]["llmvisor"][q]


def test_tenant_totals_add_up(report, workload):
    later = workload[1]
    rows = report["tenants"]
    assert [r["tenant"] for r in rows] == ["chat", "code", "longdoc"]
    measured = later.latency_ms.sum()
    assert sum(r["llmvisor_measured_ms"] for r in rows) == pytest.approx(measured, rel=1e-9)
    assert sum(r["token_ms"] for r in rows) == pytest.approx(measured, rel=1e-9)
    assert sum(r["requests"] for r in rows) == later.num_requests  # synthetic req_ids are unique per row
    both = report["fixed_term"]["tenants"]
    assert sum(both["equal"].values()) == pytest.approx(sum(both["pro_rata"].values()), rel=1e-9)
    # The long-context tenant costs more GPU time per VTC token than the chat tenant.
    per_token = {r["tenant"]: r["llmvisor_measured_ms"] / r["vtc_tokens"] for r in rows}
    assert per_token["longdoc"] > 1.5 * per_token["chat"]


def test_out_of_sample_uses_disjoint_windows(workload, platform):
    later = workload[1]
    r = out_of_sample_report(later, platform, fit_fraction=0.25)
    assert r["fit_window"]["last_step_seq"] < r["score_window"]["first_step_seq"]
    assert r["fit_window"]["steps"] + r["score_window"]["steps"] == later.num_steps


def test_empty_classes_report_none(version, workload):
    later = workload[1]
    decode_only = later.select_steps(later.kind == 1)
    r = accuracy_report(version, decode_only)
    assert r["accuracy"]["prefill"]["steps"] == 0
    assert r["accuracy"]["prefill"]["llmvisor"] == {"r2": None, "p50": None, "p90": None, "p99": None}
    assert r["accuracy"]["prefill"]["ratio"]["p90"] is None
    assert r["accuracy"]["decode"]["steps"] == r["accuracy"]["all"]["steps"] > 0
    json.dumps(r, allow_nan=False)
