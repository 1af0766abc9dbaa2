"""The governor's reading of the gate state file: GO only when fresh, GO and for this platform.

The last test reads the file a real daemon wrote (calibrated, gate evaluated)."""

from __future__ import annotations

import dataclasses
import json
import os

import pytest

from shadowd.daemon.gatekeeper import published_model, write_state_file
from shadowd.govern.handoff import StateReader

KEY = "gpu=H100-SXM/model=llama-3.1-8b/tp=1"
COEF = {
    "breakpoint_tokens": 256,
    "segments": [
        {"beta_ms": 4.0, "prefill": {"p": 0.001}, "decode": {"c": 4e-5}},
        {"beta_ms": 1.0, "prefill": {"p": 0.02}, "decode": {"c": 4e-5}},
    ],
}


class Clock:
    def __init__(self, t: float = 1000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def _decision(verdict="GO", valid_until=2000.0, key=KEY, model_until=5000.0):
    model = published_model("abc123", key, COEF, "equal", model_until - 100.0, 100.0)
    return {"verdict": verdict, "valid_until": valid_until, "evaluated_at": 900.0, "model": model}


def _reader(path, clock, key=KEY):
    return StateReader(str(path), key, interval_s=1.0, clock=clock)


@pytest.mark.parametrize(
    ("decision", "reason"),
    [
        (_decision(), "go"),
        (_decision(verdict="NO_GO"), "not_go:NO_GO"),
        (_decision(verdict="INCONCLUSIVE"), "not_go:INCONCLUSIVE"),
        (_decision(valid_until=999.0), "stale"),
        (_decision(model_until=999.0), "stale"),
        (_decision(key="gpu=A100-SXM/model=llama-3.1-8b/tp=1"), "wrong_platform"),
        ({**_decision(), "model": None}, "no_model"),
        ({**_decision(), "valid_until": "soon"}, "stale"),
    ],
)
def test_verdict_of_a_state_file(tmp_path, decision, reason):
    path = tmp_path / "gate.json"
    write_state_file(path, decision)
    v = _reader(path, Clock()).poll()
    assert v.reason == reason
    assert v.go == (reason == "go")


def test_missing_unreadable_and_unconfigured(tmp_path):
    path = tmp_path / "gate.json"
    assert _reader(path, Clock()).poll().reason == "missing"
    path.write_text('{"verdict": "GO", "valid_un')  # torn: never happens with rename, still handled
    assert _reader(path, Clock()).poll().reason == "unreadable"
    path.write_bytes(b"\xff\xfe" * 10)
    assert _reader(path, Clock()).poll().reason == "unreadable"
    write_state_file(path, _decision())
    assert _reader(path, Clock(), key=None).poll().reason == "no_platform_key"


def test_polls_at_most_once_per_interval_and_expires_between_polls(tmp_path):
    path = tmp_path / "gate.json"
    clock = Clock()
    write_state_file(path, _decision(valid_until=1001.5))
    r = _reader(path, clock)
    assert r.poll().go and r.reads == 1
    os.unlink(path)
    clock.t += 0.5
    assert r.poll().go  # not re-stat'ed within the interval
    clock.t += 0.6
    assert r.poll().reason == "missing"  # re-stat'ed
    write_state_file(path, _decision(valid_until=1002.5))
    clock.t += 1.0  # 1002.1
    assert r.poll().go
    clock.t += 0.5  # past valid_until, before the next stat: stale at once
    assert r.poll().reason == "stale"
    reads = r.reads
    clock.t += 2.0
    r.poll()
    assert r.reads == reads  # unchanged file: stat only, no re-read


def test_an_unchanged_file_keeps_its_judgment_until_its_valid_until(tmp_path):
    """The governor compares verdicts by identity on every step: while the file is unchanged the
    reader returns the same object (no coefficients rebuilt each second); past ``valid_until`` the
    same file is judged again, GO or not."""
    path = tmp_path / "gate.json"
    clock = Clock()
    write_state_file(path, _decision(valid_until=1003.0))
    r = _reader(path, clock)
    first = r.poll()
    clock.t += 1.5
    assert r.poll() is first and first.go
    write_state_file(path, _decision(verdict="NO_GO", valid_until=1005.0))
    clock.t += 1.0  # 1002.5: re-stat'ed, changed
    no_go = r.poll()
    assert no_go is not first and no_go.reason == "not_go:NO_GO"
    clock.t += 1.0
    assert r.poll() is no_go
    clock.t += 2.0  # 1005.5: the same NO_GO file, now past its valid_until
    assert r.poll().reason == "stale" and r.reads == 2


def test_coefficients_kept_for_the_attributed_counter_when_not_go(tmp_path):
    path = tmp_path / "gate.json"
    write_state_file(path, _decision(verdict="NO_GO"))
    r = _reader(path, Clock())
    assert not r.poll().go and r.pricer is not None
    write_state_file(path, _decision(key="other"))
    r2 = _reader(path, Clock())
    r2.poll()
    assert r2.pricer is None  # another platform's coefficients are never used


def test_reads_the_file_a_real_daemon_writes(ipc_endpoint, db_path, tmp_path):
    from shadowd.attribution.synthetic_steps import synthetic_batch
    from shadowd.daemon.calibrator import calibrate, platform_key_string
    from shadowd.daemon.config import Config, Platform
    from tests.helpers import make_daemon

    platform = Platform(
        gpu="H100-SXM",
        model="llama-3.1-8b",
        dtype="bf16",
        tp=1,
        vllm="0.33.0",
        attention_backend="FLASH_ATTN",
    )
    cal = calibrate(synthetic_batch(steps=1500, seed=21, max_seqs=32), platform.as_key())
    state = tmp_path / "gate.json"
    daemon = make_daemon(
        ipc_endpoint,
        db_path,
        state_file=str(state),
        calibration=dataclasses.replace(Config.default().calibration, platform=platform),
    )
    daemon.start(http=False, jobs=False)
    try:
        daemon.evaluate_gate()
        key = platform_key_string(platform.as_key())
        r = StateReader(str(state), key)
        assert r.poll().reason == "no_model"  # uncalibrated daemon
        daemon.install_calibration(cal)
        decision = daemon.evaluate_gate()
        assert decision["verdict"] != "GO"  # no traffic attributed yet: fails closed
        doc = json.loads(state.read_text())
        assert doc["model"]["version"] == cal.model.version and doc["model"]["platform_key"] == key
        r = StateReader(str(state), key)
        assert r.poll().reason == f"not_go:{decision['verdict']}"
        assert r.pricer is not None and r.pricer.beta[0] == cal.model.llmvisor.coef[0, 0]
        assert StateReader(str(state), key + "/pp=2").poll().reason == "wrong_platform"
    finally:
        daemon.stop()
