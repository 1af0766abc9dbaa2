"""Calibration that keeps up with traffic: a guarded re-fit on a rolling window (design r3).

After each gate evaluation, ``RegimeRefit.consider`` looks at what the gate saw. When traffic
has left what the model in force was calibrated on (steps beyond the workload envelope, drift
detectors blind because recent batch compositions lie outside their calibrated domain, or, design
r19, too dull to raise the smallest slowdown the gate must catch),
and the model in force has scored half a calibration window's worth of steps since it was
installed (design r29; a full window before), it re-fits on the last calibration window's worth
of steps: the same ``calibrate`` as the warm-up (model, drift thresholds, domain, envelope,
stability baseline). ``checks.refit_guard.refit_decision`` must allow it first, judging the model
in force on the window's steps it scored out of sample (those since its install; its own
calibration window's are in sample); its refusal is kept and reported, and the gate stays
INCONCLUSIVE with its own way out. Half a window: on held-out 26 (design r28) a ramp that tops
out, or a swing that turns, right after a re-fit left the gate INCONCLUSIVE for a whole window
of the new regime before a re-fit could be tried (``benchmarks/gate_matrix.py``, held-out 27).

Each re-fit is a new content-hashed model version whose stored body names its lineage and the
reason, so ``shadowd report`` and the database say which model governed when, and why it changed.
The gate's evidence runs over the lineage (``gate_evidence.gather``): each step was scored by
the model in force when it ran.

Design r43: where traffic is beyond the envelope and no re-fit is installed (none due, or the
re-fitted model refused for its own reasons after the guard passed), the envelope of the model in
force widens over the steps beyond it that it is validated on (``checks.envelope_extension``):
the same version and detectors, a wider envelope in its stored body, and a re-fit still asked for.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import duckdb
import numpy as np

import checks
from shadowd.daemon.calibrator import Calibration, CalibrationSettings, calibrate, scored_tenants
from shadowd.daemon.gate_evidence import unresolved_drift_events
from shadowd.daemon.window_bound import WindowBound
from shadowd.steps.batch import KIND_DECODE, KIND_NAMES, StepBatch
from shadowd.steps.log_reader import Window, last_steps_within, load_batch

log = logging.getLogger("shadowd.refit")
MAX_LINEAGE = 16  # versions whose steps count as the gate's evidence (the window bounds it too)
SCORED_FRACTION = 0.5  # of a calibration window the model in force scores before a re-fit (r29)
INSTALLED, GUARDED, DECLINED = "installed", "guarded", "declined"  # a re-fit's outcomes


@dataclass
class RefitRecord:
    """One re-fit considered: installed (``version`` set) or refused (``why``); ``at_s`` is the
    time of the gate evaluation that asked for it (the gate's clock).  An extension (design
    r43) keeps its parent's version: ``version == parent`` when it was installed."""

    at_s: float
    parent: str
    version: str | None
    why: str
    steps: int
    kind: str = "refit"  # or "extension" (design r43: the envelope widened, the model kept)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class RegimeRefit:
    """Owns when and whether the model in force is re-fitted; the daemon installs the result."""

    current: Callable[[], Calibration | None]
    cursor: Callable[[], duckdb.DuckDBPyConnection]
    install: Callable[[Calibration], None]
    policy: Callable[[], checks.GatePolicy]
    settings: Callable[[], CalibrationSettings]
    platform_key: Callable[[], dict[str, Any] | None]
    run_job: Callable[[Callable[[], None]], None] = lambda fn: fn()
    # Design r43: installs the model in force again with a widened envelope (None: never extend).
    extend: Callable[[Calibration], None] | None = None
    enabled: bool = True
    # The bound on a window's request rows (``max_window_rows``, the memory limit), shared with
    # the warm-up calibrator and the stability job; it counts the windows each bound cut.
    window_bound: WindowBound = field(default_factory=WindowBound)
    history: list[RefitRecord] = field(default_factory=list)
    state: str = "idle"  # -> refitting -> idle
    _lock: threading.Lock = field(default_factory=threading.Lock)
    # (model version, steps it had scored) at the last attempt: a refused re-fit is tried again only
    # on a window at least half new, so a refusal costs one fit per half window, not one per
    # gate evaluation.
    _tried: tuple[str, int] | None = None
    _extend_tried: tuple[str, int] | None = None  # the same for an extension (design r43)

    @property
    def counts(self) -> dict[str, int]:
        """Re-fits installed and refused."""
        return self._outcomes("refit", "installed", "refused")

    @property
    def extensions(self) -> dict[str, int]:
        """Design r43: envelope extensions installed and refused."""
        return self._outcomes("extension", "extended", "not_extended")

    def _outcomes(self, kind: str, done: str, refused: str) -> dict[str, int]:
        mine = [r for r in self.history if r.kind == kind]
        n = sum(1 for r in mine if r.version)
        return {done: n, refused: len(mine) - n}

    def consider(self, decision: dict[str, Any]) -> None:
        """Start a re-fit job if the gate saw traffic the model no longer covers. Never raises."""
        try:
            self._consider(decision)
        except Exception:
            log.exception("re-fit: could not be considered")

    def _consider(self, decision: dict[str, Any]) -> None:
        cal = self.current()
        if not self.enabled or cal is None or vouching(decision, self.settings()):
            return
        reasons = triggers(decision.get("evidence") or {}, self.policy())
        if cal.extended:  # design r43: covered by validation, not by a fit: a re-fit re-identifies
            reasons += ("the envelope was extended over steps the model was not fitted on (design r43)",)
        if not reasons or not cal.window_steps:
            return
        with self._lock:
            if self.state != "idle":
                return
            version = cal.model.version
            scored = self._scored_steps(version)
            refit = self._refit_due(cal, scored)
            extend = self._extension_due(cal, scored, decision.get("evidence") or {})
            if not (refit or extend):
                return
            if refit:
                self._tried = (version, scored)
            if extend:
                self._extend_tried = (version, scored)
            self.state = "refitting"
        failing = tuple(c["name"] for c in decision.get("checks", []) if c.get("status") == "fail")
        at_s = float(decision.get("evaluated_at") or time.time())
        share = (decision.get("evidence") or {}).get("new_tenant_share")
        self.run_job(lambda: self._refit(cal, reasons, failing, at_s, share, refit=refit, extend=extend))

    def _refit_due(self, cal: Calibration, scored: int) -> bool:
        """Half a window scored out of sample by the model in force (r29), and not refused on a
        window mostly the same as this one."""
        if scored < cal.window_steps * SCORED_FRACTION:
            return False
        tried = self._tried
        return not (tried and tried[0] == cal.model.version and scored < tried[1] + cal.window_steps // 2)

    def _extension_due(self, cal: Calibration, scored: int, evidence: dict[str, Any]) -> bool:
        """Design r43: traffic beyond the envelope, extensions on, and a tenth of a window scored
        since the last try for this model (each try attributes a window's steps again)."""
        if self.extend is None or not self.settings().extend_envelope:
            return False
        frac = evidence.get("extrapolated_fraction")
        if frac is None or frac <= self.policy().max_extrapolated_fraction:
            return False
        tried = self._extend_tried
        return not (tried and tried[0] == cal.model.version and scored < tried[1] + cal.window_steps // 10)

    def _scored_steps(self, version: str) -> int:
        return int(
            self.cursor()
            .execute("SELECT count(*) FROM steps WHERE model_version = ? AND latency_ms > 0", [version])
            .fetchone()[0]
        )

    def _refit(
        self,
        cal: Calibration,
        reasons: tuple[str, ...],
        failing: tuple[str, ...],
        at_s: float,
        new_tenant_share: float | None = None,
        *,
        refit: bool = True,
        extend: bool = False,
    ) -> None:
        try:
            outcome = self._refit_window(cal, reasons, failing, at_s, new_tenant_share) if refit else ""
            # Design r43: where no re-fit is due, or one passed the guard but the re-fitted model
            # was refused for its own reasons; not where the guard found the model in force off.
            if extend and outcome in ("", DECLINED):
                self._extend_envelope(cal, failing, at_s, new_tenant_share)
        except Exception as exc:
            log.exception("re-fit failed")
            self._record(at_s, cal, None, f"re-fit failed: {type(exc).__name__}: {exc}", 0)
        finally:
            self.state = "idle"

    def _extend_envelope(
        self, cal: Calibration, failing: tuple[str, ...], at_s: float, new_tenant_share: float | None
    ) -> None:
        """Design r43 (``checks.envelope_extension``): the model in force, its envelope widened over
        the window's steps beyond it that it scored out of sample, if it is validated there."""
        con = self.cursor()
        batch = load_batch(con, self._window(con, cal, "envelope extension"), request_ids=False)
        settings = self.settings()
        scored = batch.select_steps(scored_by(con, batch, cal.model.version))
        beyond = ~inside_envelope(scored, cal.envelope)
        ok, why = checks.extension_decision(
            beyond_classes(scored, cal, beyond, settings.min_shift),
            self.policy(),
            min_steps=settings.min_class_steps,
            failing_checks=failing,
            unresolved_drift=unresolved_drift_events(con),
            new_tenant_share=new_tenant_share,
        )
        if ok and self.platform_key() != cal.model.platform_key:
            ok, why = False, "the engine's platform is not the one the model in force was fitted on"
        if ok is None:  # too few steps beyond to judge yet: waiting, not a refusal
            return
        if not ok:
            self._record(at_s, cal, None, f"envelope not extended: {why}", batch.num_steps, "extension")
            return
        out = scored.select_steps(beyond)
        sizes = out.batch_size()
        new = dataclasses.replace(
            cal,
            envelope=cal.envelope.covering(
                max_context=out.max_reach(sizes),
                batch_size=sizes,
                tokens=out.per_step_sum(out.new_tokens.astype(np.float64)),
                decode=out.kind == KIND_DECODE,
                kv_tokens=out.per_step_sum(out.context_tokens.astype(np.float64)),
                margin=settings.envelope_margin,
            ),
            reason=f"envelope extended (design r43): {why}",
            extended=True,
        )
        self._record(at_s, cal, cal.model.version, new.reason, batch.num_steps, "extension")
        log.info("envelope of %s extended: %s", cal.model.version, why)
        self.extend(new)  # type: ignore[misc]

    def _refit_window(
        self,
        cal: Calibration,
        reasons: tuple[str, ...],
        failing: tuple[str, ...],
        at_s: float,
        new_tenant_share: float | None,
    ) -> str:
        """The guarded re-fit: ``INSTALLED``, ``GUARDED`` (the guard refused it: the model in
        force or the engine is in question) or ``DECLINED`` (the re-fitted model was refused)."""
        con = self.cursor()
        batch = load_batch(con, self._window(con, cal, "re-fit"), request_ids=False)
        settings = self.settings()
        scored = batch.select_steps(scored_by(con, batch, cal.model.version))  # out of sample
        inside = inside_envelope(scored, cal.envelope)
        evidence = checks.RefitEvidence(
            reasons=reasons,
            failing_checks=failing,
            unresolved_drift=unresolved_drift_events(con),
            accuracy=class_errors(scored, cal, inside, settings.min_class_steps),
            shifts=residual_shifts(scored, cal, settings.min_shift, settings.unbiased_refit_shift),
            barely_held=frozenset(cal.barely_held(settings.min_class_steps)),
            new_tenant_share=new_tenant_share,
            beyond_envelope=int(scored.num_steps - inside.sum()),
        )
        del scored, inside  # a copy of the window's rows, not needed by the fit below
        ok, why = checks.refit_decision(evidence, self.policy(), min_steps=settings.min_class_steps)
        key = self.platform_key()
        if ok and key != cal.model.platform_key:
            ok, why = False, "the engine's platform is not the one the model in force was fitted on"
        if not ok:
            log.warning("re-fit of %s refused: %s", cal.model.version, why)
            self._record(at_s, cal, None, why, batch.num_steps)
            return GUARDED
        new = calibrate(batch, cal.model.platform_key, settings)
        shifts = level_shifts(
            batch,
            new,
            settings.min_shift,
            settings.stratified_level_shift,
            lower_bound=settings.level_shift_lower_bound,
        )
        ok, steady = checks.time_invariant(shifts)
        # In this order, so a refusal names the most specific cause: a class left unwatched (r8),
        # a change at one moment in the window, then detectors too dull for the gate's faults
        # (r15; a change inside the window dulls them too), then a re-fit asked for only to get
        # keener detectors that would not (r19).
        refusal = (
            newly_unwatched(cal, new, rare_classes(new, settings))
            or (steady if not ok else "")
            or newly_dulled(cal, new)
            or still_dull(reasons, new)
        )
        if refusal:
            log.warning("re-fit of %s refused: %s", cal.model.version, refusal)
            self._record(at_s, cal, None, refusal, batch.num_steps)
            return DECLINED
        why = f"{why}; {steady}"
        # Design r16: a re-fit keeps its parent's tenants.  A newcomer below the new-tenant limit
        # does not stop a re-fit (r9), but is not taken in by it: it stays new to the gate, which
        # judges its share from then on, until an operator calibrates with it.
        new.envelope = dataclasses.replace(new.envelope, tenants=cal.envelope.tenants)
        # Design r23: and the tenants its parent was scored on out of sample, which the gate's
        # evidence counts; its own window's steps are the lineage's, counted there already.
        new.scored_tenants = scored_tenants(cal.scored_tenants, new.scored_tenants)
        new.lineage = (*cal.lineage, cal.model.version)[-MAX_LINEAGE:]
        new.reason = why
        self._record(at_s, cal, new.model.version, why, batch.num_steps)
        log.info(
            "re-fitted %s -> %s on %d steps: %s", cal.model.version, new.model.version, batch.num_steps, why
        )
        self.install(new)
        return INSTALLED

    def _window(self, con: duckdb.DuckDBPyConnection, cal: Calibration, what: str) -> Window:
        """The calibration's window length in the most recent steps, cut to ``max_window_rows``
        request rows where set, or to what fits under the daemon's memory limit."""
        cap, bound = self.window_bound.rows(self.settings().max_window_rows, loading=True)
        window = Window(last_steps=cal.window_steps)
        steps = last_steps_within(con, window, cap)
        cut = (
            bound is not None and steps is not None and steps < (last_steps_within(con, window, 1 << 62) or 0)
        )
        self.window_bound.read(what, steps or 0, cap, bound, cut=cut)
        return Window(last_steps=max(1, steps or 0))  # at least one: last_steps=0 would read all

    def _record(
        self, at_s: float, cal: Calibration, version: str | None, why: str, steps: int, kind: str = "refit"
    ) -> None:
        self.history.append(RefitRecord(at_s, cal.model.version, version, why, steps, kind))
        del self.history[:-50]

    def summary(self) -> dict[str, Any]:
        last = self.history[-1].to_dict() if self.history else None
        return {"enabled": self.enabled, "state": self.state, **self.counts, **self.extensions, "last": last}


def scored_by(con: duckdb.DuckDBPyConnection, batch: StepBatch, version: str) -> np.ndarray:
    """Per step of ``batch`` (bool[S]), whether it ran once ``version`` was in force: the steps
    that model scored out of sample (design r29: a re-fit window may reach back into the model's
    own calibration window, whose steps it was fitted on)."""
    first = con.execute(
        "SELECT min(ts) FROM steps WHERE model_version = ? AND latency_ms > 0", [version]
    ).fetchone()[0]
    if first is None or batch.ts is None:
        return np.zeros(batch.num_steps, dtype=bool)
    return np.asarray(batch.ts) >= np.datetime64(first, "us")


def newly_unwatched(parent: Calibration, new: Calibration, rare: frozenset[str] = frozenset()) -> str:
    """Why the re-fit would leave a class without drift detectors that the model in force
    watches (empty: it would not).  Design r8: such a re-fit is refused.  The model in force
    still speaks for the traffic it was calibrated on, and a swing back there finds it watching;
    an installed blind re-fit would leave the class unwatched until an operator recalibrates.

    Design r35: not for a class in ``rare`` (``rare_classes``: too few of the re-fit window's
    steps for the gate to require it).  Since r3 a class the gate requires that has no
    detectors is itself a re-fit trigger, so a swing back finds the class required, the gate
    INCONCLUSIVE, and a re-fit on a window that holds the class; before r35 the refusal kept a
    model whose other classes had left their calibrated compositions, and the gate
    INCONCLUSIVE, to the run's end (why and on which runs: DESIGN in benchmarks/gate_designs.py).

    >>> class C:  # only the two fields read here
    ...     def __init__(self, drift, unwatched): self.drift, self.unwatched = drift, unwatched
    >>> newly_unwatched(C({"decode": 1}, {}), C({}, {"decode": "no threshold reaches 1e-05"}))
    'the re-fit could not calibrate drift detectors for decode (no threshold reaches 1e-05), which the model in force watches (design r8)'
    >>> newly_unwatched(C({"decode": 1}, {}), C({"decode": 2}, {}))
    ''
    >>> newly_unwatched(C({"decode": 1, "mixed": 1}, {}), C({"decode": 2}, {}), frozenset({"mixed"}))
    ''
    """
    lost = sorted(set(parent.drift) - set(new.drift) - rare)
    if not lost:
        return ""
    why = "; ".join(f"{c} ({new.unwatched.get(c, 'not calibrated')})" for c in lost)
    return f"the re-fit could not calibrate drift detectors for {why}, which the model in force watches (design r8)"


def rare_classes(new: Calibration, settings: CalibrationSettings) -> frozenset[str]:
    """Classes carrying less than ``cover_class_share`` of the re-fit window's steps (design
    r35; none with ``settings.refit_unwatch_rare`` off): the share below which the warm-up
    window does not widen for a class either, as the gate does not require it.

    >>> from shadowd.daemon.calibrator import CalibrationSettings as S
    >>> class C:
    ...     class_steps, window_steps = {"decode": 900, "mixed": 90, "prefill": 10}, 1000
    >>> sorted(rare_classes(C(), S()))
    ['mixed', 'prefill']
    >>> rare_classes(C(), S(refit_unwatch_rare=False))
    frozenset()
    """
    if not settings.refit_unwatch_rare or not new.window_steps:
        return frozenset()
    share = settings.cover_class_share
    return frozenset(c for c, n in new.class_steps.items() if n / new.window_steps < share)


def newly_dulled(parent: Calibration, new: Calibration) -> str:
    """Why the re-fit's drift detectors would not raise the smallest slowdown the gate must catch
    where the model in force's do (empty: they would).  Design r15: such a re-fit is refused, as a
    blind one is (r8); ``checks.fault_sensitivity`` says how it is measured and on which run it
    was seen."""
    lost = checks.dulled(parent.drift, new.drift)
    if not lost:
        return ""
    why = "; ".join(
        f"{c}: {'not within ' + str(4 * checks.FAULT_BUDGET_STEPS) if after is None else after}, "
        f"the model in force's {before}"
        for c, (before, after) in lost.items()
    )
    return (
        f"the re-fit's drift detectors would not raise a {checks.FAULT_SHIFT:.0%} slowdown within "
        f"{checks.FAULT_BUDGET_STEPS} judged steps ({why}) (design r15)"
    )


def still_dull(reasons: tuple[str, ...], new: Calibration) -> str:
    """Why a re-fit asked for only because the detectors were too dull (design r19) would not
    help: its own are too (empty: they are keen, or something else asked for it)."""
    dull = new.dull()
    if not dull or not all(r.startswith("drift detectors too dull") for r in reasons):
        return ""
    why = "; ".join(f"{k} ({v})" for k, v in sorted(dull.items()))
    return f"the re-fit's drift detectors would be too dull as well: {why} (design r19)"


def vouching(decision: dict[str, Any], settings: CalibrationSettings) -> bool:
    """Whether the gate's decision leaves the model alone: GO with every check passing.

    Design r36: a GO held through an inconclusive round (``GatePolicy.inconclusive_grace``)
    does not; the traffic that made a check inconclusive is looked at for a re-fit then, one
    evaluation before the gate would leave GO for it.  Before r36 (``settings.refit_in_grace``
    off) any GO left the model alone, so a re-fit could only start once the gate had gone
    INCONCLUSIVE, and its consecutive passes had to be earned again (why and on which runs:
    DESIGN in benchmarks/gate_designs.py).

    >>> from shadowd.daemon.calibrator import CalibrationSettings as S
    >>> held = {"verdict": "GO", "checks": [{"status": "pass"}, {"status": "inconclusive"}]}
    >>> vouching(held, S()), vouching(held, S(refit_in_grace=False))
    (False, True)
    >>> vouching({"verdict": "GO", "checks": [{"status": "pass"}]}, S())
    True
    """
    if decision.get("verdict") != "GO":
        return False
    if not settings.refit_in_grace:
        return True
    return all(c.get("status") == "pass" for c in decision.get("checks", []))


def triggers(evidence: dict[str, Any], policy: checks.GatePolicy) -> tuple[str, ...]:
    """How the gate's evidence says traffic left the calibration (empty: it did not).

    >>> triggers({"extrapolated_fraction": 0.12}, checks.GatePolicy())
    ('12% of steps beyond the calibrated envelope',)
    >>> triggers({"extrapolated_fraction": 0.01, "drift_blind": {}}, checks.GatePolicy())
    ()
    >>> st = {"llmvisor": {"ci_low": 0.41, "ci_high": 0.45, "baseline": 0.26}}
    >>> triggers({"stability": st}, checks.GatePolicy())
    ('composition effect grew 0.15 over the calibration window (design r6)',)
    """
    out = []
    frac = evidence.get("extrapolated_fraction")
    if frac is not None and frac > policy.max_extrapolated_fraction:
        out.append(f"{frac:.0%} of steps beyond the calibrated envelope")
    blind = evidence.get("drift_blind") or {}
    if blind:
        out.append("drift detectors blind on " + "; ".join(f"{k} ({v})" for k, v in sorted(blind.items())))
    dull = evidence.get("drift_dull") or {}
    if dull:  # design r19: a window whose residual wandered less may give keener detectors
        out.append("drift detectors too dull on " + "; ".join(f"{k} ({v})" for k, v in sorted(dull.items())))
    grown = composition_growth(evidence, policy)
    if grown is not None:
        out.append(f"composition effect grew {grown:.2f} over the calibration window (design r6)")
    return tuple(out)


def composition_growth(evidence: dict[str, Any], policy: checks.GatePolicy) -> float | None:
    """How far the gated split's composition effect (CI low end) grew over the calibration
    window's, when beyond ``max_composition_effect``; ``None`` otherwise. Under one model version
    that effect depends on the traffic alone, so its growth is a new regime, as the envelope is."""
    res = (evidence.get("stability") or {}).get(policy.stability_split) or {}
    lo, base = res.get("ci_low"), res.get("baseline")
    if lo is None or base is None or lo - base <= policy.max_composition_effect:
        return None
    return float(lo - base)


def _residuals(batch: StepBatch, cal: Calibration) -> np.ndarray:
    return checks.relative_residual(batch.latency_ms, cal.model.attribute(batch).predicted_ms)


def inside_envelope(batch: StepBatch, envelope: checks.WorkloadEnvelope) -> np.ndarray:
    """Per step of ``batch``, whether it lies inside ``envelope`` (bool[S]), as the drift watch's
    envelope monitor judges each step."""
    sizes = batch.batch_size()
    return envelope.inside(
        max_context=batch.max_reach(sizes),
        batch_size=sizes,
        tokens=batch.per_step_sum(batch.new_tokens.astype(np.float64)),
        decode=batch.kind == KIND_DECODE,
        kv_tokens=batch.per_step_sum(batch.context_tokens.astype(np.float64)),
    )


def class_errors(
    batch: StepBatch, cal: Calibration, inside: np.ndarray | None = None, min_steps: int = 1
) -> dict[str, checks.ClassError]:
    """The model in force on the window, per class: steps and p90/p99 relative error.

    With ``inside`` (bool[S], the steps inside the envelope), design r13: a class with at least
    ``min_steps`` steps inside is judged on those only; one with fewer on all its steps."""
    predicted = cal.model.attribute(batch).predicted_ms
    err = np.abs(batch.latency_ms - predicted) / batch.latency_ms
    finite = np.isfinite(err)
    out = {}
    for code, name in enumerate(KIND_NAMES):
        mine = (batch.kind == code) & finite
        with_beyond = inside is None or int((mine & inside).sum()) < min_steps
        e = err[mine if with_beyond else mine & inside]
        if len(e):
            p90, p99 = np.quantile(e, [0.9, 0.99])
            beyond = inside is not None and with_beyond and bool((mine & ~inside).any())
            out[name] = checks.ClassError(len(e), float(p90), float(p99), beyond)
    return out


def residual_shifts(
    batch: StepBatch, cal: Calibration, min_shift: float, unbiased: bool = True
) -> dict[str, checks.ResidualShift]:
    """Per watched class: the window's steps inside its calibrated domain and the calibrated
    envelope, how far their mean residual sits from the calibration's, and the allowance (as the
    drift watch judges it).  Design r20: the envelope too, since the drift domain is drawn over
    the whole calibration window while decode-only steps' coefficients were identified on its fit
    part: a step between the two is the model extrapolating, a reason to re-fit, not drift.

    Design r47 (``unbiased``): the residual less its calibrated composition bias and CUDA graph
    offset (``DriftCalibration.unbiased``), as the detectors watch it, on the steps inside the
    range of batch size and new tokens the calibration window held (``DriftCalibration.support``,
    r45's: the domain before its margin).  The calibration's mean and allowance were measured on
    that residual; the residual as measured moves with the batch composition inside the domain,
    so before r47 a window whose steps sat elsewhere in the domain than the calibration's read as
    drift.  The bias is a fit over the window, so it is taken out only where the window held
    steps: in the margin it extrapolates (``DESIGN`` in benchmarks/gate_designs.py)."""
    resid = _residuals(batch, cal)
    features = batch.composition()
    envelope = inside_envelope(batch, cal.envelope)
    out = {}
    for cls, dc in cal.drift.items():
        mine = (batch.kind == KIND_NAMES.index(cls)) & np.isfinite(resid)
        inside = mine & dc.in_domain(features) & envelope
        if unbiased:
            inside &= ~dc.beyond_support(features)
        n = int(inside.sum())
        judged = dc.unbiased(resid, features) if unbiased else resid
        shift = abs(float(np.mean(judged[inside])) - dc.mean) if n else 0.0
        out[cls] = checks.ResidualShift(n, shift, max(dc.allowance, min_shift / 2))
    return out


def beyond_classes(
    batch: StepBatch, cal: Calibration, beyond: np.ndarray, min_shift: float
) -> dict[str, checks.BeyondClass]:
    """Per class with steps of ``batch`` beyond the envelope (``beyond``, bool[S]): the model in
    force's error there and how far their mean residual sits from the calibration's, with the
    class's allowance as ``residual_shifts`` takes it (none for a class without detectors)."""
    predicted = cal.model.attribute(batch).predicted_ms
    resid = checks.relative_residual(batch.latency_ms, predicted)
    err = np.abs(batch.latency_ms - predicted) / batch.latency_ms  # as the gate's accuracy check
    out = {}
    for code, cls in enumerate(KIND_NAMES):
        mine = beyond & (batch.kind == code) & np.isfinite(resid) & np.isfinite(err)
        n = int(mine.sum())
        if not n:
            continue
        p90, p99 = np.quantile(err[mine], [0.9, 0.99])
        dc = cal.drift.get(cls)
        shift = None if dc is None else abs(float(np.mean(resid[mine])) - dc.mean)
        allowance = None if dc is None else max(dc.allowance, min_shift / 2)
        out[cls] = checks.BeyondClass(n, float(p90), float(p99), shift, allowance)
    return out


def level_shifts(
    batch: StepBatch,
    cal: Calibration,
    min_shift: float,
    within_strata: bool = False,
    *,
    lower_bound: bool = False,
) -> dict[str, checks.ResidualShift]:
    """Per class the re-fit watches: its residual's largest level shift over the window's time,
    segments of at least a tenth of the class's steps (100 at least).  With ``within_strata``
    (design r42, withdrawn: off by default) it is measured within the CUDA graph each step ran
    at (``checks.graph_size``, ``checks.largest_level_shift_within``), not in r34's strata,
    which also cut KV tokens in half octaves: near the window's end too few of those hold
    enough steps on the short side, so the split is judged pooled, confounded as before
    (H41-steady's re-fit, ``benchmarks/gate_designs.py`` DESIGN).  With ``lower_bound`` (design
    r46, withdrawn after held-out 48: off by default) it is measured within graphs, less
    ``checks.LEVEL_SHIFT_Z`` standard errors.  In every mode ``confounded`` says whether no graph
    held steps on both sides of the shift's moment (``checks.strata_span``): there a re-fit's
    refusal says the window cannot tell drift from a mix that moved once (H47-steady's first
    re-fit: load jumped to batches its window had not held before), not that it was drift."""
    resid = _residuals(batch, cal)
    keys = checks.graph_size(batch.batch_size())
    out = {}
    for cls, dc in cal.drift.items():
        mine = (batch.kind == KIND_NAMES.index(cls)) & np.isfinite(resid)
        r, segment = resid[mine], max(100, int(mine.sum()) // 10)
        if within_strata or lower_bound:
            z = checks.LEVEL_SHIFT_Z if lower_bound else 0.0
            shift, at = checks.largest_level_shift_within(r, keys[mine], segment, z=z)
        else:
            shift, at = checks.largest_level_shift(r, segment)
        confounded = at >= 0 and not checks.strata_span(r, keys[mine], at)
        out[cls] = checks.ResidualShift(len(r), shift, max(dc.allowance, min_shift / 2), confounded)
    return out
