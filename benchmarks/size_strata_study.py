"""Why design r33 keeps the drift detectors' baseline per batch-size stratum: held-out 27's decode.

Runs one stored matrix row (``H27-saturated`` by default; ``benchmarks/gate_matrix.py``) with
``--db``.  On the decode steps the first calibrated model scored (before any re-fit) it reports:

* the model's error by batch size, as measured and noise-free (each step's latency recomputed by
  the reference engine without jitter, from the requests the step carried), so the part that is
  the model's own and not the engine's noise is visible;
* how persistent that error is (lag-1 and lag-10 autocorrelation) against one detrend baseline
  and against one per batch-size stratum (``checks.stratified_detrend``);
* the decode drift calibration of the first window made both ways (``detrend_by_size`` off: as
  design r32; on: r33): Page-Hinkley threshold and allowance, and the judged steps until a 5 %
  whole-step slowdown is raised (``checks.detection_delay``, design r19's power check).

    .venv/bin/python -m benchmarks.size_strata_study   # writes docs/size_strata.json and .md
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
COMMAND = ".venv/bin/python -m benchmarks.size_strata_study"


def _run(name: str, db: str) -> None:
    from benchmarks.gate_scenarios import scenario

    shared = os.environ.get("SHADOWD_SHARED", str(REPO.parent / "shared"))
    cmd = scenario(name).command(db).replace("$SHADOWD_SHARED", shared)
    cmd = cmd.replace(".venv/bin/python", sys.executable)
    env = {**os.environ, "PYTHONPATH": str(REPO), "SHADOWD_SHARED": shared}
    subprocess.run(shlex.split(cmd), cwd=REPO, env=env, check=True, capture_output=True, text=True)


def _autocorrelation(x: np.ndarray, lag: int) -> float:
    x = x - x.mean()
    return float((x[:-lag] * x[lag:]).mean() / x.var()) if len(x) > lag and x.var() > 0 else float("nan")


def _first_window(con: Any) -> tuple[Any, dict[str, Any], int]:
    from shadowd.steps.log_reader import load_batch

    batch = load_batch(con)
    version, body = con.execute("SELECT version, body FROM model_versions ORDER BY created_at").fetchone()
    body = json.loads(body)
    first = body["fit_window"]["first_step_seq"]
    last = first + body["calibration"]["window_steps"] - 1
    window = batch.select_steps((batch.step_seq >= first) & (batch.step_seq <= last))
    return window, body, version


def _scored_decode(con: Any, version: str) -> list[tuple]:
    """(batch size, new tokens, contexts, prefill flags, measured ms, predicted ms) per decode step
    the first version scored."""
    return con.execute(
        """SELECT s.num_requests, list(r.new_tokens ORDER BY r.req_id), list(r.context_tokens ORDER BY r.req_id),
                  list(r.phase <> 'decode' ORDER BY r.req_id), s.latency_ms, s.predicted_ms
           FROM steps s JOIN step_requests r USING (engine_id, run_id, step_seq)
           WHERE s.kind = 'decode' AND s.model_version = ? AND s.predicted_ms > 0
           GROUP BY s.step_seq, s.num_requests, s.latency_ms, s.predicted_ms ORDER BY s.step_seq""",
        [version],
    ).fetchall()


def _errors(name: str, rows: list[tuple]) -> dict[str, Any]:
    import checks
    from benchmarks.gate_scenarios import scenario
    from shadowd.twin.step_latency import ReferenceEngine

    s = scenario(name)
    shared = os.environ.get("SHADOWD_SHARED", str(REPO.parent / "shared"))
    engine = ReferenceEngine(
        s.platform.replace("$SHADOWD_SHARED", shared), str(REPO / s.model), s.tp, jitter=False
    )
    size = np.array([r[0] for r in rows])
    measured = np.array([r[4] / r[5] - 1 for r in rows])
    noise_free = np.array([engine.latency_ms(r[1], r[2], r[3]) / r[5] - 1 for r in rows])
    groups = [checks.size_stratum(checks.stratum(b, 1.0)) for b in size]
    one = checks.Detrend(100).update_many(measured / measured.std())
    by_size = checks.StratifiedDetrend(100).update_many(measured / measured.std(), groups)[0]
    return {
        "steps": len(rows),
        "by_batch_size": [
            {
                "batch_size": int(b),
                "steps": int((size == b).sum()),
                "measured_mean": float(measured[size == b].mean()),
                "noise_free_mean": float(noise_free[size == b].mean()),
            }
            for b in np.unique(size)
        ],
        "measured_std": float(measured.std()),
        "noise_free_std": float(noise_free.std()),
        "jitter_std": float(((1 + measured) / (1 + noise_free) - 1).std()),
        "persistence": {
            what: {
                "lag1": _autocorrelation(x, 1),
                "lag10": _autocorrelation(x, 10),
                "std_z": None if what == "noise_free" else float(x.std()),
            }
            for what, x in (("noise_free", noise_free), ("one_baseline", one), ("by_size", by_size))
        },
    }


def _calibrations(window: Any, body: dict[str, Any]) -> dict[str, Any]:
    import checks
    from shadowd.daemon.calibrator import CalibrationSettings, calibrate

    out = {}
    for label, by_size in (("r32 (one baseline)", False), ("r33 (by batch-size stratum)", True)):
        cal = calibrate(window, body["platform_key"], CalibrationSettings(detrend_by_size=by_size))
        d = cal.drift.get("decode")
        if d is None:
            out[label] = {"unwatched": cal.unwatched.get("decode")}
            continue
        delay = checks.detection_delay(d, checks.FAULT_SHIFT, 4 * checks.FAULT_BUDGET_STEPS)
        out[label] = {
            "ph_threshold": d.ph_threshold,
            "allowance": d.allowance,
            "std": d.std,
            "delay_5pct": delay,
            "budget": checks.FAULT_BUDGET_STEPS,
        }
    return out


def study(name: str) -> dict[str, Any]:
    import duckdb

    from benchmarks.gate_scenarios import scenario
    from benchmarks.machine import machine

    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="size-strata-") as tmp:
        db = f"{tmp}/run.duckdb"
        _run(name, db)
        con = duckdb.connect(db, read_only=True)
        window, body, version = _first_window(con)
        errors = _errors(name, _scored_decode(con, version))
        cals = _calibrations(window, body)
    return {
        "command": COMMAND + ("" if name == "H27-saturated" else f" --scenario {name}"),
        "scenario": name,
        "scenario_command": scenario(name).command("RUN.duckdb"),
        "model_version": version,
        "errors": errors,
        "calibrations": cals,
        "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime()),
        "wall_seconds": time.perf_counter() - t0,
        "machine": machine(),
    }


def _pct(x: float) -> str:
    return f"{100 * x:+.1f} %"


def render(doc: dict[str, Any]) -> str:
    e = doc["errors"]
    lines = [
        "# The model's decode error by batch size (design r33)",
        "",
        "Generated by `" + doc["command"] + "` (" + doc["finished_at"] + "); do not edit by hand.",
        "",
        f"Row `{doc['scenario']}` of `benchmarks/gate_matrix.py` (held-out 27, a set design r33 was "
        f"built on), run as `{doc['scenario_command']}`; the {e['steps']} decode steps its first "
        f"model version ({doc['model_version']}) scored.  *Noise-free*: the same steps' latency "
        "recomputed by the reference engine without jitter, so what is left is the model's own error.",
        "",
        "| batch size | steps | measured error (mean) | noise-free error (mean) |",
        "|---:|---:|---:|---:|",
    ]
    for r in e["by_batch_size"]:
        lines.append(
            f"| {r['batch_size']} | {r['steps']} | {_pct(r['measured_mean'])} | {_pct(r['noise_free_mean'])} |"
        )
    p = e["persistence"]
    lines += [
        "",
        f"Standard deviation: measured {100 * e['measured_std']:.2f} %, noise-free "
        f"{100 * e['noise_free_std']:.2f} %, jitter {100 * e['jitter_std']:.2f} %.",
        "",
        "| what the detectors would see | lag-1 autocorrelation | lag-10 | std (in measured std) |",
        "|---|---:|---:|---:|",
    ]
    for key, label in (
        ("noise_free", "the model's error alone (noise-free)"),
        ("one_baseline", "measured, against one baseline (r32)"),
        ("by_size", "measured, against its batch-size stratum's (r33)"),
    ):
        q = p[key]
        sd = "–" if q["std_z"] is None else f"{q['std_z']:.2f}"
        lines.append(f"| {label} | {q['lag1']:.2f} | {q['lag10']:.2f} | {sd} |")
    lines += [
        "",
        "The decode drift calibration of the first window, made both ways:",
        "",
        "| detrend | Page-Hinkley threshold | allowance | judged steps to raise a 5 % slowdown |",
        "|---|---:|---:|---|",
    ]
    for label, c in doc["calibrations"].items():
        if "ph_threshold" not in c:
            lines.append(f"| {label} | – | – | not watched: {c['unwatched']} |")
            continue
        d = c["delay_5pct"]
        seen = f"not within {4 * c['budget']}" if d is None else str(d)
        lines.append(
            f"| {label} | {c['ph_threshold']:g} | {c['allowance']:.4f} | {seen} (budget {c['budget']}) |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scenario", default="H27-saturated")
    ap.add_argument("--out", default=str(REPO / "docs" / "size_strata"))
    args = ap.parse_args(argv)
    write(Path(args.out), study(args.scenario), render)
    return 0


def write(out: Path, doc: dict[str, Any], render: Any) -> None:
    """A study's figures as OUT.json and its page as OUT.md (also printed)."""
    out.with_suffix(".json").write_text(json.dumps(doc, indent=1) + "\n")
    out.with_suffix(".md").write_text(render(doc))
    print(render(doc))


if __name__ == "__main__":
    raise SystemExit(main())
