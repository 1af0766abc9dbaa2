"""Validation reports from the stored step log (``shadowd report``).

Accuracy is always **out of sample**: both models are fitted on the earlier
part of the window and scored on the later part, from the raw contract
columns alone, so a log imported from another source can be reported on.
The report adds what the daemon recorded beside it: drift events, the gate's
latest decision, the stored model versions.
"""

from __future__ import annotations

import json
from typing import Any

import duckdb

from shadowd.attribution.accuracy import out_of_sample_report
from shadowd.steps.log_reader import Window, load_batch
from storage.records import latest_gate_decision

CLASSES = ("prefill", "decode", "mixed", "all")


def build_report(
    con: duckdb.DuckDBPyConnection,
    *,
    since: str | None = None,
    until: str | None = None,
    last_steps: int | None = None,
    fit_fraction: float = 0.5,
    policy: str = "equal",
) -> dict[str, Any]:
    batch = load_batch(con, Window(since=since, until=until, last_steps=last_steps))
    out: dict[str, Any] = {"steps": batch.num_steps, "requests": batch.num_requests}
    if batch.num_steps < 100:
        out["error"] = (
            f"only {batch.num_steps} steps with a measured latency in the window; "
            "need at least 100 to fit on one part and score on another"
        )
    else:
        key = _platform_key(con)
        rep = out_of_sample_report(batch, key, fit_fraction=fit_fraction, policy=policy)
        out.update(rep)
    out["drift_events"] = [
        dict(zip(("ts", "step_seq", "detector", "statistic", "threshold", "step_class", "resolved_at"), r))
        for r in con.execute(
            "SELECT ts, step_seq, detector, statistic, threshold, step_class, resolved_at "
            "FROM drift_events ORDER BY ts LIMIT 1000"
        ).fetchall()
    ]
    out["gate"] = latest_gate_decision(con)
    out["model_versions"] = [
        dict(zip(("version", "platform_key", "created_at", "fit_steps"), r))
        for r in con.execute(
            "SELECT version, platform_key, created_at, fit_steps FROM model_versions ORDER BY created_at"
        ).fetchall()
    ]
    return out


def _platform_key(con: duckdb.DuckDBPyConnection) -> dict[str, Any]:
    row = con.execute("SELECT body FROM model_versions ORDER BY created_at DESC LIMIT 1").fetchone()
    if row:
        return json.loads(row[0]).get("platform_key") or {"source": "step log"}
    return {"source": "step log"}


def _pct(x: float | None) -> str:
    return "   n/a" if x is None else f"{100 * x:5.1f}%"


def _num(x: float | None) -> str:
    return "  n/a" if x is None else f"{x:5.3f}"


def render_text(rep: dict[str, Any]) -> str:
    """Readable tables for a terminal."""
    lines = [f"steps {rep['steps']}, request rows {rep['requests']}"]
    if "error" in rep:
        lines.append(rep["error"])
    acc = rep.get("accuracy")
    if acc:
        lines += [
            "",
            "Out-of-sample step-latency error |T_hat - T| / T  (fit: earlier half, scored: later half)",
            f"{'class':8} {'steps':>6}  {'LLMVisor R2':>11} {'p50':>6} {'p90':>6} {'p99':>6}"
            f"   {'tokens R2':>9} {'p50':>6} {'p90':>6} {'p99':>6}   {'p90 x':>5} {'p99 x':>5}",
        ]
        for cls in CLASSES:
            a = acc.get(cls) or {}
            lv, tb, ratio = a.get("llmvisor", {}), a.get("token_baseline", {}), a.get("ratio", {})
            lines.append(
                f"{cls:8} {a.get('steps', 0):>6}  {_num(lv.get('r2')):>11} {_pct(lv.get('p50'))} "
                f"{_pct(lv.get('p90'))} {_pct(lv.get('p99'))}   {_num(tb.get('r2')):>9} "
                f"{_pct(tb.get('p50'))} {_pct(tb.get('p90'))} {_pct(tb.get('p99'))}   "
                f"{_ratio(ratio.get('p90'))} {_ratio(ratio.get('p99'))}"
            )
    tenants = rep.get("tenants") or []
    if tenants:
        lines += ["", f"{'tenant':16} {'requests':>8} {'LLMVisor s':>11} {'token s':>9} {'VTC tokens':>12}"]
        for t in sorted(tenants, key=lambda t: -t.get("llmvisor_measured_ms", 0)):
            lines.append(
                f"{t['tenant'][:16]:16} {t.get('requests', 0):>8} "
                f"{t.get('llmvisor_measured_ms', 0) / 1e3:>11.2f} {t.get('token_ms', 0) / 1e3:>9.2f} "
                f"{t.get('vtc_tokens', 0):>12.0f}"
            )
    events = rep.get("drift_events") or []
    lines += ["", f"drift events: {len(events)}"]
    for e in events[:10]:
        lines.append(
            f"  {e['ts']}  step {e['step_seq']}  {e['detector']}  {e.get('step_class') or ''}"
            f"{'  (resolved)' if e.get('resolved_at') else ''}"
        )
    gate = rep.get("gate")
    if gate:
        lines += ["", f"gate: {gate['verdict']}  ({gate.get('reason') or ''})"]
    return "\n".join(lines)


def _ratio(x: float | None) -> str:
    return "  n/a" if x is None else f"{x:4.1f}x"
