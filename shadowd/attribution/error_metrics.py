"""Accuracy metrics of a step-latency model: the paper's, per step class.

Per step the relative error ``|T̂ − T| / T`` (a fraction); per class ``prefill``, ``decode``,
``mixed`` and ``all`` its p50/p90/p99 and R², for LLMVisor and the token baseline, and the
token/LLMVisor ratios.  Values that do not exist (R² of fewer than two steps or of constant latency,
a ratio over a zero error, any figure of an empty class) are ``None`` so reports stay valid JSON.

>>> import numpy as np
>>> error_summary(np.array([9.0, 22.0]), np.array([10.0, 20.0]))
{'r2': 0.9, 'p50': 0.1, 'p90': 0.1, 'p99': 0.1}
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from shadowd.steps.batch import KIND_NAMES, StepBatch

CLASSES = KIND_NAMES + ("all",)
QUANTILES = (("p50", 50), ("p90", 90), ("p99", 99))


def _num(x: float) -> float | None:
    return float(x) if x is not None and math.isfinite(x) else None


def relative_errors(predicted: np.ndarray, measured: np.ndarray) -> np.ndarray:
    """``|T̂ − T| / T`` per step (fraction)."""
    return np.abs(predicted - measured) / measured


def r2(predicted: np.ndarray, measured: np.ndarray) -> float | None:
    """Coefficient of determination; ``None`` with < 2 steps or constant measured latency."""
    if len(measured) < 2:
        return None
    total = float(np.sum((measured - measured.mean()) ** 2))
    return _num(1.0 - float(np.sum((predicted - measured) ** 2)) / total) if total > 0 else None


def error_summary(predicted: np.ndarray, measured: np.ndarray) -> dict[str, float | None]:
    """``{r2, p50, p90, p99}`` of one model on one set of steps."""
    out: dict[str, float | None] = {"r2": r2(predicted, measured)}
    err = relative_errors(predicted, measured)
    qs = np.percentile(err, [q for _, q in QUANTILES]) if len(err) else [None] * len(QUANTILES)
    out.update({name: _num(q) if q is not None else None for (name, _), q in zip(QUANTILES, qs)})
    return out


def accuracy_by_class(
    batch: StepBatch, predicted: np.ndarray, baseline: np.ndarray
) -> dict[str, dict[str, Any]]:
    """Per step class: steps, both models' error summaries, and token/LLMVisor ratios.

    Steps without requests or with non-positive latency are not scored.
    """
    usable = np.isfinite(batch.latency_ms) & (batch.latency_ms > 0) & (batch.batch_size() > 0)
    out: dict[str, dict[str, Any]] = {}
    for name in CLASSES:
        m = usable if name == "all" else usable & (batch.kind == KIND_NAMES.index(name))
        t = batch.latency_ms[m]
        lv, tb = error_summary(predicted[m], t), error_summary(baseline[m], t)
        ratio = {q: (_num(tb[q] / lv[q]) if lv[q] and tb[q] is not None else None) for q, _ in QUANTILES}
        out[name] = {"steps": int(m.sum()), "llmvisor": lv, "token_baseline": tb, "ratio": ratio}
    return out
