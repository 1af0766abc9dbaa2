"""Online drift detection on the latency model's residuals, per step class.

Each step's relative residual ``r = (T - T_hat) / T_hat`` (measured vs predicted step
latency) is standardised with its class's calibration (``checks.drift_calibration``) and fed
to that class's detectors (Page-Hinkley and ADWIN, river). Steps of different classes
(prefill-only, decode-only, mixed) have different error laws, so each class has its own
detectors and thresholds. A detection becomes a ``DriftEvent``; river resets a detector after
it fires, so the monitor keeps the counts. Classes without a calibration are counted and
skipped, never guessed at. Detector state is in memory only: after a restart the detectors
learn their running mean again (``ph_min_instances`` steps before Page-Hinkley can fire).

>>> import numpy as np
>>> from checks.drift_calibration import DriftCalibration
>>> cal = DriftCalibration(step_class="decode", mean=0.0, std=0.03, ph_threshold=21.0,
...                        adwin_delta=0.002)
>>> mon = DriftMonitor({"decode": cal})
>>> rng = np.random.default_rng(0)
>>> r = np.r_[rng.normal(0, 0.03, 2000), 1.08 * (1 + rng.normal(0, 0.03, 500)) - 1]
>>> events = mon.update_many(np.arange(2500), ["decode"] * 2500, r, np.arange(2500) * 0.02)
>>> first = min(e.step_seq for e in events)
>>> 2000 <= first < 2100, sorted({e.detector for e in events})
(True, ['adwin', 'page_hinkley'])
>>> mon.counts()["decode"]["page_hinkley"] >= 1
True
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from checks.alarm_confirmation import PendingAlarm, size_stratum, strata
from checks.detrend import Detrend
from checks.drift_calibration import DriftCalibration
from checks.drift_event import DriftEvent


def relative_residual(measured: np.ndarray | float, predicted: np.ndarray | float) -> np.ndarray:
    """``(T - T_hat) / T_hat``; NaN where the prediction is not positive."""
    t = np.asarray(measured, dtype=float)
    p = np.asarray(predicted, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(p > 0, (t - p) / p, np.nan)


def _at(features: Mapping[str, np.ndarray] | None, idx: np.ndarray) -> dict[str, np.ndarray] | None:
    return {k: np.asarray(v)[idx] for k, v in features.items()} if features else None


class DriftMonitor:
    """Per-class Page-Hinkley and ADWIN over standardised relative residuals."""

    def __init__(self, calibrations: Mapping[str, DriftCalibration], recent_steps: int = 1000) -> None:
        self.calibrations = dict(calibrations)
        self.recent_steps = recent_steps
        # Per class: exponentially weighted share of recent steps inside the domain (judged).
        self._judged_recent = {cls: 1.0 for cls in self.calibrations}
        self._detectors = {cls: cal.detectors() for cls, cal in self.calibrations.items()}
        self._baselines = {cls: cal.baseline() for cls, cal in self.calibrations.items()}
        # Design r26: the raw residual's own baseline, for classes whose confirmation watches it.
        self._raw_baselines = {
            cls: Detrend(cal.detrend_steps) for cls, cal in self.calibrations.items() if cal.watches_raw
        }
        self._confirm = {cls: cal.confirmation() for cls, cal in self.calibrations.items()}
        self.n_seen: dict[str, int] = {cls: 0 for cls in self.calibrations}
        self.n_skipped = 0  # uncalibrated class or non-finite residual
        self.n_out_of_domain: dict[str, int] = {cls: 0 for cls in self.calibrations}
        # Design r31: per class, the last alarm whose shift lasted in compositions too rarely
        # seen to judge it (what it saw); held until the monitor is replaced.
        self._unsupported: dict[str, dict[str, float]] = {}

    def prime(
        self,
        residuals: Mapping[str, Sequence[float] | np.ndarray],
        raw: Mapping[str, Sequence[float] | np.ndarray] | None = None,
        keys: Mapping[str, Sequence[int] | np.ndarray] | None = None,
    ) -> None:
        """Start each class's detectors where its calibration left them (design r21): feed its
        held-out residuals, in time order, through the standardisation, the detrend baseline,
        the confirmation's lag and the detectors, raising nothing and counting nothing.
        ``raw`` (design r26): the same steps' residuals with their bias left in, for classes
        whose confirmation watches them (their raw baseline starts at zero without them, or
        when their length is not that of ``residuals``).  ``keys`` (design r31): the same
        steps' composition strata (``checks.alarm_confirmation.stratum``), for classes whose
        confirmation is stratified (without them, or of another length, its strata start empty).

        A fresh detector takes its first steps as its level: a version installed at the moment
        a fault began (a re-fit, by chance) would learn the slower engine as normal and never
        raise it.  Primed, its level is the calibration's.
        """
        for name, values in residuals.items():
            cal = self.calibrations.get(name)
            if cal is None:
                continue
            r = np.asarray(values, dtype=float)
            rr = np.asarray((raw or {}).get(name, ()), dtype=float)
            rr = rr if rr.shape == r.shape else None
            keep = np.isfinite(r) if rr is None else np.isfinite(r) & np.isfinite(rr)
            z = cal.standardise(r[keep])
            ks = np.asarray((keys or {}).get(name, ()), dtype=np.int64)
            strata = ks[keep].tolist() if ks.shape == r.shape else [None] * len(z)
            y, base = self._detrend(name, z, strata)
            zr, yr = self._raw_stream(name, None if rr is None else rr[keep], len(z))
            confirm, detectors = self._confirm[name], self._detectors[name]
            for zi, yi, bi, zri, yri, k in zip(z.tolist(), y.tolist(), base.tolist(), zr, yr, strata):
                confirm.observe(zi, bi, zri, zri - yri, k)  # nothing pending: the lags fill
                for det in detectors:
                    det.update(yi)  # a detection here is the calibration's own noise: dropped

    def _detrend(self, name: str, z: np.ndarray, keys: Sequence[int | None]) -> tuple[np.ndarray, np.ndarray]:
        """``z`` as the detectors see it (against the detrend baseline; design r33: its batch-size
        stratum's, from ``keys``) and the class baseline each value is judged beside, as the
        confirmation's reference."""
        baseline = self._baselines[name]
        if isinstance(baseline, Detrend):
            y = baseline.update_many(z)
            return y, z - y
        groups = [None if k is None else size_stratum(k) for k in keys]
        return baseline.update_many(z, groups)

    def _raw_stream(
        self, name: str, raw: Sequence[float] | np.ndarray | None, n: int
    ) -> tuple[list[float], list[float]]:
        """Standardised raw residuals and their detrended values for ``n`` judged steps of
        ``name`` (zeros where the class does not watch them or none are given)."""
        base = self._raw_baselines.get(name)
        if base is None or raw is None:
            return [0.0] * n, [0.0] * n
        r = np.asarray(raw, dtype=float)
        zr = self.calibrations[name].standardise(r[np.isfinite(r)])
        if len(zr) != n:
            raise ValueError(f"{name}: {len(zr)} raw residuals for {n} judged steps")
        return zr.tolist(), base.update_many(zr).tolist()

    def update(self, step_seq: int, step_class: str, residual: float, ts: float) -> list[DriftEvent]:
        """Feed one step; returns the detections it completed (usually none)."""
        cal = self.calibrations.get(step_class)
        if cal is None or not math.isfinite(residual):
            self.n_skipped += 1
            return []
        z = min(max((residual - cal.mean) / cal.std, -cal.clip), cal.clip)
        y = self._baselines[step_class].update(z)  # no features here: the class baseline
        raw = self._raw_baselines.get(step_class)  # no features here: raw and unbiased are one
        yr = raw.update(z) if raw is not None else 0.0
        return self._feed(step_class, z, y, z - y, int(step_seq), float(ts), residual, z, yr)

    def _feed(
        self,
        step_class: str,
        z: float,
        y: float,
        base: float,
        step_seq: int,
        ts: float,
        residual: float,
        zr: float = 0.0,
        yr: float = 0.0,
        key: int | None = None,
        beyond: bool = False,
    ) -> list[DriftEvent]:
        """One judged step: ``z`` standardised, ``y`` the same against the detrend baseline,
        ``base`` the class baseline (the confirmation's reference); ``zr``, ``yr`` the raw
        stream's (design r26; read only where the class watches it); ``key`` its composition
        stratum (design r31; ``None``: unknown); ``beyond``: it lies beyond the compositions
        calibration held (design r45).

        Detections go pending (``checks.alarm_confirmation``); the events returned are the
        alarms this step confirmed."""
        self.n_seen[step_class] += 1
        confirm = self._confirm[step_class]
        done = confirm.observe(z, base, zr, zr - yr, key, beyond)
        for det in self._detectors[step_class]:
            if det.update(y):
                info = {"threshold": det.threshold, **(det.last_detection or {})}
                info.update(step_seq=step_seq, ts=ts, residual=residual, z=y, n_detections=det.n_detections)
                p = confirm.open(det.name, str(info.get("direction", "up")), info)
                if p is not None:
                    done.append(p)
        for p in done:
            if p.unsupported:
                sign = -1.0 if p.direction == "down" else 1.0  # the residual's own sign
                self._unsupported[step_class] = {
                    "step_seq": step_seq,
                    "detected_step_seq": p.info.get("step_seq", step_seq),
                    "shift": sign * p.shift_z * self.calibrations[step_class].std,
                    "beyond": p.beyond / p.n if p.beyond_support else 0.0,  # design r45
                }
        return [self._event(step_class, p, step_seq, ts) for p in done if p.confirmed]

    def unsupported(self) -> dict[str, dict[str, float]]:
        """Classes with an alarm whose lasting shift came in batch compositions too rarely seen
        (design r31), or mostly beyond those calibration held (design r45: ``beyond``, the
        window's share there), to tell drift from the model's error, and what the last one saw.  Held
        until the monitor is replaced (a re-fit or a calibration): the shift may still be there."""
        return dict(self._unsupported)

    def _event(self, step_class: str, p: PendingAlarm, step_seq: int, ts: float) -> DriftEvent:
        """A confirmed alarm, raised at the step that confirmed it; where it was detected and the
        shift that lasted are in its details."""
        info = dict(p.info)
        detected_seq, detected_ts = info.pop("step_seq"), info.pop("ts")
        details = {**info, "detected_step_seq": detected_seq, "detected_ts": detected_ts}
        if p.n:
            cal = self.calibrations[step_class]
            details.update(confirm_steps=p.n, lasting_shift=p.shift_z * cal.std)
            if p.raw_shift_z is not None:
                details.update(raw_lasting_shift=p.raw_shift_z * cal.std)
            if p.strata_shift_z is not None:  # design r31
                details.update(strata_lasting_shift=p.strata_shift_z * cal.std)
                details.update(strata=p.strata_level)  # r38: "coarse" where r37's were too thin
            if cal.support:  # design r45: the window's share beyond calibration's compositions
                details.update(beyond_support=p.beyond / p.n)
        return DriftEvent(
            ts=ts,
            step_seq=step_seq,
            detector=p.detector,
            statistic=float(details.pop("statistic", math.nan)),
            threshold=float(details.pop("threshold", math.nan)),
            step_class=step_class,
            details=details,
        )

    def update_many(
        self,
        step_seq: Sequence[int] | np.ndarray,
        step_class: Sequence[str] | np.ndarray,
        residual: Sequence[float] | np.ndarray,
        ts: Sequence[float] | np.ndarray,
        features: Mapping[str, np.ndarray] | None = None,
    ) -> list[DriftEvent]:
        """Feed steps in order (arrays of equal length); events sorted by ``step_seq``.

        Classes are independent, so each class's steps are standardised in one vector
        operation and then streamed through its detectors. With ``features`` (per-step arrays,
        e.g. ``batch_size``), steps outside their class's calibrated ``domain`` are counted in
        ``n_out_of_domain`` and not fed.
        """
        seq = np.asarray(step_seq)
        cls = np.asarray(step_class)
        r = np.asarray(residual, dtype=float)
        t = np.asarray(ts, dtype=float)
        if not (len(seq) == len(cls) == len(r) == len(t)):
            raise ValueError("step_seq, step_class, residual and ts must have equal lengths")
        events: list[DriftEvent] = []
        handled = np.zeros(len(r), dtype=bool)
        for name, cal in self.calibrations.items():
            mine = (cls == name) & np.isfinite(r)
            handled |= mine
            if features and cal.domain:
                inside = cal.in_domain(features)
                self.n_out_of_domain[name] += int((mine & ~inside).sum())
                self._judged_recent[name] = _ewma(self._judged_recent[name], inside[mine], self.recent_steps)
                mine &= inside
            idx = np.flatnonzero(mine)
            # Design r24: the detectors watch the residual less its calibrated composition bias
            # (and, design r44, less its CUDA graph's offset).
            z = cal.standardise(
                cal.unbiased(r[idx], _at(features, idx) if cal.bias or cal.graph_offsets else None)
            )
            keyed = cal.stratify or cal.detrend_by_size  # design r31, r33
            keys = (
                _strata_at(features, idx, cal.graph_strata, cal.octave_strata) if keyed else [None] * len(idx)
            )
            y, base = self._detrend(name, z, keys)
            zr, yr = self._raw_stream(name, r[idx], len(idx))  # design r26
            beyond = _beyond_at(cal, features, idx)  # design r45
            for i, zi, yi, bi, zri, yri, k, out in zip(
                idx.tolist(), z.tolist(), y.tolist(), base.tolist(), zr, yr, keys, beyond
            ):
                events.extend(
                    self._feed(name, zi, yi, bi, int(seq[i]), float(t[i]), float(r[i]), zri, yri, k, out)
                )
        self.n_skipped += int((~handled).sum())
        events.sort(key=lambda e: (e.step_seq, e.detector))
        return events

    def judged_fraction(self) -> dict[str, float]:
        """Per class, the share of its last ~``recent_steps`` steps that lay inside its domain."""
        return dict(self._judged_recent)

    def counts(self) -> dict[str, dict[str, int]]:
        """Steps seen and detections so far, per class and detector."""
        out: dict[str, dict[str, int]] = {}
        for cls, dets in self._detectors.items():
            out[cls] = {
                "steps": self.n_seen[cls],
                "out_of_domain": self.n_out_of_domain[cls],
                **{d.name: d.n_detections for d in dets},
            }
        return out

    def state(self) -> dict[str, Any]:
        """Counts plus each detector's last detection, for /metrics and reports."""
        return {
            "skipped": self.n_skipped,
            "classes": {
                cls: {
                    "steps": self.n_seen[cls],
                    "out_of_domain": self.n_out_of_domain[cls],
                    "baseline": self._baselines[cls].baseline,
                    "recent_judged_fraction": self._judged_recent[cls],
                    "confirmation": self._confirm[cls].state(),
                    "unsupported": self._unsupported.get(cls),
                    "domain": {k: list(v) for k, v in self.calibrations[cls].domain.items()},
                    "detectors": {
                        d.name: {
                            "detections": d.n_detections,
                            "threshold": d.threshold,
                            "last_detection": d.last_detection,
                        }
                        for d in dets
                    },
                }
                for cls, dets in self._detectors.items()
            },
        }


def _strata_at(
    features: Mapping[str, np.ndarray] | None, idx: np.ndarray, graph: bool = False, octaves: bool = False
) -> list[int | None]:
    """The composition stratum of each step ``idx`` (``None`` for all without its features;
    ``graph``: design r34's batch sizes; ``octaves``: r37's cuts within them)."""
    keys = strata(_at(features, idx), graph, octaves)
    return [None] * len(idx) if keys is None else list(keys)


def _beyond_at(
    cal: DriftCalibration, features: Mapping[str, np.ndarray] | None, idx: np.ndarray
) -> list[bool]:
    """Whether each step ``idx`` lies beyond ``cal``'s support (design r45; none without it or
    without features)."""
    sub = _at(features, idx) if cal.support else None
    return cal.beyond_support(sub).tolist() if sub else [False] * len(idx)


def _ewma(start: float, x: np.ndarray, steps: int) -> float:
    """Exponentially weighted mean of ``start`` followed by the values ``x`` (time constant ``steps``)."""
    if not len(x):
        return start
    keep = (1.0 - 1.0 / steps) ** np.arange(len(x) - 1, -1, -1)  # weight of each value, oldest first
    return float(start * (1.0 - 1.0 / steps) ** len(x) + (np.asarray(x, float) * keep).sum() / steps)
