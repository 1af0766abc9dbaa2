"""The daemon's drift watch on ingest batches: workload-envelope events at the right steps."""

from __future__ import annotations

import msgspec
import numpy as np

import checks
from shadowd.attribution.synthetic_steps import synthetic_batch
from shadowd.daemon.calibrator import calibrate
from shadowd.daemon.drift_watch import DriftWatch
from shadowd.steps.columns import frames_to_columns
from tests.helpers import frames_from_batch, page_hinkley_decode

KEY = {
    "gpu": "H100-SXM",
    "model": "llama-3.1-8b",
    "dtype": "bf16",
    "tp": 1,
    "vllm": "0.33.0",
    "attention_backend": "FLASH_ATTN",
}


def _observed(watch: DriftWatch, frames: list, version: str) -> None:
    for lo in range(0, len(frames), 150):  # batches, as the receiver hands them over
        cols = frames_to_columns(frames[lo : lo + 150])
        cols.steps["predicted_ms"] = cols.steps["latency_ms"]  # on-model: no residual drift
        cols.steps["model_version"] = np.full(cols.num_steps, version, dtype=object)
        watch.observe(cols)


def test_envelope_events_name_the_step_a_new_tenant_or_a_long_context_first_appears():
    cal = calibrate(synthetic_batch(steps=3000, seed=21, max_seqs=32), KEY)
    known = sorted(cal.envelope.tenants)
    events: list = []
    watch = DriftWatch(events.extend)
    watch.install(cal)
    frames = frames_from_batch(synthetic_batch(steps=400, seed=5, max_seqs=32), start_seq=1)
    long_ctx = cal.envelope.max_context * 2
    for i, f in enumerate(frames):
        tenants = list(f.tenants)
        if i >= 220 and len(tenants) > 1:
            tenants[-1] = "initech"  # a tenant calibration never saw, from step 221 on
        ctx = list(f.context_tokens)
        if i == 330:
            ctx[0] = long_ctx  # one request far beyond the longest context
        frames[i] = msgspec.structs.replace(f, tenants=tenants, context_tokens=ctx)
    first_initech = next(f.step_seq for f in frames if "initech" in f.tenants)
    _observed(watch, frames, cal.model.version)
    got = [(e.detector, e.step_seq) for e in events]
    assert ("envelope.new_tenant", first_initech) in got
    assert (
        got.count(("envelope.new_tenant", first_initech)) == 1
        and len([g for g in got if g[0] == "envelope.new_tenant"]) == 1
    )
    assert ("envelope.context", 331) in got
    summary = watch.state()["envelope"]
    assert summary["steps"] == 400 and summary["new_tenants"] == ["initech"]
    assert summary["max_seen"]["context"] >= long_ctx and known and "initech" not in known


def test_a_lasting_shift_in_unseen_compositions_leaves_the_class_blind_until_a_refit():
    """Design r31/r32: the watch's monitor sees single short-context requests, then a stretch of
    four long-context requests a step (never seen before) running 5 % slower than predicted.
    No drift event is raised (nothing pages); the class is blind with the way out in the reason
    (the gate's drift check is then INCONCLUSIVE and asks for a re-fit), and installing a
    calibration clears it.  The calibration installed is a real one, with strata."""
    cal = calibrate(synthetic_batch(steps=3000, seed=21, max_seqs=16), KEY)
    assert cal.drift["decode"].stratify and len(cal.holdout_keys["decode"])
    watch = DriftWatch(lambda ev: None)
    watch.install(cal)
    watch.monitor = checks.DriftMonitor(
        {
            "decode": page_hinkley_decode(
                0.01, detrend_steps=100, confirm_steps=200, allowance=0.02, stratify=True
            )
        }
    )
    rng = np.random.default_rng(3)
    n = 2000
    size = np.where(np.arange(n) < 1200, 1.0, 4.0)
    kv = np.where(np.arange(n) < 1200, 500.0, 60000.0)
    resid = np.where(np.arange(n) < 1200, 0.0, 0.05) + rng.normal(0, 0.005, n)
    events = watch.monitor.update_many(
        np.arange(n),
        np.full(n, "decode"),
        resid,
        np.arange(n, dtype=float),
        {"batch_size": size, "kv_tokens": kv},
    )
    assert events == []
    why = watch.blind_classes()
    assert "seen too rarely" in why.get("decode", ""), why
    watch.install(cal)
    assert "decode" not in watch.blind_classes()


def test_a_calibration_keys_its_held_out_steps_as_the_watch_keys_live_ones():
    """Design r37: a real calibration's strata are r34's CUDA graphs cut at quarter octaves; the
    held-out steps that prime the confirmation are keyed by the same scheme the monitor applies
    to live steps, or a stratum's memory before a detection would never match its window."""
    from shadowd.attribution.accuracy import split_window
    from shadowd.daemon.calibrator import CalibrationSettings
    from shadowd.steps.batch import KIND_NAMES

    batch = synthetic_batch(steps=3000, seed=21, max_seqs=32)
    cal = calibrate(batch, KEY)
    decode = cal.drift["decode"]
    assert decode.stratify and decode.graph_strata and decode.octave_strata and decode.coarse_strata
    _, hold = split_window(batch, 1.0 - CalibrationSettings().holdout_fraction)
    keys = np.array(checks.strata(hold.composition(), True, True))
    mine = hold.kind == KIND_NAMES.index("decode")
    held = cal.holdout_keys["decode"]
    assert len(held) and set(held.tolist()) <= set(keys[mine].tolist())
    off = calibrate(batch, KEY, CalibrationSettings(octave_strata=False))
    assert not off.drift["decode"].octave_strata
    assert len(set(held.tolist())) > len(set(off.holdout_keys["decode"].tolist()))
