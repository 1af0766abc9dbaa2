"""The gate counts the tenants a model was scored on out of sample, calibration included (r23).

Real daemon, real DuckDB, frames over the tap socket. A model is calibrated on three tenants;
afterwards only one of them sends traffic (a bursty trace gone quiet).  Its calibration scored
all three on the window's held-out part, so ``evidence.tenants`` passes; a calibration that
scored only one (the same model with its held-out tenants cleared) leaves it INCONCLUSIVE, as
every design before r23 did for the first case too.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from shadowd.attribution.synthetic_steps import synthetic_batch
from shadowd.daemon.calibrator import CalibrationSettings, calibrate, calibration_from_body, model_body
from shadowd.daemon.config import Config, Platform
from shadowd.daemon.service import Daemon
from tests.helpers import Pusher, daemon_config, frames_from_batch

PLATFORM = Platform(
    gpu="H100-SXM", model="llama-3.1-8b", dtype="bf16", tp=1, vllm="0.33.0", attention_backend="FLASH_ATTN"
)


@pytest.fixture(scope="module")
def calibration():
    return calibrate(
        synthetic_batch(steps=3000, seed=21, max_seqs=32), PLATFORM.as_key(), CalibrationSettings()
    )


def test_calibration_records_the_tenants_of_its_held_out_part(calibration):
    assert calibration.scored_tenants == ("chat", "code", "longdoc")
    assert calibration_from_body(model_body(calibration)).scored_tenants == calibration.scored_tenants
    body = json.loads(model_body(calibration))
    del body["calibration"]["scored_tenants"]  # a body stored before r23: no calibration tenants
    assert calibration_from_body(json.dumps(body)).scored_tenants == ()


@pytest.mark.parametrize(("scored", "want"), [(None, "pass"), ((), "inconclusive")])
def test_one_tenant_after_calibration_is_judged_with_the_tenants_calibration_scored(
    ipc_endpoint, db_path, calibration, scored, want
):
    cal = calibration if scored is None else dataclasses.replace(calibration, scored_tenants=scored)
    config = daemon_config(
        ipc_endpoint,
        db_path,
        calibration=dataclasses.replace(Config.default().calibration, platform=PLATFORM, refit=False),
    )
    daemon = Daemon(config, run_job=lambda fn: fn())
    daemon.start(http=False, jobs=False)
    try:
        daemon.install_calibration(cal)
        traffic = synthetic_batch(steps=600, seed=22, max_seqs=32)
        traffic.tenant = np.full(len(traffic.tenant), "chat", dtype=object)  # the others went quiet
        push = Pusher(ipc_endpoint)
        for frame in frames_from_batch(traffic):
            push.send(frame)
        assert push.close_when(lambda: daemon.pipeline.steps_observed == traffic.num_steps, timeout=60)
        daemon.writer.flush()
        decision = daemon.evaluate_gate()
        check = next(c for c in decision["checks"] if c["name"] == "evidence.tenants")
        assert check["status"] == want, check
        assert decision["evidence"]["tenants_seen"] == (3 if scored is None else 1)
    finally:
        daemon.stop()
