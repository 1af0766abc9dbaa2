"""When each tenant of a long gate-matrix row sends requests, read from its workload before any
run, against the simulated time the row's run covered.

Why: the gate needs two tenants among those its model was scored on (``evidence.tenants``).  A
long row whose trace tenants end, or pause for hours, leaves fewer tenants in the traffic than it
declared, and with one left the gate cannot say GO however healthy the engine (H47-swing-long
ended so).  That is a property of the row, not of the gate, and it can be read before the row
runs: a set's long rows are checked with this before they are declared
(``benchmarks/gate_protocol.py``).

    .venv/bin/python -m benchmarks.tenant_spans                    # every long row -> docs/tenant_spans.*
    .venv/bin/python -m benchmarks.tenant_spans --only H48-swing-long --no-write
    .venv/bin/python -m benchmarks.tenant_spans --render docs/tenant_spans.json
    .venv/bin/python -m benchmarks.tenant_spans --engine H49-swing-long   # before declaring a row

``--engine`` runs the row's engine alone (the real scheduler and the reference engine, no tap,
no daemon, no gate: nothing the gate decides is read) for the row's steps and reports the
simulated time they cover and the backlog at its peak, so a row is declared knowing whether its
tenants send through its run and whether its offered load drains.

The workload is the demo's own (``DemoSpec.requests``: the traces at their rates, re-timed by the
row's load profile), so what is reported is what the row's engine was offered.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.gate_scenarios import REPO, SCENARIOS, Scenario

LONG_STEPS = 300_000  # a row this long is meant to run for simulated hours (its own false-alarm bound)
JSON_PATH = REPO / "docs" / "tenant_spans.json"
MD_PATH = REPO / "docs" / "tenant_spans.md"
COMMAND = ".venv/bin/python -m benchmarks.tenant_spans"


def spans(requests: Iterable[Any]) -> dict[str, dict[str, float]]:
    """Per tenant: requests, first and last arrival (s), and its longest pause and when it began.

    >>> from types import SimpleNamespace as R
    >>> s = spans([R(tenant="a", arrival_s=t) for t in (0.0, 1.0, 9.0)] + [R(tenant="b", arrival_s=2.0)])
    >>> s["a"]["last_s"], s["a"]["longest_pause_s"], s["a"]["pause_from_s"], s["b"]["requests"]
    (9.0, 8.0, 1.0, 1)
    """
    by: dict[str, list[float]] = {}
    for r in requests:
        by.setdefault(r.tenant, []).append(float(r.arrival_s))
    out = {}
    for tenant, times in sorted(by.items()):
        a = np.sort(np.asarray(times))
        gaps = np.diff(a)
        i = int(np.argmax(gaps)) if gaps.size else 0
        out[tenant] = {
            "requests": int(a.size),
            "first_s": float(a[0]),
            "last_s": float(a[-1]),
            "longest_pause_s": float(gaps[i]) if gaps.size else 0.0,
            "pause_from_s": float(a[i]),
        }
    return out


def present_until(span: dict[str, float], horizon_s: float) -> float:
    """How far into ``horizon_s`` the tenant keeps sending: its last arrival, or the start of a
    pause it does not come back from before the horizon, whichever is earlier."""
    if span["pause_from_s"] + span["longest_pause_s"] >= horizon_s > span["pause_from_s"]:
        return span["pause_from_s"]
    return min(span["last_s"], horizon_s)


def scenario_requests(s: Scenario) -> list[Any]:
    """The row's workload as its demo builds it (needs the traces under ``$SHADOWD_SHARED``)."""
    from shadowd.demo.spec import DemoSpec
    from shadowd.twin.model_shape import ModelShape

    spec = DemoSpec.build(**s.demo_kwargs(os.environ.get("SHADOWD_SHARED", str(REPO.parent / "shared"))))
    model_len = spec.run_spec().model_len(ModelShape.resolve(spec.model))
    return spec.requests(max_context=model_len - 1024)


def engine_dry_run(s: Scenario) -> dict[str, Any]:
    """The row's engine alone over its steps, in the demo's chunks (the same schedule, step for
    step): the simulated time covered, and the backlog's peak as the demo reads it."""
    from shadowd.demo.spec import DemoSpec
    from shadowd.sim.reference_run import ReferenceRun

    spec = DemoSpec.build(**s.demo_kwargs(os.environ.get("SHADOWD_SHARED", str(REPO.parent / "shared"))))
    run = ReferenceRun(spec.run_spec(record_steps=False))
    run.driver.submit(spec.requests(max_context=run.max_model_len - 1024))
    done, peak, peak_tokens = 0, 0, 0
    while done < spec.steps:
        target = min(spec.steps, done + spec.gate_every)
        done = run.run(target)
        waiting, tokens = run.driver.backlog()
        peak, peak_tokens = max(peak, waiting), max(peak_tokens, tokens)
        if done < target:
            break
    return {
        "steps": done,
        "simulated_seconds": run.driver.elapsed_s,
        "peak_waiting": peak,
        "peak_waiting_tokens": peak_tokens,
        "waiting_at_end": len(run.scheduler.waiting),
    }


def _simulated_seconds(validation: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per long row that ran: the simulated seconds its last stored run covered, and its design."""
    out: dict[str, dict[str, Any]] = {}
    for r in validation.get("rows", []):
        if r.get("simulated_seconds") is not None:
            out[r["scenario"]["name"]] = {"seconds": r["simulated_seconds"], "design": r.get("design", "r1")}
    return out


def run(names: Sequence[str] | None = None) -> dict[str, Any]:
    validation = json.loads((REPO / "docs" / "validation.json").read_text())
    ran = _simulated_seconds(validation)
    rows = []
    for s in SCENARIOS:
        if s.steps < LONG_STEPS or (names and s.name not in names):
            continue
        t0 = time.perf_counter()
        rows.append(
            {
                "scenario": s.name,
                "set": s.set,
                "steps": s.steps,
                "tenants": list(s.tenants),
                "loads": list(s.loads),
                "ran": ran.get(s.name),
                "spans": spans(scenario_requests(s)),
                "wall_seconds": round(time.perf_counter() - t0, 1),
            }
        )
    return {"command": COMMAND + (f" --only {' '.join(names)}" if names else ""), "rows": rows}


def _h(seconds: float) -> str:
    return f"{seconds / 3600:.1f} h"


def _tenant_cell(name: str, span: dict[str, float], horizon: float | None) -> str:
    text = f"{name}: {_h(span['first_s'])}–{_h(span['last_s'])}"
    if span["longest_pause_s"] >= 600:
        text += f", pause {_h(span['longest_pause_s'])} from {_h(span['pause_from_s'])}"
    if horizon is not None and present_until(span, horizon) < 0.9 * horizon:
        text += " **(gone before the run ends)**"
    return text


def render(result: dict[str, Any]) -> str:
    lines = [
        "# Tenants over a long row's run",
        "",
        "<!-- generated by benchmarks/tenant_spans.py from docs/tenant_spans.json; do not edit -->",
        "",
        f"Command: `{result['command']}`.  Each tenant's arrivals as the row's demo offers them (its traces at",
        "their rates, re-timed by its load profile): first–last arrival and its longest pause (when 10 simulated",
        "minutes or more).  *Run covered* is the simulated time of the row's stored run in `docs/validation.json`.",
        "A tenant gone before 90 % of that time is marked: from there on the gate's model is calibrated and",
        "scored on fewer tenants than the row declared, and with one left the gate cannot say GO",
        "(`evidence.tenants`).",
        "",
        "| row | set | run covered (design) | tenants | tenants past 90 % of the run |",
        "|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        ran = r["ran"]
        horizon = ran["seconds"] if ran else None
        cells = "<br>".join(_tenant_cell(n, s, horizon) for n, s in r["spans"].items())
        covered = f"{_h(horizon)} ({ran['design']})" if ran else "not run"
        lasting = (
            str(sum(present_until(s, horizon) >= 0.9 * horizon for s in r["spans"].values()))
            if horizon is not None
            else "–"
        )
        lines.append(f"| {r['scenario']} | {r['set'].replace('_', ' ')} | {covered} | {cells} | {lasting} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", nargs="+", help="rows by name (default: every long row)")
    ap.add_argument("--no-write", action="store_true", help="print the rows, write nothing")
    ap.add_argument("--render", type=Path, help="re-render the page from a stored result")
    ap.add_argument("--engine", metavar="ROW", help="the row's engine alone: time covered, backlog")
    a = ap.parse_args(argv)
    if a.engine:
        row = next((s for s in SCENARIOS if s.name == a.engine), None)
        if row is None:
            ap.error(f"no row {a.engine!r}")
        print(json.dumps({"row": row.name, "spans": spans(scenario_requests(row)), **engine_dry_run(row)}))
        return 0
    if a.render:
        MD_PATH.write_text(render(json.loads(a.render.read_text())))
        return 0
    os.environ.setdefault("SHADOWD_SHARED", str(REPO.parent / "shared"))
    result = run(a.only)
    if a.no_write:
        json.dump(result["rows"], sys.stdout, indent=1)
        return 0
    JSON_PATH.write_text(json.dumps(result, indent=1) + "\n")
    MD_PATH.write_text(render(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
