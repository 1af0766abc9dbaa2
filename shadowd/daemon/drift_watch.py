"""Online drift checks on every attributed step.

Residuals ``(T - T_hat)/T_hat`` of LLMVisor per step class go through the
calibrated river detectors (steps whose batch composition lies outside the
class's calibrated domain are counted, not judged); every step is also checked
against the workload envelope calibration saw (longer contexts, bigger batches,
new tenants mean the model is extrapolating).  Each detection becomes a ``drift_events`` row
and is passed to ``on_events`` (alerts, metrics).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

import checks
from shadowd.daemon.calibrator import Calibration
from shadowd.daemon.tenants import OTHER
from shadowd.steps.columns import StepColumns

RESIDUAL_DETECTORS = ("page_hinkley", "adwin")


def is_relevant(
    detector: str, kept_mean: float | None, cal: checks.DriftCalibration, min_shift: float
) -> bool:
    """Whether a detection is worth an event.

    ADWIN flags any significant change of the mean, however small; a detection counts when the
    mean of the window it kept sits at least the calibration's ``allowance`` (the wander of the
    model's residual mean under changing batch composition, ``checks.wander``; at least
    ``min_shift / 2``, relative latency) away from the calibration's mean.  Judging against the
    calibration, not against the part ADWIN dropped, matters: right after a slowdown starts the
    dropped part is itself partly slow.  Page-Hinkley has its allowance built in, so its
    detections always count.
    """
    if detector != "adwin" or kept_mean is None:
        return True
    return abs(kept_mean) * cal.std >= max(cal.allowance, min_shift / 2)


class DriftWatch:
    """Owns the detectors of the installed calibration; fed by the ingest pipeline."""

    def __init__(
        self, on_events: Callable[[list[checks.DriftEvent]], None], *, min_shift: float = 0.02
    ) -> None:
        self.on_events = on_events
        self.min_shift = min_shift
        self.ignored_small_shifts = 0
        self.monitor: checks.DriftMonitor | None = None
        self.envelope: checks.EnvelopeMonitor | None = None
        self.version: str | None = None
        self.events_total: dict[str, int] = {}
        self._lock = threading.Lock()

    def install(self, cal: Calibration) -> None:
        with self._lock:
            self.monitor = checks.DriftMonitor(cal.drift)
            # r21: the calibration's level (r31: per composition stratum too)
            self.monitor.prime(cal.holdout_residuals, cal.holdout_raw, cal.holdout_keys)
            self.envelope = checks.EnvelopeMonitor(cal.envelope)
            self.version = cal.model.version

    def extend(self, envelope: checks.WorkloadEnvelope) -> None:
        """Design r43: steps are judged against ``envelope`` from here on, counted afresh; the
        tenants seen beyond the old one stay known as new; the detectors are left alone."""
        with self._lock:
            old = self.envelope
            self.envelope = checks.EnvelopeMonitor(envelope)
            if old is not None:
                self.envelope.new_tenants = dict(old.new_tenants)

    def observe(self, cols: StepColumns) -> None:
        with self._lock:
            monitor, envelope, version = self.monitor, self.envelope, self.version
        if monitor is None or envelope is None:
            return
        steps = cols.steps
        mine = steps["model_version"] == version
        if not mine.any():
            return
        ts = steps["ts"].astype("datetime64[us]").astype(np.int64) / 1e6
        resid = checks.relative_residual(steps["latency_ms"], steps["predicted_ms"])
        idx = np.flatnonzero(mine)
        # Design r22: steps carrying a tenant calibration never saw are the coverage check's
        # (as r10 leaves them out of the accuracy evidence), not the residual detectors'.
        judged = idx[~_carries_unseen_tenant(envelope, cols)[idx]]
        events = self._relevant(
            monitor,
            monitor.update_many(
                steps["step_seq"][judged],
                steps["kind"][judged],
                resid[judged],
                ts[judged],
                {k: v[judged] for k, v in cols.batch.composition().items()},
            ),
        )
        events += self._envelope_events(envelope, cols, idx, ts)
        if events:
            for e in events:
                self.events_total[e.detector] = self.events_total.get(e.detector, 0) + 1
            self.on_events(events)

    def _relevant(
        self, monitor: checks.DriftMonitor, events: list[checks.DriftEvent]
    ) -> list[checks.DriftEvent]:
        keep = []
        for e in events:
            cal = monitor.calibrations.get(e.step_class)
            if cal is not None and not is_relevant(
                e.detector, (e.details or {}).get("kept_mean"), cal, self.min_shift
            ):
                self.ignored_small_shifts += 1
                continue
            keep.append(e)
        return keep

    @staticmethod
    def _envelope_events(
        envelope: checks.EnvelopeMonitor, cols: StepColumns, idx: np.ndarray, ts: np.ndarray
    ) -> list[checks.DriftEvent]:
        b = cols.batch
        sizes = b.batch_size()
        return envelope.update_many(
            cols.steps["step_seq"][idx],
            ts[idx],
            max_context=b.max_reach(sizes)[idx],
            batch_size=sizes[idx].astype(np.float64),
            tokens=b.per_step_sum(b.new_tokens.astype(np.float64))[idx],
            step_class=cols.steps["kind"][idx],
            tenants=_first_unseen_tenants(envelope, cols, idx),
            kv_tokens=b.per_step_sum(b.context_tokens.astype(np.float64))[idx],
        )

    def blind_classes(self, min_judged: float = 0.5) -> dict[str, str]:
        """Watched classes whose recent steps mostly lie outside their calibrated domain, or
        (design r31) whose residual shifted lastingly in batch compositions seen too rarely, or
        (design r45) mostly beyond those calibration held, to tell drift from the model's error
        there.

        The residual detectors cannot speak for those steps, so the gate treats the class as
        unwatched (drift evidence missing) until traffic returns to what calibration saw (the
        first) or the model is re-fitted or recalibrated on current traffic (both).
        """
        with self._lock:
            monitor = self.monitor
        if monitor is None:
            return {}
        out = {
            cls: (
                f"{1 - f:.0%} of its recent steps are outside the batch compositions calibration "
                "saw; recalibrate on current traffic (shadowd calibrate)"
            )
            for cls, f in monitor.judged_fraction().items()
            if f < min_judged
        }
        for cls, u in monitor.unsupported().items():  # design r31
            out.setdefault(cls, _unsupported_reason(u))
        return out

    def state(self) -> dict[str, Any]:
        with self._lock:
            monitor, envelope = self.monitor, self.envelope
        return {
            "version": self.version,
            "residual": monitor.state() if monitor else None,
            "envelope": envelope.summary() if envelope else None,
            "events_total": dict(self.events_total),
        }


def _unsupported_reason(u: dict[str, float]) -> str:
    """Why a class's drift evidence is missing after an unsupported alarm, and the way out."""
    where = (
        f"mostly ({u['beyond']:.0%} of its window) on steps beyond the batch compositions "
        "calibration held, where the model extrapolates: too far"  # design r45
        if u.get("beyond")
        else "in batch compositions seen too rarely"
    )
    return (
        f"its residual shifted {u['shift']:+.3f} from step {int(u['detected_step_seq'])} {where} "
        "to tell drift from the model's error there; recalibrate on current traffic "
        "(shadowd calibrate), or wait for a re-fit"
    )


def _carries_unseen_tenant(envelope: checks.EnvelopeMonitor, cols: StepColumns) -> np.ndarray:
    """Per step of ``cols``, whether a request of a tenant calibration never saw is in it
    (bool[S]; none when calibration recorded no tenants)."""
    out = np.zeros(cols.num_steps, dtype=bool)
    seen = envelope.envelope.tenants
    if not seen:
        return out
    names, codes = cols.tenant_index
    known = set(seen) | {OTHER}
    unseen = [c for c, name in enumerate(names.tolist()) if name not in known]
    if unseen:
        out[cols.batch.req_step[np.isin(codes, unseen)]] = True
    return out


def _first_unseen_tenants(
    envelope: checks.EnvelopeMonitor, cols: StepColumns, idx: np.ndarray
) -> dict[int, list[str]]:
    """Tenants neither calibration nor this monitor has seen, by the position (in ``idx``) of the
    first of the ``idx`` steps they appear in."""
    names, codes = cols.tenant_index
    # ``other`` is the daemon's bucket for labels it did not admit (shadowd.daemon.tenants):
    # labels anyone can choose must not count as new tenants one by one.
    known = set(envelope.envelope.tenants) | set(envelope.new_tenants) | {OTHER}
    fresh = [c for c, name in enumerate(names.tolist()) if name not in known]
    if not fresh:
        return {}
    position = np.full(cols.num_steps, -1)
    position[idx] = np.arange(len(idx))
    row_position = position[cols.batch.req_step]
    out: dict[int, list[str]] = {}
    for c in fresh:
        rows = np.flatnonzero((codes == c) & (row_position >= 0))
        if rows.size:
            out.setdefault(int(row_position[rows[0]]), []).append(names[c])
    return out
