"""Design r49 in the calibrator: the drift detectors' support is the window's range where the
held-out part validated the model beyond the fitted steps, and the fitted steps' range where it
did not.

Under load that grows through a calibration window, its held-out part reaches batches the fit
never saw.  r45 counted them as calibrated (held-out 52's H52-swing then paged on a healthy
engine the model under-predicted there); r48 never did (the default demo's slowdown, at batches
only the held-out part had reached, went unseen).  ``DESIGN`` in benchmarks/gate_designs.py.
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
    min_class_steps=150, drift_sim_steps=20_000, adwin_sim_steps=20_000, target_false_alarm_rate=1e-3
)
FIT_STEPS = round(3000 * (1.0 - SETTINGS.holdout_fraction))


def _growing_window(slow_beyond: float = 0.0) -> StepBatch:
    """One engine's steps reordered, the smaller batches first (where the model is fitted) and the
    larger in the held-out tail; ``slow_beyond``: those larger batches' latency made that much
    longer, as where the model under-predicts batches it never saw."""
    batch = synthetic_batch(steps=3000, seed=11, max_seqs=64)
    sizes = batch.composition()["batch_size"]
    small = sizes <= np.quantile(sizes, 1.0 - SETTINGS.holdout_fraction)
    large = batch.select_steps(~small)
    large = dataclasses.replace(large, latency_ms=large.latency_ms * (1.0 + slow_beyond))
    return StepBatch.concat([batch.select_steps(small), large])


def _tops(window: StepBatch) -> tuple[float, float]:
    """(the largest fitted batch, the mixed class's support's top)."""
    fitted = float(window.composition()["batch_size"][:FIT_STEPS].max())
    return fitted, calibrate(window, KEY, SETTINGS).drift["mixed"].support["batch_size"][1]


def test_a_model_the_held_out_part_validated_keeps_the_window_range():
    fitted, top = _tops(_growing_window())
    assert top > 3 * fitted


def test_a_model_the_held_out_part_found_wrong_beyond_the_fit_keeps_the_fitted_range():
    fitted, top = _tops(_growing_window(slow_beyond=0.10))
    assert top <= fitted


def test_the_daemon_runs_r49_by_default():
    assert CalibrationSettings().validated_support
