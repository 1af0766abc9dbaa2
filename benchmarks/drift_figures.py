"""False-alarm rates and detection delays of the residual drift detectors, on the reference engine.

What docs/checks.md quotes, measured the way the daemon runs:

1. A stationary reference-engine run per workload (demo mix 10k steps, real-trace mix 12k,
   light-load mix 16k; the real vLLM scheduler forming the steps, H100 kernel tables,
   llama-3.1-8b): the first ``settle`` fraction of the steps (ramp-up from an empty
   engine) is skipped; the next ``warmup_steps`` steps (the daemon's default window, 2000) are
   calibrated exactly as the daemon does (``shadowd.daemon.calibrator.calibrate`` with the production
   ``CalibrationSettings(**COMPARED)``: LLMVisor fitted on the earlier 70 %, both detectors' thresholds calibrated
   on the held-out 30 % and the whole window, each to 1e-5 false alarms per step of its class); the
   model's relative residuals on all *later* steps (never seen by the calibration) are what is
   measured on, and, for comparison, the same later steps under the previous calibration design.
2. False alarms per detector and step class: (a) on the real later residuals themselves (a few
   thousand steps: an upper bound, not a rate of 1e-5), (b) on long stationary streams
   (``--long-steps`` per class, default 2M) resampled by the AR sieve that ``checks.threshold_search``
   uses, once from the later residuals (fresh data) and once from the calibration's own held-out
   residuals with a new seed (re-measurement). ADWIN detections are counted raw and after the
   daemon's relevance filter (``shadowd.daemon.drift_watch.is_relevant``: an ADWIN detection whose kept window sits under ``min_shift / 2`` from the calibration mean is ignored).
3. Detection delay per slowdown size: the later residual stream (all classes, interleaved as the
   engine produced them) is treated as circular; from each of ``--offsets`` evenly spaced starts it
   is fed to fresh detectors for ``--warmup`` steps unchanged, then slowed (``r -> (1+r)(1+s) - 1``)
   for ``--horizon`` steps. Delay = engine steps (all classes) from the first slow step to the first
   relevant detection. Two slowdown models: the whole step slower by ``s`` (what the brief asks),
   and only the kernels slower (what ``shadowd demo --inject slowdown:s`` does: host time is
   unchanged, so a step slows by ``s`` times its kernel share).
4. One end-to-end figure: ``shadowd demo --platform h100_sxm --steps 2400 --inject
   slowdown:0.08@1600 --json`` (tap -> daemon -> drift watch -> gate), steps from 1600 to the first
   residual drift event.

    .venv/bin/python -m benchmarks.drift_figures            # ~4 min on 2 cores; writes
                                                            # docs/checks.md and docs/checks.json
    .venv/bin/python -m benchmarks.drift_figures --quick    # one short run, no demo, prints only
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pickle
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")

SHIFTS = (0.02, 0.05, 0.08, 0.15)
DETECTORS = ("page_hinkley", "adwin")
# Both detectors, each to 1e-5 per step of its class (the daemon's design before r6): this
# benchmark compares them, and its delay table is why the daemon now runs Page-Hinkley alone.
COMPARED = dict(detectors=DETECTORS, target_false_alarm_rate=2e-5)  # CalibrationSettings(**COMPARED)
DEMO_MIX = ("chat=synthetic:chat:18", "code=synthetic:code:8", "docs=synthetic:longdoc:1.2")
TRACE_MIX = ("code=azure-code:6", "chat=azure-conv:10", "docs=mooncake-conversation:0.6")
# name -> (tenants, overrides of --steps / --warmup-steps)
LIGHT_MIX = ("code=azure-code:1.5", "chat=azure-conv:0.1", "docs=mooncake-conversation:0.08")
RUNS = {
    "demo-mix": (DEMO_MIX, {"steps": 10000}),
    "trace-mix": (TRACE_MIX, {"steps": 12000}),
    "light-mix": (LIGHT_MIX, {"steps": 16000}),
}
DEMO_CMD = [
    ".venv/bin/shadowd",
    "demo",
    "--platform",
    "h100_sxm",
    "--steps",
    "2400",
    "--inject",
    "slowdown:0.08@1600",
    "--json",
]
DEMO_SHIFT_AT = 1600


# -- 1. reference runs and their residuals ------------------------------------------------------
def reference_residuals(
    name: str,
    tenants: tuple[str, ...],
    *,
    steps: int,
    seed: int,
    platform: str,
    model: str,
    settle: float,
    warmup_steps: int,
) -> dict[str, Any]:
    """Run the engine, calibrate like the daemon, and return the later steps' residuals."""
    import vllm

    import checks
    from shadowd.daemon.calibrator import CalibrationSettings, calibrate
    from shadowd.daemon.config import Platform
    from shadowd.sim.reference_run import ReferenceRun, RunSpec
    from shadowd.steps.batch import KIND_NAMES

    t0 = time.perf_counter()
    ref = ReferenceRun(RunSpec(platform=platform, model=model, tenants=tenants, seed=seed))
    ref.driver.submit(ref.workload(limit=steps * 2))
    done = ref.run(steps)
    batch = ref.step_batch()
    run_s = time.perf_counter() - t0
    n = batch.num_steps
    n_settle = int(round(settle * n))
    if n - n_settle - warmup_steps < 1000:
        raise RuntimeError(
            f"{name}: {n} steps leave < 1000 after {n_settle} settle + {warmup_steps} calibration steps"
        )
    pos = np.arange(n)
    window = batch.select_steps((pos >= n_settle) & (pos < n_settle + warmup_steps))
    later = batch.select_steps(pos >= n_settle + warmup_steps)
    key = Platform(
        gpu=ref.engine.platform.key,
        model=ref.engine.model.name,
        dtype="bf16",
        tp=1,
        vllm=vllm.__version__,
        attention_backend="reference-engine",
    ).as_key()
    settings = CalibrationSettings(**COMPARED)
    t1 = time.perf_counter()
    cal = calibrate(window, key, settings)
    cal_s = time.perf_counter() - t1
    pred = cal.model.attribute(later).predicted_ms
    resid = checks.relative_residual(later.latency_ms, pred)
    kinds = np.asarray(KIND_NAMES, dtype=object)[later.kind]
    # Kernel share of each later step's noiseless latency (the demo's slowdown scales kernels only).
    bounds = np.searchsorted(later.req_step, np.arange(later.num_steps + 1))
    share = np.empty(later.num_steps)
    for i in range(later.num_steps):
        rows = slice(bounds[i], bounds[i + 1])
        b = ref.engine.breakdown(later.new_tokens[rows], later.context_tokens[rows], later.prefill[rows])
        share[i] = 1.0 - b.get("host_ms", 0.0) / b["total_ms"] if b.get("total_ms") else 1.0
    legacy = legacy_alarms(window, later, key)
    sizes = batch.batch_size()
    comp = later.composition()
    in_domain = np.zeros(later.num_steps, dtype=bool)
    for cls, dcal in cal.drift.items():
        mine = kinds == cls
        in_domain[mine] = dcal.in_domain({k: v[mine] for k, v in comp.items()})
        # Design r24: what the detectors see is the residual less its calibrated composition bias.
        resid[mine] = dcal.unbiased(resid[mine], {k: v[mine] for k, v in comp.items()})
    return {
        "name": name,
        "tenants": list(tenants),
        "platform": ref.engine.platform.key,
        "model": model,
        "seed": seed,
        "steps": int(n),
        "engine_steps_run": int(done),
        "settle_steps": n_settle,
        "calibration_steps": int(window.num_steps),
        "later_steps": int(later.num_steps),
        "run_seconds": round(run_s, 1),
        "calibrate_seconds": round(cal_s, 1),
        "settings": {k: getattr(settings, k) for k in settings.__dataclass_fields__},
        "class_counts": {
            "window": {c: int((window.kind == i).sum()) for i, c in enumerate(KIND_NAMES)},
            "later": {c: int((later.kind == i).sum()) for i, c in enumerate(KIND_NAMES)},
        },
        "mean_batch_size_later": float(sizes[pos >= n_settle + warmup_steps].mean()),
        "batch_size_per_1000_steps": [round(float(sizes[i : i + 1000].mean()), 1) for i in range(0, n, 1000)],
        "mean_latency_ms_later": float(later.latency_ms.mean()),
        "model_version": cal.model.version,
        "drift": {c: d.to_dict() for c, d in cal.drift.items()},
        "unwatched": dict(cal.unwatched),
        "holdout": {c: np.asarray(v, dtype=float) for c, v in cal.holdout_residuals.items()},
        "residual": np.asarray(resid, dtype=float),
        "kind": kinds,
        "kernel_share": share,
        "in_domain": in_domain,
        "legacy": legacy,
    }


def legacy_alarms(window: Any, later: Any, key: dict[str, Any]) -> dict[str, Any]:
    """Relevant alarms on ``later`` under the previous calibration design, for comparison.

    Before: allowance fixed at ``min_shift / 2``, thresholds from the held-out residuals alone,
    detectors fed every step against their running mean (no wander bound, no domain, no baseline).
    """
    import checks
    from shadowd.daemon.calibrator import CalibrationSettings, calibrate
    from shadowd.daemon.drift_watch import is_relevant
    from shadowd.steps.batch import KIND_NAMES

    settings = CalibrationSettings(wander_k=0.0, detrend_steps=0, noise_from_window=False, unbias=False)
    cal = calibrate(window, key, settings)
    resid = checks.relative_residual(later.latency_ms, cal.model.attribute(later).predicted_ms)
    kinds = np.asarray(KIND_NAMES, dtype=object)[later.kind]
    mon = checks.DriftMonitor(cal.drift)
    events = mon.update_many(np.arange(later.num_steps), kinds, resid, np.zeros(later.num_steps))
    out: dict[str, Any] = {}
    for cls, c in mon.counts().items():
        kept = [
            e
            for e in events
            if e.step_class == cls
            and is_relevant(
                e.detector, (e.details or {}).get("kept_mean"), cal.drift[cls], settings.min_shift
            )
        ]
        out[cls] = {
            "steps": c["steps"],
            "page_hinkley": sum(e.detector == "page_hinkley" for e in kept),
            "adwin": sum(e.detector == "adwin" for e in kept),
            "ph_threshold": cal.drift[cls].ph_threshold,
            "ph_delta": cal.drift[cls].ph_delta,
        }
    return out


def load_or_run(name: str, tenants: tuple[str, ...], cache: Path | None, **kw: Any) -> dict[str, Any]:
    path = None
    if cache is not None:
        tag = "-".join(f"{k}={v}" for k, v in sorted(kw.items()))
        path = cache / f"{name}-{tag}.pkl"
        if path.exists():
            with open(path, "rb") as f:
                return pickle.load(f)
    out = reference_residuals(name, tenants, **kw)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as f:
            pickle.dump(out, f)
    return out


def calibrations(run: dict[str, Any]) -> dict[str, Any]:
    from checks import DriftCalibration

    return {c: DriftCalibration.from_dict(d) for c, d in run["drift"].items()}


# -- 2. false alarms ------------------------------------------------------------------------------
def _relevant(det: Any, cal: Any, min_shift: float) -> bool:
    """The daemon's filter (``shadowd.daemon.drift_watch.is_relevant``)."""
    from shadowd.daemon.drift_watch import is_relevant

    return is_relevant(det.name, (det.last_detection or {}).get("kept_mean"), cal, min_shift)


def count_alarms(cal: Any, z: np.ndarray, min_shift: float) -> dict[str, dict[str, Any]]:
    """Alarms of fresh detectors at ``cal``'s thresholds over standardised ``z`` (continuous run)."""
    from checks.resample import poisson_upper

    out = {}
    for det in cal.detectors():
        raw = rel = 0
        upd = det.update
        for x in z.tolist():
            if upd(x):
                raw += 1
                rel += _relevant(det, cal, min_shift)
        n = len(z)
        out[det.name] = {
            "steps": n,
            "alarms": raw,
            "alarms_relevant": rel,
            "rate": raw / n,
            "rate_upper95": poisson_upper(raw, n),
            "rate_relevant": rel / n,
            "rate_relevant_upper95": poisson_upper(rel, n),
        }
    return out


def block_variance_ratio(x: np.ndarray, block: int = 50) -> float | None:
    """Var of ``block``-step means × block / var: 1 for independent noise, larger when the mean wanders."""
    x = np.asarray(x, dtype=float)
    x = x[np.isfinite(x)]
    k = len(x) // block
    if k < 4:
        return None
    means = x[: k * block].reshape(k, block).mean(axis=1)
    return float(means.var(ddof=1) * block / x.var(ddof=1))


def false_alarms(run: dict[str, Any], long_steps: int, min_shift: float, seed: int) -> dict[str, Any]:
    from checks.resample import ar_sieve_bootstrap

    cals = calibrations(run)
    out: dict[str, Any] = {"real_later": {}, "long_from_later": {}, "long_from_holdout": {}, "wander": {}}
    from checks import detrend

    for i, (cls, cal) in enumerate(sorted(cals.items())):
        mine = run["kind"] == cls
        r = run["residual"][mine & run["in_domain"]]  # what the daemon feeds the detectors
        r = r[np.isfinite(r)]
        out["real_later"][cls] = count_alarms(cal, cal.prepare(r), min_shift)
        out["real_later"][cls]["out_of_domain"] = int((mine & ~run["in_domain"]).sum())
        out["wander"][cls] = {
            "holdout": block_variance_ratio(run["holdout"][cls]),
            "later": block_variance_ratio(r),
            "later_std": float(np.nanstd(r, ddof=1)),
            "holdout_std": cal.std,
            "allowance": cal.allowance,
        }
        for j, (src, base) in enumerate(
            (
                ("long_from_later", cal.standardise(r)),
                ("long_from_holdout", cal.standardise(run["holdout"][cls])),
            )
        ):
            rng = np.random.default_rng(seed + 100 * i + j)
            stream = np.clip(ar_sieve_bootstrap(base, long_steps, rng), -cal.clip, cal.clip)
            out[src][cls] = count_alarms(cal, detrend(stream, cal.detrend_steps)[0], min_shift)
    return out


# -- 3. detection delay ---------------------------------------------------------------------------
def detection_delay(
    run: dict[str, Any],
    shifts: tuple[float, ...],
    *,
    offsets: int,
    warmup: int,
    horizon: int,
    min_shift: float,
    kernel_only: bool,
) -> dict[str, Any]:
    from checks import Detrend

    cals = calibrations(run)
    r, kind, share = run["residual"], run["kind"], run["kernel_share"]
    ok = np.isfinite(r)
    r, kind, share, inside = r[ok], kind[ok], share[ok], run["in_domain"][ok]
    length = len(r)
    names = list(DETECTORS) + ["either"]
    delays = {(s, nm): [] for s in shifts for nm in names}
    judged_delays = {(s, nm): [] for s in shifts for nm in names}  # counting judged steps only
    early = {(s, nm): 0 for s in shifts for nm in DETECTORS}
    blinded = {(s, nm): 0 for s in shifts for nm in DETECTORS}
    by_class: dict[tuple[float, str, str], list[float]] = {}
    for k in range(offsets):
        o = int(k * length / offsets)
        idx = (o - warmup + np.arange(warmup + horizon)) % length
        base, cls_seq, g, dom = r[idx], kind[idx], share[idx], inside[idx]
        for s in shifts:
            eff = s * g[warmup:] if kernel_only else s
            rr = base.copy()
            rr[warmup:] = (1 + rr[warmup:]) * (1 + eff) - 1
            dets = {c: cal.detectors() for c, cal in cals.items()}
            baselines = {c: Detrend(cal.detrend_steps) for c, cal in cals.items()}
            first: dict[tuple[str, str], int] = {}
            first_judged: dict[tuple[str, str], int] = {}
            judged = 0
            filtered: set[tuple[str, str]] = set()
            for i, (x, c, d) in enumerate(zip(rr.tolist(), cls_seq.tolist(), dom.tolist())):
                cal = cals.get(c)
                if cal is None or not d:
                    continue  # unwatched class or out of domain: skipped, as the daemon does
                judged += i >= warmup
                zz = baselines[c].update(min(max((x - cal.mean) / cal.std, -cal.clip), cal.clip))
                for det in dets[c]:
                    if not det.update(zz):
                        continue
                    if not _relevant(det, cal, min_shift):
                        if i >= warmup and (c, det.name) not in first:
                            filtered.add((c, det.name))  # river then clears ADWIN's window
                        continue
                    if i < warmup:
                        early[(s, det.name)] += 1
                    else:
                        first.setdefault((c, det.name), i - warmup + 1)
                        first_judged.setdefault((c, det.name), judged)
                if len(first) == 2 * len(cals):
                    break
            for nm in DETECTORS:
                hits = [v for (c, d), v in first.items() if d == nm]
                delays[(s, nm)].append(min(hits) if hits else math.inf)
                if not hits and any(d == nm for _, d in filtered):
                    blinded[(s, nm)] += 1
            delays[(s, "either")].append(min(first.values()) if first else math.inf)
            judged_delays[(s, "either")].append(min(first_judged.values()) if first_judged else math.inf)
            for c in cals:
                for nm in DETECTORS:
                    by_class.setdefault((s, c, nm), []).append(first.get((c, nm), math.inf))

    def summary(d: list[float]) -> dict[str, Any]:
        a = np.asarray(d, dtype=float)
        hit = a[np.isfinite(a)]
        return {
            "reps": len(a),
            "detected": int(len(hit)),
            "missed": int(len(a) - len(hit)),
            "median": float(np.median(hit)) if len(hit) else None,
            "p90": float(np.quantile(hit, 0.9)) if len(hit) else None,
            "max": float(hit.max()) if len(hit) else None,
        }

    rows = [
        {
            "shift": s,
            "detector": nm,
            **summary(delays[(s, nm)]),
            "judged": summary(judged_delays[(s, nm)]) if nm == "either" else None,
            "relevant_alarms_during_warmups": early.get((s, nm)),
            "missed_after_filtered_detection": blinded.get((s, nm)),
        }
        for s in shifts
        for nm in names
    ]
    class_rows = [
        {"shift": s, "step_class": c, "detector": nm, **summary(v)}
        for (s, c, nm), v in sorted(by_class.items())
    ]
    eff_share = float(np.median(share))
    return {
        "model": "kernels only" if kernel_only else "whole step",
        "offsets": offsets,
        "warmup": warmup,
        "horizon": horizon,
        "stream_steps": int(length),
        "median_kernel_share": eff_share,
        "rows": rows,
        "by_class": class_rows,
    }


# -- 4. the demo, end to end ----------------------------------------------------------------------
def demo_figure(timeout_s: float) -> dict[str, Any]:
    t0 = time.perf_counter()
    try:
        p = subprocess.run(DEMO_CMD, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"command": " ".join(DEMO_CMD), "error": f"did not finish in {timeout_s:.0f} s"}
    wall = time.perf_counter() - t0
    try:
        out = json.loads(p.stdout[p.stdout.index("{") :])
    except ValueError:
        return {
            "command": " ".join(DEMO_CMD),
            "error": f"exit {p.returncode}, no JSON: {p.stderr.strip()[-400:]}",
            "wall_seconds": wall,
        }
    return {
        "command": " ".join(DEMO_CMD),
        "exit_code": p.returncode,
        "wall_seconds": round(wall, 1),
        **summarise_demo(out),
    }


def summarise_demo(out: dict[str, Any]) -> dict[str, Any]:
    ev = out.get("drift_events", [])
    resid = [e for e in ev if e["detector"] in DETECTORS]
    before = [e for e in resid if e["step_seq"] < DEMO_SHIFT_AT]
    after = [e for e in resid if e["step_seq"] >= DEMO_SHIFT_AT]
    firsts = {d: min((e["step_seq"] for e in after if e["detector"] == d), default=None) for d in DETECTORS}
    first = min((e["step_seq"] for e in after), default=None)
    return {
        "platform": out.get("platform"),
        "steps": out.get("steps"),
        "settle_steps": out.get("settle_steps"),
        "warmup_steps": out.get("warmup_steps"),
        "verdict": out.get("verdict"),
        "reason": out.get("reason"),
        "residual_events_before_shift": len(before),
        "first_event_after_shift": first,
        "delay_steps": None if first is None else first - DEMO_SHIFT_AT,
        "first_by_detector": {d: (None if v is None else v - DEMO_SHIFT_AT) for d, v in firsts.items()},
        "events_after_shift": [e for e in after][:10],
        "other_events": sorted({e["detector"] for e in ev} - set(DETECTORS)),
        "policy_note": out.get("policy_note"),
    }


# -- report ------------------------------------------------------------------------------------
def _fmt(x: Any, nd: int = 0) -> str:
    if x is None:
        return "–"
    if isinstance(x, float) and nd == 0:
        return f"{x:.0f}"
    return f"{x:.{nd}f}"


def _legacy(run: dict[str, Any], cls: str) -> str:
    old = run.get("legacy", {}).get(cls)
    return f"{old['steps']}, {old['page_hinkley']} / {old['adwin']}" if old else "–"


def _rate(x: float) -> str:
    return "0" if x == 0 else f"{x:.1e}"


def markdown(res: dict[str, Any]) -> str:
    m = res["machine"]
    L: list[str] = []
    add = L.append
    add("# Checks and the gate: what the drift detectors cost and buy")
    add("")
    add(DOC_INTRO.strip().replace("MIN_SHIFT", f"{res['min_shift']:g}"))
    add("")
    add("## The figures")
    add("")
    add(
        f"Produced by `{res['command']}` in {res['wall_seconds']:.0f} s on {m['nproc']} cores "
        f"({m['cpu_model']}, {m['ram_gib']} GiB RAM, Python {m['python']}, vLLM "
        f"{m['versions'].get('vllm')}); raw numbers in `docs/checks.json`. Reference engine: "
        f"the real vLLM scheduler forms every step, the step's latency comes from the H100 SXM "
        f"kernel tables (`../shared/data`, with their measured jitter), model llama-3.1-8b, tp 1."
    )
    add("")
    for run in res["runs"]:
        cc = run["class_counts"]
        add(
            f"- **{run['name']}** (`{', '.join(run['tenants'])}`, seed {run['seed']}): "
            f"{run['steps']} steps; {run['settle_steps']} ramp-up steps skipped; calibration window "
            f"{run['calibration_steps']} steps (decode/mixed/prefill "
            f"{cc['window']['decode']}/{cc['window']['mixed']}/{cc['window']['prefill']}); "
            f"{run['later_steps']} later steps measured on (decode/mixed/prefill "
            f"{cc['later']['decode']}/{cc['later']['mixed']}/{cc['later']['prefill']}), mean batch "
            f"{run['mean_batch_size_later']:.0f} requests, mean step {run['mean_latency_ms_later']:.1f} ms; "
            f"mean batch per 1000 steps from the start: "
            f"{', '.join(f'{x:.0f}' for x in run.get('batch_size_per_1000_steps', []))}."
        )
    add("")
    first = res["runs"][0]["settings"] if res["runs"] else {}
    add(
        f"### Calibration (both detectors, each to {per_detector_rate(first) if first else 1e-5:g} false "
        f"alarms per step of its class; {first.get('drift_sim_steps', 0) / 1000:.0f}k AR-sieve steps per "
        "detector and class. The daemon runs Page-Hinkley alone since design r6: these tables are why)"
    )
    add("")
    add(
        "| run | class | held-out steps | σ of relative residual | allowance (% of latency) | PH allowance δ (σ) "
        "| PH threshold | ADWIN δ | domain: batch size; KV tokens (k) | calibration estimate PH: alarms / steps "
        "(95 % upper), noise model | ADWIN: alarms / steps (95 % upper), noise model |"
    )
    add("|---|---|---|---|---|---|---|---|---|---|---|")
    for run in res["runs"]:
        for cls, d in sorted(run["drift"].items()):
            e = d["estimates"]
            ph, ad = e.get("page_hinkley", {}), e.get("adwin", {})
            dom = d.get("domain", {})
            bs, kv = dom.get("batch_size", (math.nan, math.nan)), dom.get("kv_tokens", (math.nan, math.nan))
            add(
                f"| {run['name']} | {cls} | {d['n_calibration']} | {d['std']:.4f} | {100 * d.get('allowance', 0):.2f} "
                f"| {d['ph_delta']:.2f} | {d['ph_threshold']:g} | {d['adwin_delta']:g} "
                f"| {bs[0]:.0f}–{bs[1]:.0f}; {kv[0] / 1e3:.0f}–{kv[1] / 1e3:.0f} | {ph.get('alarms')} / "
                f"{ph.get('exposure', 0):.0f} ({_rate(ph.get('rate_upper95', math.nan))}), {ph.get('source', '–')} "
                f"| {ad.get('alarms')} / {ad.get('exposure', 0):.0f} ({_rate(ad.get('rate_upper95', math.nan))}), "
                f"{ad.get('source', '–')} |"
            )
        for cls, why in sorted(run["unwatched"].items()):
            add(f"| {run['name']} | {cls} | – | – | – | – | – | – | – | not watched: {why} | |")
    add("")
    add("### False alarms")
    add("")
    add(
        "Alarms of each detector at the calibrated thresholds, run continuously (a detector resets "
        "itself after each alarm, as in the daemon). *ADWIN kept* applies the daemon's relevance "
        "filter (a detection whose kept window sits closer than the class's allowance to the calibration "
        "mean is counted, not raised); Page-Hinkley has its allowance built in. Steps outside the class's "
        "calibrated domain are not fed (counted in the *out of domain* column), as in the daemon. Rates are "
        "per step of that class; 95 % is the one-sided Poisson upper bound."
    )
    add("")
    add(
        "**(a) On the real later residuals** (the engine's own steps after the calibration window; "
        "a few thousand steps can only bound the rate, to about 3 / steps):"
    )
    add("")
    add(
        "| run | class | steps fed | out of domain | PH alarms | PH 95 % upper | ADWIN alarms (kept / raw) "
        "| ADWIN kept 95 % upper | σ later / σ held-out | block-mean variance ratio, held-out → later "
        "| before this design: steps fed, PH / ADWIN alarms |"
    )
    add("|---|---|---|---|---|---|---|---|---|---|---|")
    for run, fa in zip(res["runs"], res["false_alarms"]):
        for cls, v in sorted(fa["real_later"].items()):
            ph, ad = v["page_hinkley"], v["adwin"]
            w = fa["wander"][cls]
            add(
                f"| {run['name']} | {cls} | {ph['steps']} | {v.get('out_of_domain', 0)} | {ph['alarms']} "
                f"| {_rate(ph['rate_upper95'])} "
                f"| {ad['alarms_relevant']} / {ad['alarms']} | {_rate(ad['rate_relevant_upper95'])} "
                f"| {w['later_std'] / w['holdout_std']:.2f} | {_fmt(w['holdout'], 1)} → {_fmt(w['later'], 1)} "
                f"| {_legacy(run, cls)} |"
            )
    add("")
    add(
        "The last column is the variance of 50-step means of the residual times 50 over its variance: "
        "1 for independent noise, larger when the residual's mean wanders (serial correlation, or a "
        "bias that moves with load)."
    )
    add("")
    add(
        f"**(b) On long stationary streams** ({res['args']['long_steps']:,} steps per class and source), "
        "resampled as `checks.threshold_search` does (AR sieve: an autoregression fitted to the "
        "standardised residuals, driven by innovations drawn from its own residuals, clipped at ±5σ). "
        "*from later*: fitted to the later residuals, which calibration never saw, so this checks the "
        "thresholds on fresh data of the same run; *from held-out*: fitted to calibration's own held-out "
        "residuals with a new seed (calibration took the more conservative of this and the whole "
        "window's residuals). Both go through the same slow-baseline filter as live residuals. These are "
        "synthetic streams with the residuals' autocorrelation and tails, not 2M real steps."
    )
    add("")
    add(
        "| run | class | source | PH alarms | PH rate (95 % upper) | ADWIN kept / raw | ADWIN kept rate (95 % upper) | ADWIN raw rate |"
    )
    add("|---|---|---|---|---|---|---|---|")
    for run, fa in zip(res["runs"], res["false_alarms"]):
        for src, label in (("long_from_later", "from later"), ("long_from_holdout", "from held-out")):
            for cls, v in sorted(fa[src].items()):
                ph, ad = v["page_hinkley"], v["adwin"]
                add(
                    f"| {run['name']} | {cls} | {label} | {ph['alarms']} | {_rate(ph['rate'])} "
                    f"({_rate(ph['rate_upper95'])}) | {ad['alarms_relevant']} / {ad['alarms']} "
                    f"| {_rate(ad['rate_relevant'])} ({_rate(ad['rate_relevant_upper95'])}) "
                    f"| {_rate(ad['rate'])} |"
                )
    add("")
    a = res["args"]
    add("### Detection delay against slowdown size")
    add("")
    add(
        f"The later residual stream of each run, all step classes interleaved as the engine produced "
        f"them, treated as circular: from each of {a['offsets']} evenly spaced starts, fresh detectors "
        f"at the calibrated thresholds see {a['warmup']} unchanged steps, then {a['horizon']} slowed "
        f"steps. Delay is in engine steps (all classes; unwatched classes are skipped as the daemon "
        f"skips them) from the first slow step to the first kept detection; *missed* = none within "
        f"{a['horizon']} steps (for ADWIN, in brackets: of which after a detection the relevance filter "
        f"dropped — see the note below); *either* = the first residual drift event of any detector, which is what "
        f"makes the gate's drift check fail; for it the last column counts only the steps the detectors "
        f"judged (watched class, inside its calibrated domain), i.e. leaves out stretches of traffic "
        f"calibration never saw, where the detectors are blind by design. The starts overlap (the stream is only a few thousand steps "
        f"long), so the {a['offsets']} repetitions are not independent."
    )
    add("")
    for key, title in (
        ("delay_step", "Whole step slower by s: r → (1+r)(1+s) − 1"),
        ("delay_kernel", "Kernels slower by s, host time unchanged (what `--inject slowdown:s` does)"),
    ):
        add(
            f"**{title}**"
            + (
                " — each step slows by s × its kernel share (median share "
                + ", ".join(
                    f"{d[key]['median_kernel_share']:.2f} in {r['name']}"
                    for r, d in zip(res["runs"], res["delays"])
                )
                + ")"
                if key == "delay_kernel"
                else ""
            )
        )
        add("")
        add(
            "| run | slowdown | detector | detected / starts | median | p90 | max | missed "
            "| judged steps to detection: median / max |"
        )
        add("|---|---|---|---|---|---|---|---|---|")
        for run, d in zip(res["runs"], res["delays"]):
            for row in d[key]["rows"]:
                add(
                    f"| {run['name']} | {row['shift']:.0%} | {row['detector']} | {row['detected']} / "
                    f"{row['reps']} | {_fmt(row['median'])} | {_fmt(row['p90'])} | {_fmt(row['max'])} "
                    f"| {row['missed']}"
                    + (f" ({row['missed_after_filtered_detection']})" if row["detector"] == "adwin" else "")
                    + (
                        f" | {_fmt(row['judged']['median'])} / {_fmt(row['judged']['max'])} |"
                        if row.get("judged")
                        else " | |"
                    )
                )
        add("")
    warm = [
        (run["name"], row["detector"], row["relevant_alarms_during_warmups"])
        for run, d in zip(res["runs"], res["delays"])
        for row in d["delay_step"]["rows"]
        if row["detector"] in DETECTORS and row["shift"] == SHIFTS[0]
    ]
    add(
        "Kept alarms during the unchanged warm-up stretches (the same stretches for every shift): "
        + ", ".join(f"{n} {det} {k}" for n, det, k in warm)
        + "."
    )
    add("")
    demo = res.get("demo")
    add("### End to end: `shadowd demo`, 8 % slowdown at step 1600")
    add("")
    if demo is None:
        add("Not run (`--skip-demo`).")
    elif "error" in demo:
        add(f"`{demo['command']}`: {demo['error']}.")
    else:
        fb = demo["first_by_detector"]
        add(
            f"`{demo['command']}` ({demo['wall_seconds']:.0f} s wall, exit {demo['exit_code']}): the "
            f"real scheduler → tap → daemon → drift watch → gate, {demo['steps']} steps, "
            f"{demo['settle_steps']} ramp-up steps, calibration on the next {demo['warmup_steps']} "
            f"(the demo calibrates to the daemon's configured false-alarm target, "
            f"`[drift] target_false_alarm_rate` in shadowd/daemon/config.py). Residual drift events before the "
            f"slowdown: {demo['residual_events_before_shift']}. First residual drift event after it: "
            f"step {demo['first_event_after_shift']}, **{_fmt(demo['delay_steps'])} steps** after the "
            f"slowdown began (Page-Hinkley {_fmt(fb.get('page_hinkley'))}, ADWIN "
            f"{_fmt(fb.get('adwin'))}). Final verdict {demo['verdict']} ({demo['reason']})."
        )
    add("")
    add(findings(res).strip())
    add("")
    add(DOC_REST.strip().replace("ALLOWANCE_FLOOR", f"{100 * res['min_shift'] / 2:g}"))
    add("")
    return "\n".join(L)


def per_detector_rate(settings: dict[str, Any]) -> float:
    """The false-alarm target each detector was calibrated to (results stored before design r6
    have no ``detectors`` key: their target was already per detector)."""
    return settings["target_false_alarm_rate"] / len(settings.get("detectors") or (1,))


def findings(res: dict[str, Any]) -> str:
    """What the tables say, with the numbers taken from them."""
    target = per_detector_rate(res["runs"][0]["settings"]) if res["runs"] else 1e-5
    L = ["### What the figures say", ""]
    for run, fa in zip(res["runs"], res["false_alarms"]):
        for cls in sorted(fa["long_from_later"]):
            v = fa["long_from_later"][cls]
            ph, ad = v["page_hinkley"]["rate_upper95"], v["adwin"]["rate_relevant_upper95"]
            adr = v["adwin"]["rate_upper95"]
            verdict = lambda u: (
                "meets the target"
                if u <= target  # noqa: E731
                else f"is {u / target:.0f}× the target"
            )
            line = (
                f"- **{run['name']} / {cls}**, fresh stationary data (AR sieve from the later "
                f"residuals): Page-Hinkley's 95 % upper rate {_rate(ph)} {verdict(ph)}; ADWIN "
                f"after the daemon's filter {_rate(ad)} {verdict(ad)} (unfiltered {_rate(adr)})."
            )
            worst = max(v["page_hinkley"]["rate"], v["adwin"]["rate_relevant"])
            if worst > target:
                per_s = (
                    worst
                    * run["class_counts"]["later"][cls]
                    / run["later_steps"]
                    * 1e3
                    / run["mean_latency_ms_later"]
                )
                line += (
                    f" At this run's step rate that is about one alarm every "
                    f"{1 / per_s / 60:.1f} minutes of traffic; the gate would sit at NO_GO."
                )
            L.append(line)
    L.append("")
    L.append(FINDINGS_TEXT.strip())
    L.append("")
    miss = sum(
        r["missed"]
        for d in res["delays"]
        for key in ("delay_step", "delay_kernel")
        for r in d[key]["rows"]
        if r["detector"] == "adwin"
    )
    blind = sum(
        r["missed_after_filtered_detection"]
        for d in res["delays"]
        for key in ("delay_step", "delay_kernel")
        for r in d[key]["rows"]
        if r["detector"] == "adwin"
    )
    L.append(
        f"**ADWIN's misses** ({miss} over all runs, shifts and both slowdown models; {blind} of them "
        "after a detection the relevance filter dropped): when a slowdown starts, ADWIN often cuts "
        "its window within a clock period (32 steps), while the part it keeps still holds mostly "
        "pre-slowdown values, so the kept window's mean sits closer than the class's allowance to the calibration's "
        "and the daemon drops the detection as irrelevant. river's ADWIN then clears its "
        "whole window on the next value, so it never again sees the old level and stays silent "
        "for as long as the new level lasts. Page-Hinkley covers these cases (the *either* rows), "
        "but ADWIN's value as a second opinion is reduced by the combination of filter and reset."
    )
    L.append("")
    worst8 = [
        (run["name"], r)
        for run, d in zip(res["runs"], res["delays"])
        for key in ("delay_step", "delay_kernel")
        for r in d[key]["rows"]
        if r["detector"] == "either" and r["shift"] == 0.08
    ]
    per_run = "; ".join(
        f"{name} {r['median']:.0f} / {r['max']:.0f} engine steps, "
        f"{_fmt((r.get('judged') or {}).get('median'))} / "
        f"{_fmt((r.get('judged') or {}).get('max'))} judged, {r['missed']} missed"
        for name, r in worst8[::2]
        if r["median"] is not None
    )
    L.append(
        "**The issue's 8 % requirement** (drift detected within 500 steps), whole-step model, "
        f"median / max: {per_run}"
        + (
            f"; end to end in the demo, {res['demo']['delay_steps']} steps."
            if res.get("demo") and res["demo"].get("delay_steps") is not None
            else "."
        )
    )
    return "\n".join(L)


FINDINGS_TEXT = """
**Real steps versus synthetic streams.** On the engine's own later steps (table (a)) the
detectors stay quiet where the earlier design fired, and each remaining alarm is counted there.
The synthetic *from later* streams are harsher than the real steps they were fitted to: the
trace and light mixes change regime within the run (mean batch 9 → 200 requests on the trace mix,
1 → 6 on the light mix), and an autoregression fitted across regimes, driven for 2M steps, makes
the most persistent regime's dependence permanent, so they are likely an upper-side estimate. But
a few thousand real steps bound a rate only to ~1e-3, so for those two mixes the 1e-5 target is
not shown to be met: on the light mix the real steps themselves put it above (see the limits
below).

**Blind stretches.** The trace mix's load left the calibrated domain for long stretches (mean
batch 121 and 200 per 1000 steps, against a domain that ends at 122): the detectors skip those
steps by design, so a slowdown that begins there is seen only when traffic returns, which is what
the long engine-step delays and the misses of that run measure; counted in judged steps (last
column) detection is prompt. The daemon does not pass the gate on that silence: when most of a
required class's recent steps are out of domain, the class is reported *blind* and the gate's drift
check is inconclusive, naming it and the way out (recalibrate on current traffic).
"""


DOC_INTRO = """
The gate (issue 4; `checks/gate.py`, its policy in `checks/policy.py`) answers one question: may
attribution govern scheduling now? Three kinds of check feed it — drift of the latency model,
stability of per-tenant shares, and evidence — and it fails closed. This page explains the
detectors and gives their measured false-alarm rates and detection delays.

## Drift detectors

**What is watched.** For every attributed step the daemon (`shadowd/daemon/drift_watch.py`) computes the
latency model's relative residual `r = (T − T̂) / T̂` (measured over predicted step latency). Steps
of different classes (prefill-only, decode-only, mixed) have different error laws, so each class has
its own detectors and thresholds. Residuals are standardised with the calibration window's mean and
standard deviation, `z = (r − μ) / σ`, and clipped at ±5 so that one stalled step (a GC pause, a
preemption) cannot fire a detector on its own (`checks/drift_calibration.py`). Classes with fewer
than `min_class_steps` (300) held-out steps get no detectors and are listed as unwatched; their
steps are skipped, never guessed at.

**Page-Hinkley** (river, `checks/page_hinkley.py`): a two-sided CUSUM of deviations from the running
mean, less an allowance δ, firing when the excursion passes a threshold. The forgetting factor is 1
(a true CUSUM): with river's default 0.9999 the sums become a stationary process with a spread of
~70 and fire on noise in long runs.

**ADWIN** (river, `checks/adwin.py`): keeps an adaptive window and drops its older part when the two
parts' means differ by more than a bound at confidence δ; no allowance, so it is a second opinion
that also sees tiny but persistent shifts. The daemon therefore keeps an ADWIN detection only if
the window ADWIN kept sits at least the class's allowance (below) from the calibration's mean
(`shadowd.daemon.drift_watch.is_relevant`; judged against the calibration rather than against the part
ADWIN dropped, which right after a slowdown starts is itself partly slow); smaller ones are
counted (`ignored_small_shifts`), not raised.

**What the daemon runs (design r6; r7 raised `min_shift`, below).** Page-Hinkley alone, by default: in the delay tables below it
detects as many slowdowns as both detectors together, at every size on every run; ADWIN made some
detections earlier (compare the *either* rows), mostly the slowest ones, and with both a class's
false-alarm budget is split between them. ADWIN stays available (`[drift] detectors = ["page_hinkley", "adwin"]`); the target
(`[drift] target_false_alarm_rate`) is per judged step of a class and is split evenly over the
detectors watching it, so the drift check as a whole stays within it. The tables here compare
both detectors, each calibrated to 1e-5 per step of its class (the design before r6).

**Design r8: a detection pages only if its shift lasts.** Behind the detectors the daemon holds
each detection pending for `[drift] confirm_steps` (default 200) more judged steps of its class
and raises it as a drift event only if their mean residual still sits at least the class's
allowance, in the detection's direction, from the baseline as it stood before the detection
(`checks/alarm_confirmation.py`); a short burst that comes back is dismissed and counted
(`shadowd_drift_detections{outcome="dismissed"}`). Design r26 adds, where the detectors watch
the residual less its bias (item 4 below), that the residual as measured must have shifted too, by
its own allowance: a bias carried to compositions the window barely held moves only the unbiased
residual (`shadowd_drift_detections_dismissed_raw`). Everything on this page is the detectors' own
behaviour, as measured before r8: the delays are detections (an event comes `confirm_steps`
class steps later) and the false-alarm figures count detections, an upper bound on the events.
The end-to-end figures under r8 are in docs/validation.md.

**Why a healthy engine used to raise alarms, and what the detectors are fed now.** LLMVisor is a
piecewise-linear model; its residual carries a bias of a fraction of a percent to a few percent that
depends on what is in the batch (GEMM wave quantisation, attention tiles, KV reads at long
contexts). On bursty traffic the batch composition moves over hundreds of steps and the residual's
*mean* moves with it, with no change to the engine. A CUSUM whose allowance is below that wander
accumulates it and fires sooner or later whatever its threshold, and a calibration on a few hundred
held-out steps neither sees the wander nor the persistence it brings. An earlier version (allowance
fixed at half of `min_shift`, held-out residuals only) raised alarms within the default demo and
ran well above its false-alarm target on the trace mix (those runs were not stored). Four things
changed
(`shadowd/daemon/calibrator.py`, `checks/`):

1. *Allowance from the measured wander* (`checks/wander.py`): the spread of 100-step means of the
   residual over the whole calibration window, with a one-sided 90 % chi-square upper bound (a
   window holds a few dozen blocks). The allowance is `max(min_shift / 2, 2.5 × that bound)`
   (relative latency; `min_shift = MIN_SHIFT`, the value these figures were made with; design r7
   raised it from 0.02 to 0.04): Page-Hinkley's δ is at least allowance / σ, and ADWIN's
   relevance filter uses the same allowance. It is stored with the calibration, so the smallest shift
   the detectors raise is stated per class (the table below).
2. *A composition domain* (`checks/domain.py`): the 1st–99th percentile range of batch size, KV
   tokens and new tokens per step of the class in the window, widened by `envelope_margin` (×1.5 /
   ÷1.5). Steps outside it are not fed to the residual detectors (the model's bias was never measured
   there) and are counted (`out_of_domain` in `/metrics` and the drift state); the workload-envelope
   check speaks for them.
3. *A slow baseline* (`checks/detrend.py`): each class's clipped z-score is taken relative to an
   exponentially weighted baseline of its own past with a time constant of 100 steps of that class,
   `y_t = z_t − b_{t−1}`. A slowdown makes every step slower from one step on, and passes almost
   whole through the tens of steps Page-Hinkley needs; wander slower than the baseline is absorbed.
   Slow changes of the model's error are the accuracy check's business (per-class error against the
   policy's bound), not the residual detectors'.
   Design r33 (withdrawn after held-out 30: its keener detectors paged on two healthy engines)
   and design r39 (the same behind r34-r38's stratified confirmation, withdrawn after held-out
   38, where a healthy swinging engine paged under it; both kept behind
   `CalibrationSettings.detrend_by_size`, `checks/stratified_detrend.py`) kept that
   baseline per *batch-size stratum* (exact
   up to 8, then quarter octaves) and judged each step against its own stratum's: where the model's
   error is a step function of batch size (a piecewise-linear model against kernels that step with
   padded batch sizes), a mix of sizes that moves slowly is persistent wander against one baseline
   and nothing against each size's own, while a slower engine moves every stratum, and each
   stratum's baseline absorbs it only as that stratum comes back. A stratum's baseline is the
   running mean of its first 100 visits, then weighted over 100 of its visits; until it has been
   run 10 times it leans on the class baseline, which also judges steps without a known batch
   size. Thresholds are calibrated on the residual so detrended (the AR sieve below resamples
   what the detectors see, since it cannot invent strata); the confirmation stage still measures a
   shift against the class baseline. The figures on this page were measured before r33, with one
   class baseline.
4. *The bias taken out* (design r24, `checks/residual_bias.py`): per class, the residual's bias
   over batch composition is fitted on the calibration window as a linear function of the log of
   batch size, KV tokens and new tokens per step, centred on the window's means; the detectors,
   their thresholds, the wander allowance and the priming all see the residual less it. A bias
   that follows load is wander the baseline above absorbs only when it is slower than 100 steps;
   on load that swings faster it raised the thresholds until a 5 % slowdown went unseen
   (docs/validation.md, design r24). A whole-step slowdown moves every step's residual alike, so
   it passes whole. The figures on this page are measured with it.

**Calibration to a stated false-alarm rate** (`checks/threshold_search.py`, run by
`shadowd/daemon/calibrator.py`). The daemon buffers its first `warmup_steps` (2000) steps, fits LLMVisor on
the earlier 70 % and scores the later 30 % out of sample: the detectors are tuned on the same kind of
error they will see live. To pick a threshold for 1e-5 false alarms per step (one per 100k steps,
per detector and class) from a few hundred residuals, the standardised held-out residuals are
resampled by an **AR sieve** (`checks/resample.py`: an autoregression of AIC-chosen order driven by
innovations drawn from its own fitted innovations — it keeps the serial correlation and the
empirical tails, and can produce runs the window never contained; a block bootstrap only recombines
stretches already seen and understates rare-event rates). The AR sieve is fitted twice — to the
held-out residuals and to the whole window's (fit part in sample: three times as long, so it shows
more of the tails and the persistence) — both standardised with the held-out mean and σ and passed
through the same baseline filter as live residuals, and each detector takes the more conservative
of the two results. On 400k resampled steps per detector, class and noise model, the chosen
Page-Hinkley threshold is the smallest whose one-sided 95 % Poisson upper bound on the alarm rate is
≤ the target (a whole grid is scored in one vectorised pass that reproduces river's recursion); the
chosen ADWIN δ is the largest (most sensitive) that meets it, by bisection with river's own ADWIN.
A threshold is stored with the evidence for it (alarms, exposure, bound, noise model).
Each detection is a `drift_events` row (time, `step_seq`, detector, statistic, step class). The
other drift checks — coefficient drift (online refit against the calibrated version) and
workload-envelope drift (contexts, batch sizes, tokens per step, tenants beyond 1.5× what
calibration saw) — are not measured on this page.
"""

DOC_REST = """
## Stability of per-tenant shares

`checks/share_stability.py`, scheduled by the daemon through `shadowd/daemon/stability.py`. For requests in
the same shape bucket, how much does the attributed share depend on who else is in the batch (batch
size, the others' prefill tokens and contexts)? The answer is an effect size with a cluster-bootstrap
confidence interval (steps resampled whole), plus per-tenant cost per unit of work across
composition strata. It is computed over the most recent stored steps, re-attributed with the model in
force, for three splits side by side: LLMVisor's own-work share `θ·φ_i`, LLMVisor's full share
(own work plus the fixed per-step cost, split equally or pro rata), and the VTC token split.

**What the gate judges is LLMVisor's own-work share.** A cost every non-empty batch pays (weights
read once per step, launch overheads) has Shapley value `β/|B|` per member, so *any* fair split of it
depends on batch size by design; what must not depend on batch-mates is the charge for a request's
own work. All three splits are reported, so the fixed-term policy's effect stays visible. The check
passes when the effect's upper confidence bound is within the policy's bound, fails when its lower
bound is beyond it, and is inconclusive while the interval straddles it.

## The gate

`checks/gate.py`, `checks/rules.py`, `checks/policy.py` (defaults in code, overridable in config).
Every evaluation runs every check — accuracy per step class, evidence minimums (steps per class,
shadow duration, tenants, longest context seen), no unresolved drift events, stability within
bounds, calibrated platform key equal to the running engine's, data health (tap drop rate,
freshness), coverage (steps beyond the calibrated envelope, share of recent attributed time carried
by tenants calibration never saw) — and each yields pass / fail / inconclusive with its value and
threshold. A *fail* is evidence that attribution is wrong now (accuracy, drift, stability,
platform, data health) and pages; missing or thin evidence, traffic outside the calibrated envelope
and unseen tenants are *inconclusive*, each with the way out in its reason (wait, and how long at
the rate so far; recalibrate).
The advantage over the token baseline (its p90 error over the model's, per class) is reported
beside the verdict (`details.advantage`, `/metrics` `shadowd_gate_advantage_ratio`, the report), not
judged. A step class one detector cannot be calibrated for stays watched by the other, and the
drift check names what it relies on. The round is *fail* if any check fails, *inconclusive* if none
fails but some is inconclusive, else *pass*. Then:

- a failing round → `NO_GO` at once, and the pass count is reset;
- `GO` only after `consecutive_passes` passing rounds in a row (a pass counts only if
  `min_pass_interval_s` has passed since the last counted one); leaving `NO_GO` needs the same run
  of passes, and inconclusive rounds hold `NO_GO` (no flapping between exit codes 1 and 2 while
  evidence rebuilds);
- while `GO`, up to `inconclusive_grace` consecutive inconclusive rounds are tolerated, but only when
  the inconclusive checks have their evidence and are not critical (e.g. a stability interval that
  straddles its bound); missing evidence, stale data, an unknown platform or a rule error drop `GO`
  at once — fail closed;
- starting fresh, or after a gap between evaluations longer than `decision_ttl_s`, the verdict is
  `INCONCLUSIVE` until the pass run is complete.

Decisions go to `gate_decisions`, to `/gate` on the daemon's loopback HTTP, and atomically to a state
file; `shadowd gate [--db PATH | --daemon URL] [--json]` exits 0 GO, 1 NO_GO, 2 INCONCLUSIVE, 3 error.

## Limits of these figures

- **Synthetic long streams.** 1e-5 per step cannot be observed on a few thousand real steps; the
  long-stream rates are measured on AR-sieve resamples — a model of the noise (linear
  autocorrelation + i.i.d. empirical innovations). Non-linear dependence, regime switches or slow
  trends in real residuals (e.g. contexts growing over hours) are not in them. The rates on the real
  later steps are only upper bounds (table (a)).
- **One engine, one seed per workload.** H100 kernel tables with their measured jitter, llama-3.1-8b,
  three tenant mixes, seed 0. A real GPU's residuals (clock boosts, thermal throttling, co-tenancy) can
  have heavier tails and longer memory; the daemon recalibrates on its own warm-up window for that.
- **Unwatched classes.** With the default 2000-step window and a 30 % holdout, a class needs ≥ 300 of
  ~600 held-out steps to be watched: in each run here only the dominant class is (mixed on the busy
  demo mix, decode on the trace and light mixes). A slowdown is then seen only through the watched
  class. The gate fails closed on this: when a required class is unwatched (or blind, see above),
  the drift evidence is missing and the drift check is inconclusive. Of the policy's
  `required_step_classes` (all three by default) the daemon requires those carrying ≥ 25 % of the
  attributed steps (`GateKeeper.min_class_share`): a class that is a sliver of the traffic cannot
  gather evidence and governs little. A longer `warmup_steps` watches more classes; the warm-up
  window also widens by itself (up to `max_window_factor` × `warmup_steps`) until every class
  carrying ≥ 25 % of its steps has enough held-out steps.
- **Delay model.** The offline delay figures slow the residuals of steps the scheduler formed at full
  speed; in the engine a slowdown also changes what the scheduler forms next (more arrivals per
  step, bigger batches), which the end-to-end demo figure includes. The delays also depend on how long
  the detectors have run before the change (Page-Hinkley compares with its running mean since its last
  reset): here the warm-up before the change is fixed; in the demo it is the steps since calibration.
- **Alarms just before a change.** A detector that fired shortly before the slowdown has reset; Page-
  Hinkley then cannot fire for the next 100 steps of its class (`ph_min_instances`) and learns its
  running mean partly on slowed steps; the slow baseline (100 steps) also starts absorbing the new
  level, so a change that lands during such a reset is caught later or, for small shifts, missed.
- **Overlapping starts.** The starts for the delay figures are drawn from one stream of a few thousand
  steps, so their spread understates the run-to-run spread.
- **The smallest shift raised is per class.** Page-Hinkley's allowance and ADWIN's filter are
  the class's `allowance` (≥ ALLOWANCE_FLOOR % of latency, half of `min_shift`; more where the
  residual mean wanders more: see the calibration table), so the 2 % rows are at or below the
  design limit and are caught late or missed by design since r7; the faults the gate must catch
  are 5 % and more. The delay table gives each shift's median delay and misses per run (see also
  *Blind stretches*).
- **A longer window is not yet a cure on bursty traffic.** While preparing this page the trace mix
  was also calibrated offline on 4000- and 6000-step windows (this design, then with a 200-step
  baseline; not in the tables): with 6000 steps calibration could not reach 1e-5 for the decode
  class and left it unwatched, saying why (the fail-closed path). Calibrating per load regime is not done. Since design r3 the daemon re-fits on its own when
  traffic leaves the calibration, but only while the model in force still meets its accuracy limits
  there and its residual has not moved on the compositions it was calibrated on (`checks/refit_guard.py`),
  so that a slow real drift is not absorbed; docs/validation.md runs the fault scenarios against it.
- **Light traffic.** At 1–6 requests per batch LLMVisor's bias depends on the exact batch size
  (CUDA-graph padding, the memory-bound flat region) more than the calibration window shows; the
  light mix keeps real alarms (table (a)). A per-batch-size bias correction was
  tried and rejected: the window's per-bucket means did not predict the later ones.
"""


# -- main ---------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--quick", action="store_true", help="one 3500-step run, 200k long steps, no demo; prints"
    )
    ap.add_argument("--runs", default=",".join(RUNS), help="comma-separated: " + ", ".join(RUNS))
    ap.add_argument("--steps", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--settle", type=float, default=0.1)
    ap.add_argument("--warmup-steps", type=int, default=2000, help="calibration window (daemon default)")
    ap.add_argument("--long-steps", type=int, default=2_000_000)
    ap.add_argument("--offsets", type=int, default=24)
    ap.add_argument("--warmup", type=int, default=1000, help="unchanged steps before each slowdown")
    ap.add_argument("--horizon", type=int, default=2000)
    ap.add_argument("--skip-demo", action="store_true")
    ap.add_argument(
        "--demo-json", help="reuse a saved `shadowd demo ... --json` output instead of running it"
    )
    ap.add_argument("--demo-timeout", type=float, default=600)
    ap.add_argument("--cache", help="directory to keep the reference runs in (reused if present)")
    ap.add_argument("--out", default="docs/checks", help="writes OUT.md and OUT.json; '-' prints only")
    ap.add_argument("--from-json", help="re-render OUT.md from a saved OUT.json (no measuring)")
    a = ap.parse_args(argv)
    if a.from_json:
        res = json.loads(Path(a.from_json).read_text())
        md = markdown(res)
        if a.out == "-":
            print(md)
        else:
            Path(a.out + ".md").write_text(md)
            print(f"wrote {a.out}.md from {a.from_json}", file=sys.stderr)
        return 0
    if a.quick:
        a.runs, a.steps, a.long_steps, a.offsets, a.skip_demo = "demo-mix", 3500, 200_000, 8, True
        a.out = "-"
    from benchmarks.machine import machine
    from shadowd.daemon.calibrator import CalibrationSettings

    min_shift = CalibrationSettings().min_shift
    t0 = time.perf_counter()
    cache = Path(a.cache) if a.cache else None
    runs, fas, delays = [], [], []
    for name in a.runs.split(","):
        tenants, over = RUNS[name]
        kw = {"steps": a.steps, "warmup_steps": a.warmup_steps, **({} if a.quick else over)}
        run = load_or_run(
            name,
            tenants,
            cache,
            seed=a.seed,
            platform="h100_sxm",
            model="llama-3.1-8b",
            settle=a.settle,
            **kw,
        )
        print(
            f"{name}: {run['steps']} steps, run {run['run_seconds']} s, calibrate "
            f"{run['calibrate_seconds']} s, watched {sorted(run['drift'])}, unwatched "
            f"{sorted(run['unwatched'])}",
            file=sys.stderr,
        )
        t = time.perf_counter()
        fa = false_alarms(run, a.long_steps, min_shift, a.seed)
        print(f"  false alarms {time.perf_counter() - t:.0f} s", file=sys.stderr)
        t = time.perf_counter()
        d = {
            f"delay_{k}": detection_delay(
                run,
                SHIFTS,
                offsets=a.offsets,
                warmup=a.warmup,
                horizon=a.horizon,
                min_shift=min_shift,
                kernel_only=(k == "kernel"),
            )
            for k in ("step", "kernel")
        }
        print(f"  delays {time.perf_counter() - t:.0f} s", file=sys.stderr)
        runs.append(
            {
                k: v
                for k, v in run.items()
                if k not in ("holdout", "residual", "kind", "kernel_share", "in_domain")
            }
        )
        fas.append(fa)
        delays.append(d)
    demo = None
    if a.demo_json:
        demo = {
            "command": " ".join(DEMO_CMD),
            "exit_code": None,
            "wall_seconds": math.nan,
            **summarise_demo(json.loads(Path(a.demo_json).read_text())),
        }
    elif not a.skip_demo:
        demo = demo_figure(a.demo_timeout)
    cmd = ".venv/bin/python -m benchmarks.drift_figures" + ("" if argv is None else " " + " ".join(argv))
    if argv is None and len(sys.argv) > 1:
        cmd += " " + " ".join(sys.argv[1:])
    res = {
        "command": cmd,
        "machine": machine(),
        "args": vars(a),
        "min_shift": min_shift,
        "runs": runs,
        "false_alarms": fas,
        "delays": delays,
        "demo": demo,
        "wall_seconds": time.perf_counter() - t0,
    }
    md = markdown(res)
    if a.out == "-":
        print(md)
    else:
        Path(a.out + ".md").write_text(md)
        Path(a.out + ".json").write_text(json.dumps(res, indent=1, default=_jsonable))
        print(f"wrote {a.out}.md and {a.out}.json", file=sys.stderr)
    return 0


def _jsonable(x: Any) -> Any:
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    return str(x)


if __name__ == "__main__":
    sys.exit(main())
