"""The gate's policy: what must hold, with defaults in code and overrides from config.

Every field has a default; ``GatePolicy.from_dict`` overrides some of them and rejects any
key it does not know (a misspelt threshold must not silently fall back to a default).
Per-step-class settings are dicts keyed by 'prefill', 'decode', 'mixed'; an override names
only the classes it changes. ``scaled(factor)`` shrinks the evidence minimums that grow with
time (steps per class, shadow duration) for short demos, and records the factor so the demo
can say so (``describe_scale``).

>>> p = GatePolicy.from_dict({"max_p90_error": {"mixed": 0.2}, "consecutive_passes": 5})
>>> p.max_p90_error["mixed"], p.max_p90_error["decode"], p.consecutive_passes
(0.2, 0.1, 5)
>>> GatePolicy.from_dict({"max_p90_eror": {}})
Traceback (most recent call last):
...
ValueError: unknown gate policy key 'max_p90_eror' (did you mean 'max_p90_error'?)
>>> GatePolicy().scaled(0.01).min_steps["decode"], GatePolicy().scaled(0.01).scale
(50, 0.01)
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

STEP_CLASSES = ("prefill", "decode", "mixed")


def _per_class(**values: float) -> Any:
    return field(default_factory=lambda: dict(values))


@dataclass(frozen=True)
class GatePolicy:
    """Thresholds of every gate check and the gate's state machine (see ``checks.gate``).

    Errors are out-of-sample relative step-latency errors ``|T_hat - T| / T``.
    """

    # accuracy, per step class
    max_p90_error: dict[str, float] = _per_class(prefill=0.10, decode=0.10, mixed=0.15)
    max_p99_error: dict[str, float] = _per_class(prefill=0.25, decode=0.25, mixed=0.30)
    # Reported, not judged: token-baseline p90 error / model p90 error per class is shown against
    # this reference (gate output, /metrics, report); an accurate, undrifted model governs even
    # where tokens happen to be nearly as good.
    min_advantage: float = 1.25
    # evidence minimums
    required_step_classes: tuple[str, ...] = STEP_CLASSES
    min_steps: dict[str, int] = _per_class(prefill=500, decode=5000, mixed=2000)
    min_duration_s: float = 3600.0
    min_tenants: int = 2
    min_max_context: int = 2048
    # drift, stability, coverage
    max_unresolved_drift: int = 0
    stability_split: str = "llmvisor"
    max_composition_effect: float = 0.10
    max_stability_age_s: float = 3600.0
    max_extrapolated_fraction: float = 0.05
    max_new_tenant_share: float = 0.05  # of recent attributed time, by tenants calibration never saw
    # Design r27: "recent" is the last this many attributed steps (within the evidence window), so
    # a newcomer is judged by what it carries now, not diluted by the hours before it came.
    new_tenant_recent_steps: int = 1000
    # data health
    max_drop_rate: float = 0.001
    max_step_age_s: float = 60.0
    # state machine
    consecutive_passes: int = 3
    min_pass_interval_s: float = 0.0
    inconclusive_grace: int = 1
    decision_ttl_s: float = 300.0
    scale: float = 1.0

    def __post_init__(self) -> None:
        for name in ("max_p90_error", "max_p99_error", "min_steps"):
            bad = sorted(set(getattr(self, name)) - set(STEP_CLASSES))
            if bad:
                raise ValueError(
                    f"gate policy {name}: unknown step class {bad[0]!r}; known: {list(STEP_CLASSES)}"
                )
        bad = sorted(set(self.required_step_classes) - set(STEP_CLASSES))
        if bad:
            raise ValueError(f"gate policy required_step_classes: unknown step class {bad[0]!r}")
        if self.consecutive_passes < 1:
            raise ValueError("gate policy consecutive_passes must be ≥ 1")
        if self.inconclusive_grace < 0:
            raise ValueError("gate policy inconclusive_grace must be ≥ 0")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GatePolicy:
        """Defaults overridden by ``data``; unknown keys raise ``ValueError`` naming the key."""
        known = {f.name: f for f in fields(cls)}
        for key in data:
            if key not in known:
                close = difflib.get_close_matches(str(key), list(known), n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else f"; known keys: {sorted(known)}"
                raise ValueError(f"unknown gate policy key {key!r}{hint}")
        base = cls()
        kwargs: dict[str, Any] = {}
        for key, value in data.items():
            default = getattr(base, key)
            if isinstance(default, dict):
                if not isinstance(value, Mapping):
                    raise ValueError(f"gate policy {key} must be a mapping of step class to value")
                kind = int if key == "min_steps" else float
                kwargs[key] = {**default, **{str(k): kind(v) for k, v in value.items()}}
            elif isinstance(default, tuple):
                kwargs[key] = tuple(str(v) for v in value)
            elif isinstance(default, str):
                kwargs[key] = str(value)
            elif isinstance(default, int):
                if float(value) != int(value):
                    raise ValueError(f"gate policy {key} must be an integer, got {value!r}")
                kwargs[key] = int(value)
            else:
                kwargs[key] = float(value)
        return cls(**kwargs)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["required_step_classes"] = list(self.required_step_classes)
        return d

    def scaled(self, factor: float) -> GatePolicy:
        """Evidence minimums that accrue with time × ``factor`` (steps per class, duration)."""
        if not factor > 0:
            raise ValueError("scale factor must be > 0")
        steps = {k: max(1, math.ceil(v * factor)) for k, v in self.min_steps.items()}
        return replace(
            self, min_steps=steps, min_duration_s=self.min_duration_s * factor, scale=self.scale * factor
        )

    def describe_scale(self) -> str:
        """One line saying whether, and how, the evidence minimums were scaled."""
        if self.scale == 1.0:
            return "evidence minimums at full scale"
        steps = ", ".join(f"{k} {v}" for k, v in self.min_steps.items())
        return (
            f"evidence minimums scaled by {self.scale:g}: steps per class ({steps}), "
            f"shadow duration {self.min_duration_s:g} s; tenants ({self.min_tenants}) and "
            f"longest context ({self.min_max_context}) unscaled"
        )
