"""Per step class: how to standardise residuals and at which thresholds the detectors fire.

A ``DriftCalibration`` is what ``checks.threshold_search.calibrate_class`` returns and what
``checks.residual_drift.DriftMonitor`` runs on. It is plain data (``to_dict``/``from_dict``)
so the daemon can store it beside the coefficient version it was calibrated for.

Relative residuals ``r = (T - T_hat) / T_hat`` are standardised with the calibration
window's mean and standard deviation, then clipped to ``±clip``: a single stalled step
(GC pause, preemption) must not be able to fire a detector on its own.

>>> cal = DriftCalibration(step_class="decode", mean=0.01, std=0.03, ph_threshold=25.0,
...                        adwin_delta=0.002)
>>> [round(float(z), 3) for z in cal.standardise([0.01, 0.04, 5.0])]
[0.0, 1.0, 5.0]
>>> [d.name for d in cal.detectors()]
['page_hinkley', 'adwin']
>>> DriftCalibration.from_dict(cal.to_dict()) == cal
True
>>> cal = DriftCalibration(step_class="decode", mean=0.0, std=0.03, ph_threshold=25.0,
...                        adwin_delta=0.002, domain={"batch_size": (8, 64)})
>>> cal.in_domain({"batch_size": np.array([4, 8, 64, 65]), "kv_tokens": np.zeros(4)}).tolist()
[False, True, True, False]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import numpy as np

from checks.adwin import AdwinDetector
from checks.alarm_confirmation import AlarmConfirmation, graph_stratum, octave_stratum
from checks.detrend import Detrend, detrend
from checks.domain import within
from checks.page_hinkley import PageHinkleyDetector
from checks.residual_bias import remove_bias, remove_graph_offsets
from checks.stratified_detrend import StratifiedDetrend

# Without a detrend baseline the detectors compare with the calibration mean, so a pending alarm's
# reference is that (zero); this only sizes the short history the confirmation keeps.
DEFAULT_REFERENCE_LAG = 100
# Design r33: held-out strata kept for the power check (about what a class's held-out part holds).
FAULT_GROUPS_KEPT = 2000
# Design r45: the features whose range beyond the calibration window's makes a lasting shift
# unsupported.  They set the step's GEMM shapes (its CUDA graph, tiles, and where it turns from
# memory- to compute-bound), where the engine's cost bends in ways the model's linear pieces
# only know as far as the window held them.  KV tokens are left out: attention's KV traffic is
# linear in them, and the model extrapolates that line as far as the domain's margin allows (a
# slowdown that grew the KV tokens past the window's range, F43-step5's, is still raised).
SUPPORT_FEATURES = ("batch_size", "new_tokens")


@dataclass(frozen=True)
class DriftCalibration:
    """Standardisation and detector thresholds for one step class.

    ``allowance`` (relative latency, e.g. 0.012) is the smallest shift of the residual mean the
    detectors should raise: Page-Hinkley's ``ph_delta`` is at least ``allowance / std``, and the
    daemon drops ADWIN detections whose kept window is closer than that to ``mean``
    (``checks.wander`` says how it is measured).  ``domain`` maps step features (e.g.
    ``batch_size``, ``kv_tokens``) to the inclusive range calibration saw them in: the model's
    bias is only measured there, so steps outside it are not fed to the detectors (the workload
    envelope check speaks for them).  With ``detrend_steps``, the detectors are fed the clipped
    z-scores relative to a slow baseline of their own past (``checks.detrend``).  With
    ``confirm_steps``, a detection is an alarm only if the shift lasts that many more judged
    steps of the class by at least ``allowance`` (``checks.alarm_confirmation``, design r8).

    ``unavailable`` names requested detectors that no threshold could hold to ``target_rate``
    (they are not in ``detector_names``: the others watch the class alone).

    ``estimates`` records, per detector, the false-alarm rate measured during calibration
    (alarms, exposure in steps, point rate and 95 % upper bound, noise model), so a threshold
    always travels with the evidence for it.
    """

    step_class: str
    mean: float
    std: float
    ph_threshold: float
    adwin_delta: float
    clip: float = 5.0
    ph_delta: float = 0.25
    ph_min_instances: int = 100
    ph_alpha: float = 1.0
    adwin_clock: int = 32
    adwin_grace_period: int = 10
    target_rate: float = 1e-5
    n_calibration: int = 0
    allowance: float = 0.0  # smallest shift of the relative residual's mean worth raising (0: unset)
    domain: dict[str, tuple[float, float]] = field(default_factory=dict)
    detrend_steps: int = 0  # time constant of the baseline the detectors see changes against (0: none)
    confirm_steps: int = 0  # judged steps a detection's shift must last to be an alarm (0: at once)
    detector_names: tuple[str, ...] = ("page_hinkley", "adwin")
    unavailable: dict[str, str] = field(default_factory=dict)  # detector -> why it could not calibrate
    # Design r24: feature -> (slope, centre) of the residual's bias over batch composition
    # (``checks.residual_bias``); the detectors watch the residual less it.  Empty: as before r24.
    bias: dict[str, tuple[float, float]] = field(default_factory=dict)
    # Design r44: CUDA graph (``checks.alarm_confirmation.graph_size``) -> the offset of the
    # residual there left by ``bias`` (``checks.residual_bias.fit_graph_offsets``); the detectors
    # watch the residual less it too.  Empty: as before r44.
    graph_offsets: dict[int, float] = field(default_factory=dict)
    # Design r26: with a bias, a detection is confirmed only if the residual as measured (bias
    # left in) also shifts by at least this (its own wander's allowance; ``AlarmConfirmation``).
    # 0: not watched (as before r26).
    raw_allowance: float = 0.0
    # Design r31: where composition strata cover a detection's window, they decide whether it is
    # confirmed (``AlarmConfirmation``, ``stratify``).  False: as before r31.
    stratify: bool = False
    # Design r34: those strata take the batch size by the CUDA graph it runs at above 8
    # (``checks.alarm_confirmation.stratum``, ``graph``).  False: r31's quarter octaves.
    graph_strata: bool = False
    # Design r37: graph strata also cut at r31's quarter octaves (``stratum``, ``octaves``).
    # False: r34's graph strata.
    octave_strata: bool = False
    # Design r38: where those strata are too thin to judge a window, r34's graph strata judge it
    # (``AlarmConfirmation``, ``coarser``; read with ``graph_strata`` and ``octave_strata``).
    # False: r37's strata alone.
    strata_fallback: bool = False
    # Design r40: where r34's graph strata are too thin as well, r31's quarter octaves judge it
    # (``AlarmConfirmation``, ``coarsest``; read with ``strata_fallback``).  False: as r38, a
    # window no strata cover is judged without strata.
    octave_fallback: bool = False
    # Design r41: r40's rule alone: where no strata judge a window and most of it lies in
    # quarter-octave strata seen fewer than ``MIN_STRATUM`` times, a lasting shift under
    # ``RARE_SHIFT`` allowances is unsupported, not an alarm (``AlarmConfirmation``, ``rare``;
    # read with ``strata_fallback``).  False: r38's rule (strata never seen).
    rare_unsupported: bool = False
    # Design r33: the detectors judge each step against its batch-size stratum's own detrend
    # baseline (``checks.stratified_detrend``; groups: ``checks.alarm_confirmation.size_stratum``).
    # ``fault_groups``: the held-out steps' strata in order, the last ``FAULT_GROUPS_KEPT``
    # (``checks.fault_sensitivity`` replays them).  False: one class baseline, as before r33.
    detrend_by_size: bool = False
    fault_groups: tuple[int, ...] = ()
    # Design r45: feature (``SUPPORT_FEATURES``) -> the range the calibration window held
    # (``domain`` before its margin).  A detection whose shift lasts mostly on steps beyond it
    # is unsupported, not an alarm (``AlarmConfirmation``, ``support``).  Empty: as before r45.
    support: dict[str, tuple[float, float]] = field(default_factory=dict)
    estimates: dict[str, dict[str, float]] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if not (self.std > 0 and np.isfinite(self.std)):
            raise ValueError(f"calibration std must be positive and finite, got {self.std!r}")

    def standardise(self, residuals: Iterable[float] | np.ndarray) -> np.ndarray:
        """Relative residuals → clipped z-scores (NaN stays NaN)."""
        z = (np.asarray(residuals, dtype=float) - self.mean) / self.std
        return np.clip(z, -self.clip, self.clip)

    def prepare(
        self, residuals: Iterable[float] | np.ndarray, groups: Iterable[int] | np.ndarray | None = None
    ) -> np.ndarray:
        """What the detectors are fed for a run of residuals from a fresh start (offline use);
        ``groups``: each residual's batch-size stratum (read with ``detrend_by_size`` only)."""
        z = self.standardise(residuals)
        ok = np.isfinite(z)
        if not self.detrend_by_size:
            return detrend(z[ok], self.detrend_steps)[0]
        g = None if groups is None else np.asarray(groups, dtype=np.int64)[ok]
        return self.baseline().update_many(z[ok], g)[0]

    def baseline(self) -> Detrend | StratifiedDetrend:
        """A fresh detrend baseline of the kind the detectors are judged against."""
        if self.detrend_by_size:
            return StratifiedDetrend(self.detrend_steps)
        return Detrend(self.detrend_steps)

    def unbiased(self, residuals: np.ndarray, features: Mapping[str, np.ndarray] | None) -> np.ndarray:
        """``residuals`` less their calibrated composition bias and, design r44, their CUDA
        graph's offset (as is without either or without ``features``)."""
        r = np.asarray(residuals, dtype=float)
        if not features:
            return r
        if self.bias and all(n in features for n in self.bias):
            r = remove_bias(r, features, self.bias)
        if self.graph_offsets and "batch_size" in features:
            r = remove_graph_offsets(r, features["batch_size"], self.graph_offsets)
        return r

    def in_domain(self, features: Mapping[str, np.ndarray]) -> np.ndarray:
        """Which steps lie inside ``domain`` on every feature given (all, if no domain)."""
        return within(features, self.domain)

    def beyond_support(self, features: Mapping[str, np.ndarray]) -> np.ndarray:
        """Which steps lie beyond ``support`` on any feature given (none, if no support): design
        r45's steps where the model extrapolates.

        >>> cal = DriftCalibration(step_class="mixed", mean=0.0, std=0.02, ph_threshold=10.0,
        ...                        adwin_delta=0.0, support={"batch_size": (2.0, 28.0)})
        >>> cal.beyond_support({"batch_size": np.array([1, 2, 28, 40])}).tolist()
        [True, False, False, True]
        """
        return ~within(features, self.support)

    def detectors(self) -> list[PageHinkleyDetector | AdwinDetector]:
        """Fresh detectors at this calibration's thresholds, in ``detector_names`` order."""
        make = {
            "page_hinkley": lambda: PageHinkleyDetector(
                threshold=self.ph_threshold,
                delta=self.ph_delta,
                min_instances=self.ph_min_instances,
                alpha=self.ph_alpha,
            ),
            "adwin": lambda: AdwinDetector(
                delta=self.adwin_delta, clock=self.adwin_clock, grace_period=self.adwin_grace_period
            ),
        }
        unknown = [n for n in self.detector_names if n not in make]
        if unknown:
            raise ValueError(f"unknown detector name(s) {unknown}; known: {sorted(make)}")
        return [make[n]() for n in self.detector_names]

    def confirmation(self) -> AlarmConfirmation:
        """A fresh confirmation stage for this class's detections (``confirm_steps``)."""
        lag = self.detrend_steps if self.detrend_steps > 0 else DEFAULT_REFERENCE_LAG
        raw = self.raw_allowance / self.std if self.watches_raw else None
        return AlarmConfirmation(
            self.confirm_steps,
            self.allowance / self.std,
            lag=lag,
            raw_allowance_z=raw,
            stratify=self.stratify,
            coarser=graph_stratum if self.coarse_strata else None,
            coarsest=octave_stratum if self.coarse_strata and self.octave_fallback else None,
            rare=octave_stratum
            if self.coarse_strata and (self.octave_fallback or self.rare_unsupported)
            else None,
            support=bool(self.support),
        )

    @property
    def coarse_strata(self) -> bool:
        """Design r38: r34's graph strata stand behind r37's (octave-cut) ones."""
        return self.stratify and self.graph_strata and self.octave_strata and self.strata_fallback

    @property
    def watches_raw(self) -> bool:
        """Design r26: confirmations also need the shift on the residual with its bias left in."""
        return bool(self.bias or self.graph_offsets) and self.raw_allowance > 0

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["detector_names"] = list(self.detector_names)
        d["domain"] = {k: list(v) for k, v in self.domain.items()}
        d["support"] = {k: list(v) for k, v in self.support.items()}
        d["bias"] = {k: list(v) for k, v in self.bias.items()}
        d["graph_offsets"] = {str(k): v for k, v in self.graph_offsets.items()}  # JSON keys are text
        d["fault_groups"] = list(self.fault_groups)
        return d

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DriftCalibration:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown DriftCalibration key(s) {unknown}; known: {sorted(known)}")
        d = dict(data)
        if "detector_names" in d:
            d["detector_names"] = tuple(d["detector_names"])
        if "domain" in d:
            d["domain"] = {k: (float(v[0]), float(v[1])) for k, v in d["domain"].items()}
        if "support" in d:
            d["support"] = {k: (float(v[0]), float(v[1])) for k, v in d["support"].items()}
        if "bias" in d:
            d["bias"] = {k: (float(v[0]), float(v[1])) for k, v in d["bias"].items()}
        if "graph_offsets" in d:
            d["graph_offsets"] = {int(k): float(v) for k, v in d["graph_offsets"].items()}
        if "fault_groups" in d:
            d["fault_groups"] = tuple(int(g) for g in list(d["fault_groups"])[-FAULT_GROUPS_KEPT:])
        return cls(**d)
