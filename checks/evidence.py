"""What the gate judges: numbers the daemon reads from its database, as plain data.

Every field may be missing (``None``): the gate treats missing evidence as inconclusive,
never as a pass. ``Evidence.from_dict`` rejects unknown keys, so a renamed column in the
daemon's query cannot quietly turn into missing evidence.

>>> ev = Evidence.from_dict({
...     "accuracy": {"decode": {"steps": 6000, "p90": 0.04, "p99": 0.09,
...                             "baseline_p90": 0.11, "baseline_p99": 0.30}},
...     "calibrated_platform_key": "h200/llama-8b/bf16/tp1/vllm-0.33/flash",
...     "running_platform_key": "h200/llama-8b/bf16/tp1/vllm-0.33/flash",
...     "last_step_ts": 1000.0})
>>> ev.accuracy["decode"].p90, ev.tap_drop_rate is None
(0.04, True)
>>> Evidence.from_dict({"tenant_seen": 3})
Traceback (most recent call last):
...
ValueError: unknown evidence key 'tenant_seen' (did you mean 'tenants_seen'?)
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any


def _reject_unknown(cls: type, data: Mapping[str, Any], what: str) -> None:
    known = [f.name for f in fields(cls)]
    for key in data:
        if key not in known:
            close = difflib.get_close_matches(str(key), known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else f"; known keys: {sorted(known)}"
            raise ValueError(f"unknown {what} key {key!r}{hint}")


@dataclass(frozen=True)
class ClassAccuracy:
    """Out-of-sample relative step-latency errors of one step class, model and token baseline."""

    steps: int | None = None
    p50: float | None = None
    p90: float | None = None
    p99: float | None = None
    r2: float | None = None
    baseline_p50: float | None = None
    baseline_p90: float | None = None
    baseline_p99: float | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ClassAccuracy:
        _reject_unknown(cls, data, "accuracy")
        return cls(**data)


@dataclass(frozen=True)
class Evidence:
    """Inputs of one gate evaluation. Times are seconds (``last_step_ts`` on the gate's clock).

    ``stability`` maps split name → ``{'effect', 'ci_low', 'ci_high'[, 'computed_at',
    'baseline']}`` as produced by ``checks.share_stability``; ``baseline`` is the effect the
    calibration window showed under the model in force (the check then judges growth over it). ``extrapolated_fraction`` and ``new_tenants`` come
    from ``checks.envelope.EnvelopeMonitor.summary()``; ``new_tenant_share`` is the share of the
    window's attributed time carried by those tenants (what coverage judges: one passing
    newcomer is not a new workload). ``drift_blind`` names required step classes the residual
    detectors cannot speak for, and why (then ``unresolved_drift_events`` is missing);
    ``drift_partial`` names watched classes where one detector could not be calibrated and
    the gate relies on the other(s); ``drift_dull`` names required classes whose detectors
    would not raise the smallest slowdown the gate must catch in time (design r19: silence
    there is no evidence, so drift is INCONCLUSIVE unless an event already fails it).
    ``barely_held`` names classes the calibration window's fit part held too few steps of to
    identify their coefficients (design r17; before, the whole window): accuracy beyond the
    limits there is INCONCLUSIVE (recalibrate), not a page.  ``evidence_window_s``: the span of
    recent steps the accuracy evidence counts (the gate's window), so an evidence minimum not yet
    met can say how long the wait is at the rate so far, or that the window never holds it.
    """

    accuracy: dict[str, ClassAccuracy] = field(default_factory=dict)
    shadow_duration_s: float | None = None
    tenants_seen: int | None = None
    max_context_seen: int | None = None
    calibrated_max_context: int | None = None  # longest context the calibration window held
    unresolved_drift_events: int | None = None
    drift_blind: dict[str, str] = field(default_factory=dict)  # required class -> why not watched
    drift_partial: dict[str, str] = field(default_factory=dict)  # class -> detectors relied on, why
    drift_dull: dict[str, str] = field(default_factory=dict)  # class -> why its detectors miss a 5 % fault
    barely_held: dict[str, str] = field(default_factory=dict)  # class -> why calibration never identified it
    stability: dict[str, dict[str, Any]] = field(default_factory=dict)
    calibrated_platform_key: str | None = None
    running_platform_key: str | None = None
    tap_drop_rate: float | None = None
    last_step_ts: float | None = None
    extrapolated_fraction: float | None = None
    new_tenants: int | None = None
    new_tenant_share: float | None = None
    evidence_window_s: float | None = None  # the span the accuracy evidence is counted over

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Evidence:
        _reject_unknown(cls, data, "evidence")
        d = dict(data)
        d["accuracy"] = {
            str(k): v if isinstance(v, ClassAccuracy) else ClassAccuracy.from_dict(v)
            for k, v in (d.get("accuracy") or {}).items()
        }
        d["stability"] = {str(k): dict(v) for k, v in (d.get("stability") or {}).items()}
        d["drift_blind"] = {str(k): str(v) for k, v in (d.get("drift_blind") or {}).items()}
        d["drift_partial"] = {str(k): str(v) for k, v in (d.get("drift_partial") or {}).items()}
        d["drift_dull"] = {str(k): str(v) for k, v in (d.get("drift_dull") or {}).items()}
        d["barely_held"] = {str(k): str(v) for k, v in (d.get("barely_held") or {}).items()}
        return cls(**d)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
