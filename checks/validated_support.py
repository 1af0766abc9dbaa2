"""Design r49: the compositions a class's drift detectors speak for (its support) are those the
model was checked on, fitted or held out.

r45 took the support from the whole calibration window: under load that grows through the
window, its held-out part reaches batches the fit never saw, where the model extrapolates, and a
lasting residual shift there paged healthy runs. r48 took the fitted steps' range alone, and the
default demo's slowdown, at batches only the held-out part had reached, went unseen. What
separates the two: whether the held-out steps beyond the fitted range sat where the steps inside
it sat (the fitted steps, and the held-out steps that stayed among them). So the window's range
is the support only where the held-out part validated the model beyond the fitted range;
otherwise the fitted range is (why and on which runs: DESIGN in benchmarks/gate_designs.py).

>>> import numpy as np
>>> fit = {"batch_size": np.arange(1.0, 21.0)}
>>> held = {"batch_size": np.r_[np.full(50, 10.0), np.full(50, 40.0)]}
>>> window = {"batch_size": np.r_[fit["batch_size"], held["batch_size"]]}
>>> flat = np.r_[np.full(50, 0.01), np.full(50, 0.012)] + np.tile([-0.005, 0.005], 50)
>>> fit_resid = np.tile([-0.005, 0.005], 10) + 0.01
>>> validated_support(fit, held, flat, window, 0.03, fit_resid).validated
True
>>> s = validated_support(fit, held, flat + np.r_[np.zeros(50), np.full(50, 0.06)], window, 0.03, fit_resid)
>>> s.validated, s.support["batch_size"][1] < 40
(False, True)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from checks.domain import feature_domain, within

Z = 1.96  # the held-out shift beyond the fitted range validates it only if its 95 % bound does


@dataclass(frozen=True)
class SupportDecision:
    """The support chosen, and the held-out evidence it was chosen on."""

    support: dict[str, tuple[float, float]]
    validated: bool  # the window's range (True) or the fitted steps' range (False)
    beyond_steps: int  # held-out steps beyond the fitted range
    inside_steps: int  # steps inside it, fitted and held out
    shift: float  # mean residual beyond less mean inside (NaN: not measured)
    bound: float  # |shift| plus Z standard errors (NaN: not measured)
    allowance: float

    def why(self) -> str:
        """One line for the calibration log."""
        if not self.beyond_steps:
            return "support: the window's range (the held-out part stayed inside the fitted range)"
        where = "the window's range" if self.validated else "the fitted steps' range"
        return (
            f"support: {where}: {self.beyond_steps} held-out steps beyond the fitted range sat "
            f"{self.shift:+.4f} from the {self.inside_steps} inside it (bound {self.bound:.4f}, "
            f"allowance {self.allowance:.4f})"
        )


def validated_support(
    fit: Mapping[str, np.ndarray],
    held: Mapping[str, np.ndarray],
    held_resid: np.ndarray,
    window: Mapping[str, np.ndarray],
    allowance: float,
    fit_resid: np.ndarray,
) -> SupportDecision:
    """The class's support: the window's range (r45) where the held-out steps beyond the fitted
    range (``fit``'s) sat within ``allowance`` of the steps inside it, with the ``Z`` bound;
    otherwise the fitted range (r48).  ``held_resid`` and ``fit_resid``: the held-out and fitted
    steps' relative residual as measured (the model's error, its composition bias left in), in
    ``held``'s and ``fit``'s order.  The fitted steps count among those inside because a
    held-out part on a ramp may hold none of its own there."""
    whole, fitted = feature_domain(window, margin=0.0), feature_domain(fit, margin=0.0)
    r, f = np.asarray(held_resid, dtype=float), np.asarray(fit_resid, dtype=float)
    inside = within(held, fitted)
    out = r[np.isfinite(r) & ~inside]
    ins = np.r_[r[np.isfinite(r) & inside], f[np.isfinite(f) & within(fit, fitted)]]
    nan = float("nan")
    if not len(out):
        return SupportDecision(whole, True, 0, len(ins), nan, nan, allowance)
    if len(out) < 2 or len(ins) < 2:  # nothing to compare with: not validated
        return SupportDecision(fitted, False, len(out), len(ins), nan, nan, allowance)
    shift = float(out.mean() - ins.mean())
    se = float(np.sqrt(out.var(ddof=1) / len(out) + ins.var(ddof=1) / len(ins)))
    bound = abs(shift) + Z * se
    validated = bound <= allowance
    return SupportDecision(
        whole if validated else fitted, validated, len(out), len(ins), shift, bound, allowance
    )
