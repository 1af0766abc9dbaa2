"""Calibration: from a window of raw steps to a model version and drift thresholds.

The daemon buffers its first ``warmup_steps`` steps (or reads a window from
the database for ``shadowd calibrate``), fits LLMVisor and the token model on
the earlier part, and scores the later part out of sample.  Those held-out
residuals are what the drift detectors' thresholds are calibrated on, so the
detectors see on live traffic the same kind of error they were tuned to
tolerate; the whole window's residuals serve as a second, longer noise model and
measure how far the residual mean wanders with batch composition, which sets
the smallest shift the detectors raise (``checks.wander``).  Each class also gets
the composition domain it was calibrated over (``checks.domain``).  The workload envelope (longest context, batch sizes, tokens per
step, tenants) is taken from the whole window.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import checks
from shadowd.attribution.accuracy import split_window
from shadowd.attribution.model_version import ModelVersion, fit
from shadowd.daemon.window_bound import WindowBound
from shadowd.steps.batch import KIND_DECODE, KIND_NAMES, StepBatch
from shadowd.steps.log_reader import Window, load_batch, open_db

log = logging.getLogger("shadowd.calibration")


def platform_key_string(key: dict[str, Any]) -> str:
    """Stable text form of a platform key (what the gate compares)."""
    return "/".join(f"{k}={key[k]}" for k in sorted(key) if key[k] is not None)


@dataclass
class Calibration:
    """Everything a calibration produces; the daemon installs it as a unit."""

    model: ModelVersion
    drift: dict[str, checks.DriftCalibration]
    envelope: checks.WorkloadEnvelope
    holdout_residuals: dict[str, np.ndarray] = field(default_factory=dict)
    # Design r26: the same steps' residuals with their bias left in (classes that watch them);
    # in memory only, as ``holdout_residuals``: they prime the detectors at install.
    holdout_raw: dict[str, np.ndarray] = field(default_factory=dict)
    # Design r31: the same steps' composition strata (in memory only): the primed confirmation
    # stage starts with the calibration's residual per stratum, so its first alarm is judged.
    holdout_keys: dict[str, np.ndarray] = field(default_factory=dict)
    unwatched: dict[str, str] = field(default_factory=dict)  # class -> why no drift detectors
    # Share stability of the calibration window under this model (split -> effect, CI): what the
    # gate's stability check judges growth against.
    stability_baseline: dict[str, dict[str, float]] = field(default_factory=dict)
    class_steps: dict[str, int] = field(default_factory=dict)  # steps of each class in the window
    # Design r17: steps of each class in the window's fit part, the ones its coefficients were
    # identified on (the held-out part only scores them).  Empty in bodies stored before r17.
    fit_class_steps: dict[str, int] = field(default_factory=dict)
    window_steps: int = 0  # steps in the whole calibration window (fit + held-out parts)
    # Design r23: tenants with a request in the window's held-out part, scored out of sample
    # there; the gate counts them with the tenants of the shadow steps (``scored_tenants``).
    scored_tenants: tuple[str, ...] = ()
    # A re-fit (``shadowd.daemon.refit``): the versions it descends from, oldest first, and why.
    lineage: tuple[str, ...] = ()
    reason: str = ""
    # Design r43: its envelope was widened over steps it was validated on, not fitted on, so a
    # re-fit is still asked for (``shadowd.daemon.refit``); in memory only.
    extended: bool = False
    _dull: dict[str, str] | None = field(default=None, init=False, repr=False, compare=False)  # ``dull``

    def barely_held(self, min_steps: int) -> dict[str, str]:
        """Classes the window's fit part held fewer than ``min_steps`` of, or (design r28) with
        steps where the fit priced their work at zero: their coefficients were not identified
        there, so the gate does not vouch for them (INCONCLUSIVE, not NO_GO).

        Design r17 counts the fit part (before, the whole window): on held-out 15 a saturated
        window's decode-only steps came late, in its held-out part, so the decode class looked
        held while its coefficients had been fitted on a few dozen (``DESIGN`` in
        ``benchmarks/gate_designs.py``)."""
        if self.fit_class_steps:
            where, counts = "the calibration window's fit part", self.fit_class_steps
        else:
            where, counts = "the calibration window", self.class_steps
        held = {
            cls: f"{where} held {n} {cls} steps (< {min_steps})"
            for cls, n in sorted(counts.items())
            if n < min_steps
        }
        return {**self._zero_priced_classes(), **held}

    def _zero_priced_classes(self) -> dict[str, str]:
        """Design r28: classes with steps in a segment whose work term the fit priced at zero
        (``LLMVisorModel.zero_priced``): the window held that work but never identified its
        price, so the gate does not vouch for those classes either.  Seen on whole steps timed
        on a GPU (``benchmarks/gpu_steps.py``, ``DESIGN`` in ``benchmarks/gate_designs.py``)."""
        out: dict[str, str] = {}
        for z in self.model.fit_metrics.get("zero_priced", []):
            for cls in z.get("classes", ()):
                out.setdefault(
                    str(cls),
                    f"segment {z['segment']}'s {z['term']} was fitted at zero, though the fit part "
                    f"held {z['rows']} such rows in {z['steps']} steps",
                )
        return out

    def dull(self) -> dict[str, str]:
        """Watched classes whose detectors would not raise the smallest slowdown the gate must
        catch (``checks.FAULT_SHIFT``) within ``checks.FAULT_BUDGET_STEPS`` judged steps, and why.

        Design r19: the gate then holds drift at INCONCLUSIVE (silence proves nothing there); an
        unresolved event still fails it.  A window whose residual wanders calibrates detectors
        with very high thresholds; seen on held-out 17's F17-step5 (``DESIGN`` in
        ``benchmarks/gate_designs.py``), where the smallest slowdown ended GO.  Computed once
        (noise-free, ``checks.detection_delay``): the detectors do not change while the
        calibration is in force."""
        if self._dull is None:
            budget = checks.FAULT_BUDGET_STEPS
            out = {}
            for cls, dc in sorted(self.drift.items()):
                delay = checks.detection_delay(dc, checks.FAULT_SHIFT, 4 * budget)
                if delay is None or delay > budget:
                    seen = f"not within {4 * budget}" if delay is None else f"only after {delay}"
                    out[cls] = (
                        f"a {checks.FAULT_SHIFT:.0%} slowdown raised {seen} judged steps "
                        f"(budget {budget}; Page-Hinkley threshold {dc.ph_threshold:g})"
                    )
                elif dc.watches_raw and dc.raw_allowance > checks.FAULT_SHIFT:  # design r26
                    out[cls] = (
                        f"a {checks.FAULT_SHIFT:.0%} slowdown would not be confirmed: the raw "
                        f"residual's allowance is {dc.raw_allowance:.3f}"
                    )
            self._dull = out
        return dict(self._dull)

    def partially_watched(self) -> dict[str, str]:
        """Watched classes where a detector could not be calibrated: what the gate relies on."""
        return {
            cls: f"watched by {' and '.join(d.detector_names)} only ("
            + "; ".join(f"{k} not calibratable: {v}" for k, v in d.unavailable.items())
            + ")"
            for cls, d in self.drift.items()
            if d.unavailable
        }

    @property
    def platform_key(self) -> str:
        return platform_key_string(self.model.platform_key)

    def summary(self) -> dict[str, Any]:
        return {
            "model_version": self.model.version,
            "platform_key": self.platform_key,
            "fit_window": self.model.fit_window,
            "drift_classes": sorted(self.drift),
            "unwatched_classes": self.unwatched,
            "partially_watched_classes": self.partially_watched(),
            "drift_allowance": {k: round(v.allowance, 5) for k, v in self.drift.items()},
            "drift_raw_allowance": {k: round(v.raw_allowance, 5) for k, v in self.drift.items()},
            "envelope": self.envelope.limits(),
            "stability_baseline": self.stability_baseline,
            "class_steps": self.class_steps,
            "fit_class_steps": self.fit_class_steps,
            "scored_tenants": list(self.scored_tenants),
            "lineage": list(self.lineage),
            "reason": self.reason,
        }


@dataclass(frozen=True)
class CalibrationSettings:
    holdout_fraction: float = 0.3
    # Per judged step of a class, for all its detectors together: each gets an equal part, so the
    # drift check's rate per judged step (each step is one class's) is at most this (design r6).
    target_false_alarm_rate: float = 1e-5
    detectors: tuple[str, ...] = ("page_hinkley",)
    drift_sim_steps: int = 400_000  # stationary steps simulated per class for thresholds
    adwin_sim_steps: int = 400_000
    min_class_steps: int = 300
    envelope_margin: float = 0.5  # contexts/batches up to 1.5x what calibration saw are in range
    # Smallest relative latency shift worth an alarm; Page-Hinkley's allowance is at least half
    # of it. Design r7 raised it so a healthy engine's composition-driven moves of the residual
    # mostly stay quiet while the slowdowns the gate must catch still exceed the allowance (why
    # and on which runs: DESIGN in benchmarks/gate_designs.py).
    min_shift: float = 0.04
    wander_block: int = 100  # steps per block when measuring the residual mean's wander
    wander_k: float = 2.5  # allowance = max(min_shift / 2, wander_k x wander upper bound)
    clip: float = 5.0  # standardised residuals are clipped to +-clip before the detectors
    noise_from_window: bool = True  # thresholds from the whole window's residual dynamics
    detrend_steps: int = 100  # detectors judge changes against a baseline of this time constant
    # Designs r33 and r39 (both withdrawn; off): each step judged against its batch-size
    # stratum's own such baseline (``checks.stratified_detrend``; r39 behind r34-r38's stratified
    # confirmation).  Kept for comparisons: ``DESIGN`` in benchmarks/gate_designs.py says what each
    # did, and on which runs.
    detrend_by_size: bool = False
    # A detection is an alarm only if its shift lasts this many more judged steps of the class
    # (design r8: checks.alarm_confirmation; why this many: DESIGN in benchmarks/gate_designs.py).
    confirm_steps: int = 200
    # Design r24: the detectors watch each class's residual less its bias over batch composition,
    # fitted on the window (checks.residual_bias; why: DESIGN in benchmarks/gate_designs.py).
    unbias: bool = True
    # Design r44: and less the offset of the CUDA graph each step ran at (checks.residual_bias
    # .fit_graph_offsets; why: DESIGN in benchmarks/gate_designs.py).
    graph_offsets: bool = True
    # Design r26: with the bias taken out, a detection is confirmed only if the residual as
    # measured shifts too (checks.alarm_confirmation; why: DESIGN in benchmarks/gate_designs.py).
    confirm_raw: bool = True
    # Design r31: where composition strata cover a detection's window, they decide whether it is
    # confirmed (checks.alarm_confirmation; why: DESIGN in benchmarks/gate_designs.py).
    stratify_confirmation: bool = True
    # Design r34: those strata take batch sizes above 8 by the CUDA graph they run at
    # (checks.alarm_confirmation.stratum; why: DESIGN in benchmarks/gate_designs.py).
    graph_strata: bool = True
    # Design r37: and within a graph also at r31's quarter octaves (checks.alarm_confirmation
    # .stratum; why: DESIGN in benchmarks/gate_designs.py).
    octave_strata: bool = True
    # Design r38: where those strata are too thin to judge a detection, r34's graph strata judge
    # it (checks.alarm_confirmation; why: DESIGN in benchmarks/gate_designs.py).
    strata_fallback: bool = True
    # Design r40: where r34's graph strata are too thin as well, r31's quarter octaves judge it
    # (checks.alarm_confirmation; why: DESIGN in benchmarks/gate_designs.py).
    octave_fallback: bool = False  # withdrawn (r40): see DESIGN in benchmarks/gate_designs.py
    # Design r41: r40's rule for rare compositions alone (checks.alarm_confirmation; why: DESIGN
    # in benchmarks/gate_designs.py).
    rare_unsupported: bool = True
    # Design r42: a re-fit's check for a change at one moment (check 5 of checks.refit_guard)
    # measures the residual's level shift within the CUDA graph each step ran at (checks
    # .refit_guard.largest_level_shift_within; why: DESIGN in benchmarks/gate_designs.py).
    stratified_level_shift: bool = False  # withdrawn (r42): see DESIGN in benchmarks/gate_designs.py
    # Design r46: that check measures the level shift within CUDA graphs, less LEVEL_SHIFT_Z of
    # its standard errors (checks.refit_guard.largest_level_shift_within(z=...)).
    level_shift_lower_bound: bool = False  # withdrawn (r46): see DESIGN in benchmarks/gate_designs.py
    # Design r35: a re-fit may leave unwatched a class too rare in its window for the gate to
    # require it (shadowd.daemon.refit.rare_classes; why: DESIGN in benchmarks/gate_designs.py).
    refit_unwatch_rare: bool = True
    # Design r36: a re-fit is also considered while GO is held through an inconclusive round
    # (shadowd.daemon.refit.vouching; why: DESIGN in benchmarks/gate_designs.py).
    refit_in_grace: bool = True
    # Design r43: where no re-fit is installed, the model in force's envelope widens over the
    # steps beyond it that it is validated on (checks.envelope_extension; why: DESIGN in
    # benchmarks/gate_designs.py).
    extend_envelope: bool = True
    # Design r45: a detection whose shift lasts mostly on steps beyond the compositions the
    # window held (its range of batch size and new tokens, before ``envelope_margin``) is
    # unsupported, not an alarm (checks.alarm_confirmation; why: DESIGN in benchmarks/gate_designs.py).
    support_unsupported: bool = True
    # Design r47: a re-fit's check of the residual inside the calibrated compositions (check 4 of
    # checks.refit_guard) reads it less its composition bias and CUDA graph offset, as the
    # detectors do, on the steps inside the range the window held (r45's support; shadowd.daemon
    # .refit.residual_shifts; why: DESIGN in benchmarks/gate_designs.py).
    unbiased_refit_shift: bool = True
    # Design r48: that support is the range of the steps the model was fitted on (the window's
    # fit part), not the whole window: its held-out part may reach compositions the fit never
    # saw, where the model extrapolates.
    support_from_fit: bool = False  # withdrawn (r48): see DESIGN in benchmarks/gate_designs.py
    # Design r49: the window's range is the support only where the held-out steps beyond the
    # fitted range sat within the raw allowance of those inside it, with their 95 % bound; where
    # they did not, the fitted range is (checks.validated_support; why: DESIGN in
    # benchmarks/gate_designs.py).
    validated_support: bool = True
    settle_steps: int = 0  # steps ignored before the warm-up window starts
    share_policy: str = "equal"  # fixed-term policy of the shares the stability baseline scores
    # The warm-up window widens (up to max_window_factor x warmup_steps) until every step class
    # carrying >= cover_class_share of its steps has min_class_steps held-out steps: a class the
    # gate requires must not be left without drift detectors because one window was short of it.
    cover_class_share: float = 0.25
    max_window_factor: float = 3.0
    # Design r11: the window also widens (within the same maximum) until every tenant named here
    # ([calibration] tenants) has appeared in it, so a tenant the operator expects but that was
    # silent at first is not a newcomer to the gate (why and on which runs: DESIGN in
    # benchmarks/gate_designs.py).
    expected_tenants: tuple[str, ...] = ()
    # The most request rows a window holds (``[calibration] max_window_rows``; None: no limit).
    # Not a design revision in force: off by default, an operator's memory bound
    # (``benchmarks/window_memory.py``); where it cuts a window, that window is narrower than
    # the design asks, and no held-out set has judged the gate on such windows.  The memory
    # guard (``WindowBound``) may cut further, under a cgroup limit only.
    max_window_rows: int | None = None


def zero_priced_warnings(fit_metrics: dict[str, Any]) -> list[str]:
    """One line per work term the fit priced at zero where its window carried that work.

    What ``shadowd calibrate`` prints and the daemon logs for a new version: the model's
    predictions there (and its shares, where that segment sets the price) carry none of that work,
    which an operator should know before attribution governs anything.

    >>> zero_priced_warnings({"zero_priced": [{"segment": 1, "term": "decode.c", "rows": 40, "steps": 12}]})
    ['segment 1: decode.c fitted at zero, though the window held 40 such rows in 12 steps (the model prices none of that work there; widen the window or recalibrate)']
    """
    return [
        f"segment {z['segment']}: {z['term']} fitted at zero, though the window held {z['rows']} such rows "
        f"in {z['steps']} steps (the model prices none of that work there; widen the window or recalibrate)"
        for z in fit_metrics.get("zero_priced", [])
    ]


def calibrate(
    batch: StepBatch, platform_key: dict[str, Any], settings: CalibrationSettings = CalibrationSettings()
) -> Calibration:
    """Fit on the earlier part of ``batch``, calibrate drift on the held-out later part."""
    if batch.num_steps < 50:
        raise ValueError(
            f"calibration needs at least 50 steps with a measured latency, got "
            f"{batch.num_steps}; run the engine longer or widen the window"
        )
    fit_part, hold = split_window(batch, 1.0 - settings.holdout_fraction)
    model = fit(fit_part, platform_key)
    resid = checks.relative_residual(hold.latency_ms, model.attribute(hold).predicted_ms)
    by_class = {name: resid[hold.kind == code] for code, name in enumerate(KIND_NAMES)}
    usable = {
        k: v[np.isfinite(v)] for k, v in by_class.items() if np.isfinite(v).sum() >= settings.min_class_steps
    }
    # The wander of the residual mean is measured over the whole window (fit part in sample):
    # the held-out part alone holds too few blocks of steps to bound it.
    whole = checks.relative_residual(batch.latency_ms, model.attribute(batch).predicted_ms)
    features = batch.composition()
    hold_features = hold.composition()
    # Design r33: each step's batch-size stratum, where the detectors detrend by it.
    sizes_by = settings.detrend_by_size and settings.detrend_steps > 0
    scheme = (settings.graph_strata, settings.octave_strata)
    win_groups = _size_strata(features, scheme) if sizes_by else None
    hold_groups = _size_strata(hold_features, scheme) if sizes_by else None
    drift, unwatched, raw_holdout = {}, {}, {}
    for i, cls in enumerate(sorted(usable)):
        mine = batch.kind == KIND_NAMES.index(cls)
        mine_f = {k: v[mine] for k, v in features.items()}
        bias: dict[str, tuple[float, float]] = {}
        noise = raw_noise = whole[mine]
        held = (hold.kind == KIND_NAMES.index(cls)) & np.isfinite(resid)
        offsets: dict[int, float] = {}
        if settings.unbias:  # design r24: the detectors watch the residual less its composition bias
            bias = checks.fit_bias(noise, mine_f)
            noise = checks.remove_bias(noise, mine_f, bias)
            if settings.graph_offsets:  # design r44: and less its CUDA graph's offset
                offsets = checks.fit_graph_offsets(noise, mine_f["batch_size"])
                noise = checks.remove_graph_offsets(noise, mine_f["batch_size"], offsets)
            raw_holdout[cls] = usable[cls]
            held_f = {k: v[held] for k, v in hold_features.items()}
            usable[cls] = checks.remove_graph_offsets(
                checks.remove_bias(resid[held], held_f, bias), held_f["batch_size"], offsets
            )
        r = usable[cls]
        try:
            wander = checks.block_spread(_detrended(noise, r, settings), block=settings.wander_block)
            domain = checks.feature_domain(mine_f, margin=settings.envelope_margin)
            drift[cls] = checks.calibrate_class(
                r,
                cls,
                seed=i,
                target_rate=settings.target_false_alarm_rate / len(settings.detectors),
                detector_names=settings.detectors,
                allowance=checks.allowance(wander, settings.min_shift, settings.wander_k),
                domain=domain,
                clip=settings.clip,
                detrend_steps=settings.detrend_steps,
                confirm_steps=settings.confirm_steps,
                noise=noise if settings.noise_from_window else None,
                groups=None if hold_groups is None else hold_groups[held],
                noise_groups=None if win_groups is None else win_groups[mine],
                n_steps=settings.drift_sim_steps,
                adwin_n_steps=settings.adwin_sim_steps,
                min_rows=settings.min_class_steps,
            )
            if bias:
                drift[cls] = dataclasses.replace(
                    drift[cls],
                    bias=bias,
                    graph_offsets=offsets,
                    raw_allowance=_raw_allowance(raw_noise, r, settings),
                )
            if settings.support_unsupported:  # design r45: the range the window held
                fitted = mine & (np.arange(batch.num_steps) < fit_part.num_steps)
                checked = (hold_features, held, resid, whole[fitted])
                support = _support(settings, mine_f, fit_part, cls, checked, drift[cls])
                drift[cls] = dataclasses.replace(drift[cls], support=support)
            if settings.stratify_confirmation:
                drift[cls] = dataclasses.replace(
                    drift[cls],
                    stratify=True,
                    graph_strata=settings.graph_strata,
                    octave_strata=settings.octave_strata,
                    strata_fallback=settings.strata_fallback,
                    octave_fallback=settings.octave_fallback,
                    rare_unsupported=settings.rare_unsupported,
                )
        except ValueError as exc:  # e.g. residuals too non-stationary for the target rate
            unwatched[cls] = str(exc)
            log.warning("drift detectors for %s steps not calibrated: %s", cls, exc)
    for cls, r in by_class.items():
        if cls not in usable:
            unwatched[cls] = f"{int(np.isfinite(r).sum())} held-out steps < {settings.min_class_steps}"
    envelope = window_envelope(batch, fit_part, settings)
    log.info(
        "calibrated %s on %d steps; drift thresholds for %s", model.version, batch.num_steps, sorted(drift)
    )
    for line in zero_priced_warnings(model.fit_metrics):
        log.warning("%s: %s", model.version, line)
    return Calibration(
        model=model,
        drift=drift,
        envelope=envelope,
        holdout_residuals=usable,
        holdout_raw={k: v for k, v in raw_holdout.items() if k in drift and drift[k].watches_raw},
        holdout_keys=_strata(hold, resid, drift),
        unwatched=unwatched,
        stability_baseline=stability_baseline(batch, model, settings),
        class_steps={name: int((batch.kind == code).sum()) for code, name in enumerate(KIND_NAMES)},
        fit_class_steps={name: int((fit_part.kind == code).sum()) for code, name in enumerate(KIND_NAMES)},
        window_steps=int(batch.num_steps),
        scored_tenants=scored_tenants(_tenants(hold).tolist()),
    )


def window_envelope(
    batch: StepBatch, fit_part: StepBatch, settings: CalibrationSettings = CalibrationSettings()
) -> checks.WorkloadEnvelope:
    """The workload a calibration on ``batch`` (fitted on ``fit_part``) speaks for: what the gate
    judges a step against (``envelope.*``), and the held-out accuracy study scores with
    (``benchmarks/held_out_accuracy.py``)."""
    fit_decode = fit_part.kind == KIND_DECODE
    return checks.WorkloadEnvelope.from_calibration(
        context=batch.context_tokens + batch.new_tokens,
        batch_size=batch.batch_size(),
        tokens_per_step=batch.per_step_sum(batch.new_tokens.astype(float)),
        tenants=known_tenants(batch, settings.expected_tenants),
        margin=settings.envelope_margin,
        # Design r20: decode-only steps' own range, from the fit part (where their coefficients
        # were identified, as r17 counts a class held); the held-out part may have ramped beyond.
        decode_batch_size=fit_part.batch_size()[fit_decode],
        decode_kv_tokens=fit_part.per_step_sum(fit_part.context_tokens.astype(float))[fit_decode],
    )


def _size_strata(features: dict[str, np.ndarray], scheme: tuple[bool, bool]) -> np.ndarray:
    """Each step's batch-size stratum (design r33's detrend groups; ``scheme``: r34's graph sizes
    and r37's octave cuts, each on or off)."""
    keys = checks.strata(features, *scheme)
    if keys is None:
        raise ValueError("design r33 needs each step's batch size and KV tokens (its composition)")
    return np.array([checks.size_stratum(k) for k in keys], dtype=np.int64)


def _strata(hold: StepBatch, resid: np.ndarray, drift: dict[str, Any]) -> dict[str, np.ndarray]:
    """Per watched class, the composition stratum of each held-out step with a residual (r31),
    as that class's calibration keys them (r34: ``graph_strata``; r37: ``octave_strata``)."""
    comp = hold.composition()
    scheme = {name: (cal.graph_strata, cal.octave_strata) for name, cal in drift.items()}
    keys = {g: np.array(checks.strata(comp, *g), dtype=np.int64) for g in set(scheme.values())}
    return {
        name: keys[scheme[name]][(hold.kind == code) & np.isfinite(resid)]
        for code, name in enumerate(KIND_NAMES)
        if name in drift
    }


MAX_SCORED_TENANTS = 64  # more than any gate needs to count (``checks.GatePolicy.min_tenants``)


def scored_tenants(*groups: Iterable[str]) -> tuple[str, ...]:
    """The tenants of ``groups`` together, sorted, at most ``MAX_SCORED_TENANTS``: a
    calibration's out-of-sample evidence on tenants (its held-out part's, and on a re-fit its
    parent's too).

    >>> scored_tenants(["chat", "code"], ("code", "late"))
    ('chat', 'code', 'late')
    """
    names = {str(n) for group in groups for n in group}
    return tuple(sorted(names))[:MAX_SCORED_TENANTS]


def stability_baseline(
    batch: StepBatch, model: ModelVersion, settings: CalibrationSettings
) -> dict[str, dict[str, float]]:
    """The calibration window's share stability under the fitted model, per split (empty if it
    cannot be computed: the gate then judges the absolute effect)."""
    from shadowd.daemon.stability import stability_of

    try:
        rep = stability_of(batch, model.attribute(batch, settings.share_policy), n_boot=100, seed=1)
    except Exception as exc:  # too few rows or buckets: no baseline, the absolute check applies
        log.warning("no stability baseline from the calibration window: %s", exc)
        return {}
    return {
        k: {"effect": float(v["effect"]), "ci_low": float(v["ci_low"]), "ci_high": float(v["ci_high"])}
        for k, v in rep.items()
        if isinstance(v, dict) and v.get("effect") is not None and k in ("llmvisor", "llmvisor_total")
    }


def _support(
    settings: CalibrationSettings,
    window: dict[str, np.ndarray],
    fit_part: StepBatch,
    cls: str,
    checked: tuple[dict[str, np.ndarray], np.ndarray, np.ndarray, np.ndarray],
    cal: checks.DriftCalibration,
) -> dict[str, tuple[float, float]]:
    """The class's support (r45: the window's range; r48: the fitted steps'; r49: the window's
    where the held-out part validated the model beyond the fitted range).  ``checked``: the
    held-out part's compositions, the class's mask over them, their relative residuals, and the
    class's fitted steps' (in sample)."""
    only = checks.SUPPORT_FEATURES

    def pick(f: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {k: f[k] for k in only if k in f}

    source = _support_source(window, fit_part, cls)
    if settings.validated_support and source is not window:
        features, mask, resid, fit_resid = checked
        decision = checks.validated_support(
            pick(source),
            pick({k: v[mask] for k, v in features.items()}),
            resid[mask],
            pick(window),
            cal.raw_allowance or cal.allowance,
            fit_resid,
        )
        # A narrowed support holds the gate INCONCLUSIVE on compositions the window held: say so.
        (log.info if decision.validated else log.warning)("%s steps: %s", cls, decision.why())
        return decision.support
    return checks.feature_domain(pick(source if settings.support_from_fit else window), margin=0.0)


def _support_source(window: dict[str, np.ndarray], fit_part: StepBatch, cls: str) -> dict[str, np.ndarray]:
    """Design r48: the compositions of the class's steps the model was fitted on, whose range is
    the detectors' support (r45 took the whole window's, held-out part included).  Where the fit
    part holds none of the class, the window's (the model then extrapolates everywhere, and r45's
    range is the best there is).

    >>> from shadowd.steps.batch import StepBatch
    >>> fit = StepBatch.from_rows([dict(latency_ms=9.0)], [[dict(new_tokens=1, context_tokens=50)]])
    >>> window = {"batch_size": np.array([1.0, 40.0])}
    >>> _support_source(window, fit, "decode")["batch_size"].tolist()
    [1.0]
    >>> _support_source(window, fit, "mixed")["batch_size"].tolist()
    [1.0, 40.0]
    """
    mine = fit_part.kind == KIND_NAMES.index(cls)
    if not mine.any():
        return window
    return {k: v[mine] for k, v in fit_part.composition().items()}


def _raw_allowance(raw: np.ndarray, holdout: np.ndarray, settings: CalibrationSettings) -> float:
    """Design r26: the smallest lasting shift of the residual as measured (its composition bias
    left in) that confirms a detection: what its own wander over the window says is not noise,
    measured as the detectors' allowance is (0: not watched, ``settings.confirm_raw`` off)."""
    if not settings.confirm_raw:
        return 0.0
    wander = checks.block_spread(_detrended(raw, holdout, settings), block=settings.wander_block)
    return checks.allowance(wander, settings.min_shift, settings.wander_k)


def _detrended(resid: np.ndarray, holdout: np.ndarray, settings: CalibrationSettings) -> np.ndarray:
    """``resid`` as the detectors will see it, in relative latency units (for the wander bound)."""
    mean, std = float(np.mean(holdout)), float(np.std(holdout, ddof=1))
    z = np.clip((resid[np.isfinite(resid)] - mean) / std, -settings.clip, settings.clip)
    return std * checks.detrend(z, settings.detrend_steps)[0]


class WarmupCalibrator:
    """Buffers the first ``warmup_steps`` steps, then calibrates once (via ``run_job``).

    While the window widens (a common class short of held-out steps, a listed tenant not seen)
    each batch of frames asks again whether it is wide enough.  That question needs only each
    step's class and where each listed tenant first appeared, kept as the parts arrive: the
    request rows are joined once, for the fit.  Joining them on every batch copied the whole
    window each time, quadratic in its length and twice its memory at the peak
    (``tests/daemon/test_calibration_window.py``).
    """

    def __init__(
        self,
        platform_key: dict[str, Any],
        warmup_steps: int,
        on_calibrated: Callable[[Calibration], None],
        *,
        settings: CalibrationSettings = CalibrationSettings(),
        run_job: Callable[[Callable[[], None]], None] | None = None,
        window_bound: WindowBound | None = None,
    ) -> None:
        self.platform_key = platform_key
        self.window_bound = window_bound or WindowBound()
        self.warmup_steps = int(warmup_steps)
        self.settings = settings
        self.on_calibrated = on_calibrated
        self.run_job = run_job or (lambda fn: fn())
        self.buffered = 0
        self.seen = 0
        self.state = "warming_up"  # -> calibrating -> done | failed
        self.last_error: str | None = None
        self._parts: list[StepBatch] = []
        self._kinds: list[np.ndarray] = []  # each part's step classes
        self._window_steps = 0  # steps in the parts (those with a finite latency)
        self._window_rows = 0  # their request rows
        self._first_row: dict[str, int] = {}  # listed tenant -> window step of its first row
        self._listed: set[str] = set()  # listed tenants looked for in every part held

    @property
    def max_window_steps(self) -> int:
        return max(self.warmup_steps, int(self.warmup_steps * self.settings.max_window_factor))

    def observe(self, cols: Any) -> None:
        if self.state != "warming_up":
            return
        # Exactly the steps (settle_steps, settle_steps + n]: however ingest happens to batch
        # frames, the same traffic gives the same window and so the same model.
        first = self.seen
        self.seen += cols.num_steps
        index = first + np.arange(cols.num_steps)
        start = self.settings.settle_steps
        keep = (index >= start) & (index < start + self.max_window_steps)
        if not keep.any():
            return
        # Request ids are left behind: the fit never reads them, and they were most of a held
        # part's memory (``benchmarks/window_memory.py``).
        rows = dataclasses.replace(cols.batch, req_id=None)
        self._add(rows.select_steps(keep & np.isfinite(cols.batch.latency_ms)))
        self.buffered += int(keep.sum())
        cap, bound = self._row_bound()
        full = cap is not None and self._window_rows >= cap
        if self.buffered < self.warmup_steps and not full:
            return
        seen = self._tenants_seen()
        kind = np.concatenate(self._kinds)
        n = None if seen is None else window_length(kind, max(self.warmup_steps, seen), self.settings)
        if n is None and self.buffered < self.max_window_steps and not full:
            return  # a common class is short of held-out steps, or a tenant not seen: widen the window
        if seen is None:
            missing = sorted(set(self.settings.expected_tenants) - set(self._first_row))
            log.warning(
                "calibrating without expected tenant(s) %s: not seen in the widest warm-up window (%d "
                "steps); listed, so their steps are judged like everyone's when they arrive",
                ", ".join(missing[:10]),
                self._window_steps,
            )
        whole = StepBatch.concat(self._parts)
        self.state = "calibrating"
        self._parts, self._kinds = [], []
        steps = min(whole.num_steps if n is None else n, steps_within_rows(whole, cap))
        self.window_bound.read("calibration", steps, cap, bound, cut=full)
        chosen = whole if steps == whole.num_steps else whole.select_steps(np.arange(whole.num_steps) < steps)
        self.run_job(lambda: self._calibrate(chosen))

    def _row_bound(self) -> tuple[int | None, str | None]:
        """The most request rows the window may hold (``max_window_rows``, or what fits under the
        daemon's memory limit), and which bound that is: held that many, it widens no further."""
        return self.window_bound.rows(self.settings.max_window_rows, loading=False, held=self._window_rows)

    def _add(self, part: StepBatch) -> None:
        """Keep a part, its step classes, and the first row of each listed tenant not seen yet."""
        self._look_for_newly_listed()
        self._find_first_rows(part, self._window_steps, set(self.settings.expected_tenants))
        self._parts.append(part)
        self._kinds.append(part.kind)
        self._window_steps += part.num_steps
        self._window_rows += part.num_requests

    def _find_first_rows(self, part: StepBatch, offset: int, names: set[str]) -> None:
        tenant = _tenants(part)
        for name in names - set(self._first_row):
            rows = np.flatnonzero(tenant == name)
            if rows.size:
                self._first_row[name] = offset + int(part.req_step[rows].min())

    def _look_for_newly_listed(self) -> None:
        """A reload may list a tenant while the window is warming up (``Daemon.apply_config``):
        look for it in the parts already held, once."""
        new = set(self.settings.expected_tenants) - self._listed
        offset = 0
        for part in self._parts if new else ():
            self._find_first_rows(part, offset, new)
            offset += part.num_steps
        self._listed |= new

    def _tenants_seen(self) -> int | None:
        """As :func:`tenants_seen_by` over the parts joined, from what was kept as they came."""
        self._look_for_newly_listed()
        expected = set(self.settings.expected_tenants)
        if not expected:
            return 0
        if expected - set(self._first_row):
            return None
        return max(self._first_row[t] for t in expected) + 1

    def _calibrate(self, batch: StepBatch) -> None:
        try:
            result = calibrate(batch, self.platform_key, self.settings)
        except Exception as exc:
            self.state, self.last_error = "failed", f"{type(exc).__name__}: {exc}"
            log.exception("calibration failed")
            return
        self.on_calibrated(result)
        self.state = "done"


def steps_within_rows(batch: StepBatch, rows: int | None) -> int:
    """How many of ``batch``'s first steps hold at most ``rows`` request rows (all, with no limit).

    >>> from shadowd.attribution.synthetic_steps import synthetic_batch
    >>> b = synthetic_batch(steps=50)
    >>> steps_within_rows(b, None), steps_within_rows(b, b.num_requests), steps_within_rows(b, 0)
    (50, 50, 0)
    """
    if rows is None:
        return batch.num_steps
    per_step = np.bincount(batch.req_step, minlength=batch.num_steps)
    return int(np.searchsorted(np.cumsum(per_step), rows, side="right"))


def _tenants(batch: StepBatch) -> np.ndarray:
    return np.asarray(batch.tenant if batch.tenant is not None else [], dtype=object)


def known_tenants(batch: StepBatch, expected: tuple[str, ...]) -> set[str]:
    """The tenants a calibration vouches for: those with a row in its window and, design r14,
    those the operator lists in ``[calibration] tenants`` even if the window missed them.

    A listed tenant that was silent through the widest window is declared traffic, not a
    stranger: when it arrives its steps are judged like everyone's (accuracy, drift, the
    envelope, the composition domain), where before r14 the gate held INCONCLUSIVE on it as a
    newcomer until an operator recalibrated, and refused re-fits meanwhile (why and on which
    runs: DESIGN in ``benchmarks/gate_designs.py``).  A tenant nobody listed is still new.

    >>> from shadowd.attribution.synthetic_steps import synthetic_batch
    >>> sorted(known_tenants(synthetic_batch(steps=50), ("late",)))
    ['chat', 'code', 'late', 'longdoc']
    """
    seen = set(_tenants(batch).tolist()) if batch.tenant is not None else set()
    return seen | set(expected)


def tenants_seen_by(batch: StepBatch, expected: tuple[str, ...]) -> int | None:
    """The fewest steps from the window's start that hold a row of every ``expected`` tenant
    (0 with none expected); ``None`` while one of them has no row yet."""
    if not expected:
        return 0
    tenant = _tenants(batch)
    first = []
    for name in set(expected):
        rows = np.flatnonzero(tenant == name)
        if rows.size == 0:
            return None
        first.append(int(batch.req_step[rows].min()))
    return max(first) + 1


def window_length(kind: np.ndarray, minimum: int, settings: CalibrationSettings) -> int | None:
    """The shortest window of at least ``minimum`` steps (a prefix of ``kind``) whose held-out
    part holds ``min_class_steps`` steps of every class carrying ``cover_class_share`` of it;
    ``None`` if no prefix does.

    >>> s = CalibrationSettings(min_class_steps=3, holdout_fraction=0.5)
    >>> kind = np.array([2] * 3 + [1] * 7 + [2] * 10)  # class 2 common, its held-out part short
    >>> window_length(kind, 10, s)
    13
    >>> window_length(np.array([1] * 10), 4, s), window_length(np.array([1, 2] * 3), 4, s)
    (5, None)
    """
    n_total = len(kind)
    if n_total < minimum:
        return None
    ns = np.arange(minimum, n_total + 1)
    cut = np.rint(ns * (1.0 - settings.holdout_fraction)).astype(int)  # as split_window rounds
    ok = np.ones(len(ns), dtype=bool)
    for code in np.unique(kind):
        cum = np.concatenate(([0], np.cumsum(kind == code)))
        share = cum[ns] / ns
        held = cum[ns] - cum[cut]
        ok &= (share < settings.cover_class_share) | (held >= settings.min_class_steps)
    hit = np.flatnonzero(ok)
    return int(ns[hit[0]]) if hit.size else None


def model_body(cal: Calibration) -> str:
    """What ``model_versions.body`` holds: the model plus its drift calibration and envelope."""
    body = json.loads(cal.model.to_json())
    body["drift"] = {k: v.to_dict() for k, v in cal.drift.items()}
    body["envelope"] = cal.envelope.to_dict()
    body["unwatched"] = cal.unwatched
    body["stability_baseline"] = cal.stability_baseline
    body["calibration"] = {
        "class_steps": cal.class_steps,
        "fit_class_steps": cal.fit_class_steps,
        "window_steps": cal.window_steps,
        "scored_tenants": list(cal.scored_tenants),
        "lineage": list(cal.lineage),
        "reason": cal.reason,
    }
    return json.dumps(body)


def calibration_from_body(text: str) -> Calibration:
    body = json.loads(text)
    drift = {k: checks.DriftCalibration.from_dict(v) for k, v in body.pop("drift", {}).items()}
    env = checks.WorkloadEnvelope.from_dict(body.pop("envelope")) if "envelope" in body else None
    unwatched = body.pop("unwatched", {})
    baseline = body.pop("stability_baseline", {})
    window = body.pop("calibration", {})
    model = ModelVersion.from_dict(body)
    return Calibration(
        model=model,
        drift=drift,
        unwatched=unwatched,
        stability_baseline=baseline,
        class_steps={str(k): int(v) for k, v in window.get("class_steps", {}).items()},
        fit_class_steps={str(k): int(v) for k, v in window.get("fit_class_steps", {}).items()},
        window_steps=int(window.get("window_steps", 0)),
        scored_tenants=tuple(str(t) for t in window.get("scored_tenants", ()))[:MAX_SCORED_TENANTS],
        lineage=tuple(str(v) for v in window.get("lineage", ())),
        reason=str(window.get("reason", "")),
        envelope=env or checks.WorkloadEnvelope.from_calibration([0], [0], [0]),
    )


def _platform(fields: tuple[str, ...]) -> dict[str, Any]:
    key: dict[str, Any] = {}
    for item in fields:
        if "=" not in item:
            raise ValueError(f"--platform {item!r}: expected KEY=VALUE")
        k, v = item.split("=", 1)
        key[k.strip()] = int(v) if v.strip().isdigit() else v.strip()
    return key or {"source": "step log"}


def calibrate_db(
    path: str,
    *,
    since: str | None = None,
    until: str | None = None,
    steps: int | None = None,
    platform: tuple[str, ...] = (),
    tenants: tuple[str, ...] = (),
) -> dict[str, Any]:
    """Fit from the raw columns of ``path`` and store the model version there; ``tenants`` are
    vouched for even if the window holds none of their steps (as ``[calibration] tenants``)."""
    from storage.records import save_model_version
    from storage.schema import migrate

    con = open_db(path, read_only=False)
    try:
        migrate(con)
        batch = load_batch(con, Window(since=since, until=until, last_steps=steps), request_ids=False)
        cal = calibrate(batch, _platform(platform), CalibrationSettings(expected_tenants=tuple(tenants)))
        w = cal.model.fit_window
        save_model_version(
            con,
            cal.model.version,
            cal.platform_key,
            model_body(cal),
            w.get("steps"),
            w.get("first_ts"),
            w.get("last_ts"),
        )
    finally:
        con.close()
    return {**cal.summary(), "fit_metrics": cal.model.fit_metrics}
