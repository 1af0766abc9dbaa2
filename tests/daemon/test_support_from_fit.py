"""Design r48 (withdrawn): the drift detectors' support is the range of the steps the model was
fitted on.

A calibration window is split: the model is fitted on its first part and the detectors are
calibrated on the rest.  Under load that grows through the window, the held-out part reaches
batches the fit never saw, where the model extrapolates.  Design r45 took the support (where a
lasting residual shift is drift, not the model's error) over the whole window, so those batches
counted as calibrated: held-out 52's H52-swing paged on a healthy engine whose mixed steps
carried more decodes than any fitted step.  r48 was withdrawn on its development evidence: the
default demo's 8 % slowdown came after the engine had filled beyond the fit part's batches and
raised no drift event (``DESIGN`` in benchmarks/gate_designs.py); the switch stays, off.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from shadowd.attribution.synthetic_steps import synthetic_batch
from shadowd.daemon.calibrator import CalibrationSettings, calibrate
from shadowd.steps.batch import StepBatch

KEY = {"gpu": "H100-SXM", "model": "llama-3.1-8b"}
# A false-alarm target a 3,000-step synthetic window can be calibrated to (the daemon's is 1e-5).
SETTINGS = CalibrationSettings(
    min_class_steps=150,
    drift_sim_steps=20_000,
    adwin_sim_steps=20_000,
    target_false_alarm_rate=1e-3,
    support_from_fit=True,
    validated_support=False,
)


def _growing_window() -> StepBatch:
    """One engine's steps reordered: the smaller batches first, where the model is fitted, the
    larger in the held-out tail (as under load that grows through the window)."""
    batch = synthetic_batch(steps=3000, seed=11, max_seqs=64)
    sizes = batch.composition()["batch_size"]
    small = sizes <= np.quantile(sizes, 1.0 - SETTINGS.holdout_fraction)
    return StepBatch.concat([batch.select_steps(small), batch.select_steps(~small)])


def _support_top(settings: CalibrationSettings) -> float:
    cal = calibrate(_growing_window(), KEY, settings)
    return cal.drift["mixed"].support["batch_size"][1]


def _fitted_top() -> float:
    """The largest batch of the steps the model is fitted on."""
    window = _growing_window()
    fit_steps = round(window.num_steps * (1.0 - SETTINGS.holdout_fraction))
    return float(window.composition()["batch_size"][:fit_steps].max())


def test_the_support_ends_where_the_fitted_steps_end():
    top = _fitted_top()
    assert _support_top(SETTINGS) <= top
    assert _support_top(dataclasses.replace(SETTINGS, support_from_fit=False)) > 3 * top  # r45


def test_steps_beyond_the_fitted_range_are_beyond_support():
    cal = calibrate(_growing_window(), KEY, SETTINGS).drift["mixed"]
    sizes = np.array([5.0, 3 * _fitted_top()])
    beyond = cal.beyond_support({"batch_size": sizes, "new_tokens": np.array([512.0, 512.0])})
    assert beyond.tolist() == [False, True]


def test_the_daemon_keeps_r45s_window_range_by_default():
    assert not CalibrationSettings().support_from_fit
