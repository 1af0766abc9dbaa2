"""May the model in force be re-fitted on recent traffic? The guard of design r3. Pure.

A model calibrated on one regime cannot vouch for traffic that left it: the gate says
INCONCLUSIVE ("recalibrate") and waits for an operator. A re-fit on a rolling window keeps
up with traffic, but a re-fit must never absorb a real change of the engine: a slowdown fitted
into the coefficients is a slowdown the gate no longer sees. So a re-fit is allowed only when
the traffic left the calibration (a reason to re-fit) and nothing says the engine changed:

1. no gate check failed (a failure is evidence that attribution is wrong now);
2. no residual drift event is unresolved, and tenants calibration never saw carry no more of the
   recent attributed time than the gate's new-tenant limit (design r9: a re-fit would take a
   newcomer in without anyone having validated it; the operator recalibrates with it);
3. the model in force meets the gate's accuracy limits on the window's steps of every class
   it was calibrated on (a class calibration barely held is exempt: its coefficients were never
   identified, which is a reason to re-fit, not evidence of a fault).  Design r13: a class with
   enough window steps inside the calibrated envelope is judged on those only.  Its error beyond
   the envelope is extrapolation, the very reason to re-fit, as the gate's own evidence leaves
   those steps out (design r12); a slower engine misses on the steps inside too, and checks 4 and
   5 watch for smaller changes.  A class with too few steps inside is judged on all of them, as
   before r13.  Design r29: where such a class misses, its miss is set aside as extrapolation
   (the reason to re-fit) only if the engine is shown unchanged elsewhere: another class was
   judged inside its envelope within the limits and a class anchors check 4; otherwise it
   refuses, as before r29;
4. on steps that lie inside the batch compositions calibration saw, the residual mean sits
   within the calibration's allowance of where it was (``checks.wander``): a new regime moves
   the model's error only where it extrapolates, a slower engine moves it everywhere (which
   steps count is the caller's: from design r20 the daemon takes those inside both the drift
   domain and the calibrated envelope; from r47 those inside the range the calibration window
   held, its residual less the calibrated composition bias its mean was measured without);
5. the re-fitted model explains its whole window with one set of coefficients: its residual has
   no level shift over time (``largest_level_shift``) beyond the allowance. A change of batch
   composition is what the coefficients model; a change at one moment (a slower engine from step
   N on) is not, and leaves a step in the re-fit's residual wherever in the window it fell.
   Design r46 (withdrawn after held-out 48; off) measured it within the CUDA graph each step
   ran at, less two standard errors (``largest_level_shift_within(z=LEVEL_SHIFT_Z)``).  In every
   mode a refusal whose moment no graph spans says the window cannot tell drift from a mix that
   moved once (``strata_span``), rather than calling it drift.

What it cannot rule out is said in ``docs/operations.md`` (Re-fits): a fault that coincides with traffic
leaving every calibrated composition, small enough to stay inside the accuracy limits.
``benchmarks/gate_matrix.py`` runs the fault scenarios against it.

>>> from checks.policy import GatePolicy
>>> ev = RefitEvidence(
...     reasons=("12% of steps beyond the calibrated envelope",),
...     accuracy={"decode": ClassError(900, 0.04, 0.07)},
...     shifts={"decode": ResidualShift(400, 0.003, 0.01)},
... )
>>> refit_decision(ev, GatePolicy(), min_steps=300)[0]
True
>>> slower = RefitEvidence(ev.reasons, accuracy=ev.accuracy,
...                        shifts={"decode": ResidualShift(400, 0.05, 0.01)})
>>> refit_decision(slower, GatePolicy(), min_steps=300)
(False, 'decode: residual mean on steps inside the calibrated compositions moved 0.05 > allowance 0.01 (400 steps): drift, not a new regime')
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from checks.alarm_confirmation import MIN_COVERAGE, MIN_STRATUM
from checks.policy import GatePolicy

# Design r46 (withdrawn): standard errors taken off the within-graph level shift (a one-sided
# 97.7 % lower bound for a normal estimate; set before any run: DESIGN in
# benchmarks/gate_designs.py).
LEVEL_SHIFT_Z = 2.0


@dataclass(frozen=True)
class ClassError:
    """The model in force on one class of the window: steps and relative-error quantiles."""

    steps: int
    p90: float
    p99: float
    with_beyond: bool = False  # judged with the steps beyond the envelope (too few inside, r13)


@dataclass(frozen=True)
class ResidualShift:
    """Steps of a class inside its calibrated domain, how far their mean residual moved from the
    calibration's, and the allowance it may move by (relative latency)."""

    steps: int
    shift: float
    allowance: float
    # The shift's moment had no CUDA graph holding enough steps on both sides (time and
    # composition cannot be told apart there; the refusal says so).
    confounded: bool = False


@dataclass(frozen=True)
class RefitEvidence:
    reasons: tuple[str, ...] = ()  # how traffic left the calibration (empty: no need to re-fit)
    failing_checks: tuple[str, ...] = ()
    unresolved_drift: int = 0
    accuracy: dict[str, ClassError] = field(default_factory=dict)
    shifts: dict[str, ResidualShift] = field(default_factory=dict)
    barely_held: frozenset[str] = frozenset()
    new_tenant_share: float | None = None  # of recent attributed time, by tenants calibration never saw
    beyond_envelope: int = 0  # window steps beyond the calibrated envelope: not in ``accuracy`` (r13)


def refit_decision(
    ev: RefitEvidence, policy: GatePolicy, *, min_steps: int, min_in_domain: int = 100
) -> tuple[bool, str]:
    """``(allowed, why)``. ``min_steps``: a class's accuracy is judged from this many window
    steps; ``min_in_domain``: the residual shift from this many in-domain steps."""
    if not ev.reasons:
        return False, "traffic is within what the model was calibrated on: nothing to re-fit"
    if ev.failing_checks:
        return False, (
            f"gate checks failing ({', '.join(ev.failing_checks)}): evidence that attribution is "
            "wrong now, which a re-fit would hide"
        )
    if ev.unresolved_drift > 0:
        return False, f"{ev.unresolved_drift} unresolved drift events: a re-fit would absorb them"
    share, limit = ev.new_tenant_share, policy.max_new_tenant_share
    if share is not None and share > limit:
        return False, (
            f"tenants calibration never saw carry {share:.1%} of the recent attributed time (> "
            f"{limit:.0%}): a re-fit would take them in unvalidated; recalibrate with them once they "
            "are known to be healthy (shadowd calibrate) (design r9)"
        )
    judged, inside, aside = [], [], []
    for cls, e in sorted(ev.accuracy.items()):
        if cls in ev.barely_held or e.steps < min_steps:
            continue
        p90, p99 = policy.max_p90_error.get(cls), policy.max_p99_error.get(cls)
        if p90 is None or p99 is None:
            continue
        if e.p90 > p90 or e.p99 > p99:
            if not e.with_beyond:
                return False, _missed(cls, e, p90, p99)
            aside.append(_missed(cls, e, p90, p99))  # design r29: extrapolation, if anchored below
            continue
        judged.append(f"{cls} {e.steps}" + (" (with those beyond the envelope)" if e.with_beyond else ""))
        inside += [cls] if not e.with_beyond else []
    if aside and not inside:
        return False, aside[0]
    if not judged:
        return False, f"no class has {min_steps} window steps to judge the model in force on"
    for cls, s in sorted(ev.shifts.items()):
        if s.steps >= min_in_domain and s.shift > s.allowance:
            return False, (
                f"{cls}: residual mean on steps inside the calibrated compositions moved "
                f"{s.shift:.3g} > allowance {s.allowance:.3g} ({s.steps} steps): drift, not a new regime"
            )
    anchored = [c for c, s in sorted(ev.shifts.items()) if s.steps >= min_in_domain]
    if aside and not anchored:
        return False, f"{aside[0]} (no class anchors the residual inside the calibrated compositions)"
    left = ev.beyond_envelope and not all(e.with_beyond for e in ev.accuracy.values())
    beyond = f"; {ev.beyond_envelope} window steps beyond the envelope" if left else ""
    if aside:
        beyond += "; set aside as extrapolation (design r29): " + "; ".join(a.split(":")[0] for a in aside)
    return True, (
        f"re-fit: {'; '.join(ev.reasons)} (accuracy within limits on {', '.join(judged)} steps{beyond}; "
        + (
            f"in-domain residual within allowance on {', '.join(anchored)}"
            if anchored
            else "no class had in-domain steps to anchor the residual"
        )
        + "; no unresolved drift)"
    )


def _missed(cls: str, e: ClassError, p90: float, p99: float) -> str:
    where = "(too few inside its envelope: all of them)" if e.with_beyond else "inside its envelope"
    return (
        f"{cls}: the model in force misses its accuracy limits on the window's steps {where} "
        f"(p90 {e.p90:.3g}, p99 {e.p99:.3g} vs {p90:g}, {p99:g}; {e.steps} steps): a fault "
        "or a regime it cannot speak for; check the engine, then recalibrate by hand"
    )


def largest_level_shift(resid: np.ndarray, min_segment: int) -> tuple[float, int]:
    """The largest ``|mean(after) - mean(before)|`` over split points of ``resid`` (in time order)
    leaving ``min_segment`` values each side, and where; ``(0.0, -1)`` if too short to split.

    >>> r = np.r_[np.zeros(300), np.full(200, 0.08)]
    >>> shift, at = largest_level_shift(r, 100)
    >>> round(shift, 3), at
    (0.08, 300)
    >>> largest_level_shift(np.zeros(150), 100)
    (0.0, -1)
    """
    x = np.asarray(resid, dtype=float)
    x = x[np.isfinite(x)]
    n = len(x)
    if n < 2 * min_segment:
        return 0.0, -1
    k = np.arange(min_segment, n - min_segment + 1)
    gap = _pooled_gaps(x, k)
    i = int(np.argmax(gap))
    return float(gap[i]), int(k[i])


def _pooled_gaps(x: np.ndarray, at: np.ndarray) -> np.ndarray:
    """``|mean(x[k:]) - mean(x[:k])|`` for each split ``k`` in ``at`` (none at 0 or ``len(x)``)."""
    total = np.r_[0.0, np.cumsum(x)]
    return np.abs((total[-1] - total[at]) / (len(x) - at) - total[at] / at)


def _split_gap(x: np.ndarray, nb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per split (``nb`` values before it): ``mean(after) - mean(before)`` of ``x`` and that
    difference's variance (each side's sample variance over its count)."""
    c = np.r_[0.0, np.cumsum(x)]
    c2 = np.r_[0.0, np.cumsum(x * x)]
    na = len(x) - nb
    mb, ma = c[nb] / nb, (c[-1] - c[nb]) / na
    vb = np.maximum(c2[nb] / nb - mb * mb, 0.0) * nb / np.maximum(nb - 1, 1)
    va = np.maximum((c2[-1] - c2[nb]) / na - ma * ma, 0.0) * na / np.maximum(na - 1, 1)
    return ma - mb, vb / nb + va / na


def largest_level_shift_within(
    resid: np.ndarray,
    keys: np.ndarray,
    min_segment: int,
    *,
    min_stratum: int = MIN_STRATUM,
    min_coverage: float = MIN_COVERAGE,
    splits: int = 1000,
    z: float = 0.0,
) -> tuple[float, int]:
    """Design r42 (withdrawn; behind ``CalibrationSettings.stratified_level_shift``, off), and
    with ``z`` design r46 (withdrawn too; ``CalibrationSettings.level_shift_lower_bound``, off):
    ``largest_level_shift`` measured within composition strata (``keys``, one per
    value): at each split the shift is the mean, over strata with ``min_stratum`` values or more
    on both sides, of each stratum's ``mean(after) - mean(before)``, weighted by
    ``n_before * n_after / n`` (the weights that make the estimate least noisy).  A split where
    such strata hold less than ``min_coverage`` of the values (the alarm confirmation's
    ``MIN_STRATUM`` and ``MIN_COVERAGE``, design r31) is judged pooled, as before r42: there
    time and composition cannot be told apart (a mix that moved once, for good).

    Why: over a re-fit's window, load that swings moves the mix between CUDA graphs, where the
    smooth model's error steps by about the allowance (``docs/steady_drift.md``), so the pooled
    residual moves with the mix, in time, on a healthy engine.  A slower engine moves every
    stratum's residual from its moment on, so within strata it shows the same.  At most
    ``splits`` split points are scanned, evenly spaced.  Why withdrawn: the within-strata
    estimate is the noisier, and on a held-out engine it refused a re-fit the pooled one let
    through, with no verdict changed anywhere (``benchmarks/gate_designs.py``, DESIGN).

    A mix moving over time from stratum 1, where the model errs low, to stratum 2, where it errs
    high: pooled, the residual moves with the mix; within each stratum nothing moves.

    >>> rng = np.random.default_rng(0)
    >>> keys = np.r_[np.ones(600, int), np.full(600, 2)]
    >>> keys[::5] = 3 - keys[::5]       # each stratum present throughout, a fifth of the time
    >>> resid = np.where(keys == 1, -0.01, 0.01) + rng.normal(0, 0.005, 1200)
    >>> round(largest_level_shift(resid, 120)[0], 3), round(largest_level_shift_within(resid, keys, 120)[0], 3)
    (0.012, 0.001)

    A slower engine from value 700 on moves both:

    >>> slow = resid + np.r_[np.zeros(700), np.full(500, 0.03)]
    >>> round(largest_level_shift_within(slow, keys, 120)[0], 2)
    0.03

    Design r46 (``z``, withdrawn after held-out 48): where the strata judge a split, its shift
    is the within-strata estimate less ``z`` of its standard errors (from each stratum's
    variance on each side), not less than zero: a lower bound on the change at that moment.  The within-strata estimate is a mean of
    thin strata, and its largest value over many splits carries their noise (why r42 was
    withdrawn); a slower engine's shift stands well above it.  Where the strata do not judge,
    the pooled shift decides, as before.

    >>> round(largest_level_shift_within(slow, keys, 120, z=2.0)[0], 2)
    0.03
    """
    x = np.asarray(resid, dtype=float)
    k = np.asarray(keys)
    ok = np.isfinite(x)
    x, k = x[ok], k[ok]
    n = len(x)
    if n < 2 * min_segment:
        return 0.0, -1
    at = np.unique(
        np.linspace(min_segment, n - min_segment, min(splits, n - 2 * min_segment + 1)).astype(int)
    )
    num, den, var, covered = (np.zeros(len(at)) for _ in range(4))
    for key in np.unique(k):
        where = np.flatnonzero(k == key)
        if len(where) < 2 * min_stratum:
            continue
        nb = np.searchsorted(where, at)  # the stratum's values before each split
        use = (nb >= min_stratum) & (len(where) - nb >= min_stratum)
        if not use.any():
            continue
        i = np.flatnonzero(use)
        gap, gap_var = _split_gap(x[where], nb[use])
        w = nb[use] * (len(where) - nb[use]) / len(where)
        num[i] += w * gap
        den[i] += w
        var[i] += w * w * gap_var
        covered[i] += len(where)
    shift = _pooled_gaps(x, at)  # pooled, as r8's, where the strata do not judge
    judged = (den > 0) & (covered >= min_coverage * n)
    within = np.abs(num[judged] / den[judged]) - z * np.sqrt(var[judged]) / den[judged]
    shift[judged] = np.maximum(within, 0.0)
    j = int(np.argmax(shift))
    return float(shift[j]), int(at[j])


def strata_span(
    resid: np.ndarray,
    keys: np.ndarray,
    at: int,
    *,
    min_stratum: int = MIN_STRATUM,
    min_coverage: float = MIN_COVERAGE,
) -> bool:
    """Whether ``largest_level_shift_within`` judges the split at ``at`` (an index among the
    finite values) within strata: strata with ``min_stratum`` values on both sides of it hold
    ``min_coverage`` of all values.  A re-fit refused at a split they do not judge says so.

    >>> keys = np.r_[np.full(500, 16), np.full(500, 24)]
    >>> strata_span(np.zeros(1000), keys, 500), strata_span(np.zeros(1000), np.full(1000, 16), 500)
    (False, True)
    """
    ok = np.isfinite(np.asarray(resid, dtype=float))
    k = np.asarray(keys)[ok]
    covered = 0
    for key in np.unique(k):
        where = np.flatnonzero(k == key)
        before = int(np.searchsorted(where, at))
        if len(where) >= 2 * min_stratum and min(before, len(where) - before) >= min_stratum:
            covered += len(where)
    return covered > 0 and covered >= min_coverage * len(k)


def time_invariant(shifts: dict[str, ResidualShift]) -> tuple[bool, str]:
    """Check 5 on the re-fitted model: ``shifts`` holds, per class, the steps, its largest level
    shift over time and the allowance.

    >>> print(time_invariant({"decode": ResidualShift(1500, 0.09, 0.02, confounded=True)})[1])
    decode: the re-fitted model's residual level moves 0.09 over time within its window (> allowance 0.02, 1500 steps): a change at one moment or a mix that moved once, for good (no CUDA graph holds steps on both sides of it): this window cannot tell drift from a new regime; tried again on a window half new
    """
    for cls, s in sorted(shifts.items()):
        if s.shift > s.allowance:
            what = (
                "a change at one moment or a mix that moved once, for good (no CUDA graph holds "
                "steps on both sides of it): this window cannot tell drift from a new regime; "
                "tried again on a window half new"
                if s.confounded
                else "a change at one moment, which batch composition does not explain: drift, not a new regime"
            )
            return False, (
                f"{cls}: the re-fitted model's residual level moves {s.shift:.3g} over time within its "
                f"window (> allowance {s.allowance:.3g}, {s.steps} steps): {what}"
            )
    return True, "the re-fitted model explains its window without a level shift over time"
