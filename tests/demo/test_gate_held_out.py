"""Two rows of the gate's matrix, as declared (benchmarks/gate_scenarios.py, docs/validation.md).

Both are held-out set 36's (their stored rows ran under r38; r37 ended them alike, step for
step), run here under the design in force (``DESIGN_REVISION``): H200 tables, Phi-4 on two GPUs (10 KV heads), ServeGen
client 34, the Azure 2023 conversation trace and ShareGPT lengths as tenants, their seeds and
lengths.

H36-steady is the healthy steady run (6,000 engine steps, well under a minute). Asserted:
healthy traffic reaches GO, never pages and raises no residual drift event.

F36-step8 is an 8 % whole-step slowdown armed at step 7,000 of 12,000 (it fires at the gate's
first GO from then on), scheduled as a 6,000-step run (``--horizon 6000``) so the gate can reach
GO before it. Asserted, as the issue asks of an 8 % slowdown: the fault is a test (the gate was
GO at the last evaluation before it), ends not GO, raises a residual drift event within 500
engine steps of its start, and no re-fit takes it in. The other rows are in docs/validation.md.

Until design r19 these were held-out 9's rows, then held-out 18's (H18-steady and F18-step8),
then under r23 to r37 held-out 21's (H21-steady and F21-step5: that set's 8 % slowdown was never
GO before its fault, so it tested nothing). Sets are run as declared because a shortened
healthy run is a scenario nobody declared (its shorter calibration window fits a worse model:
H6-steady shortened ended NO_GO on decode accuracy, while the declared run reached GO).
"""

from __future__ import annotations

import functools

import pytest

from benchmarks.gate_matrix import RESIDUAL
from benchmarks.gate_scenarios import scenario
from shadowd.demo.scenario import run_demo
from shadowd.demo.spec import DemoSpec
from shadowd.paths import data_dir

pytestmark = pytest.mark.usefixtures("vllm")
SHARED = str(data_dir().parent)
HEALTHY, FAULT = "H36-steady", "F36-step8"


@functools.cache
def _run(name: str) -> tuple[dict, int | None]:
    s = scenario(name)
    return run_demo(DemoSpec.build(**s.demo_kwargs(SHARED))), s.fault_step


def _residual_events(result: dict) -> list[int]:
    return [e["step_seq"] for e in result["drift_events"] if e["detector"] in RESIDUAL]


def test_held_out_healthy_steady_run_never_pages():
    result, _ = _run(HEALTHY)
    assert result["model"] == "phi-4" and result["tp"] == 2
    assert result["gate_history"], "the run never calibrated"
    assert "NO_GO" not in [h["verdict"] for h in result["gate_history"]]
    assert not _residual_events(result)
    assert result["window_cuts"] == {"rows": 0, "memory": 0}  # the design's windows, as declared


def test_held_out_healthy_steady_run_reaches_go():
    result, _ = _run(HEALTHY)
    assert result["verdict"] == "GO", result["reason"]


def test_held_out_whole_step_slowdown_ends_not_go_and_is_not_refitted():
    result, at = _run(FAULT)
    assert result["verdict"] != "GO", result["reason"]
    assert not [r for r in result["refits"] if r["version"] and (r["step"] or 0) > at], result["refits"]


def test_held_out_whole_step_slowdown_raises_a_drift_event_within_500_steps():
    result, at = _run(FAULT)
    hits = _residual_events(result)
    assert hits and at <= min(hits) <= at + 500, (at, hits)


def test_held_out_fault_is_a_test_the_gate_was_go_before_it():
    result, at = _run(FAULT)
    before = [h for h in result["gate_history"] if h["step"] < at]
    assert before and before[-1]["verdict"] == "GO"
    assert result["horizon_steps"] == 6000 < at
