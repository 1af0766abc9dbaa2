"""Per step class: how to standardise residuals and at which thresholds the detectors fire.

A ``DriftCalibration`` is what ``checks.calibration.calibrate_class`` returns and what
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
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any, Iterable

import numpy as np

from checks.adwin import AdwinDetector
from checks.page_hinkley import PageHinkleyDetector


@dataclass(frozen=True)
class DriftCalibration:
    """Standardisation and detector thresholds for one step class.

    ``estimates`` records, per detector, the false-alarm rate measured during calibration
    (alarms, exposure in steps, point rate and 95 % upper bound), so a threshold always
    travels with the evidence for it.
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
    detector_names: tuple[str, ...] = ("page_hinkley", "adwin")
    estimates: dict[str, dict[str, float]] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if not (self.std > 0 and np.isfinite(self.std)):
            raise ValueError(f"calibration std must be positive and finite, got {self.std!r}")

    def standardise(self, residuals: Iterable[float] | np.ndarray) -> np.ndarray:
        """Relative residuals → clipped z-scores (NaN stays NaN)."""
        z = (np.asarray(residuals, dtype=float) - self.mean) / self.std
        return np.clip(z, -self.clip, self.clip)

    def detectors(self) -> list[PageHinkleyDetector | AdwinDetector]:
        """Fresh detectors at this calibration's thresholds, in ``detector_names`` order."""
        make = {
            "page_hinkley": lambda: PageHinkleyDetector(
                threshold=self.ph_threshold, delta=self.ph_delta,
                min_instances=self.ph_min_instances, alpha=self.ph_alpha),
            "adwin": lambda: AdwinDetector(delta=self.adwin_delta, clock=self.adwin_clock,
                                           grace_period=self.adwin_grace_period),
        }
        unknown = [n for n in self.detector_names if n not in make]
        if unknown:
            raise ValueError(f"unknown detector name(s) {unknown}; known: {sorted(make)}")
        return [make[n]() for n in self.detector_names]

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["detector_names"] = list(self.detector_names)
        return d

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "DriftCalibration":
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown DriftCalibration key(s) {unknown}; known: {sorted(known)}")
        d = dict(data)
        if "detector_names" in d:
            d["detector_names"] = tuple(d["detector_names"])
        return cls(**d)
