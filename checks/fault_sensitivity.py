"""How soon a class's calibrated drift detectors raise a lasting shift of its residual. Pure.

A re-fit calibrates new detectors on its own window, and a window whose residual wanders gives
them a far higher threshold (the false-alarm target holds it to the window's own dynamics): the
re-fitted model can then be blind to the slowdowns the gate must catch, while the model in force
saw them at once.  Design r15 refuses such a re-fit (``shadowd.daemon.refit``).  It was seen on
held-out 14's F14-step5 under design r14 (``benchmarks/gate_matrix.py``, docs/validation.md): a
re-fit installed shortly before the slowdown carried a Page-Hinkley threshold many times its
parent's, raised nothing through the slowdown, and the gate ended GO.

The measure is intrinsic to the detectors, not to any run: a noise-free residual sits at the
calibration's mean long enough to pass every detector's warm-up, then every step is slower by
``shift`` (what a whole-step slowdown does to a relative residual), and the judged steps until a
detector fires are counted, through the same standardisation, clipping and detrend baseline as
live residuals (``DriftCalibration.prepare``).  Noise only delays or hastens that on average
(``checks.threshold_search.measure_detection_delay`` measures it with noise).

>>> from checks.drift_calibration import DriftCalibration
>>> keen = DriftCalibration("decode", mean=0.0, std=0.02, ph_threshold=8.0, adwin_delta=0.0,
...                         ph_delta=1.0, detrend_steps=100, detector_names=("page_hinkley",))
>>> detection_delay(keen, FAULT_SHIFT, 1000)
6
>>> import dataclasses
>>> detection_delay(dataclasses.replace(keen, ph_threshold=80.0), FAULT_SHIFT, 1000) is None
True
"""

from __future__ import annotations

import numpy as np

from checks.drift_calibration import DriftCalibration
from checks.threshold_search import measure_detection_delay

# The smallest whole-step slowdown the gate must end not GO on (docs/validation.md's targets).
FAULT_SHIFT = 0.05
# Judged steps a re-fit's detectors may take to raise it: the 500 engine steps the 8 % target
# allows less the 200 a detection waits for confirmation (``confirm_steps``).  A decode or mixed
# step is judged about once per engine step, so judged steps stand in for engine steps.
FAULT_BUDGET_STEPS = 300


def detection_delay(cal: DriftCalibration, shift: float, horizon: int) -> int | None:
    """Judged steps from the start of a lasting relative slowdown ``shift`` until the first of
    ``cal``'s detectors fires (1 = on the first slower step); ``None`` if none does within
    ``horizon`` steps.  ``measure_detection_delay`` on a constant residual, once.  A calibration
    that detrends by batch-size stratum (design r33) sees the steps come in its held-out part's
    strata, in their order, repeated: how fast the strata's baselines absorb a shift depends on
    how often each comes back."""
    lead = max(cal.ph_min_instances, cal.adwin_grace_period, 1) + 1
    groups = cal.fault_groups if cal.detrend_by_size else ()
    if groups:  # design r33: the held-out steps' strata, run through once first (as priming does)
        lead = max(lead, len(groups))
    res = measure_detection_delay(
        cal,
        (shift,),
        residuals=np.full(lead, cal.mean),
        warmup=lead,
        horizon=int(horizon),
        reps=1,
        groups=groups or None,
    )
    delays = [r["max_delay"] for r in res["rows"] if r["max_delay"] is not None]
    return int(min(delays)) if delays else None


def dulled(
    parent: dict[str, DriftCalibration],
    new: dict[str, DriftCalibration],
    shift: float = FAULT_SHIFT,
    budget: int = FAULT_BUDGET_STEPS,
) -> dict[str, tuple[int, int | None]]:
    """Classes both watch where the model in force's detectors raise ``shift`` within ``budget``
    judged steps and the new ones do not: class -> (parent's delay, new delay or ``None``).

    A class the parent could not raise it on either is not counted: the re-fit loses nothing."""
    horizon = 4 * budget
    out = {}
    for cls in sorted(set(parent) & set(new)):
        before = detection_delay(parent[cls], shift, horizon)
        if before is None or before > budget:
            continue
        after = detection_delay(new[cls], shift, horizon)
        if after is None or after > budget:
            out[cls] = (before, after)
    return out
