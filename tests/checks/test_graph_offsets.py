"""Design r44: the drift detectors watch the residual less the offset of the CUDA graph each step
ran at, as well as less r24's smooth composition bias.

vLLM pads a decode batch to the graph it replays, so the engine's cost is a step function of the
batch and the smooth model's error jumps at graph edges.  A mix that moves across those edges
makes the residual persistent, and detectors calibrated on it get thresholds too high to raise a
5 % slowdown in time (design r19's check).  Taking each graph's offset out leaves a whole-step
slowdown whole and the calibrated detectors keen.
"""

from __future__ import annotations

import numpy as np
import pytest

import checks
from checks.residual_bias import GRAPH_MIN_STEPS, fit_graph_offsets, remove_graph_offsets
from tests.helpers import calibrate_synthetic

# The model's error per graph: sizes 9-16 run at the graph of 16, 17-24 at 24, 25-32 at 32, 33-40
# at 40; up and down, so no smooth function of the batch follows it.
SAWTOOTH = {(9, 16): -0.02, (17, 24): 0.015, (25, 32): -0.01, (33, 40): 0.012}
JITTER = 0.01


def _mix_moving_across_graphs(n: int, seed: int, block: int = 150) -> tuple[np.ndarray, np.ndarray]:
    """Batch sizes that stay in one graph for ``block`` steps, then move to another at random,
    and a residual that is the graph's error plus independent jitter."""
    rng = np.random.default_rng(seed)
    ranges = list(SAWTOOTH)
    size = np.empty(n)
    resid = rng.normal(0.0, JITTER, n)
    for start in range(0, n, block):
        lo, hi = ranges[rng.integers(len(ranges))]
        size[start : start + block] = rng.integers(lo, hi + 1, min(block, n - start))
        resid[start : start + block] += SAWTOOTH[(lo, hi)]
    return size, resid


def test_each_graph_gets_its_shrunk_mean_and_a_thin_graph_none():
    size = np.array([3] * 60 + [12] * 90 + [20] * (GRAPH_MIN_STEPS - 1), dtype=float)
    resid = np.where(size == 3, -0.03, np.where(size == 12, 0.01, 0.05))
    offsets = fit_graph_offsets(resid, size)
    left = resid - resid.mean()
    graph3, graph16 = checks.graph_size(np.array([3, 12])).tolist()
    assert set(offsets) == {graph3, graph16}  # the graph of 24 was held 29 times: no offset
    assert offsets[graph3] == pytest.approx(left[0] * 60 / (60 + GRAPH_MIN_STEPS))
    assert offsets[graph16] == pytest.approx(left[60] * 90 / (90 + GRAPH_MIN_STEPS))
    out = remove_graph_offsets(resid, size, offsets)
    np.testing.assert_allclose(out[-3:], resid[-3:])  # no offset: as measured
    assert fit_graph_offsets(resid[:10], size[:10]) == {}  # too few steps for any


def test_offsets_take_the_sawtooth_out_and_leave_a_slowdown_whole():
    size, resid = _mix_moving_across_graphs(6000, 1)
    offsets = fit_graph_offsets(resid, size)
    assert len(offsets) == len(SAWTOOTH)
    base = remove_graph_offsets(resid, size, offsets)
    assert base.std() < 0.7 * resid.std()
    assert base.std() < 1.1 * JITTER
    slower = remove_graph_offsets(resid + 0.05, size, offsets)
    np.testing.assert_allclose(slower - base, 0.05)  # every step moves alike: seen whole


def _decode_calibration(resid: np.ndarray) -> checks.DriftCalibration:
    return checks.calibrate_class(
        resid,
        "decode",
        target_rate=1e-4,
        n_steps=100_000,
        detector_names=("page_hinkley",),
        allowance=0.02,
        detrend_steps=100,
    )


def test_without_the_offsets_the_calibrated_detectors_are_too_dull_with_them_keen():
    """The finding r44 was built on, in miniature: thresholds calibrated on the residual as the
    mix moved across graphs miss a 5 % slowdown; on the residual less the offsets they raise it
    within the budget (``checks.FAULT_BUDGET_STEPS``)."""
    size, resid = _mix_moving_across_graphs(6000, 2)
    dull = _decode_calibration(resid)
    keen = _decode_calibration(remove_graph_offsets(resid, size, fit_graph_offsets(resid, size)))
    assert keen.ph_threshold < dull.ph_threshold / 2
    horizon = 4 * checks.FAULT_BUDGET_STEPS
    before = checks.detection_delay(dull, checks.FAULT_SHIFT, horizon)
    assert before is None or before > checks.FAULT_BUDGET_STEPS
    after = checks.detection_delay(keen, checks.FAULT_SHIFT, horizon)
    assert after is not None and after <= checks.FAULT_BUDGET_STEPS


def test_the_offsets_travel_with_the_calibration_and_apply_where_the_batch_size_is_known():
    cal = checks.DriftCalibration(
        "decode", mean=0.0, std=0.02, ph_threshold=10.0, adwin_delta=0.0, graph_offsets={9: 0.015, 5: -0.02}
    )
    again = checks.DriftCalibration.from_dict(cal.to_dict())
    assert again.graph_offsets == {9: 0.015, 5: -0.02} and again == cal
    older = cal.to_dict()
    del older["graph_offsets"]  # stored before r44
    assert checks.DriftCalibration.from_dict(older).graph_offsets == {}
    resid = np.array([0.0, 0.0, 0.0])
    sizes = np.array([5.0, 12.0, 40.0])  # graphs 5 and 9 have offsets; the graph of 40 none
    np.testing.assert_allclose(cal.unbiased(resid, {"batch_size": sizes}), [0.02, -0.015, 0.0])
    np.testing.assert_allclose(cal.unbiased(resid, None), resid)
    assert cal.unbiased(resid, {"kv_tokens": sizes}).tolist() == [0.0, 0.0, 0.0]


def test_calibration_fits_offsets_per_watched_class_only_when_asked():
    from shadowd.daemon.calibrator import calibration_from_body, model_body

    cal = calibrate_synthetic()
    assert cal.drift and all(d.graph_offsets for d in cal.drift.values())
    again = calibration_from_body(model_body(cal))
    stored = {c: d.graph_offsets for c, d in again.drift.items()}
    assert stored == {c: d.graph_offsets for c, d in cal.drift.items()}
    plain = calibrate_synthetic(graph_offsets=False)
    assert plain.drift and not any(d.graph_offsets for d in plain.drift.values())
    assert all(d.bias for d in plain.drift.values())  # r24's smooth bias stays
    assert plain.model.version == cal.model.version
