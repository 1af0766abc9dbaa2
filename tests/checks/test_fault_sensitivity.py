"""Design r15's measure: how soon a class's calibrated detectors raise a lasting slowdown.

A re-fit whose detectors cannot raise the smallest slowdown the gate must catch, where the
model in force's can, is refused (``shadowd.daemon.refit.newly_dulled``; daemon-level test in
``tests/daemon/test_refit.py``).
"""

from __future__ import annotations

import dataclasses

import pytest

from checks import FAULT_BUDGET_STEPS, FAULT_SHIFT, DriftCalibration, detection_delay, dulled

KEEN = DriftCalibration(
    "decode",
    mean=-0.002,
    std=0.017,
    ph_threshold=8.0,
    adwin_delta=0.0,
    ph_delta=1.2,
    detrend_steps=100,
    detector_names=("page_hinkley",),
)


def test_a_higher_threshold_never_raises_a_slowdown_sooner():
    delays = [
        detection_delay(dataclasses.replace(KEEN, ph_threshold=t), FAULT_SHIFT, 2000)
        for t in (4, 8, 16, 32, 64)
    ]
    seen = [d for d in delays if d is not None]
    assert seen == sorted(seen) and delays[0] is not None and delays[-1] is None, delays


def test_a_larger_slowdown_is_raised_no_later():
    dull = dataclasses.replace(KEEN, ph_threshold=40.0)
    delays = [detection_delay(dull, s, 2000) for s in (0.05, 0.08, 0.15, 0.3)]
    seen = [d for d in delays if d is not None]
    assert seen == sorted(seen, reverse=True) and delays[-1] is not None, delays


def test_a_shift_inside_the_allowance_is_never_raised():
    """Page-Hinkley ignores moves smaller than its ``delta`` (the calibration's allowance)."""
    assert detection_delay(dataclasses.replace(KEEN, ph_delta=4.0), FAULT_SHIFT, 2000) is None


@pytest.mark.parametrize(
    "parent_threshold, new_threshold, lost",
    [
        (8.0, 8.0, False),  # as keen as before
        (8.0, 80.0, True),  # the re-fit would not raise it: dulled
        (80.0, 120.0, False),  # the model in force could not either: nothing lost
    ],
)
def test_dulled_counts_only_what_the_model_in_force_could_raise(parent_threshold, new_threshold, lost):
    parent = {"decode": dataclasses.replace(KEEN, ph_threshold=parent_threshold)}
    new = {"decode": dataclasses.replace(KEEN, ph_threshold=new_threshold)}
    out = dulled(parent, new)
    assert ("decode" in out) is lost, out
    if lost:
        before, after = out["decode"]
        assert before <= FAULT_BUDGET_STEPS and (after is None or after > FAULT_BUDGET_STEPS)
