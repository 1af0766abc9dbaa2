"""Pick detector thresholds to a stated false-alarm rate, and measure what they buy.

Thresholds are chosen on *stationary* residuals from a calibration window: the window is
standardised and resampled (``checks.resample.ar_sieve_bootstrap``: an AR fit driven by
resampled innovations, which keeps serial correlation and the empirical tails yet can
produce runs the window never contained) into a long synthetic stationary stream, and each
detector's alarm rate is measured on it as alarms per step of exposure. The chosen
threshold is the most sensitive one whose one-sided 95 % Poisson upper bound on that rate
is at or below ``target_rate`` (default 1e-5: one false alarm per 100k steps, per detector
and step class). Estimating so rare an event from a few thousand steps is extrapolation by
a model of the noise (AR + empirical innovations); a block bootstrap cannot do it (it only
recombines stretches already seen, and measurably understates the rate), and the figures
in docs/checks.md check the chosen thresholds on fresh stationary data.

Page-Hinkley is scored for a whole grid of thresholds in one vectorised pass
(``page_hinkley_paths`` reproduces river's recursion exactly; a test holds it to river).
Runs start from a fresh detector and are cut at ``segment_len``: the first steps after a
reset, while the running mean is still being learned, are the most alarm-prone, so this
over- rather than under-estimates the long-run rate. (That holds for ``alpha = 1``, the
value used here: with river's default forgetting 0.9999 the cumulative sums become a
stationary process with a standard deviation of ~70 after ~10⁴ steps, and the detector
fires on pure noise in long runs.) ADWIN is scored by running river's own implementation
over one long resampled stream per candidate ``delta``, bisecting the ``delta`` grid.

``calibrate_class`` can take a second noise model (``noise``, e.g. the whole calibration window)
and keeps the more conservative threshold of the two; with ``detrend_steps`` the resampled
streams go through the same slow-baseline filter as live residuals (``checks.detrend``).

``measure_false_alarm_rate`` and ``measure_detection_delay`` run the real detectors at a
calibration's thresholds and return plain dicts (the figures in docs/checks.md).

>>> import numpy as np
>>> r = synthetic_residuals(4000, noise_std=0.03, seed=1)
>>> cal = calibrate_class(r, "decode", target_rate=1e-4, n_steps=60_000, adwin_n_steps=60_000,
...                       seed=1)
>>> cal.ph_threshold > 5, cal.estimates["page_hinkley"]["rate_upper95"] <= 1e-4
(True, True)
>>> out = measure_detection_delay(cal, shifts=(0.15,), noise_std=0.03, reps=3, warmup=500,
...                               horizon=300, seed=2)
>>> row = out["rows"][0]
>>> row["shift"], row["detector"], row["missed"], row["median_delay"] < 50
(0.15, 'page_hinkley', 0, True)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from scipy.signal import lfilter

from checks.adwin import AdwinDetector
from checks.detrend import detrend
from checks.drift_calibration import FAULT_GROUPS_KEPT, DriftCalibration
from checks.resample import ar_sieve_bootstrap, poisson_upper, stationary_bootstrap
from checks.stratified_detrend import StratifiedDetrend

PH_THRESHOLD_GRID = np.round(np.arange(2.0, 120.0 + 1e-9, 0.25), 2)
ADWIN_DELTA_GRID = (0.2, 0.1, 0.05, 0.02, 0.01, 5e-3, 2e-3, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-10, 1e-12)


def synthetic_residuals(n: int, noise_std: float = 0.03, seed: int = 0, ar: float = 0.0) -> np.ndarray:
    """Stationary relative residuals: Gaussian noise with an optional AR(1) coefficient ``ar``."""
    rng = np.random.default_rng(seed)
    e = rng.standard_normal(n)
    if ar:
        e = lfilter([np.sqrt(1 - ar * ar)], [1.0, -ar], e)
    return noise_std * e


def page_hinkley_paths(
    z: np.ndarray, delta: float, min_instances: int = 100, alpha: float = 1.0
) -> np.ndarray:
    """River's two-sided Page-Hinkley statistic after each value of each row of ``z``.

    Rows are independent runs from a fresh detector; values before ``min_instances`` are
    ``-inf`` (river cannot fire there). River fires when the statistic exceeds its threshold.
    """
    z = np.atleast_2d(np.asarray(z, dtype=float))
    n = z.shape[1]
    dev = z - np.cumsum(z, axis=1) / np.arange(1, n + 1)
    sum_inc = lfilter([1.0], [1.0, -alpha], dev - delta, axis=1)
    sum_dec = lfilter([1.0], [1.0, -alpha], dev + delta, axis=1)
    up = sum_inc - np.minimum.accumulate(sum_inc, axis=1)
    down = np.maximum(np.maximum.accumulate(sum_dec, axis=1), -1.0) - sum_dec
    stat = np.maximum(up, down)
    stat[:, : max(min_instances - 1, 0)] = -np.inf
    return stat


def page_hinkley_alarm_curve(
    z_runs: np.ndarray,
    thresholds: Sequence[float],
    delta: float,
    min_instances: int = 100,
    alpha: float = 1.0,
) -> dict[str, np.ndarray]:
    """Alarms and exposure (steps) per candidate threshold; each row of ``z_runs`` is one run."""
    h = np.asarray(thresholds, dtype=float)
    stat = page_hinkley_paths(z_runs, delta, min_instances, alpha)
    running_max = np.maximum.accumulate(stat, axis=1)
    n = running_max.shape[1]
    alarms = np.zeros(len(h))
    exposure = np.zeros(len(h))
    for row in running_max:
        first = np.searchsorted(row, h, side="right")  # first index whose statistic > h
        crossed = first < n
        alarms += crossed
        exposure += np.where(crossed, first + 1, n)
    return {"thresholds": h, "alarms": alarms, "exposure": exposure}


def _estimate(alarms: float, exposure: float) -> dict[str, float]:
    return {
        "alarms": int(alarms),
        "exposure": float(exposure),
        "rate": float(alarms / exposure) if exposure else float("nan"),
        "rate_upper95": poisson_upper(int(alarms), exposure),
    }


def calibrate_page_hinkley(
    z: np.ndarray,
    target_rate: float = 1e-5,
    delta: float = 0.25,
    min_instances: int = 100,
    alpha: float = 1.0,
    n_steps: int = 3_000_000,
    segment_len: int = 20_000,
    clip: float = np.inf,
    rng: np.random.Generator | None = None,
    thresholds: Sequence[float] = PH_THRESHOLD_GRID,
    detrend_steps: int = 0,
) -> tuple[float, dict[str, float]]:
    """Smallest threshold whose 95 % upper false-alarm rate on resampled ``z`` is ≤ target."""
    rng = rng or np.random.default_rng(0)
    h = np.asarray(thresholds, dtype=float)
    alarms, exposure = np.zeros(len(h)), np.zeros(len(h))
    n_runs = max(1, int(np.ceil(n_steps / segment_len)))
    stream = np.clip(ar_sieve_bootstrap(z, n_runs * segment_len, rng), -clip, clip)
    runs = detrend(stream.reshape(n_runs, segment_len), detrend_steps)[0]  # runs ~independent
    for start in range(0, n_runs, 32):  # bounded memory: 32 runs at a time
        curve = page_hinkley_alarm_curve(runs[start : start + 32], h, delta, min_instances, alpha)
        alarms += curve["alarms"]
        exposure += curve["exposure"]
    for hi, a, e in zip(h, alarms, exposure):
        if poisson_upper(int(a), e) <= target_rate:
            return float(hi), _estimate(a, e)
    raise ValueError(
        f"no Page-Hinkley threshold up to {h[-1]} reaches {target_rate:g} false alarms per step "
        f"(exposure {exposure[-1]:.0f} steps); the calibration residuals may not be stationary, "
        "or n_steps is too small for the target"
    )


def alarm_count(detector: Any, z: np.ndarray) -> int:
    """How many times ``detector`` fires over ``z`` (detector resets itself after each)."""
    update = detector.update
    return sum(1 for x in np.asarray(z, dtype=float).tolist() if update(x))


def calibrate_adwin(
    z: np.ndarray,
    target_rate: float = 1e-5,
    n_steps: int = 1_000_000,
    clip: float = np.inf,
    rng: np.random.Generator | None = None,
    deltas: Sequence[float] = ADWIN_DELTA_GRID,
    clock: int = 32,
    grace_period: int = 10,
    detrend_steps: int = 0,
) -> tuple[float, dict[str, float]]:
    """Largest ADWIN ``delta`` (most sensitive) whose 95 % upper false-alarm rate is ≤ target.

    Alarm counts fall as ``delta`` falls, so the grid is bisected (about log2(len) runs).
    """
    rng = rng or np.random.default_rng(0)
    stream = detrend(np.clip(ar_sieve_bootstrap(z, n_steps, rng), -clip, clip), detrend_steps)[0]
    grid = sorted(deltas, reverse=True)  # most sensitive first
    tried: dict[int, int] = {}

    def passes(i: int) -> bool:
        if i not in tried:
            det = AdwinDetector(delta=grid[i], clock=clock, grace_period=grace_period)
            tried[i] = alarm_count(det, stream)
        return poisson_upper(tried[i], n_steps) <= target_rate

    lo, hi = 0, len(grid) - 1
    if not passes(hi):
        raise ValueError(
            f"no ADWIN delta down to {grid[hi]:g} reaches {target_rate:g} false "
            f"alarms per step over {n_steps} resampled steps"
        )
    while lo < hi:  # first passing index
        mid = (lo + hi) // 2
        if passes(mid):
            hi = mid
        else:
            lo = mid + 1
    return float(grid[lo]), _estimate(tried[lo], n_steps)


def calibrate_class(
    residuals: np.ndarray,
    step_class: str,
    *,
    target_rate: float = 1e-5,
    clip: float = 5.0,
    ph_delta: float = 0.25,
    ph_min_instances: int = 100,
    ph_alpha: float = 1.0,
    n_steps: int = 3_000_000,
    segment_len: int = 20_000,
    adwin_n_steps: int = 1_000_000,
    seed: int = 0,
    detector_names: Sequence[str] = ("page_hinkley", "adwin"),
    min_rows: int = 500,
    allowance: float = 0.0,
    domain: Mapping[str, tuple[float, float]] | None = None,
    detrend_steps: int = 0,
    noise: np.ndarray | None = None,
    confirm_steps: int = 0,
    groups: np.ndarray | None = None,
    noise_groups: np.ndarray | None = None,
) -> DriftCalibration:
    """Standardisation and thresholds for one step class from its stationary relative residuals.

    ``allowance`` (relative latency; ``checks.wander.allowance``) raises Page-Hinkley's
    allowance to at least ``allowance / std`` standard deviations and travels with the result;
    so does ``domain`` (``checks.domain.feature_domain``). ``detrend_steps`` (``checks.detrend``)
    is applied to the resampled streams, so thresholds hold for what the detectors are fed.
    ``confirm_steps`` (``checks.alarm_confirmation``) travels with the result; thresholds are
    chosen for the detections themselves, so confirmation can only lower the alarm rate.
    ``noise`` (relative residuals, e.g. the whole calibration window, fit part included) is a
    second noise model: the AR sieve resamples it too, standardised like ``residuals``, and
    each detector gets the more conservative of the two thresholds. A longer series shows
    persistence a short held-out part lacks; the held-out part shows the out-of-sample scale.
    A detector no threshold of which reaches ``target_rate`` is left out (``unavailable`` says
    why) while another still can; ``ValueError`` only when none can.

    ``groups`` (design r33): each residual's batch-size stratum, and ``noise_groups`` the
    ``noise``'s.  The detectors then judge each step against its stratum's own baseline
    (``checks.stratified_detrend``): each series is so detrended *before* it is resampled (the
    AR sieve cannot invent the strata), and the resampled streams are not detrended again.
    """
    r = np.asarray(residuals, dtype=float)
    finite = np.isfinite(r)
    by_size = groups is not None
    if by_size:
        groups = np.asarray(groups, dtype=np.int64)
        if groups.shape != r.shape:
            raise ValueError(f"{step_class}: {len(groups)} groups for {len(r)} residuals")
        groups = groups[finite]
    r = r[finite]
    if len(r) < min_rows:
        raise ValueError(f"{step_class}: {len(r)} finite calibration residuals, need ≥ {min_rows}")
    mean, std = float(r.mean()), float(r.std(ddof=1))
    bases = [("held_out", r, groups)]
    if by_size and noise is not None and noise_groups is not None and len(noise_groups) != len(noise):
        raise ValueError(f"{step_class}: {len(noise_groups)} groups for {len(noise)} noise residuals")
    if noise is not None:
        bases.append(("noise", np.asarray(noise, dtype=float), noise_groups))
    ph_delta = max(ph_delta, allowance / std)
    rng = np.random.default_rng(seed)
    # Detectors not asked for never fire: an infinite threshold, a zero delta.
    params: dict[str, Any] = {"ph_threshold": float("inf"), "adwin_delta": 0.0}
    estimates: dict[str, dict[str, Any]] = {}
    unavailable: dict[str, str] = {}
    fed_detrend = detrend_steps
    for source, base, base_groups in bases:
        ok = np.isfinite(base)
        z = np.clip((base[ok] - mean) / std, -clip, clip)
        if by_size:  # design r33: detrended by stratum here, not again on the resampled streams
            g = None if base_groups is None else np.asarray(base_groups, dtype=np.int64)[ok]
            z = StratifiedDetrend(detrend_steps).update_many(z, g)[0]
            fed_detrend = 0
        if "page_hinkley" in detector_names and "page_hinkley" not in unavailable:
            try:
                h, est = calibrate_page_hinkley(
                    z,
                    target_rate,
                    ph_delta,
                    ph_min_instances,
                    ph_alpha,
                    n_steps,
                    segment_len,
                    clip,
                    rng,
                    detrend_steps=fed_detrend,
                )
            except ValueError as exc:
                unavailable["page_hinkley"] = f"{source}: {exc}"
            else:
                if "page_hinkley" not in estimates or h > params["ph_threshold"]:  # the higher wins
                    params["ph_threshold"], estimates["page_hinkley"] = h, {**est, "source": source}
        if "adwin" in detector_names and "adwin" not in unavailable:
            try:
                d, est = calibrate_adwin(z, target_rate, adwin_n_steps, clip, rng, detrend_steps=fed_detrend)
            except ValueError as exc:
                unavailable["adwin"] = f"{source}: {exc}"
            else:
                if "adwin" not in estimates or d < params["adwin_delta"]:  # the smaller wins
                    params["adwin_delta"], estimates["adwin"] = d, {**est, "source": source}
    # A detector that cannot reach the target on either noise model is dropped, not the class:
    # the other one still watches it at the stated rate. Only when none can is the class blind.
    usable = tuple(n for n in detector_names if n not in unavailable)
    if not usable:
        why = "; ".join(f"{k}: {v}" for k, v in unavailable.items())
        raise ValueError(f"{step_class}: no drift detector reaches {target_rate:g} false alarms ({why})")
    for name in unavailable:
        estimates.pop(name, None)
        params["ph_threshold" if name == "page_hinkley" else "adwin_delta"] = (
            float("inf") if name == "page_hinkley" else 0.0
        )
    for est in estimates.values():
        est.update(resampler="ar_sieve", seed=seed)
    return DriftCalibration(
        step_class=step_class,
        mean=mean,
        std=std,
        clip=clip,
        ph_delta=ph_delta,
        ph_min_instances=ph_min_instances,
        ph_alpha=ph_alpha,
        target_rate=target_rate,
        n_calibration=len(r),
        allowance=allowance,
        domain=dict(domain or {}),
        detrend_steps=int(detrend_steps),
        confirm_steps=int(confirm_steps),
        detector_names=usable,
        unavailable=unavailable,
        estimates=estimates,
        detrend_by_size=by_size,
        fault_groups=tuple(groups[-FAULT_GROUPS_KEPT:].tolist()) if by_size else (),
        **params,
    )


def calibrate(residuals_by_class: Mapping[str, np.ndarray], **kwargs: Any) -> dict[str, DriftCalibration]:
    """``calibrate_class`` for each step class (seeds offset per class)."""
    seed = kwargs.pop("seed", 0)
    return {
        cls: calibrate_class(r, cls, seed=seed + i, **kwargs)
        for i, (cls, r) in enumerate(sorted(residuals_by_class.items()))
    }


def measure_false_alarm_rate(residuals: np.ndarray, calibration: DriftCalibration) -> dict[str, Any]:
    """Run each detector at ``calibration``'s thresholds over a long stationary residual array."""
    z = calibration.prepare(residuals)
    out: dict[str, Any] = {"step_class": calibration.step_class, "steps": int(len(z))}
    for det in calibration.detectors():
        est = _estimate(alarm_count(det, z), len(z))
        est["per_100k_steps"] = est["rate"] * 1e5
        est["threshold"] = det.threshold
        out[det.name] = est
    return out


def measure_detection_delay(
    calibration: DriftCalibration,
    shifts: Sequence[float] = (0.02, 0.05, 0.08, 0.15),
    *,
    noise_std: float | None = None,
    residuals: np.ndarray | None = None,
    warmup: int = 3000,
    horizon: int = 2000,
    reps: int = 20,
    seed: int = 0,
    mean_block: float = 64.0,
    groups: Sequence[int] | np.ndarray | None = None,
) -> dict[str, Any]:
    """Steps from a multiplicative slowdown to its detection, per shift size and detector.

    Each repetition builds a stationary residual sequence of ``warmup + horizon`` steps
    (block-resampled from ``residuals`` if given, else Gaussian with ``noise_std``, else
    with the calibration's own mean/std), then slows every step from ``warmup`` on by
    ``1 + shift``: ``r' = (1 + shift)(1 + r) - 1``. Delay 1 means caught on the first slow
    step; a repetition with no detection within ``horizon`` counts as missed. False alarms
    before the shift are counted too (they reset the detector and can delay detection).
    ``groups`` (design r33): the steps' batch-size strata, repeated to the sequence's length
    (read only by a calibration that detrends by stratum).
    """
    rng = np.random.default_rng(seed)
    n = warmup + horizon
    g = None if groups is None or not len(groups) else np.resize(np.asarray(groups, dtype=np.int64), n)
    names = [d.name for d in calibration.detectors()]
    delays: dict[tuple[float, str], list[float]] = {(s, nm): [] for s in shifts for nm in names}
    early: dict[tuple[float, str], int] = {(s, nm): 0 for s in shifts for nm in names}
    for _ in range(reps):
        if residuals is not None:
            base = stationary_bootstrap(np.asarray(residuals, dtype=float), n, mean_block, rng)
        elif noise_std is not None:
            base = rng.normal(0.0, noise_std, n)
        else:
            base = rng.normal(calibration.mean, calibration.std, n)
        for s in shifts:
            r = base.copy()
            r[warmup:] = (1 + s) * (1 + r[warmup:]) - 1
            z = calibration.prepare(r, g).tolist()
            for det in calibration.detectors():
                first = np.inf
                for i, x in enumerate(z):
                    if det.update(x):
                        if i < warmup:
                            early[(s, det.name)] += 1
                        else:
                            first = i - warmup + 1
                            break
                delays[(s, det.name)].append(first)
    rows = []
    for (s, nm), d in delays.items():
        arr = np.asarray(d)
        hit = arr[np.isfinite(arr)]
        rows.append(
            {
                "shift": s,
                "detector": nm,
                "reps": reps,
                "detected": int(len(hit)),
                "missed": int(reps - len(hit)),
                "median_delay": float(np.median(hit)) if len(hit) else None,
                "p90_delay": float(np.quantile(hit, 0.9)) if len(hit) else None,
                "max_delay": float(hit.max()) if len(hit) else None,
                "false_alarms_before_shift": early[(s, nm)],
            }
        )
    return {
        "step_class": calibration.step_class,
        "noise_std": noise_std,
        "source": "residuals" if residuals is not None else "gaussian",
        "warmup": warmup,
        "horizon": horizon,
        "reps": reps,
        "thresholds": {"page_hinkley": calibration.ph_threshold, "adwin_delta": calibration.adwin_delta},
        "rows": rows,
    }


def measure_drift_figures(
    noise_std: float = 0.03,
    *,
    ar: float = 0.0,
    n_calibration: int = 5000,
    n_stationary: int = 2_000_000,
    shifts: Sequence[float] = (0.02, 0.05, 0.08, 0.15),
    reps: int = 20,
    target_rate: float = 1e-5,
    seed: int = 0,
) -> dict[str, Any]:
    """The synthetic figures for docs/checks.md in one call.

    Calibrates on ``n_calibration`` Gaussian (optionally AR(1)) residuals with ``noise_std``,
    measures the false-alarm rate on ``n_stationary`` *fresh* steps of the same law (not the
    resampled calibration stream), and the detection delay of each slowdown in ``shifts``.
    """
    cal = calibrate_class(
        synthetic_residuals(n_calibration, noise_std, seed, ar),
        "synthetic",
        target_rate=target_rate,
        seed=seed,
    )
    fresh = synthetic_residuals(n_stationary, noise_std, seed + 1, ar)
    delays = measure_detection_delay(
        cal,
        shifts,
        residuals=None if not ar else synthetic_residuals(n_calibration, noise_std, seed + 2, ar),
        noise_std=noise_std,
        reps=reps,
        seed=seed + 3,
    )
    return {
        "noise_std": noise_std,
        "ar": ar,
        "calibration": cal.to_dict(),
        "false_alarms": measure_false_alarm_rate(fresh, cal),
        "detection_delay": delays,
    }
