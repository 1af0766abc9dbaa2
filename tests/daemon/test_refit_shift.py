"""The re-fit guard's residual check reads the residual as the detectors do (design r47).

Check 4 of ``checks.refit_guard`` asks whether the model's error moved on steps inside the
compositions calibration saw: a slower engine moves it everywhere, a new regime only where the
model extrapolates.  The calibration measures each class's residual mean and allowance less the
residual's composition bias (design r24) and CUDA graph offsets (r44).  Before r47 the check
compared the residual as measured against them, so a healthy window whose steps sat at larger
batches inside the domain than the calibration's read as drift (held-out 50's H50-ramp-30k, its
three re-fits refused; ``DESIGN`` in benchmarks/gate_designs.py).
"""

from __future__ import annotations

import dataclasses

import numpy as np

import checks
from shadowd.attribution.synthetic_steps import synthetic_batch
from shadowd.daemon.calibrator import CalibrationSettings, calibrate
from shadowd.daemon.refit import residual_shifts
from shadowd.steps.batch import KIND_NAMES

KEY = {"gpu": "H100-SXM", "model": "llama-3.1-8b"}
DECODE = KIND_NAMES.index("decode")
SLOPE = -0.03  # the model's error per e-fold of batch size, as a calibration would measure it


def _setup(slower: float = 0.0):
    """A calibrated model, its decode steps' latency made to carry a composition bias of
    ``SLOPE`` (and ``slower``, a uniform slowdown), and the decode steps at the top of the domain."""
    batch = synthetic_batch(steps=3000, seed=11, max_seqs=64)
    settings = CalibrationSettings(min_class_steps=150, drift_sim_steps=20_000, adwin_sim_steps=20_000)
    cal = calibrate(batch, KEY, settings)
    sizes = batch.composition()["batch_size"]
    dec = batch.kind == DECODE
    centre = float(np.mean(np.log1p(sizes[dec])))
    predicted = cal.model.attribute(batch).predicted_ms
    bias = SLOPE * (np.log1p(sizes) - centre)
    latency = np.where(dec, predicted * (1 + bias) * (1 + slower), batch.latency_ms)
    window = dataclasses.replace(batch, latency_ms=latency)
    domain = checks.feature_domain({k: v[dec] for k, v in batch.composition().items()})
    dc = checks.DriftCalibration(
        step_class="decode",
        mean=0.0,
        std=0.03,
        ph_threshold=25.0,
        adwin_delta=0.002,
        domain=domain,
        allowance=0.02,
        bias={"batch_size": (SLOPE, centre)},
    )
    cal = dataclasses.replace(cal, drift={"decode": dc})
    top = ~dec | (sizes >= np.quantile(sizes[dec], 0.75))  # decode steps at the larger batches
    return window.select_steps(top), cal, settings


def test_a_window_elsewhere_in_the_domain_is_not_read_as_drift():
    window, cal, settings = _setup()
    raw = residual_shifts(window, cal, settings.min_shift, unbiased=False)["decode"]
    r47 = residual_shifts(window, cal, settings.min_shift)["decode"]
    assert raw.steps == r47.steps >= 100
    assert raw.shift > raw.allowance  # as measured, the composition bias reads as a shift
    assert r47.shift < 0.005  # less it, the healthy engine's residual sits where it was


def test_a_slower_engine_still_moves_the_residual_inside_the_domain():
    window, cal, settings = _setup(slower=0.05)
    r47 = residual_shifts(window, cal, settings.min_shift)["decode"]
    assert r47.shift > 0.04 > r47.allowance
    ev = checks.RefitEvidence(
        reasons=("beyond the envelope",),
        accuracy={"decode": checks.ClassError(r47.steps, 0.05, 0.08)},
        shifts={"decode": r47},
    )
    ok, why = checks.refit_decision(ev, checks.GatePolicy(), min_steps=100)
    assert not ok and "drift, not a new regime" in why


def test_the_daemon_reads_it_so_by_default():
    assert CalibrationSettings().unbiased_refit_shift


def test_the_bias_is_taken_out_only_where_the_window_held_steps():
    """In the domain's margin, beyond the batch sizes the window held, the fitted bias would be
    extrapolated: those steps are not judged (H40-saturated: there it read a healthy window as
    drift)."""
    window, cal, settings = _setup()
    sizes = window.composition()["batch_size"]
    dec = window.kind == DECODE
    held = (float(np.min(sizes[dec])), float(np.quantile(sizes[dec], 0.9)))
    cal = dataclasses.replace(
        cal, drift={"decode": dataclasses.replace(cal.drift["decode"], support={"batch_size": held})}
    )
    judged = residual_shifts(window, cal, settings.min_shift)["decode"].steps
    as_before = residual_shifts(window, cal, settings.min_shift, unbiased=False)["decode"].steps
    assert judged == int((dec & (sizes <= held[1])).sum()) < as_before
