"""A class is held by the calibration only if the window's fit part held enough of it (design r17).

Calibration fits on the window's earlier part and scores the later part; a class whose steps all
came late was never fitted on, however many the whole window held.  Before r17 the gate counted
the whole window and paged (NO_GO) on that class's error, and the re-fit guard judged it; now it
is "barely held": its accuracy misses are INCONCLUSIVE and the guard leaves it out.
"""

from __future__ import annotations

import json

import numpy as np

from shadowd.attribution.synthetic_steps import synthetic_batch
from shadowd.daemon.calibrator import CalibrationSettings, calibrate, calibration_from_body, model_body
from shadowd.steps.batch import KIND_NAMES, StepBatch

KEY = {"gpu": "H100-SXM", "model": "llama-3.1-8b"}
DECODE = KIND_NAMES.index("decode")


def test_a_class_only_in_the_held_out_part_is_barely_held():
    batch = synthetic_batch(steps=4000, seed=5, max_seqs=64)
    dec = batch.kind == DECODE
    n_dec = 400
    late = np.zeros(batch.num_steps, bool)
    late[np.flatnonzero(dec)[:n_dec]] = True
    early = np.zeros(batch.num_steps, bool)
    early[np.flatnonzero(~dec)[: 3 * n_dec]] = True
    window = StepBatch.concat([batch.select_steps(early), batch.select_steps(late)])
    settings = CalibrationSettings(min_class_steps=150, drift_sim_steps=20_000, adwin_sim_steps=20_000)
    cal = calibrate(window, KEY, settings)
    assert cal.class_steps["decode"] == n_dec >= settings.min_class_steps  # the whole window holds plenty
    assert cal.fit_class_steps["decode"] < settings.min_class_steps  # the fit part almost none
    held = cal.barely_held(settings.min_class_steps)
    assert set(held) >= {"decode"} and "fit part" in held["decode"] and "mixed" not in held
    # What is stored is what is read back; a body stored before r17 falls back to the window.
    again = calibration_from_body(model_body(cal))
    assert again.barely_held(settings.min_class_steps) == held
    body = json.loads(model_body(cal))
    del body["calibration"]["fit_class_steps"]
    old = calibration_from_body(json.dumps(body))
    assert "decode" not in old.barely_held(settings.min_class_steps)
