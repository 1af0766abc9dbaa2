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
