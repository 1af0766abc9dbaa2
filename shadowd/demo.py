"""``shadowd demo``: the whole product on the reference engine, in minutes, anywhere.

The real vLLM scheduler (CPU) forms the batches; the reference engine
(kernel tables, or the built-in analytic profile) gives each step's GPU time
on simulated time; the tap records every step and sends frames over a real
zmq socket to a real daemon (in this process, its own threads), which stores
them in DuckDB, calibrates after a warm-up, attributes, watches for drift and
runs the gate.  Scenarios (``--inject``) change the world mid-run.

The gate's evidence minimums are scaled to the demo's length and the summary
says by how much: a few thousand steps are not a week of production traffic.
"""
from __future__ import annotations

import dataclasses
import math
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


import checks

DEFAULT_STEPS = 4000


@dataclass(frozen=True)
class Injection:
    """A change to the world at engine step ``step``: ``slowdown``, ``platform`` or ``tenant``."""

    kind: str
    value: str
    step: int

    @classmethod
    def parse(cls, text: str) -> "Injection":
        kind, sep, rest = text.partition(":")
        value, _, step = rest.rpartition("@")
        if not sep or not value or not step.isdigit():
            raise ValueError(f"--inject {text!r}: expected slowdown:FRACTION@STEP, "
                             "platform:DIR@STEP or tenant:NAME=TRACE@STEP")
        if kind == "slowdown":
            try:
                f = float(value)
            except ValueError:
                raise ValueError(f"--inject {text!r}: FRACTION must be a number such as 0.08") from None
            if not -0.5 < f < 5:
                raise ValueError(f"--inject {text!r}: slowdown {f} out of range (-0.5, 5)")
        elif kind == "tenant":
            if "=" not in value:
                raise ValueError(f"--inject {text!r}: expected tenant:NAME=TRACE@STEP")
        elif kind != "platform":
            raise ValueError(f"--inject {text!r}: unknown scenario {kind!r} (slowdown, platform, tenant)")
        return cls(kind, value, int(step))


@dataclass
class DemoSpec:
    platform: str = "builtin"
    model: str = "llama-3.1-8b"
    tp: int = 1
    tenants: tuple[str, ...] = ()
    steps: int = DEFAULT_STEPS
    seed: int = 0
    injects: tuple[Injection, ...] = ()
    db_path: str | None = None
    html_path: str | None = None
    warmup_fraction: float = 0.3
    gate_every: int = 200
    truth_steps: int = 120
    alerts: dict[str, Any] | None = None      # an [alerts] table; default: the log only
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def build(cls, *, injects: tuple[str, ...] = (), tenants: tuple[str, ...] = (), **kw: Any) -> "DemoSpec":
        parsed = tuple(sorted((Injection.parse(i) for i in injects), key=lambda i: i.step))
        steps = int(kw.get("steps", DEFAULT_STEPS))
        if steps < 800:
            raise ValueError(f"--steps {steps}: the demo needs at least 800 steps (warm-up, then evidence)")
        for inj in parsed:
            if not 0 < inj.step < steps:
                raise ValueError(f"--inject at step {inj.step} is outside the run (1..{steps - 1})")
        return cls(injects=parsed, tenants=tuple(tenants), **kw)

    @property
    def warmup_steps(self) -> int:
        return max(400, int(self.steps * self.warmup_fraction))

    @property
    def settle_steps(self) -> int:
        return int(self.steps * 0.2)


def demo_policy(spec: DemoSpec, sim_seconds_per_step: float) -> tuple[checks.GatePolicy, str]:
    """The production policy with evidence minimums scaled to this run, and a line saying so."""
    base = checks.GatePolicy()
    scored = spec.steps - spec.warmup_steps - spec.settle_steps
    f_steps = 0.25 * scored / base.min_steps["decode"]
    f_time = min(1.0, 0.25 * scored * sim_seconds_per_step / base.min_duration_s)
    policy = dataclasses.replace(base.scaled(f_steps), min_duration_s=base.min_duration_s * f_time)
    steps = ", ".join(f"{k} {v}" for k, v in policy.min_steps.items())
    note = (f"gate evidence minimums scaled to this {spec.steps}-step demo: steps per class x{f_steps:.3g} "
            f"({steps}), shadow duration x{f_time:.3g} ({policy.min_duration_s:.0f} s simulated)")
    return policy, note


def run_demo(spec: DemoSpec, *, progress: bool = False) -> dict[str, Any]:
    """Run the scenario; returns the JSON-able result (``shadowd demo --json``)."""
    from shadowd.demo_run import DemoRun
    with tempfile.TemporaryDirectory(prefix="shadowd-demo-") as tmp:
        return DemoRun(spec, Path(tmp), progress=progress).run()


def render_summary(r: dict[str, Any]) -> str:
    """A readable summary of ``run_demo``'s result."""
    lines = [f"shadowd demo: {r['steps']} engine steps, {r['requests']} requests, tenants "
             f"{', '.join(r['tenants'])} on {r['platform']} / {r['model']} (tp={r['tp']})",
             f"  simulated GPU time {r['simulated_seconds']:.1f} s, wall time {r['wall_seconds']:.1f} s; "
             f"frames stored {r['frames_stored']}, dropped {r['frames_dropped']}",
             f"  model version {r.get('model_version') or 'none'} (calibrated on {r['warmup_steps']} steps "
             f"after {r['settle_steps']} ramp-up steps)",
             f"  {r['policy_note']}"]
    acc = r.get("accuracy")
    if acc:
        lines.append("  out-of-sample |T_hat - T| / T       LLMVisor p50/p90/p99        tokens p50/p90/p99")
        for cls in ("prefill", "decode", "mixed", "all"):
            a = acc.get(cls)
            if a and a["steps"]:
                lv, tb = a["llmvisor"], a["token_baseline"]
                lines.append(f"    {cls:8} {a['steps']:>6} steps     {_p(lv.get('p50'))} {_p(lv.get('p90'))} "
                             f"{_p(lv.get('p99'))}     {_p(tb.get('p50'))} {_p(tb.get('p90'))} {_p(tb.get('p99'))}")
    truth = r.get("attribution_truth")
    if truth:
        lines.append(f"  per-tenant share vs Shapley ground truth (max error over tenants): LLMVisor "
                     f"{_p(truth['llmvisor']['tenant_error_max'])}, token split "
                     f"{_p(truth['token_baseline']['tenant_error_max'])}")
    for inj in r.get("injections", []):
        lines.append(f"  injected {inj['kind']} {inj['value']} at step {inj['step']}")
    events = r.get("drift_events", [])
    lines.append(f"  drift events: {len(events)}" + ("" if not events else
                 " (first: " + ", ".join(f"{e['detector']}@{e['step_seq']}" for e in events[:4]) + ")"))
    lines.append(f"  verdict: {r['verdict']}  ({r.get('reason') or ''})")
    for c in r.get("checks", []):
        lines.append(f"    {c['status']:>12}  {c['name']}: {c.get('reason') or ''}")
    if r.get("db"):
        lines.append(f"  database: {r['db']}")
    return "\n".join(lines)


def _p(x: float | None) -> str:
    return "  n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:5.1f}%"
