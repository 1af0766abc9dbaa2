"""Coefficient drift: refit the latency model on a recent window, compare with the calibrated fit.

Residual detectors see drift only where the workload goes; a refit shows whether the model
itself has moved (a driver update, thermal throttling, a different kernel choice). Raw
coefficients are collinear and hard to compare, so the comparison is made where it matters:
on a *reference design* (feature rows representative of the calibration workload), as the
relative change of predicted latency ``Σ|X_ref θ_new − X_ref θ_cal| / Σ X_ref θ_cal``.
A row bootstrap gives a confidence interval; drift is flagged when its lower bound exceeds
the tolerance, so a noisy small window does not raise alarms on its own.

The check knows nothing of the attribution model: it takes feature matrices and latencies
and a fit function (non-negative least squares by default, as the attribution model uses).

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> X = np.column_stack([np.ones(800), rng.uniform(1, 64, 800), rng.uniform(1e3, 1e5, 800)])
>>> theta = np.array([2.0, 0.05, 3e-5])
>>> check = CoefficientDrift(theta, reference_design=X[:200], tolerance=0.05, n_boot=50)
>>> same = X @ theta * (1 + rng.normal(0, 0.02, 800))
>>> check.compare(X, same)["status"]
'ok'
>>> events = check.check(X, 1.10 * same, ts=100.0, step_seq=5000)
>>> [(e.detector, round(e.statistic, 2)) for e in events]
[('coefficient', 0.1)]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from scipy.optimize import nnls

from checks.drift_event import DriftEvent

Fit = Callable[[np.ndarray, np.ndarray], np.ndarray]


def nnls_fit(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Non-negative least squares (columns rescaled for conditioning)."""
    X = np.asarray(X, dtype=float)
    scale = np.linalg.norm(X, axis=0)
    scale[scale == 0] = 1.0
    coef, _ = nnls(X / scale, np.asarray(y, dtype=float))
    return coef / scale


def ridge_fit(X: np.ndarray, y: np.ndarray, alpha: float = 1e-6) -> np.ndarray:
    """Least squares with a small ridge (relative to each column's scale) against collinearity."""
    X = np.asarray(X, dtype=float)
    scale = np.linalg.norm(X, axis=0)
    scale[scale == 0] = 1.0
    Xs = X / scale
    p = Xs.shape[1]
    coef = np.linalg.solve(Xs.T @ Xs + alpha * np.eye(p), Xs.T @ np.asarray(y, dtype=float))
    return coef / scale


class CoefficientDrift:
    """Relative change of predicted latency on a reference design after a refit."""

    name = "coefficient"

    def __init__(
        self,
        calibrated: np.ndarray,
        reference_design: np.ndarray,
        tolerance: float = 0.05,
        fit: Fit = nnls_fit,
        min_rows: int = 200,
        n_boot: int = 200,
        ci: float = 0.95,
        seed: int = 0,
        step_class: str | None = None,
    ) -> None:
        self.calibrated = np.asarray(calibrated, dtype=float)
        self.reference_design = np.atleast_2d(np.asarray(reference_design, dtype=float))
        if self.reference_design.shape[1] != len(self.calibrated):
            raise ValueError("reference_design columns must match the calibrated coefficients")
        self._ref_pred = self.reference_design @ self.calibrated
        if not self._ref_pred.sum() > 0:
            raise ValueError("calibrated predictions on the reference design must sum to > 0")
        self.tolerance = float(tolerance)
        self.fit = fit
        self.min_rows = int(min_rows)
        self.n_boot = int(n_boot)
        self.ci = float(ci)
        self.seed = int(seed)
        self.step_class = step_class

    def _change(self, coef: np.ndarray) -> tuple[float, float]:
        diff = self.reference_design @ coef - self._ref_pred
        total = self._ref_pred.sum()
        return float(np.abs(diff).sum() / total), float(diff.sum() / total)

    def compare(self, X: np.ndarray, y: np.ndarray) -> dict[str, Any]:
        """Refit on ``(X, y)``; status is 'drift', 'ok' or 'insufficient' (too few rows)."""
        X = np.asarray(X, dtype=float)
        y = np.asarray(y, dtype=float)
        ok = np.all(np.isfinite(X), axis=1) & np.isfinite(y)
        X, y = X[ok], y[ok]
        out: dict[str, Any] = {
            "rows": int(len(y)),
            "tolerance": self.tolerance,
            "step_class": self.step_class,
        }
        if len(y) < self.min_rows:
            return {
                **out,
                "status": "insufficient",
                "relative_change": None,
                "signed_change": None,
                "ci_low": None,
                "ci_high": None,
            }
        coef = self.fit(X, y)
        rel, signed = self._change(coef)
        lo = hi = rel
        if self.n_boot > 0:
            rng = np.random.default_rng(self.seed)
            boots = [
                self._change(self.fit(X[i], y[i]))[0]
                for i in (rng.integers(0, len(y), len(y)) for _ in range(self.n_boot))
            ]
            a = (1 - self.ci) / 2
            lo, hi = (float(v) for v in np.quantile(boots, [a, 1 - a]))
        return {
            **out,
            "status": "drift" if lo > self.tolerance else "ok",
            "relative_change": rel,
            "signed_change": signed,
            "ci_low": lo,
            "ci_high": hi,
            "coef": coef.tolist(),
        }

    def check(self, X: np.ndarray, y: np.ndarray, *, ts: float, step_seq: int) -> list[DriftEvent]:
        """``compare`` as drift events (one event, or none)."""
        res = self.compare(X, y)
        if res["status"] != "drift":
            return []
        details = {k: res[k] for k in ("rows", "signed_change", "ci_low", "ci_high", "coef")}
        return [
            DriftEvent(
                ts=float(ts),
                step_seq=int(step_seq),
                detector=self.name,
                statistic=res["relative_change"],
                threshold=self.tolerance,
                step_class=self.step_class,
                details=details,
            )
        ]
