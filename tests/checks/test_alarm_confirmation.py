"""Design r8: a residual detection is an alarm only if the shift it saw lasts.

A lasting slowdown is confirmed and raised ``confirm_steps`` judged steps after its detection,
with where it was detected and the shift that lasted; a short healthy excursion of the same
size is detected, then dismissed and counted; one shift gives one alarm; ``confirm_steps = 0``
is the design before r8, step for step.
"""

from __future__ import annotations

import numpy as np
import pytest

from checks.alarm_confirmation import AlarmConfirmation
from checks.drift_calibration import DriftCalibration
from checks.residual_drift import DriftMonitor

STD = 0.03


def _cal(confirm_steps: int) -> DriftCalibration:
    # Page-Hinkley's delta at allowance / std, as calibration sets it (checks.threshold_search).
    return DriftCalibration(
        step_class="decode",
        mean=0.0,
        std=STD,
        ph_threshold=25.0,
        adwin_delta=0.0,
        ph_delta=0.02 / STD,
        allowance=0.02,
        detrend_steps=100,
        confirm_steps=confirm_steps,
        detector_names=("page_hinkley",),
    )


def _run(cal: DriftCalibration, r: np.ndarray) -> tuple[DriftMonitor, list]:
    mon = DriftMonitor({"decode": cal})
    n = len(r)
    return mon, mon.update_many(np.arange(n), ["decode"] * n, r, np.arange(n) * 0.02)


def _noise(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(0.0, STD, n)


def test_a_lasting_slowdown_is_confirmed_after_the_confirmation_window():
    r = _noise(5000)
    r[3000:] = 1.08 * (1 + r[3000:]) - 1  # every step 8 % slower from step 3000 on
    mon, events = _run(_cal(200), r)
    assert events, "an 8 % slowdown must be raised"
    first = events[0]
    detected = first.details["detected_step_seq"]
    assert 3000 <= detected < 3100  # the detector sees it within tens of steps
    assert first.step_seq == detected + 200  # and the alarm comes 200 judged steps later
    assert first.details["lasting_shift"] == pytest.approx(0.08, abs=0.02)
    assert first.details["confirm_steps"] == 200
    assert mon.state()["classes"]["decode"]["confirmation"]["dismissed"] == 0


def test_a_short_excursion_is_detected_then_dismissed():
    r = _noise(5000, seed=1)
    r[3000:3030] += 0.12  # 30 steps at +12 %, then back: a burst, not a fault
    _, raw = _run(_cal(0), r)
    assert [e.step_seq for e in raw if 3000 <= e.step_seq < 3100], "the detector does fire on it"
    mon, events = _run(_cal(200), r)
    assert not [e for e in events if e.step_seq >= 3000]
    assert mon.state()["classes"]["decode"]["confirmation"]["dismissed"] >= 1


def test_without_confirmation_events_are_the_detections_as_before():
    r = _noise(6000, seed=2)
    r[3000:] += 0.06
    mon, events = _run(_cal(0), r)
    assert events and all(e.step_seq == e.details["detected_step_seq"] for e in events)
    # The detector's own count is every detection; the events are exactly those.
    assert len(events) == mon.counts()["decode"]["page_hinkley"]


def test_one_shift_one_alarm():
    c = AlarmConfirmation(steps=100, allowance_z=0.5, lag=10)
    for _ in range(20):
        c.observe(0.0, 0.0)
    assert c.open("page_hinkley", "up", {}) is None
    assert c.open("page_hinkley", "up", {}) is None  # a second detection of the same shift
    assert c.open("page_hinkley", "down", {}) is None  # the other direction is another alarm
    done = [p for _ in range(100) for p in c.observe(1.0, 0.0)]
    assert [(p.direction, p.confirmed) for p in done] == [("up", True), ("down", False)]
    assert c.state() == {
        "pending": 0,
        "confirmed": 1,
        "dismissed": 1,
        "dismissed_raw": 0,
        "dismissed_strata": 0,
        "unsupported": 0,
        "judged_coarse": 0,
        "judged_octave": 0,
        "absorbed": 1,
        "unsupported_beyond": 0,
    }


def test_the_reference_is_the_baseline_before_the_shift_pulled_it():
    """A detection late in a shift still measures the whole shift: its reference is the
    baseline ``lag`` steps back, not the one the shift has already moved."""
    c = AlarmConfirmation(steps=10, allowance_z=1.5, lag=50)
    for b in [0.0] * 50 + list(np.linspace(0.0, 1.0, 40)):  # the baseline creeping after the shift
        c.observe(2.0, b)
    c.open("page_hinkley", "up", {})
    (p,) = [p for _ in range(10) for p in c.observe(2.0, 1.0)]
    assert p.confirmed and p.shift_z == pytest.approx(2.0)


def test_confirm_steps_round_trips_and_old_calibrations_confirm_at_once():
    cal = _cal(200)
    assert DriftCalibration.from_dict(cal.to_dict()) == cal
    old = {k: v for k, v in cal.to_dict().items() if k != "confirm_steps"}
    assert DriftCalibration.from_dict(old).confirm_steps == 0  # stored before design r8


@pytest.mark.parametrize("kw", [{"steps": -1, "allowance_z": 1.0}, {"steps": 5, "allowance_z": float("nan")}])
def test_bad_settings_are_refused(kw):
    with pytest.raises(ValueError, match="confirmation needs"):
        AlarmConfirmation(**kw)
