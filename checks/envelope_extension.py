"""May the model in force vouch for traffic beyond its envelope? The guard of design r43. Pure.

The envelope (``checks.envelope``) bounds where a model's coefficients were identified; steps
beyond it are extrapolation, so the gate is INCONCLUSIVE on them (design r12) and asks for a
re-fit.  A re-fit can be refused (its window shows a change at one moment, its detectors would
be too dull) or not yet due, and then the gate stays INCONCLUSIVE while the model in force may
be predicting those steps as well as the ones inside.  Shadow mode measures every step's
latency, so the model's accuracy beyond its envelope is known, not assumed.  Design r43 widens
the envelope (coefficients, drift detectors and lineage unchanged) to cover the steps beyond it
that the model scored out of sample, when for every step class with steps there:

1. the model in force meets the gate's accuracy limits on them (p90 and p99), judged from
   ``min_steps`` of them (fewer: the class is not yet judged, and nothing is widened);
2. their mean residual sits within the class's drift allowance of the calibration's mean
   residual: extrapolation shows as a bias beyond the envelope before it shows as an accuracy
   miss, and the accuracy limits are wider than the slowdowns the gate must catch;
3. and, as for a re-fit (``checks.refit_guard`` checks 1-2), no gate check fails, no residual
   drift event is unresolved, and tenants calibration never saw carry no more of the recent
   attributed time than the gate's new-tenant limit.

A class with steps beyond whose residual the calibration has no mean for (it has no drift
detectors) cannot pass check 2.  What an extension cannot rule out: shares of the steps it
covers were not identified by a fit there, only their step totals validated; a re-fit, once
allowed, still re-identifies them.  Measured on the held-out sets in ``docs/validation.md``
(``benchmarks/gate_matrix.py``).

>>> from checks.policy import GatePolicy
>>> ok = {"decode": BeyondClass(steps=400, p90=0.04, p99=0.06, shift=0.005, allowance=0.02)}
>>> extension_decision(ok, GatePolicy(), min_steps=150)
(True, 'decode 400 steps beyond the envelope: p90 0.040, p99 0.060, residual 0.005 from calibration (allowance 0.02)')
>>> biased = {"decode": BeyondClass(400, 0.08, 0.11, 0.041, 0.02)}
>>> extension_decision(biased, GatePolicy(), min_steps=150)[1]
'decode: residual mean beyond the envelope 0.041 from calibration > allowance 0.02 (400 steps): extrapolation, not validated'
>>> extension_decision({**ok, "mixed": BeyondClass(38, 0.14, 0.17, 0.08, 0.02)}, GatePolicy(), min_steps=150)[1]
'mixed: 38 steps beyond the envelope, fewer than 150 to judge'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from checks.policy import GatePolicy


@dataclass(frozen=True)
class BeyondClass:
    """The model in force on one class's steps beyond its envelope: how many, its p90/p99
    relative error there, how far their mean residual sits from the calibration's (absolute),
    and the class's drift allowance (``None``: the calibration has no mean for the class)."""

    steps: int
    p90: float
    p99: float
    shift: float | None
    allowance: float | None


def extension_decision(
    beyond: Mapping[str, BeyondClass],
    policy: GatePolicy,
    *,
    min_steps: int,
    failing_checks: tuple[str, ...] = (),
    unresolved_drift: int = 0,
    new_tenant_share: float | None = None,
) -> tuple[bool | None, str]:
    """``(allowed, why)``: whether the envelope may widen over every class's steps in ``beyond``
    (the classes with steps beyond it), and why or why not; ``None``: not yet judged (a class
    has too few steps beyond), so the caller waits rather than records a refusal."""
    if not beyond:
        return None, "no step beyond the envelope"
    if failing_checks:
        return (
            False,
            f"gate checks failing ({', '.join(failing_checks)}): evidence that attribution is wrong now",
        )
    if unresolved_drift > 0:
        return False, f"{unresolved_drift} unresolved drift events"
    share, limit = new_tenant_share, policy.max_new_tenant_share
    if share is not None and share > limit:
        return (
            False,
            f"tenants calibration never saw carry {share:.1%} of the recent attributed time (> {limit:.0%})",
        )
    said = []
    for cls, b in sorted(beyond.items()):
        if b.steps < min_steps:
            return None, f"{cls}: {b.steps} steps beyond the envelope, fewer than {min_steps} to judge"
        p90, p99 = policy.max_p90_error.get(cls), policy.max_p99_error.get(cls)
        if p90 is None or p99 is None:
            return False, f"{cls}: no accuracy limits to judge it by"
        if b.p90 > p90 or b.p99 > p99:
            return False, (
                f"{cls}: beyond the envelope p90 {b.p90:.3f} (limit {p90:g}), p99 {b.p99:.3f} (limit {p99:g}) "
                f"over {b.steps} steps: extrapolation, not validated"
            )
        if b.shift is None or b.allowance is None:
            return False, f"{cls}: no calibrated residual mean to judge a bias beyond the envelope by"
        if b.shift > b.allowance:
            return False, (
                f"{cls}: residual mean beyond the envelope {b.shift:.3f} from calibration > allowance "
                f"{b.allowance:.2g} ({b.steps} steps): extrapolation, not validated"
            )
        said.append(
            f"{cls} {b.steps} steps beyond the envelope: p90 {b.p90:.3f}, p99 {b.p99:.3f}, residual "
            f"{b.shift:.3f} from calibration (allowance {b.allowance:.2g})"
        )
    return True, "; ".join(said)
