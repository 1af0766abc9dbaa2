"""The range of batch compositions a class's residual calibration is valid for.

The latency model's residual has a bias that depends on batch composition (``checks.wander``),
and calibration only measured it over the compositions its window held. A light-load stretch
with a tenth of the calibration's KV traffic, or a batch twice as big, is a regime where the
bias was never measured: a residual detector fed those steps would report the model's
extrapolation error as drift of the engine. The domain keeps the detectors on comparable steps;
the workload-envelope check reports the steps beyond it.

>>> import numpy as np
>>> feats = {"batch_size": np.arange(10, 110), "kv_tokens": np.linspace(1e4, 1e5, 100)}
>>> d = feature_domain(feats, quantiles=(0.0, 1.0), margin=0.5)
>>> d["batch_size"], d["kv_tokens"]
((6.666666666666667, 163.5), (6666.666666666667, 150000.0))
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np


def feature_domain(
    features: Mapping[str, np.ndarray], quantiles: tuple[float, float] = (0.01, 0.99), margin: float = 0.5
) -> dict[str, tuple[float, float]]:
    """Per feature ``[q_lo / (1 + margin), q_hi · (1 + margin)]`` over the calibration steps."""
    out = {}
    for name, values in features.items():
        x = np.asarray(values, dtype=float)
        x = x[np.isfinite(x)]
        if not len(x):
            raise ValueError(f"no finite values of {name!r} to take a domain from")
        lo, hi = np.quantile(x, quantiles)
        out[name] = (float(lo / (1.0 + margin)), float(hi * (1.0 + margin)))
    return out


def within(features: Mapping[str, np.ndarray], ranges: Mapping[str, tuple[float, float]]) -> np.ndarray:
    """Which steps lie inside every range of ``ranges`` (bounds included; a feature absent from
    ``features`` is not judged).

    >>> within({"batch_size": np.array([1, 2, 28, 40])}, {"batch_size": (2.0, 28.0)}).tolist()
    [False, True, True, False]
    """
    n = len(next(iter(features.values()))) if features else 0
    ok = np.ones(n, dtype=bool)
    for name, (lo, hi) in ranges.items():
        if name in features:
            x = np.asarray(features[name], dtype=float)
            ok &= (x >= lo) & (x <= hi)
    return ok
