"""A long row's tenants read before it runs (``benchmarks/tenant_spans.py``): from the very
workload its demo offers the engine, and a tenant that ends or pauses past the run's end is
marked as gone."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

from benchmarks.gate_scenarios import SCENARIOS
from benchmarks.tenant_spans import engine_dry_run, present_until, render, scenario_requests, spans
from shadowd.demo.scenario import DemoRun, run_demo
from shadowd.demo.spec import DemoSpec
from shadowd.paths import shared_dir
from shadowd.sim.reference_run import ReferenceRun, RunSpec


def _span(last: float, pause: float = 0.0, since: float = 0.0) -> dict[str, float]:
    return {"requests": 9, "first_s": 0.0, "last_s": last, "longest_pause_s": pause, "pause_from_s": since}


def test_a_tenant_is_present_until_it_ends_or_pauses_past_the_horizon():
    assert present_until(_span(500.0), 1000.0) == 500.0  # ended
    assert present_until(_span(5000.0, pause=10.0, since=200.0), 1000.0) == 1000.0  # there throughout
    assert present_until(_span(5000.0, pause=3000.0, since=200.0), 1000.0) == 200.0  # back too late
    assert present_until(_span(5000.0, pause=300.0, since=200.0), 1000.0) == 1000.0  # back in time


def test_spans_are_per_tenant_in_arrival_order():
    reqs = [
        SimpleNamespace(tenant=t, arrival_s=a) for t, a in [("b", 5.0), ("a", 3.0), ("a", 0.5), ("a", 1.0)]
    ]
    s = spans(reqs)
    assert list(s) == ["a", "b"]
    assert s["a"] == {
        "requests": 3,
        "first_s": 0.5,
        "last_s": 3.0,
        "longest_pause_s": 2.0,
        "pause_from_s": 1.0,
    }
    assert s["b"]["longest_pause_s"] == 0.0


def test_a_rows_spans_are_read_from_the_workload_its_demo_runs(vllm, tmp_path):
    """The same requests the demo submits: a 4k-context model's prompts capped as the engine caps
    them, the swing applied to every tenant."""
    row = next(s for s in SCENARIOS if s.name == "H47-swing-long")
    row = dataclasses.replace(row, model="benchmarks/models/llama-2-7b", steps=1500)
    spec = DemoSpec.build(**row.demo_kwargs(str(shared_dir())))
    ref = ReferenceRun(
        RunSpec(platform=spec.platform, model=spec.model, tp=spec.tp, tenants=spec.tenant_specs)
    )
    offered = DemoRun(spec, tmp_path)._workload(ref)
    assert scenario_requests(row) == offered
    assert set(spans(offered)) == {"a", "b", "c"}


def test_the_engine_alone_covers_the_time_its_demo_covers_and_sees_its_backlog(vllm):
    """``--engine``, run before a row is declared, reads no gate: its engine is the demo's, step
    for step, so the simulated time and the backlog it reports are the row's own."""
    row = next(s for s in SCENARIOS if s.name == "H47-swing-long")
    heavy = ("a=lengths:sharegpt:150", "b=azure-conv:2.5")  # more than the engine serves: a backlog
    row = dataclasses.replace(row, model="benchmarks/models/llama-2-7b", steps=900, tenants=heavy)
    dry = engine_dry_run(row)
    demo = run_demo(DemoSpec.build(**row.demo_kwargs(str(shared_dir()))))
    assert dry["steps"] == demo["steps"] and dry["simulated_seconds"] == demo["simulated_seconds"]
    assert dry["peak_waiting"] == demo["backlog"]["peak_waiting"]
    assert dry["peak_waiting_tokens"] == demo["backlog"]["peak_waiting_tokens"] > 0


def test_the_page_marks_a_tenant_gone_before_the_run_ends():
    rows = [
        {
            "scenario": "X-long",
            "set": "held_out_9",
            "ran": {"seconds": 10_000.0, "design": "r45"},
            "spans": {"a": _span(2_000.0), "b": _span(50_000.0)},
        },
        {"scenario": "Y-long", "set": "held_out_9", "ran": None, "spans": {"a": _span(2_000.0)}},
    ]
    page = render({"command": "cmd", "rows": rows})
    x = next(line for line in page.splitlines() if line.startswith("| X-long"))
    assert "a: 0.0 h–0.6 h **(gone before the run ends)**" in x and x.endswith("| 1 |")
    assert "not run" in next(line for line in page.splitlines() if line.startswith("| Y-long"))
