"""Two CI-sized scenarios of the gate's held-out set 2 (benchmarks/gate_matrix.py, docs/validation.md).

Same platform (H200 tables), model (qwen2.5-72b at tensor parallelism 4), ServeGen tenants
and seeds as the held-out rows, shortened to 2,400 engine steps: healthy traffic must reach GO
and never page; a 15 % whole-step slowdown must end not GO with a residual drift event soon
after it. The full-length rows, with the rest of the matrix, are in docs/validation.md.

Both targets are missed today and marked so (strict: the mark fails the suite once a target is
met, so it cannot go stale): the CI-sized healthy run pages on a residual drift alarm on
decode steps, and the CI-sized fault run is NO_GO on decode accuracy before its fault (the
calibration window held few decode steps). Tuning the gate until these pass would be tuning
on the held-out set; the next design change needs a new held-out set (docs/validation.md).
"""

from __future__ import annotations

import pytest

from benchmarks.gate_matrix import RESIDUAL, ci_sized
from shadowd.demo.scenario import run_demo
from shadowd.demo.spec import DemoSpec
from shadowd.paths import data_dir

pytestmark = pytest.mark.usefixtures("vllm")
SHARED = str(data_dir().parent)


def _run(name: str) -> tuple[dict, int | None]:
    s = ci_sized(name)
    return run_demo(DemoSpec.build(**s.demo_kwargs(SHARED))), s.fault_step


@pytest.mark.xfail(strict=True, reason="held-out 2, design r2: pages on a decode drift alarm")
def test_held_out_healthy_steady_run_reaches_go_and_never_pages():
    result, _ = _run("H2-steady")
    verdicts = [h["verdict"] for h in result["gate_history"]]
    assert result["verdict"] == "GO", result["reason"]
    assert "NO_GO" not in verdicts[verdicts.index("GO") :], verdicts
    assert not [e for e in result["drift_events"] if e["detector"] in RESIDUAL]
    assert result["model"] == "qwen2.5-72b" and result["tp"] == 4


@pytest.mark.xfail(strict=True, reason="held-out 2, design r2: NO_GO on decode accuracy before the fault")
def test_held_out_whole_step_slowdown_ends_not_go_with_a_drift_event():
    result, at = _run("F2-step15")
    hits = [e["step_seq"] for e in result["drift_events"] if e["detector"] in RESIDUAL]
    assert result["verdict"] != "GO", result["reason"]
    before = [h for h in result["gate_history"] if h["step"] < at]
    assert before and before[-1]["verdict"] == "GO", "a fault is a test only if the gate was GO before it"
    assert hits and at <= min(hits) <= at + 500, (at, hits)
