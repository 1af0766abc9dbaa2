"""Page-Hinkley (CUSUM on the running mean) over standardised residuals, via river.

Page-Hinkley accumulates deviations from the running mean, less an allowance ``delta``,
and fires when the accumulated excursion passes ``threshold``. Both are in units of the
input, so the input must be standardised (unit variance on calibration data): then
``delta`` ≈ half the smallest shift, in standard deviations, worth catching quickly, and
``threshold`` sets the false-alarm rate (pick it with ``checks.threshold_search``).
The statistic reported on detection is the excursion (same units as ``threshold``).

The forgetting factor defaults to ``alpha = 1`` (a true CUSUM), not river's 0.9999: with
forgetting, the sums settle into a stationary process whose spread (sd ≈ 70 for unit input)
exceeds any useful threshold, so river's default fires on pure noise in long runs.

>>> import numpy as np
>>> det = PageHinkleyDetector(threshold=20.0, delta=0.25)
>>> rng = np.random.default_rng(7)
>>> z = np.concatenate([rng.normal(0, 1, 2000), rng.normal(2.0, 1, 300)])
>>> hits = [i for i, x in enumerate(z) if det.update(float(x))]
>>> hits[0] >= 2000, hits[0] - 2000 < 20, det.last_detection["direction"]
(True, True, 'up')
"""

from __future__ import annotations

import math
from typing import Any

from river import drift


class PageHinkleyDetector:
    """Two-sided Page-Hinkley test (river.drift.PageHinkley) with its own detection count.

    ``min_instances`` values after each reset are used only to learn the running mean: a
    larger value lowers the false-alarm hazard right after a reset.
    """

    name = "page_hinkley"

    def __init__(
        self,
        threshold: float,
        delta: float = 0.25,
        min_instances: int = 100,
        alpha: float = 1.0,
        mode: str = "both",
    ) -> None:
        self.threshold = float(threshold)
        self.delta = float(delta)
        self.min_instances = int(min_instances)
        self.alpha = float(alpha)
        self.mode = mode
        self.reset()

    def reset(self) -> None:
        self._ph = drift.PageHinkley(
            min_instances=self.min_instances,
            delta=self.delta,
            threshold=self.threshold,
            alpha=self.alpha,
            mode=self.mode,
        )
        self.n_seen = 0
        self.n_detections = 0
        self.last_detection: dict[str, Any] | None = None
        self._since_reset = 0

    @property
    def statistic(self) -> float:
        """Current excursion max(up, down), comparable with ``threshold``; NaN if unreadable."""
        up, down = self._excursions()
        return max(up, down)

    def _excursions(self) -> tuple[float, float]:
        # river keeps these private; read defensively so a river upgrade degrades to NaN.
        ph = self._ph
        try:
            up = ph._sum_increase - ph._min_increase
            down = ph._max_decrease - ph._sum_decrease
        except AttributeError:
            return math.nan, math.nan
        return float(up), float(down)

    def update(self, z: float) -> bool:
        if self._ph.drift_detected:  # river resets on this update: mirror it in our counter
            self._since_reset = 0
        self._ph.update(z)
        self.n_seen += 1
        self._since_reset += 1
        if not self._ph.drift_detected:
            return False
        up, down = self._excursions()
        self.n_detections += 1
        self.last_detection = {
            "statistic": max(up, down),
            "threshold": self.threshold,
            "direction": "up" if up >= down else "down",
            "n_since_reset": self._since_reset,
            "delta": self.delta,
        }
        return True
