"""The gate's confusion matrix on declared development and held-out scenarios (docs/validation.md).

Each scenario is one ``shadowd demo`` run (real vLLM scheduler on simulated time, reference
engine, tap -> daemon -> calibration -> drift watch -> gate), run as the CLI command the
document prints beside it. Healthy scenarios inject nothing and should reach GO; fault scenarios
inject a change after the gate had its chance to reach GO and should end not GO. Per scenario:
the final verdict, the engine step of the first GO, NO_GO and INCONCLUSIVE episodes with the
checks behind them, NO_GO evaluations after the first GO (pages on healthy traffic), residual
drift events before any fault per judged step (false alarms), and the delay from the fault to
the first residual drift event and to the first not-GO evaluation.

The sets are declared in ``benchmarks/gate_protocol.py`` (``PROTOCOL``) and their rows in
``benchmarks/gate_scenarios.py`` (``SCENARIOS``), committed before the held-out runs; the design
revisions in ``benchmarks/gate_designs.py``; ``benchmarks/gate_document.py`` renders the stored
result. Never retune on the held-out set: a design change made after seeing held-out results
needs a new held-out set (``PROTOCOL``).

    .venv/bin/python -m benchmarks.gate_matrix                  # all scenarios, 2 at a time;
                                                                # writes docs/validation.{json,md}
    .venv/bin/python -m benchmarks.gate_matrix --set held_out_1 --only H-steady,F-step8
    .venv/bin/python -m benchmarks.gate_matrix --from-json docs/validation.json   # re-render only
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import Any

from benchmarks.gate_designs import DESIGN_REVISION, revision
from benchmarks.gate_document import markdown
from benchmarks.gate_protocol import INGEST, PROTOCOL, latest_held_out
from benchmarks.gate_scenarios import REPO, SCENARIOS, Scenario

RESIDUAL = ("page_hinkley", "adwin", "coefficient")


# Wall seconds allowed per engine step.  0.012 until H48-swing-long (800,000 steps of Gemma 2 27B
# at tensor parallelism 2, saturating) was killed by it at 9,600 s, its fourth run, still going:
# most steps take about 4 ms on a 2-core machine, that row's more.
WALL_S_PER_STEP = 0.03


def run_scenario(s: Scenario, timeout_s: float | None = None) -> dict[str, Any]:
    """Run one scenario through the CLI; its JSON result plus the regime the engine saw.  The
    default time limit grows with the run's length (``WALL_S_PER_STEP``): a limit, not a result,
    so it changes no row that finishes within it."""
    import os

    timeout_s = timeout_s or max(1800.0, WALL_S_PER_STEP * s.steps)

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    shared = env.get("SHADOWD_SHARED", str(REPO.parent / "shared"))
    env["SHADOWD_SHARED"] = shared
    with tempfile.TemporaryDirectory(prefix="gate-matrix-") as tmp:
        db = f"{tmp}/run.duckdb"
        cmd = s.command(db).replace("$SHADOWD_SHARED", shared).replace(".venv/bin/python", sys.executable)
        t0 = time.perf_counter()
        proc = subprocess.run(
            shlex.split(cmd), cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout_s
        )
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            return {"error": proc.stderr[-2000:], "wall_seconds": wall}
        result = json.loads(proc.stdout)
        result["regime"] = regime(db)
    result["wall_seconds"] = wall
    return result


def regime(db: str, block: int = 500) -> dict[str, Any]:
    """Requests per step and step time per block of engine steps: light vs saturated, as run."""
    import duckdb

    con = duckdb.connect(db, read_only=True)
    try:
        rows = con.execute(
            f"""SELECT step_seq // {block} AS b, avg(num_requests), avg(latency_ms)
                FROM steps GROUP BY b ORDER BY b"""
        ).fetchall()
    finally:
        con.close()
    reqs = [float(r[1]) for r in rows]
    return {
        "block_steps": block,
        "requests_per_step": [round(x, 1) for x in reqs],
        "step_ms": [round(float(r[2]), 1) for r in rows],
        "min_block_requests": min(reqs) if reqs else None,
        "max_block_requests": max(reqs) if reqs else None,
    }


def summarise(s: Scenario, r: dict[str, Any]) -> dict[str, Any]:
    """The matrix row of one run."""
    out: dict[str, Any] = {
        "scenario": asdict(s),
        "command": s.command(),
        "design": DESIGN_REVISION,
        "ingest": INGEST,
    }
    if "error" in r:
        return {**out, "error": r["error"], "final": "ERROR"}
    hist = r.get("gate_history", [])
    first_go = next((h["step"] for h in hist if h["verdict"] == "GO"), None)
    fired = [i["step"] for i in r.get("injections", [])]
    unfired = bool(r.get("injections_unfired"))
    # Where the fault began: an armed one fires at the first GO from its step on, or never.
    fault = fired[0] if fired else (None if unfired else s.fault_step)
    judged_from = hist[0]["step"] if hist else None  # first evaluation: calibration in force
    residual = [e for e in r.get("drift_events", []) if e["detector"] in RESIDUAL]
    before = [e for e in residual if fault is None or e["step_seq"] < fault]
    judged_steps = ((fault or r["steps"]) - judged_from) if judged_from is not None else 0
    after = [e["step_seq"] for e in residual if fault is not None and e["step_seq"] >= fault]
    # An evaluation at the fault's own step comes after it (the demo injects, then evaluates): a
    # platform swap is NO_GO there, the fault's doing, not a page on a healthy engine.
    not_go_after = next(
        (h["step"] for h in hist if fault is not None and h["step"] >= fault and h["verdict"] != "GO"), None
    )
    pages_after_go = sum(
        1
        for h in hist
        if first_go is not None
        and h["step"] > first_go
        and h["verdict"] == "NO_GO"
        and (fault is None or h["step"] < fault)
    )
    out.update(
        final=r["verdict"],
        final_reason=r.get("reason"),
        first_go_step=first_go,
        calibrated_by_step=judged_from,
        evaluations=len(hist),
        episodes=episodes(hist),
        pages_after_first_go=pages_after_go,
        false_alarms=len(before),
        judged_steps=judged_steps,
        false_alarm_upper95=_poisson_upper(len(before), judged_steps),
        fault_at=fault,
        fault_unfired=unfired,
        drift_delay_steps=(min(after) - fault) if after else None,
        not_go_delay_steps=(not_go_after - fault) if not_go_after is not None else None,
        accuracy=r.get("accuracy"),
        advantage=r.get("advantage"),
        truth=r.get("attribution_truth"),
        check_reasons=r.get("check_reasons"),
        regime=r.get("regime"),
        policy_note=r.get("policy_note"),
        simulated_seconds=r.get("simulated_seconds"),
        wall_seconds=r.get("wall_seconds"),
        frames_dropped=r.get("frames_dropped"),  # the tap's drops: a row's evidence is only what arrived
        drift_events=r.get("drift_events", [])[:40],
        alarm_confirmation=r.get("alarm_confirmation"),
        tenants_run=r.get("tenants"),
        refits=[
            {k: x.get(k) for k in ("step", "parent", "version", "why", "steps", "kind")}
            for x in r.get("refits", [])
        ],
        window_cuts=r.get("window_cuts"),  # memory guard / max_window_rows; None: run before it was counted
    )
    return out


def episodes(hist: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Maximal runs of one non-GO verdict: first/last step, evaluations, the checks behind it."""
    out: list[dict[str, Any]] = []
    prev = None
    for h in hist:
        verdict = h["verdict"]
        if verdict != "GO":
            want = "fail" if verdict == "NO_GO" else "inconclusive"
            causes = sorted(k for k, v in h.get("causes", {}).items() if v == want)
            if prev == verdict:
                last = out[-1]
                last["last_step"], last["evaluations"] = h["step"], last["evaluations"] + 1
                last["causes"] = sorted(set(last["causes"]) | set(causes))
            else:
                out.append(
                    {
                        "verdict": verdict,
                        "first_step": h["step"],
                        "last_step": h["step"],
                        "evaluations": 1,
                        "causes": causes,
                    }
                )
        prev = verdict
    return out


def _poisson_upper(k: int, n: int) -> float | None:
    if n <= 0:
        return None
    from scipy.stats import chi2

    return float(chi2.ppf(0.95, 2 * (k + 1)) / 2 / n)


def run_all(scenarios: list[Scenario], jobs: int, partial: Path | None = None) -> list[dict[str, Any]]:
    """Run ``scenarios`` ``jobs`` at a time; each finished row is appended to ``partial`` (JSON
    lines) so a long matrix interrupted keeps what it measured."""

    def one(s: Scenario) -> dict[str, Any]:
        print(f"  running {s.name} ...", file=sys.stderr, flush=True)
        r = run_scenario(s)
        row = summarise(s, r)
        if partial is not None:
            with partial.open("a") as f:
                f.write(json.dumps(row, default=str) + "\n")
        print(f"  {s.name}: {row['final']} ({row.get('wall_seconds') or 0:.0f} s)", file=sys.stderr)
        return row

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(one, scenarios))


def _superseded(out: Path, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Stored rows that ``rows`` replace (the very same row stored already aside), plus the
    stored document's own superseded rows: what a re-run replaced stays on record."""
    if not out.with_suffix(".json").exists():
        return []
    stored = json.loads(out.with_suffix(".json").read_text())
    # As stored (tuples read back as lists): a row stored already (``--from-partial`` while its
    # run went on) is the same row, not one it replaced; any other stored row a re-run replaces
    # stays on record, and says whether its scenario had changed.
    rows = json.loads(json.dumps(rows, default=str))
    new = {(r["scenario"]["name"], r.get("design", "r1")): r for r in rows}
    kept = [
        r
        for r in stored.get("superseded_rows") or []
        if new.get((r["scenario"]["name"], r.get("design", "r1"))) != r
    ]
    for r in stored["rows"]:
        n = new.get((r["scenario"]["name"], r.get("design", "r1")))
        if n is None or n == r:
            continue
        if n["scenario"] == r["scenario"] and not r.get("superseded_by"):
            again = "a re-run of the same scenario"
            if n.get("ingest") != r.get("ingest"):
                again += ", its ingest cut at fixed steps (repeatable)"
            r = {**r, "superseded_by": again}
        kept.append(r)
    return kept


def _merged(out: Path, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` plus the stored rows of (scenario, design) pairs they do not replace."""
    if not out.with_suffix(".json").exists():
        return rows
    old = json.loads(out.with_suffix(".json").read_text())["rows"]
    ran = {(r["scenario"]["name"], r.get("design", "r1")) for r in rows}
    return [r for r in old if (r["scenario"]["name"], r.get("design", "r1")) not in ran] + rows


def _document(rows: list[dict[str, Any]], args: str, wall: float) -> dict[str, Any]:
    from benchmarks.machine import machine

    order = {s.name: i for i, s in enumerate(SCENARIOS)}
    rows = sorted(rows, key=lambda r: (revision(r), order.get(r["scenario"]["name"], 99)))
    return {
        "command": f".venv/bin/python -m benchmarks.gate_matrix {args}".strip(),
        "finished_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": machine(),
        "total_wall_seconds": wall,
        "protocol": PROTOCOL,
        "rows": rows,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--set", choices=("all", *PROTOCOL), default="all")
    ap.add_argument("--only", help="comma-separated scenario names")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", default="docs/validation", help="writes OUT.json and OUT.md")
    ap.add_argument("--merge", action="store_true", help="keep stored rows of scenarios not re-run")
    ap.add_argument("--from-json", help="re-render OUT.md from a stored OUT.json (no runs)")
    ap.add_argument("--from-partial", help="store and render the rows an interrupted run left (JSON lines)")
    a = ap.parse_args(argv)
    out = Path(a.out)
    if a.from_json:
        res = json.loads(Path(a.from_json).read_text())
    elif a.from_partial:
        rows = [json.loads(x) for x in Path(a.from_partial).read_text().splitlines() if x.strip()]
        wall = sum(r.get("wall_seconds") or 0 for r in rows) / max(a.jobs, 1)
        if a.merge:
            rows = _merged(out, rows)
        res = _document(rows, " ".join(argv or sys.argv[1:]) + " (rows saved as they finished)", wall)
        res["superseded_rows"] = _superseded(out, rows)  # what was on record stays on record
        out.with_suffix(".json").write_text(json.dumps(res, indent=1, default=str) + "\n")
    else:
        chosen = [s for s in SCENARIOS if a.set in ("all", s.set)]
        if a.only:
            names = set(a.only.split(","))
            unknown = names - {s.name for s in SCENARIOS}
            if unknown:
                ap.error(f"unknown scenario(s) {sorted(unknown)}; known: {[s.name for s in SCENARIOS]}")
            chosen = [s for s in chosen if s.name in names]
        newest = latest_held_out(PROTOCOL)
        chosen.sort(key=lambda s: (s.set != newest, s.set))  # the unseen set first
        t0 = time.perf_counter()
        rows = run_all(chosen, a.jobs, out.with_suffix(".partial.jsonl"))
        if a.merge:
            rows = _merged(out, rows)
        res = _document(rows, " ".join(argv or sys.argv[1:]), time.perf_counter() - t0)
        res["superseded_rows"] = _superseded(out, rows)
        out.with_suffix(".json").write_text(json.dumps(res, indent=1, default=str) + "\n")
    out.with_suffix(".md").write_text(markdown(res))
    print(f"wrote {out.with_suffix('.md')}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
