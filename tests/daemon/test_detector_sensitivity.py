"""The gate does not vouch for drift where its detectors would miss the smallest fault (design r19).

A calibration window whose residual wanders gives its Page-Hinkley detectors very high
thresholds (the false-alarm target holds them to the window's own dynamics); on held-out 17's
F17-step5 such detectors never raised a 5 % slowdown and the gate ended GO.  Now a class whose
detectors would not raise it within the budget (``checks.fault_sensitivity``) holds the drift
check at INCONCLUSIVE, asks for a re-fit, and a re-fit that would be as dull is refused.  Real
daemon, real DuckDB, frames over the tap socket.
"""

from __future__ import annotations

import dataclasses

import checks
from shadowd.attribution.synthetic_steps import synthetic_batch
from shadowd.daemon.calibrator import Calibration, calibrate
from shadowd.daemon.refit import still_dull, triggers
from shadowd.daemon.service import Daemon
from tests.daemon.test_refit import PLATFORM
from tests.helpers import Pusher, daemon_config, frames_from_batch


def _calibrations() -> tuple[Calibration, Calibration]:
    keen = calibrate(synthetic_batch(steps=3000, seed=21, max_seqs=32), PLATFORM.as_key())
    drift = {c: dataclasses.replace(d, ph_threshold=d.ph_threshold * 50) for c, d in keen.drift.items()}
    return keen, dataclasses.replace(keen, drift=drift)


def test_detectors_that_would_miss_a_five_percent_slowdown_are_named():
    keen, dull = _calibrations()
    assert keen.dull() == {} and set(dull.dull()) == set(keen.drift)
    why = dull.dull()["decode"]
    assert "5% slowdown" in why and "budget 300" in why
    (reason,) = triggers({"drift_dull": dull.dull()}, checks.GatePolicy())
    assert reason.startswith("drift detectors too dull on decode")
    assert "too dull as well" in still_dull((reason,), dull)
    assert still_dull((reason,), keen) == ""  # a keen re-fit is what the trigger asked for
    assert still_dull(("12% of steps beyond the calibrated envelope", reason), dull) == ""


def test_the_daemon_holds_drift_inconclusive_on_dull_detectors(ipc_endpoint, db_path):
    keen, dull = _calibrations()
    config = daemon_config(ipc_endpoint, db_path)
    daemon = Daemon(config, run_job=lambda fn: fn())
    daemon.start(http=False, jobs=False)
    try:
        daemon.install_calibration(dull)
        push = Pusher(ipc_endpoint)
        for frame in frames_from_batch(synthetic_batch(steps=1500, seed=22, max_seqs=32)):
            push.send(frame)
        assert push.close_when(lambda: daemon.pipeline.steps_observed == 1500, timeout=60)
        daemon.writer.flush()
        decision = daemon.evaluate_gate()
        (drift,) = [c for c in decision["checks"] if c["name"] == "drift"]
        assert drift["status"] == "inconclusive" and "would not raise" in drift["reason"], drift
        assert decision["verdict"] != "GO"
        assert set(decision["evidence"]["drift_dull"]) <= set(dull.drift)
        daemon.install_calibration(keen)  # the same traffic under keen detectors: no such reason
        (drift,) = [c for c in daemon.evaluate_gate()["checks"] if c["name"] == "drift"]
        assert "would not raise" not in drift["reason"]
    finally:
        daemon.stop()
