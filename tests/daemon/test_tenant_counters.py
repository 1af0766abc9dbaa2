"""``/v1/tenant-counters``: the per-tenant service counters a gateway's fairness policy can read
instead of token estimates, from a running daemon (a versioned JSON contract)."""

from __future__ import annotations

import dataclasses
import json
import urllib.request

from shadowd.attribution.synthetic_steps import synthetic_batch
from shadowd.daemon.calibrator import calibrate
from shadowd.daemon.config import Config, Platform
from shadowd.daemon.routes import TENANT_COUNTERS_SCHEMA
from tests.helpers import Pusher, make_daemon, make_frame

PLATFORM = Platform(
    gpu="H100-SXM", model="llama-3.1-8b", dtype="bf16", tp=1, vllm="0.33.0", attention_backend="FLASH_ATTN"
)


def _counters(url: str) -> dict:
    with urllib.request.urlopen(url + "/v1/tenant-counters", timeout=10) as r:
        assert r.status == 200 and r.headers["Content-Type"] == "application/json"
        return json.loads(r.read())


def test_counters_grow_per_tenant_and_name_the_unit_in_force(ipc_endpoint, db_path):
    cal = calibrate(synthetic_batch(steps=1500, seed=21, max_seqs=32), PLATFORM.as_key())
    daemon = make_daemon(
        ipc_endpoint,
        db_path,
        calibration=dataclasses.replace(Config.default().calibration, platform=PLATFORM),
    )
    daemon.start(jobs=False)
    try:
        daemon.install_calibration(cal)
        before = _counters(daemon.http.url)
        assert before["schema"] == TENANT_COUNTERS_SCHEMA and before["tenants"] == []
        push = Pusher(ipc_endpoint)
        for i in range(1, 201):
            push.send(make_frame(i, n=8))
        assert push.close_when(lambda: daemon.pipeline.steps_observed == 200)
        daemon.evaluate_gate()
        body = _counters(daemon.http.url)
        tenants = {t["tenant"]: t for t in body["tenants"]}
        assert tenants and all(t["attributed_gpu_ms"] > 0 and t["vtc_tokens"] > 0 for t in tenants.values())
        assert body["verdict"] == daemon.gatekeeper.last["verdict"] != "GO"
        assert body["active_unit"] == "vtc_tokens"  # not GO: the token counter governs
        assert body["model_version"] in (None, cal.model.version)
    finally:
        daemon.stop()
