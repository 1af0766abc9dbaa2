"""Two CI-sized scenarios of the gate's held-out set 5 (benchmarks/gate_matrix.py, docs/validation.md).

Same platform (H200 tables), model (qwen2.5-7b at tensor parallelism 2), ServeGen tenants
and seeds as the held-out rows, shortened to 2,400 engine steps. Asserted: healthy traffic
reaches GO, never pages and raises no residual drift event; a 15 %
whole-step slowdown ends not GO, raises a residual drift event within 500 steps, and no re-fit
takes it in.
The full-length rows, with the rest of the matrix, are in docs/validation.md.

One target is missed at this length and marked so (strict: the mark fails the suite once it
is met, so it cannot go stale): the shortened fault run is not GO before its fault, since until
then its window holds one tenant (``evidence.tenants``). Tuning the gate until it passes would
be tuning on the held-out set; the next design change needs a new held-out set.
"""

from __future__ import annotations

import functools

import pytest

from benchmarks.gate_matrix import RESIDUAL, ci_sized
from shadowd.demo.scenario import run_demo
from shadowd.demo.spec import DemoSpec
from shadowd.paths import data_dir

pytestmark = pytest.mark.usefixtures("vllm")
SHARED = str(data_dir().parent)


@functools.cache
def _run(name: str) -> tuple[dict, int | None]:
    s = ci_sized(name)
    return run_demo(DemoSpec.build(**s.demo_kwargs(SHARED))), s.fault_step


def _residual_events(result: dict) -> list[int]:
    return [e["step_seq"] for e in result["drift_events"] if e["detector"] in RESIDUAL]


def test_held_out_healthy_steady_run_never_pages():
    result, _ = _run("H5-steady")
    assert result["model"] == "qwen2.5-7b" and result["tp"] == 2
    assert result["gate_history"], "the run never calibrated"
    assert "NO_GO" not in [h["verdict"] for h in result["gate_history"]]
    assert not _residual_events(result)


def test_held_out_healthy_steady_run_reaches_go():
    result, _ = _run("H5-steady")
    assert result["verdict"] == "GO", result["reason"]


def test_held_out_whole_step_slowdown_ends_not_go_and_is_not_refitted():
    result, at = _run("F5-step15")
    assert result["verdict"] != "GO", result["reason"]
    assert not [r for r in result["refits"] if r["version"] and (r["step"] or 0) > at], result["refits"]


def test_held_out_whole_step_slowdown_raises_a_drift_event_within_500_steps():
    result, at = _run("F5-step15")
    hits = _residual_events(result)
    assert hits and at <= min(hits) <= at + 500, (at, hits)


@pytest.mark.xfail(
    strict=True, reason="held-out 5, design r3, 2,400 steps: one tenant before the fault (evidence.tenants)"
)
def test_held_out_fault_is_a_test_the_gate_was_go_before_it():
    result, at = _run("F5-step15")
    before = [h for h in result["gate_history"] if h["step"] < at]
    assert before and before[-1]["verdict"] == "GO"
