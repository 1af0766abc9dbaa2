"""The demo's schedule: warm-up, settle and evidence minimums, sized by ``--horizon``.

Held-out 9's fault runs (benchmarks/gate_scenarios.py) are 9000 steps scheduled as 6000-step runs,
so their first GO can come where a healthy 6000-step run's does, before the fault at 7000.
"""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from shadowd.cli import main
from shadowd.demo.spec import DemoSpec, demo_policy


def test_a_horizon_schedules_a_long_run_as_the_shorter_one():
    short, long_ = DemoSpec.build(steps=6000), DemoSpec.build(steps=9000, horizon=6000)
    assert long_.steps == 9000 and long_.horizon_steps == 6000
    for attr in ("warmup_steps", "settle_steps", "max_window_factor"):
        assert getattr(long_, attr) == getattr(short, attr), attr
    assert demo_policy(long_, 0.005)[0] == demo_policy(short, 0.005)[0]
    # Without a horizon the schedule grows with the run: the late first GO held-out 9 avoids.
    plain = DemoSpec.build(steps=9000)
    assert plain.warmup_steps > short.warmup_steps and plain.horizon_steps == 9000
    assert demo_policy(plain, 0.005)[0].min_steps["decode"] > demo_policy(short, 0.005)[0].min_steps["decode"]


@pytest.mark.parametrize("horizon", [799, 9001])
def test_a_horizon_outside_the_run_is_refused(horizon):
    with pytest.raises(ValueError, match="--horizon"):
        DemoSpec.build(steps=9000, horizon=horizon)
    res = CliRunner().invoke(main, ["demo", "--steps", "9000", "--horizon", str(horizon)])
    assert res.exit_code == 2 and "--horizon" in res.output


@pytest.mark.parametrize(
    "kw",
    [{"tenants": ("x=nofile.csv",)}, {"injects": ("tenant:x=missing/trace.jsonl@900",), "steps": 1000}],
)
def test_a_missing_trace_is_refused_before_an_engine_is_built(kw):
    """Checked when the spec is built (``TenantSpec.check_source``), so a typo costs a second,
    not vLLM's import and an engine; the schemes (``synthetic:``...) are left to their loaders."""
    with pytest.raises(FileNotFoundError, match="no such file"):
        DemoSpec.build(**kw)
    assert DemoSpec.build(tenants=("a=synthetic:chat:4", "b=azure-code"), steps=1000).tenants


def test_an_armed_injection_parses_and_a_bad_one_is_refused():
    """``@go:STEP`` arms a fault for the first GO from STEP on (held-out 32's protocol)."""
    spec = DemoSpec.build(steps=12000, injects=("step-slowdown:0.08@go:7000", "slowdown:0.05@8000"))
    armed, plain = spec.injects
    assert (armed.step, armed.armed, plain.step, plain.armed) == (7000, True, 8000, False)
    for bad in ("step-slowdown:0.08@go:", "step-slowdown:0.08@go7000", "step-slowdown:0.08@gone:7000"):
        with pytest.raises(ValueError, match="@go:STEP"):
            DemoSpec.build(steps=12000, injects=(bad,))
    with pytest.raises(ValueError, match="outside the run"):
        DemoSpec.build(steps=6000, injects=("step-slowdown:0.08@go:7000",))


def test_an_armed_injection_waits_for_the_latest_verdict_to_be_go(tmp_path):
    """``DemoRun._due``: due at its step only once the latest evaluation said GO; a plain one
    at its step whatever the gate says."""
    from shadowd.demo.scenario import DemoRun

    spec = DemoSpec.build(steps=12000, injects=("step-slowdown:0.08@go:7000", "slowdown:0.05@7000"))
    armed, plain = spec.injects
    run = DemoRun(spec, tmp_path)
    assert not run._due(armed, 6999) and not run._due(plain, 6999)
    assert not run._due(armed, 7000) and run._due(plain, 7000)  # no verdict yet
    run.decisions = [{"verdict": "GO"}, {"verdict": "INCONCLUSIVE"}]
    assert not run._due(armed, 7400)
    run.decisions.append({"verdict": "GO"})
    assert run._due(armed, 7600)
