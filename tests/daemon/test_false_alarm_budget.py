"""The drift check's false-alarm target is per judged step of a class, for all its detectors.

Each step is one class's, so a class whose detectors share its target evenly keeps the whole
check at or below the target per judged step (design r6). Page-Hinkley alone takes all of it
(the default); with ADWIN added each gets half, and the calibration says so per detector.
"""

from __future__ import annotations

import dataclasses

import pytest

from shadowd.attribution.synthetic_steps import synthetic_batch
from shadowd.daemon.calibrator import CalibrationSettings, calibrate

KEY = {"gpu": "H100-SXM", "model": "llama-3.1-8b", "dtype": "bf16", "tp": 1}


@pytest.fixture(scope="module")
def window():
    return synthetic_batch(steps=3000, seed=21, max_seqs=32)


def test_page_hinkley_alone_takes_the_whole_target(window):
    cal = calibrate(window, KEY, CalibrationSettings(drift_sim_steps=400_000))
    assert cal.drift, cal.unwatched
    for dc in cal.drift.values():
        assert dc.detector_names == ("page_hinkley",) and dc.target_rate == pytest.approx(1e-5)
        assert dc.adwin_delta == 0.0  # a detector not asked for never fires
        assert dc.estimates["page_hinkley"]["rate_upper95"] <= 1e-5


def test_two_detectors_share_the_target(window):
    settings = dataclasses.replace(
        CalibrationSettings(),
        detectors=("page_hinkley", "adwin"),
        drift_sim_steps=800_000,
        adwin_sim_steps=800_000,
    )
    cal = calibrate(window, KEY, settings)
    assert cal.drift, cal.unwatched
    for dc in cal.drift.values():
        assert dc.target_rate == pytest.approx(5e-6)
        assert set(dc.estimates) == set(dc.detector_names)
        assert all(e["rate_upper95"] <= 5e-6 for e in dc.estimates.values())
