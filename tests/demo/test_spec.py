"""The demo's schedule: warm-up, settle and evidence minimums, sized by ``--horizon``.

Held-out 9's fault runs (benchmarks/gate_matrix.py) are 9000 steps scheduled as 6000-step runs,
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
