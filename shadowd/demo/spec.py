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
from dataclasses import dataclass, field
from typing import Any

import checks
from shadowd.twin.load_profile import LoadProfile
from shadowd.twin.request_spec import RequestSpec
from shadowd.twin.workload import TenantSpec, build_workload, merge_streams

DEFAULT_STEPS = 4000
# Prompt tokens waiting for the engine at which a run stops: a backlog that never drains holds
# every waiting request's token ids (vLLM keeps two copies) until the out-of-memory killer ends
# the run (H48-swing-long).  Sized by the bytes per waiting prompt token that
# benchmarks/demo_memory.py measures (docs/benchmarks.md) to stay well within a 24 GiB machine
# beside the daemon.
DEFAULT_MAX_WAITING_TOKENS = 400_000_000
# The built-in three-tenant mix at the rates of a busy engine (tens of requests per batch).
DEMO_TENANTS = ("chat=synthetic:chat:18", "code=synthetic:code:8", "docs=synthetic:longdoc:1.2")


@dataclass(frozen=True)
class Injection:
    """A change to the world at engine step ``step``: ``slowdown`` (kernels only),
    ``step-slowdown`` (the whole step, host time included), ``platform`` or ``tenant``.

    ``@go:STEP`` arms it instead: it fires at the first gate evaluation at or after ``step``
    whose verdict is GO, and not at all if none is.  A fault that lands while the gate is
    already INCONCLUSIVE tests nothing (benchmarks/gate_document.py marks such rows "not a
    test"); an armed one always lands on a gate that vouches for the engine.

    >>> Injection.parse("step-slowdown:0.08@go:7000")
    Injection(kind='step-slowdown', value='0.08', step=7000, armed=True)
    """

    kind: str
    value: str
    step: int
    armed: bool = False

    @classmethod
    def parse(cls, text: str) -> Injection:
        kind, sep, rest = text.partition(":")
        value, _, step = rest.rpartition("@")
        armed = step.startswith("go:")
        step = step.removeprefix("go:")
        if not sep or not value or not step.isdigit():
            raise ValueError(
                f"--inject {text!r}: expected slowdown:FRACTION@STEP, step-slowdown:FRACTION@STEP, "
                "platform:DIR@STEP or tenant:NAME=TRACE@STEP (@go:STEP: at the first GO from STEP on)"
            )
        if kind in ("slowdown", "step-slowdown"):
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
            raise ValueError(
                f"--inject {text!r}: unknown scenario {kind!r} (slowdown, step-slowdown, platform, tenant)"
            )
        return cls(kind, value, int(step), armed)


@dataclass
class DemoSpec:
    platform: str = "builtin"
    model: str = "llama-3.1-8b"
    tp: int = 1
    tenants: tuple[str, ...] = ()
    steps: int = DEFAULT_STEPS
    seed: int = 0
    # The run length the warm-up, settle and evidence minimums are sized for (default: ``steps``).
    # A fault run sized as a shorter healthy run reaches its first GO where that run would, and
    # the steps beyond the horizon are time for the fault (benchmarks/gate_scenarios.py, set 9 on).
    horizon: int | None = None
    injects: tuple[Injection, ...] = ()
    loads: tuple[tuple[str, LoadProfile], ...] = ()  # (tenant or "*", profile), applied in order
    db_path: str | None = None
    html_path: str | None = None
    warmup_fraction: float = 0.3
    gate_every: int = 200
    truth_steps: int = 120
    max_waiting_tokens: int = DEFAULT_MAX_WAITING_TOKENS  # a bigger backlog stops the run (BacklogError)
    alerts: dict[str, Any] | None = None  # an [alerts] table; default: the log only
    govern: bool = False  # admission by the governor, reading the demo daemon's gate state file
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def build(
        cls,
        *,
        injects: tuple[str, ...] = (),
        tenants: tuple[str, ...] = (),
        loads: tuple[str, ...] = (),
        **kw: Any,
    ) -> DemoSpec:
        parsed = tuple(sorted((Injection.parse(i) for i in injects), key=lambda i: i.step))
        profiles = tuple(_parse_load(text) for text in loads)
        steps = int(kw.get("steps", DEFAULT_STEPS))
        if steps < 800:
            raise ValueError(f"--steps {steps}: the demo needs at least 800 steps (warm-up, then evidence)")
        for inj in parsed:
            if not 0 < inj.step < steps:
                raise ValueError(f"--inject at step {inj.step} is outside the run (1..{steps - 1})")
        horizon = kw.get("horizon")
        if horizon is not None and not 800 <= int(horizon) <= steps:
            raise ValueError(f"--horizon {horizon}: between 800 and --steps ({steps})")
        for text in (*tenants, *(i.value for i in parsed if i.kind == "tenant")):
            TenantSpec.parse(text).check_source()
        return cls(injects=parsed, tenants=tuple(tenants), loads=profiles, **kw)

    @property
    def tenant_specs(self) -> tuple[str, ...]:
        """The tenants the run starts with (``--tenant``, or the built-in mix)."""
        return self.tenants or DEMO_TENANTS

    def run_spec(self, **overrides: Any) -> Any:
        """The engine run this demo drives (a ``RunSpec``; imported here, not at module load, so
        bad arguments fail before any engine import).  ``benchmarks/tenant_spans.py --engine``
        runs the same one without the tap."""
        from shadowd.sim.reference_run import RunSpec

        base = dict(
            platform=self.platform, model=self.model, tp=self.tp, tenants=self.tenant_specs, seed=self.seed
        )
        return RunSpec(**{**base, **self.extra, **overrides})

    def requests(self, max_context: int) -> list[RequestSpec]:
        """The tenants' merged requests (at most two per step), each re-timed by the load profile
        that names it (or ``*``).  No engine is needed: what arrives when can be read before a run
        (``benchmarks/tenant_spans.py``)."""
        reqs = build_workload(
            self.tenant_specs, seed=self.seed, limit=self.steps * 2, max_context=max_context
        )
        if not self.loads:
            return reqs
        by_tenant: dict[str, list[RequestSpec]] = {}
        for r in reqs:
            by_tenant.setdefault(r.tenant, []).append(r)
        for name, profile in self.loads:
            if name != "*" and name not in by_tenant:
                raise ValueError(f"--load names tenant {name!r}; tenants: {sorted(by_tenant)}")
            for t in by_tenant if name == "*" else (name,):
                by_tenant[t] = profile.apply(by_tenant[t])
        return merge_streams(by_tenant.values())

    @property
    def horizon_steps(self) -> int:
        """The run length the schedule below is sized for."""
        return self.steps if self.horizon is None else self.horizon

    @property
    def warmup_steps(self) -> int:
        return max(400, int(self.horizon_steps * self.warmup_fraction))

    @property
    def settle_steps(self) -> int:
        return int(self.horizon_steps * 0.2)

    @property
    def max_window_factor(self) -> float:
        """How far the warm-up window may widen for a short class: it ends by ``0.6`` of the
        horizon, so the gate has evidence time left (``CalibrationSettings.max_window_factor``)."""
        return max(1.0, (0.6 * self.horizon_steps - self.settle_steps) / self.warmup_steps)


def _parse_load(text: str) -> tuple[str, LoadProfile]:
    """``[TENANT=]PROFILE`` → (tenant or ``*``, profile)."""
    tenant, sep, profile = text.rpartition("=")
    try:
        return (tenant.strip() if sep else "*") or "*", LoadProfile.parse(profile)
    except ValueError as exc:
        raise ValueError(f"--load {text!r}: {exc}") from None


def demo_policy(spec: DemoSpec, sim_seconds_per_step: float) -> tuple[checks.GatePolicy, str]:
    """The production policy with evidence minimums scaled to this run, and a line saying so."""
    base = checks.GatePolicy()
    scored = spec.horizon_steps - spec.warmup_steps - spec.settle_steps
    f_steps = 0.25 * scored / base.min_steps["decode"]
    f_time = min(1.0, 0.25 * scored * sim_seconds_per_step / base.min_duration_s)
    policy = dataclasses.replace(base.scaled(f_steps), min_duration_s=base.min_duration_s * f_time)
    steps = ", ".join(f"{k} {v}" for k, v in policy.min_steps.items())
    note = (
        f"gate evidence minimums scaled to a {spec.horizon_steps}-step demo: steps per class x{f_steps:.3g} "
        f"({steps}), shadow duration x{f_time:.3g} ({policy.min_duration_s:.0f} s simulated)"
    )
    return policy, note
