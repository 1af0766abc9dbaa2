"""ADWIN (adaptive windowing) over standardised residuals, via river.

ADWIN keeps a window of recent values and drops its older part whenever the two parts'
means differ by more than a Hoeffding/Bernstein-style bound at confidence ``delta``; a
smaller ``delta`` means fewer false alarms and later detections. It needs no allowance
parameter, which makes it a useful second opinion beside Page-Hinkley. On detection the
reported statistic is the size of the mean shift between the dropped and the kept part (in
the input's units, i.e. standard deviations for standardised residuals); the threshold is
``delta``, a confidence, not a level the statistic is compared with.

>>> import numpy as np
>>> det = AdwinDetector(delta=1e-3)
>>> rng = np.random.default_rng(3)
>>> z = np.concatenate([rng.normal(0, 1, 3000), rng.normal(3.0, 1, 500)])
>>> hits = [i for i, x in enumerate(z) if det.update(float(x))]
>>> hits[0] >= 3000, det.last_detection["statistic"] > 1.5
(True, True)
"""

from __future__ import annotations

from typing import Any

from river import drift


class AdwinDetector:
    """river.drift.ADWIN with its own detection count and a readable shift size."""

    name = "adwin"

    def __init__(
        self,
        delta: float = 0.002,
        clock: int = 32,
        grace_period: int = 10,
        min_window_length: int = 5,
        max_buckets: int = 5,
    ) -> None:
        self.delta = float(delta)
        self.clock = int(clock)
        self.grace_period = int(grace_period)
        self.min_window_length = int(min_window_length)
        self.max_buckets = int(max_buckets)
        self.reset()

    @property
    def threshold(self) -> float:
        return self.delta

    def reset(self) -> None:
        self._ad = drift.ADWIN(
            delta=self.delta,
            clock=self.clock,
            max_buckets=self.max_buckets,
            min_window_length=self.min_window_length,
            grace_period=self.grace_period,
        )
        self.n_seen = 0
        self.n_detections = 0
        self.last_detection: dict[str, Any] | None = None

    def update(self, z: float) -> bool:
        ad = self._ad
        if ad.drift_detected:
            width0, total0 = 0, 0.0  # river resets before adding this value
        else:
            width0, total0 = ad.width, ad.total
        ad.update(z)
        self.n_seen += 1
        if not ad.drift_detected:
            return False
        width1, total1 = ad.width, ad.total
        n_dropped = width0 + 1 - width1
        kept_mean = total1 / width1 if width1 else float("nan")
        dropped_mean = (total0 + z - total1) / n_dropped if n_dropped > 0 else float("nan")
        self.n_detections += 1
        self.last_detection = {
            "statistic": abs(kept_mean - dropped_mean),
            "threshold": self.delta,
            "direction": "up" if kept_mean >= dropped_mean else "down",
            "kept_width": width1,
            "dropped_width": n_dropped,
            "kept_mean": kept_mean,
            "dropped_mean": dropped_mean,
        }
        return True
