"""When shadowd raises and clears alerts (what to say lives in ``alerts.catalog``).

``AlertRules`` is fed by the gate keeper (every decision), the drift watch
(every detection) and a periodic health tick (tap silence and drops, storage
errors, calibration missing or stale, windows cut to fit memory).  It only
calls the notifier, which queues and returns at once: alerting never slows
ingest.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from alerts import catalog
from alerts.notifier import Notifier
from shadowd.daemon.status import DaemonStatus

RESIDUAL_DETECTORS = ("page_hinkley", "adwin", "coefficient")


class AlertRules:
    def __init__(
        self,
        notifier: Notifier,
        platform: Callable[[], str],
        *,
        silent_after_s: float = 60.0,
        calibration_due_s: float = 3600.0,
        calibration_max_age_s: float = 7 * 86400.0,
        window_cut: Callable[[], dict[str, Any] | None] = lambda: None,
    ) -> None:
        self.notifier = notifier
        self.window_cut = window_cut  # the last window's memory cut (``WindowBound``), or None
        self.platform = platform
        self.silent_after_s = silent_after_s
        self.calibration_due_s = calibration_due_s
        self.calibration_max_age_s = calibration_max_age_s
        self._was_go = False
        self._dropped_seen: int | None = None
        self._errors_seen = 0

    # -- gate ----------------------------------------------------------------
    def on_decision(self, prev: dict[str, Any] | None, decision: dict[str, Any]) -> None:
        verdict = decision["verdict"]
        if verdict == "GO":
            self._was_go = True
            self.notifier.resolve(catalog.GATE_NOT_GO, {"platform": self.platform()})
        elif self._was_go:
            failing = [c["name"] for c in decision.get("checks", []) if c.get("status") != "pass"]
            self.notifier.fire(
                catalog.gate_left_go(
                    verdict,
                    platform=self.platform(),
                    failing_checks=failing,
                    details={"reason": decision.get("reason")},
                )
            )

    # -- drift ---------------------------------------------------------------
    def on_drift(self, events: list[Any]) -> None:
        for e in events:
            if e.detector in RESIDUAL_DETECTORS:
                self.notifier.fire(
                    catalog.drift_detected(
                        e.step_class or "all",
                        platform=self.platform(),
                        detector=e.detector,
                        details={"step_seq": e.step_seq, "statistic": e.statistic},
                    )
                )

    def on_calibrated(self) -> None:
        """A new model version is in force: earlier drift is resolved, calibration exists."""
        platform = self.platform()
        for cls in ("prefill", "decode", "mixed", "all"):
            self.notifier.resolve(catalog.DRIFT, {"platform": platform, "step_class": cls})
        self.notifier.resolve(catalog.CALIBRATION_MISSING, {"platform": platform})

    # -- health ---------------------------------------------------------------
    def tick(self, f: DaemonStatus, now: float | None = None) -> None:
        now = time.time() if now is None else now
        silent = f.seconds_since_last_frame
        if silent is not None and silent > self.silent_after_s:
            self.notifier.fire(catalog.tap_silent(seconds_since_last_frame=round(silent, 1)))
        elif silent is not None:
            self.notifier.resolve(catalog.TAP_SILENT)
        if self._dropped_seen is not None and f.tap_dropped_frames > self._dropped_seen:
            self.notifier.fire(
                catalog.tap_dropping_frames(dropped=f.tap_dropped_frames - self._dropped_seen, window_s=0)
            )
        elif self._dropped_seen is not None:
            self.notifier.resolve(catalog.TAP_DROPPING)
        self._dropped_seen = f.tap_dropped_frames
        if f.storage_errors > self._errors_seen:
            self.notifier.fire(
                catalog.storage_error(
                    operation="write", error=f.last_storage_error or "", count=f.storage_errors
                )
            )
        else:
            self.notifier.resolve(catalog.STORAGE_ERRORS, {"operation": "write"})
        self._errors_seen = f.storage_errors
        platform = self.platform()
        if not f.calibrated and f.uptime_s > self.calibration_due_s:
            self.notifier.fire(catalog.calibration_missing(platform=platform))
        if f.model_age_s is not None and f.model_age_s > self.calibration_max_age_s:
            self.notifier.fire(
                catalog.calibration_stale(
                    platform=platform, age_s=f.model_age_s, max_age_s=self.calibration_max_age_s
                )
            )
        else:
            self.notifier.resolve(catalog.CALIBRATION_STALE, {"platform": platform})
        cut = self.window_cut()
        if cut is not None:
            self.notifier.fire(catalog.calibration_window_cut(platform=platform, **cut))
        else:
            self.notifier.resolve(catalog.CALIBRATION_WINDOW_CUT, {"platform": platform})
        self.notifier.tick(now)
