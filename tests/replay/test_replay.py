"""``shadowd replay`` end to end on the real vLLM scheduler and the reference engine (CI-sized).

The noisy-neighbour scenario for 1.5 simulated minutes (``noisy_replay`` in ``conftest.py``): the governed policy's true GPU-time
shares (Shapley values of the engine's step cost) must be closer to the entitlements of the
backlogged tenants than FCFS's, by the max relative gap and by Jain's index; the governed run
must really have charged attributed time (GO through the state file) and never erred.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.usefixtures("vllm")


def test_governed_shares_are_closer_to_entitlement_than_fcfs(noisy_replay):
    out, _ = noisy_replay
    fcfs, vtc, gov = (out["policies"][p]["truth"] for p in ("fcfs", "vtc", "llmvisor"))
    assert len(fcfs["backlogged"]) >= 2 and len(gov["backlogged"]) >= 2
    assert gov["max_gap"] < fcfs["max_gap"], (gov["max_gap"], fcfs["max_gap"])
    assert gov["jain"] > fcfs["jain"]
    # FCFS hands the noisy neighbour more than its entitlement; the governor does not
    assert fcfs["per_tenant"]["longdoc"]["normalised_share"] > 1.1
    assert (
        gov["per_tenant"]["longdoc"]["normalised_share"] < fcfs["per_tenant"]["longdoc"]["normalised_share"]
    )
    status = out["policies"]["llmvisor"]["governor"]
    assert status["charging"] == "attributed" and status["errors"] == 0
    assert status["steps_charged"]["vtc"] == 0
    assert out["policies"]["vtc"]["governor"]["steps_charged"]["attributed"] == 0
    assert out["policies"]["fcfs"]["governor"] is None
    for policy in out["policies"].values():  # every tenant was served and measured
        assert set(policy["service"]) == {"longdoc", "code", "chat"}
        assert all(s["ttft_p50_s"] is not None for s in policy["service"].values())


def test_true_shares_are_a_shapley_census_with_intervals(noisy_replay):
    """ "True" is Shapley on every step of the scored window (no model), each figure with a 95%
    interval of its Monte Carlo error that holds the point estimate and is far narrower than the
    5% the governed policy is held to."""
    out, _ = noisy_replay
    for policy, run in out["policies"].items():
        truth = run["truth"]
        assert truth["method"] == "census" and truth["pairs_per_step"] == 4
        assert (
            0.7 * run["steps"] <= truth["shapley_steps"] < run["steps"]
        )  # all but the warm-up (short steps)
        per = truth["per_tenant"]
        assert sum(p["true_share"] for p in per.values()) == pytest.approx(1.0, rel=1e-12)
        for tenant, p in per.items():
            lo, hi = p["true_share_ci95"]
            assert lo <= p["true_share"] <= hi and hi - lo < 0.01, (policy, tenant, lo, hi)
            assert p["attributed_over_true"] == pytest.approx(p["attributed_share"] / p["true_share"])
            if p["backlogged"]:
                lo, hi = p["normalised_share_ci95"]
                assert lo <= p["normalised_share"] <= hi and hi - lo < 0.02
                assert p["gap"] == pytest.approx(abs(p["normalised_share"] - 1.0))
            else:
                assert p["normalised_share_ci95"] is None and p["gap_ci95"] is None
        gaps = [p["gap"] for p in per.values() if p["gap"] is not None]
        assert truth["max_gap"] == pytest.approx(max(gaps))
        lo, hi = truth["max_gap_ci95"]
        assert lo <= hi and hi - lo < 0.02
        lo, hi = truth["jain_ci95"]
        assert lo <= truth["jain"] <= hi
