"""A class is held by the calibration only if the window's fit part held enough of it (design r17).

Calibration fits on the window's earlier part and scores the later part; a class whose steps all
came late was never fitted on, however many the whole window held.  Before r17 the gate counted
the whole window and paged (NO_GO) on that class's error, and the re-fit guard judged it; now it
is "barely held": its accuracy misses are INCONCLUSIVE and the guard leaves it out.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

import checks
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


def test_decode_steps_are_judged_on_what_the_fit_part_read():
    """Design r20: decode-only steps' own envelope (batch range, KV tokens read) comes from the
    fit part, where their coefficients were identified; decode steps that read more, however many
    the held-out part held, lie beyond it, and the re-fit guard's residual check (which decides
    "drift, not a new regime") leaves them out with the drift domain's other outsiders."""
    from shadowd.daemon.refit import inside_envelope, residual_shifts

    batch = synthetic_batch(steps=4000, seed=5, max_seqs=64)
    kv = batch.per_step_sum(batch.context_tokens.astype(float))
    dec = np.flatnonzero(batch.kind == DECODE)
    low = (batch.kind == DECODE) & (kv < np.quantile(kv[dec], 0.4))
    rest = np.flatnonzero(batch.kind != DECODE)
    fit_steps = round(batch.num_steps * (1 - CalibrationSettings().holdout_fraction))
    early = np.isin(np.arange(batch.num_steps), rest[: fit_steps - int(low.sum())])  # the fit part: these
    late = ~early & ~low  # in time order: the other steps and the decode steps that read more
    window = StepBatch.concat([batch.select_steps(early | low), batch.select_steps(late)])
    settings = CalibrationSettings(min_class_steps=150, drift_sim_steps=20_000, adwin_sim_steps=20_000)
    cal = calibrate(window, KEY, settings)
    w_kv = window.per_step_sum(window.context_tokens.astype(float))
    w_dec = window.kind == DECODE
    fit = np.arange(window.num_steps) < round(window.num_steps * (1 - settings.holdout_fraction))
    want = np.quantile(w_kv[w_dec & fit], 0.99) * (1 + settings.envelope_margin)
    assert cal.envelope.max_decode_kv_tokens == pytest.approx(want)
    beyond = w_dec & (w_kv > want)
    assert beyond.sum() >= 50 and not (beyond & fit).any()  # only held-out decode steps read more
    inside = inside_envelope(window, cal.envelope)
    assert not inside[beyond].any()
    # The guard's check, with a decode detector whose domain spans the whole window's decode
    # steps, as a domain drawn over a window whose later part read more does (the held-out part's
    # extrapolation may leave decode uncalibratable here, so one is set).
    whole = checks.feature_domain({k: v[w_dec] for k, v in window.composition().items()})
    dc = checks.DriftCalibration(
        step_class="decode", mean=0.0, std=0.03, ph_threshold=25.0, adwin_delta=0.002, domain=whole
    )
    cal = dataclasses.replace(cal, drift={"decode": dc})
    in_domain = w_dec & cal.drift["decode"].in_domain(window.composition())
    judged = in_domain & inside
    assert (in_domain & beyond).sum() >= 50  # steps the domain covers, the envelope does not
    assert residual_shifts(window, cal, settings.min_shift)["decode"].steps == int(judged.sum())
    again = calibration_from_body(model_body(cal))
    assert again.envelope == cal.envelope  # what is stored is what the gate's SQL reads


def test_a_class_whose_work_the_fit_priced_at_zero_is_barely_held():
    """Design r28, on whole steps timed on a GPU (``docs/gpu-steps.csv``): a window of the light
    run's first 421 steps fits a segment above a few tokens whose decode KV term is zero, so the
    decode steps there are predicted at a constant; the gate then does not vouch for decode (an
    accuracy miss is INCONCLUSIVE, naming the zero term, not a page)."""
    import gzip

    from benchmarks.gpu_report import load_timings, step_batch
    from benchmarks.gpu_steps import DOCS, EXPORT_PATH
    from checks.evidence import ClassAccuracy, Evidence
    from checks.policy import GatePolicy
    from checks.rules import accuracy

    with gzip.open(EXPORT_PATH, "rt") as fh:
        timed, _ = load_timings(json.load(fh), DOCS / "gpu-steps.csv")
    window = step_batch([r for r in timed if r["regime"] == "light"][:421])
    settings = CalibrationSettings(min_class_steps=150, drift_sim_steps=20_000, adwin_sim_steps=20_000)
    cal = calibrate(window, KEY, settings)
    (zero,) = [z for z in cal.model.fit_metrics["zero_priced"] if z["term"] == "decode.c"]
    assert "decode" in zero["classes"] and cal.fit_class_steps["decode"] >= settings.min_class_steps
    held = cal.barely_held(settings.min_class_steps)
    assert "decode.c was fitted at zero" in held["decode"]
    assert calibration_from_body(model_body(cal)).barely_held(settings.min_class_steps) == held
    pol = GatePolicy()
    miss = ClassAccuracy(steps=10_000, p50=0.2, p90=0.5, p99=0.9, r2=0.5)
    ev = Evidence(accuracy={"decode": miss}, barely_held=held)
    (p99,) = [r for r in accuracy(ev, pol, 0.0) if r.name.endswith("decode.p99")]
    assert p99.status == "inconclusive" and "fitted at zero" in p99.reason
    assert (
        next(
            r
            for r in accuracy(Evidence(accuracy={"decode": miss}), pol, 0.0)
            if r.name.endswith("decode.p99")
        ).status
        == "fail"
    )
