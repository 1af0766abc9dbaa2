"""The demo's terminal summary: what ran, how accurate, what the gate said."""

from __future__ import annotations

import math
from typing import Any


def render_summary(r: dict[str, Any]) -> str:
    """A readable summary of ``run_demo``'s result."""
    lines = [
        f"shadowd demo: {r['steps']} engine steps, {r['requests']} requests, tenants "
        f"{', '.join(r['tenants'])} on {r['platform']} / {r['model']} (tp={r['tp']})",
        f"  simulated GPU time {r['simulated_seconds']:.1f} s, wall time {r['wall_seconds']:.1f} s; "
        f"frames stored {r['frames_stored']}, dropped {r['frames_dropped']}",
        f"  model version {r.get('model_version') or 'none'} (calibrated on {r['warmup_steps']} steps "
        f"after {r['settle_steps']} ramp-up steps)",
        f"  {r['policy_note']}",
    ]
    acc = r.get("accuracy")
    if acc:
        lines.append("  out-of-sample |T_hat - T| / T       LLMVisor p50/p90/p99        tokens p50/p90/p99")
        for cls in ("prefill", "decode", "mixed", "all"):
            a = acc.get(cls)
            if a and a["steps"]:
                lv, tb = a["llmvisor"], a["token_baseline"]
                lines.append(
                    f"    {cls:8} {a['steps']:>6} steps     {_p(lv.get('p50'))} {_p(lv.get('p90'))} "
                    f"{_p(lv.get('p99'))}     {_p(tb.get('p50'))} {_p(tb.get('p90'))} {_p(tb.get('p99'))}"
                )
    truth = r.get("attribution_truth")
    if truth:
        lines.append(
            f"  per-tenant share vs Shapley ground truth (max error over tenants): LLMVisor "
            f"{_p(truth['llmvisor']['tenant_error_max'])}, token split "
            f"{_p(truth['token_baseline']['tenant_error_max'])}"
        )
    for inj in r.get("injections", []):
        armed = f" (armed from step {inj['armed_at']}: the first GO)" if inj.get("armed_at") else ""
        lines.append(f"  injected {inj['kind']} {inj['value']} at step {inj['step']}{armed}")
    for inj in r.get("injections_unfired", []):
        lines.append(
            f"  not injected: {inj['kind']} {inj['value']} (armed from step {inj['armed_at']}; "
            "the gate never said GO from then on)"
        )
    events = r.get("drift_events", [])
    lines.append(
        f"  drift events: {len(events)}"
        + (
            ""
            if not events
            else " (first: " + ", ".join(f"{e['detector']}@{e['step_seq']}" for e in events[:4]) + ")"
        )
    )
    lines.append(f"  verdict: {r['verdict']}  ({r.get('reason') or ''})")
    adv = r.get("advantage") or {}
    if adv:
        lines.append(
            "  advantage over the token baseline (p90 ratio; reported, not judged): "
            + ", ".join(f"{k} {v['ratio']:.2f}" for k, v in sorted(adv.items()))
        )
    for c in r.get("checks", []):
        lines.append(f"    {c['status']:>12}  {c['name']}: {c.get('reason') or ''}")
    gov = r.get("governor")
    if gov:
        steps = {"attributed": 0, "vtc": 0}
        for w in gov["windows"]:
            for kind, n in w["charged"].items():
                steps[kind] += n
        lines.append(
            f"  governor: {steps['attributed']} steps charged attributed GPU time, {steps['vtc']} VTC tokens; "
            "switches " + ", ".join(f"{k} x{v}" for k, v in sorted(gov["switches"].items()))
        )
    if r.get("db"):
        lines.append(f"  database: {r['db']}")
    return "\n".join(lines)


def _p(x: float | None) -> str:
    return "  n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:5.1f}%"
