"""The daemon does not judge drift on batch compositions calibration never saw, and says so.

A model is calibrated on small batches; traffic then runs at a batch size far beyond them. The
residual detectors skip those steps (counted), the classes become *blind*, and the gate's drift
check turns inconclusive naming them and the way out, instead of passing on silence.
"""

from __future__ import annotations

import dataclasses

from shadowd.attribution.synthetic_steps import synthetic_batch
from shadowd.daemon.calibrator import calibrate
from shadowd.daemon.config import Config, Platform
from tests.helpers import Pusher, frames_from_batch, make_daemon

PLATFORM = Platform(
    gpu="H100-SXM", model="llama-3.1-8b", dtype="bf16", tp=1, vllm="0.33.0", attention_backend="FLASH_ATTN"
)


def test_steps_outside_the_calibrated_domain_make_the_drift_check_inconclusive(ipc_endpoint, db_path):
    cal = calibrate(synthetic_batch(steps=3000, seed=21, max_seqs=32), PLATFORM.as_key())
    assert {"decode", "mixed"} <= set(cal.drift), cal.unwatched
    assert all(d.domain["batch_size"][1] < 100 for d in cal.drift.values())
    daemon = make_daemon(
        ipc_endpoint,
        db_path,
        calibration=dataclasses.replace(Config.default().calibration, platform=PLATFORM),
    )
    daemon.start(http=False, jobs=False)
    try:
        daemon.install_calibration(cal)
        push = Pusher(ipc_endpoint)
        for frame in frames_from_batch(synthetic_batch(steps=3000, seed=22, requests_per_step=200)):
            push.send(frame)
        assert push.close_when(lambda: daemon.pipeline.steps_observed == 3000, timeout=60)
        counts = daemon.drift.monitor.counts()
        assert counts["decode"]["out_of_domain"] > 1000 and counts["decode"]["steps"] == 0
        blind = daemon.drift.blind_classes()
        assert {"decode", "mixed"} <= set(blind) and "recalibrate" in blind["decode"]
        daemon.writer.flush()
        decision = daemon.evaluate_gate()
        check = next(c for c in decision["checks"] if c["name"] == "drift")
        assert check["status"] == "inconclusive", check
        assert "blind" in check["reason"] and "decode" in check["reason"]
        assert decision["verdict"] != "GO"
    finally:
        daemon.stop()
