"""The gate's checks: evidence + policy → one ``CheckResult`` each. Pure functions.

A fail (NO_GO, which pages) is evidence that attribution is wrong now: accuracy outside its
limits, drift, a platform mismatch, a data-health failure, share instability where calibration
left no baseline. Missing evidence is inconclusive (``missing=True``), never a pass. Evidence
minimums that are not yet met, traffic outside the calibrated envelope, tenants calibration never
saw and shares depending on batch-mates more than in the calibration window (a function of the
traffic under one model) are inconclusive, with the way out in the reason (wait, re-fit,
recalibrate); accuracy is not judged on a class until
its minimum step count is met, so a noisy first hour cannot fail the gate. The advantage over
the token baseline is reported (``advantage_report``), not judged. Thresholds compare with
``<=`` for maxima and ``>=`` for minima.

>>> from checks.evidence import Evidence
>>> from checks.policy import GatePolicy
>>> res = evaluate_checks(Evidence(), GatePolicy(), now=0.0)
>>> {r.status for r in res}, all(r.missing for r in res)
({'inconclusive'}, True)
>>> ev = Evidence(calibrated_platform_key="a100/x", running_platform_key="h200/x")
>>> [r.reason for r in evaluate_checks(ev, GatePolicy(), 0.0) if r.name == "platform"]
["calibrated for platform 'a100/x' but the engine runs 'h200/x': refit and re-validate"]
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from checks.check_result import CheckResult
from checks.evidence import ClassAccuracy, Evidence
from checks.policy import GatePolicy

Rule = Callable[[Evidence, GatePolicy, float], list[CheckResult]]


def _missing(name: str, what: str, threshold: Any = None, critical: bool = False) -> CheckResult:
    return CheckResult(
        name, "inconclusive", None, threshold, f"no evidence: {what}", critical=critical, missing=True
    )


def _at_most(
    name: str,
    value: float | None,
    limit: float,
    what: str,
    *,
    critical: bool = False,
    fail_status: str = "fail",
) -> CheckResult:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return _missing(name, what, limit, critical)
    if value <= limit:
        return CheckResult(name, "pass", value, limit, f"{what} {value:g} ≤ {limit:g}", critical)
    return CheckResult(name, fail_status, value, limit, f"{what} {value:g} > {limit:g}", critical)


def _at_least(name: str, value: float | None, minimum: float, what: str, wait: str = "") -> CheckResult:
    if value is None:
        return _missing(name, what, minimum)
    if value >= minimum:
        return CheckResult(name, "pass", value, minimum, f"{what} {value:g} ≥ {minimum:g}")
    return CheckResult(
        name,
        "inconclusive",
        value,
        minimum,
        f"not enough evidence yet: {what} {value:g} < {minimum:g}; {wait or 'wait for more shadow traffic'}",
    )


def _step_wait(steps: float | None, minimum: float, ev: Evidence) -> tuple[float, float] | None:
    """Seconds until a step class's count meets ``minimum`` at the rate so far, and how many
    the evidence window holds at that rate: the steps counted over the shadow time they came in
    (at most the window).  ``math.inf`` seconds where the window never holds the minimum at that
    rate (spanned already, or too short for it): waiting does not help there, busier traffic or
    a longer window does.  ``None`` without a rate yet.

    >>> _step_wait(500, 750, Evidence(shadow_duration_s=300.0, evidence_window_s=3600.0))
    (150.0, 6000.0)
    >>> _step_wait(100, 750, Evidence(shadow_duration_s=7200.0, evidence_window_s=3600.0))
    (inf, 100.0)
    """
    span, window = ev.shadow_duration_s, ev.evidence_window_s
    if not steps or steps <= 0 or span is None or span <= 0:
        return None
    windowed = window is not None and window > 0
    if windowed:
        span = min(span, window)
    rate = steps / span
    needed = minimum / rate  # seconds of this traffic that hold the minimum
    held = rate * window if windowed else math.inf
    if windowed and needed > window:
        return math.inf, held
    return needed - span, held


def _wait_for_steps(steps: float | None, minimum: float, ev: Evidence) -> str:
    """The way out of a step minimum not yet met, with how long at the rate so far
    (``_step_wait``)."""
    wait = _step_wait(steps, minimum, ev)
    if wait is None:
        return ""  # no rate yet: the plain way out
    seconds, held = wait
    if math.isinf(seconds):
        return (
            f"the {ev.evidence_window_s:g} s evidence window holds {held:.0f} at the rate so far, never "
            f"{minimum:g}: wait for busier traffic"
        )
    return f"wait for more shadow traffic, about {seconds:.0f} s more at the rate so far"


def evidence_waits(ev: Evidence, pol: GatePolicy) -> dict[str, float | None]:
    """Per evidence minimum not yet met, the seconds until it is at the rate so far (``None``:
    the evidence window never holds it at that rate; JSON has no infinity, and the decision is
    read by other programs); minimums without a rate yet are left out.  Also, under
    ``stability``, a composition effect whose CI straddles its limit: the seconds until it is
    settled if its estimate holds (``_stability_wait``).  Reported beside the verdict
    (``details.evidence_wait_s``, ``/metrics``) as the checks' reasons name it: the operator's
    "wait", made a time."""
    out: dict[str, float | None] = {}
    for cls in pol.required_step_classes:
        acc = ev.accuracy.get(cls)
        steps, minimum = (acc.steps if acc else None), pol.min_steps.get(cls, 0)
        if steps is not None and steps < minimum and (wait := _step_wait(steps, minimum, ev)) is not None:
            out[f"evidence.steps.{cls}"] = None if math.isinf(wait[0]) else wait[0]
    span = ev.shadow_duration_s
    if span is not None and span < pol.min_duration_s:
        out["evidence.duration"] = pol.min_duration_s - span
    straddle = _stability_straddle(ev, pol)
    if straddle is not None and (wait := _stability_wait(*straddle)) is not None:
        out["stability"] = None if math.isinf(wait[0]) else wait[0]
    return out


def _stability_straddle(ev: Evidence, pol: GatePolicy) -> tuple[dict[str, Any], float, float, float] | None:
    """The stability result, its CI (over the calibration window's baseline, where there is one)
    and the limit, where the CI straddles the limit: the one stability verdict waiting can settle."""
    res = ev.stability.get(pol.stability_split)
    if not res or res.get("ci_high") is None or res.get("ci_low") is None:
        return None
    (lo, hi), thr = _judged_ci(res), pol.max_composition_effect
    return (res, lo, hi, thr) if lo <= thr < hi else None


def _judged_ci(res: dict[str, Any]) -> tuple[float, float]:
    """The composition effect's CI as the stability check judges it: over the calibration
    window's own effect where there is one.  A nonlinear engine's Shapley shares depend on
    batch-mates too, so what counts is shares depending on them more than when the model was
    validated, not the engine's physics."""
    base = res.get("baseline")
    lo, hi = res["ci_low"], res["ci_high"]
    return (lo - base, hi - base) if base is not None else (lo, hi)


def platform(ev: Evidence, pol: GatePolicy, now: float) -> list[CheckResult]:
    cal, run = ev.calibrated_platform_key, ev.running_platform_key
    if not cal or not run:
        unknown = " and ".join(n for n, v in (("calibrated", cal), ("running", run)) if not v)
        return [
            CheckResult(
                "platform",
                "inconclusive",
                run,
                cal,
                f"platform key unknown ({unknown}): the model is unqualified",
                critical=True,
                missing=True,
            )
        ]
    if cal != run:
        return [
            CheckResult(
                "platform",
                "fail",
                run,
                cal,
                f"calibrated for platform {cal!r} but the engine runs {run!r}: refit and re-validate",
                critical=True,
            )
        ]
    return [CheckResult("platform", "pass", run, cal, "platform key matches the calibration", critical=True)]


def freshness(ev: Evidence, pol: GatePolicy, now: float) -> list[CheckResult]:
    if ev.last_step_ts is None:
        return [_missing("freshness", "no step recorded", pol.max_step_age_s, critical=True)]
    age = max(0.0, now - ev.last_step_ts)
    if age <= pol.max_step_age_s:
        return [
            CheckResult(
                "freshness", "pass", age, pol.max_step_age_s, f"last step {age:.0f} s ago", critical=True
            )
        ]
    return [
        CheckResult(
            "freshness",
            "inconclusive",
            age,
            pol.max_step_age_s,
            f"data stale: last step {age:.0f} s ago (max {pol.max_step_age_s:g} s)",
            critical=True,
        )
    ]


def drop_rate(ev: Evidence, pol: GatePolicy, now: float) -> list[CheckResult]:
    return [_at_most("drop_rate", ev.tap_drop_rate, pol.max_drop_rate, "tap drop rate", critical=True)]


def evidence_minimums(ev: Evidence, pol: GatePolicy, now: float) -> list[CheckResult]:
    out = []
    for cls in pol.required_step_classes:
        acc = ev.accuracy.get(cls)
        steps, minimum = (acc.steps if acc else None), pol.min_steps.get(cls, 0)
        wait = _wait_for_steps(steps, minimum, ev)
        out.append(_at_least(f"evidence.steps.{cls}", steps, minimum, f"{cls} steps", wait))
    span = ev.shadow_duration_s
    wait = f"wait {pol.min_duration_s - span:.0f} s more" if span is not None else ""
    out.append(_at_least("evidence.duration", span, pol.min_duration_s, "shadow duration (s)", wait))
    out.append(_at_least("evidence.tenants", ev.tenants_seen, pol.min_tenants, "tenants seen"))
    # Evidence must reach long contexts, or the longest the model was calibrated on when the
    # workload is shorter: contexts beyond calibration are the envelope check's to judge.
    need, what = pol.min_max_context, "longest context seen"
    if ev.calibrated_max_context is not None and ev.calibrated_max_context < need:
        need, what = ev.calibrated_max_context, "longest context seen (vs the calibration window's)"
    out.append(_at_least("evidence.max_context", ev.max_context_seen, need, what))
    return out


def _enough_steps(acc: ClassAccuracy | None, pol: GatePolicy, cls: str) -> bool:
    return acc is not None and acc.steps is not None and acc.steps >= pol.min_steps.get(cls, 0)


def accuracy(ev: Evidence, pol: GatePolicy, now: float) -> list[CheckResult]:
    out = []
    for cls in pol.required_step_classes:
        acc = ev.accuracy.get(cls)
        for q, limits in (("p90", pol.max_p90_error), ("p99", pol.max_p99_error)):
            name = f"accuracy.{cls}.{q}"
            if not _enough_steps(acc, pol, cls):
                out.append(
                    CheckResult(
                        name,
                        "inconclusive",
                        getattr(acc, q, None),
                        limits[cls],
                        f"{cls}: too few steps to judge {q} error",
                        missing=acc is None,
                    )
                )
            else:
                res = _at_most(name, getattr(acc, q), limits[cls], f"{cls} {q} relative error")
                if res.status == "fail" and cls in ev.barely_held:
                    res = CheckResult(
                        name,
                        "inconclusive",
                        res.value,
                        res.threshold,
                        f"{res.reason}, but {ev.barely_held[cls]}: the model was never identified "
                        "on these steps; recalibrate on a window holding them",
                    )
                out.append(res)
    return out


def advantage_report(ev: Evidence, pol: GatePolicy) -> dict[str, dict[str, Any]]:
    """Per step class, the token baseline's p90 error over the model's, against ``min_advantage``.

    Reported beside the verdict (gate output, ``/metrics``, the report), never judged: the gate
    asks whether attribution is right, and an accurate, stable, undrifted model may govern even
    where token counts happen to be nearly as good. Classes without both errors are left out.
    """
    out: dict[str, dict[str, Any]] = {}
    for cls, acc in sorted(ev.accuracy.items()):
        if acc.p90 is None or acc.baseline_p90 is None:
            continue
        ratio = math.inf if acc.p90 == 0 else acc.baseline_p90 / acc.p90
        out[cls] = {
            "ratio": ratio,
            "reference": pol.min_advantage,
            "model_p90": acc.p90,
            "baseline_p90": acc.baseline_p90,
            "steps": acc.steps,
            "below_reference": ratio < pol.min_advantage,
        }
    return out


def drift(ev: Evidence, pol: GatePolicy, now: float) -> list[CheckResult]:
    res = _at_most("drift", ev.unresolved_drift_events, pol.max_unresolved_drift, "unresolved drift events")
    if res.status == "fail":  # the on-call's next step: events stay until a calibration resolves them
        # Design r31: an event is evidence even where a class is blind now (before r31 blindness
        # hid it): a class marked blind by a shift too rarely seen to judge may then slow down.
        return [
            _with_way_out(
                res,
                "check the engine for a real change (the events: shadowd report); if it is healthy, "
                "recalibrate on current traffic (shadowd calibrate), which resolves them",
            )
        ]
    if ev.drift_blind:
        why = "; ".join(f"{k}: {v}" for k, v in sorted(ev.drift_blind.items()))
        return [
            _missing(
                "drift",
                f"residual drift detectors blind on required steps ({why}); way out: recalibrate "
                "on a wider window holding enough of those steps (shadowd calibrate)",
                pol.max_unresolved_drift,
            )
        ]
    if ev.drift_dull and res.status == "pass":  # design r19: no event, but none would have come
        why = "; ".join(f"{k}: {v}" for k, v in sorted(ev.drift_dull.items()))
        return [
            CheckResult(
                "drift",
                "inconclusive",
                res.value,
                res.threshold,
                f"no unresolved drift events, but the detectors would not raise a real slowdown in "
                f"time ({why}); way out: wait for a re-fit, or recalibrate on a steadier window "
                "(shadowd calibrate)",
            )
        ]
    if ev.drift_partial and res.status == "pass":
        relied = "; ".join(f"{k}: {v}" for k, v in sorted(ev.drift_partial.items()))
        res = CheckResult(res.name, res.status, res.value, res.threshold, f"{res.reason} ({relied})")
    return [res]


def stability(ev: Evidence, pol: GatePolicy, now: float) -> list[CheckResult]:
    name, thr = "stability", pol.max_composition_effect
    res = ev.stability.get(pol.stability_split)
    if not res or res.get("ci_high") is None or res.get("ci_low") is None:
        return [_missing(name, f"composition effect of split {pol.stability_split!r}", thr)]
    computed = res.get("computed_at")
    if computed is not None and now - computed > pol.max_stability_age_s:
        return [
            CheckResult(
                name,
                "inconclusive",
                res.get("effect"),
                thr,
                f"stability result is {now - computed:.0f} s old (max {pol.max_stability_age_s:g} s)",
                missing=True,
            )
        ]
    lo, hi = _judged_ci(res)
    base = res.get("baseline")
    ci = f"[{lo:.3f}, {hi:.3f}]" + (f" above the calibration window's {base:.3f}" if base is not None else "")
    if hi <= thr:
        return [CheckResult(name, "pass", hi, thr, f"composition effect CI {ci} ≤ {thr:g}")]
    if lo > thr and base is not None:
        # Design r6: under one model version the effect is a function of the traffic alone (the
        # own-work share is the model's, not a measurement), so its growth says the batch
        # compositions moved beyond those the model was validated on: unqualified, not wrong.
        return [
            CheckResult(
                name,
                "inconclusive",
                lo,
                thr,
                f"shares depend on batch composition more than in the calibration window: effect CI "
                f"{ci} > {thr:g}; the traffic's batch compositions moved: a re-fit on current "
                "traffic (automatic when the model in force still meets its limits) or shadowd "
                "calibrate",
            )
        ]
    if lo > thr:
        return [
            CheckResult(
                name, "fail", lo, thr, f"shares depend on batch composition: effect CI {ci} > {thr:g}"
            )
        ]
    return [
        CheckResult(
            name,
            "inconclusive",
            hi,
            thr,
            f"composition effect CI {ci} straddles {thr:g}: more data needed{_wait_for_stability(res, lo, hi, thr)}",
        )
    ]


def _stability_wait(res: dict[str, Any], lo: float, hi: float, thr: float) -> tuple[float, float] | None:
    """Seconds until a composition effect whose CI straddles ``thr`` is settled, if its estimate
    (the CI's centre) holds, and how many times the steps that takes: the CI narrows as one over
    the square root of the steps it is computed on (a bootstrap over steps), so it clears ``thr``
    once its half-width is the centre's distance from it.  At the rate the stability window's
    steps came in (``steps`` over ``span_s``), or ``math.inf`` seconds where the window holds
    fewer steps than that (``max_steps``: it slides, and waiting does not narrow it further) or
    the centre sits on ``thr``.  ``None`` where the result does not say how many steps over how
    long (stored before it did).

    >>> [round(x, 6) for x in _stability_wait({"steps": 2000, "span_s": 100.0, "max_steps": 20000}, 0.04, 0.12, 0.1)]
    [300.0, 4.0]
    >>> _stability_wait({"steps": 2000, "span_s": 100.0, "max_steps": 5000}, 0.04, 0.12, 0.1)[0]
    inf
    """
    steps, span, cap = res.get("steps"), res.get("span_s"), res.get("max_steps")
    if not steps or not span or span <= 0:
        return None
    centre, half = (lo + hi) / 2, (hi - lo) / 2
    gap = abs(centre - thr)
    if gap <= 0:
        return math.inf, math.inf
    factor = (half / gap) ** 2
    need = steps * factor
    if cap and need > cap:
        return math.inf, factor
    return (need - steps) / (steps / span), factor


def _wait_for_stability(res: dict[str, Any], lo: float, hi: float, thr: float) -> str:
    wait = _stability_wait(res, lo, hi, thr)
    if wait is None:
        return ""
    seconds, factor = wait
    if math.isinf(seconds):
        cap = res.get("max_steps")
        held = f"its window of {cap:g} steps" if cap else "its window"
        need = (
            "on the limit, no number of steps settles it"
            if math.isinf(factor)
            else f"{factor:.1f}x the steps would settle it, more than {held} holds"
        )
        return (
            f"; if the effect holds at its estimate ({(lo + hi) / 2:.3f}), {need}: waiting is unlikely "
            "to help; the traffic must change, or recalibrate (shadowd calibrate)"
        )
    return (
        f"; if the effect holds at its estimate ({(lo + hi) / 2:.3f}), {factor:.1f}x the steps "
        f"settle it: about {seconds:.0f} s more at the rate so far"
    )


def coverage(ev: Evidence, pol: GatePolicy, now: float) -> list[CheckResult]:
    """Traffic the calibration never saw: the model is unqualified there, not proven wrong.

    Both checks are inconclusive (no page) when exceeded, with the way out in the reason.
    """
    extra = _at_most(
        "coverage.extrapolation",
        ev.extrapolated_fraction,
        pol.max_extrapolated_fraction,
        "fraction of steps beyond the calibration envelope",
        fail_status="inconclusive",
    )
    if extra.status == "inconclusive" and not extra.missing:
        extra = _with_way_out(
            extra, "traffic left the calibrated envelope; recalibrate on current traffic (shadowd calibrate)"
        )
    share = ev.new_tenant_share
    who = f" ({ev.new_tenants} tenant{'s' if ev.new_tenants != 1 else ''})" if ev.new_tenants else ""
    fresh = _at_most(
        "coverage.new_tenants",
        share,
        pol.max_new_tenant_share,
        f"share of recent attributed time by tenants not seen in calibration{who}",
        fail_status="inconclusive",
    )
    if fresh.status == "inconclusive" and not fresh.missing:
        fresh = _with_way_out(
            fresh, "wait if the newcomers are passing, or recalibrate with them in the window"
        )
    return [extra, fresh]


def _with_way_out(res: CheckResult, way_out: str) -> CheckResult:
    return CheckResult(
        res.name, res.status, res.value, res.threshold, f"{res.reason}: {way_out}", res.critical, res.missing
    )


RULES: tuple[Rule, ...] = (
    platform,
    freshness,
    drop_rate,
    evidence_minimums,
    accuracy,
    drift,
    stability,
    coverage,
)


def evaluate_checks(evidence: Evidence, policy: GatePolicy, now: float) -> list[CheckResult]:
    """All checks, in a stable order. A rule that raises yields a critical inconclusive result."""
    out: list[CheckResult] = []
    for rule in RULES:
        try:
            out.extend(rule(evidence, policy, now))
        except Exception as exc:  # fail closed: a broken rule can never produce a pass
            out.append(
                CheckResult(
                    rule.__name__,
                    "inconclusive",
                    None,
                    None,
                    f"error evaluating {rule.__name__}: {exc!r}",
                    critical=True,
                    missing=True,
                )
            )
    return out
