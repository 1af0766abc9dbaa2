"""The alerts shadowd raises, as named constructors, so names, labels and wording stay consistent.

Labels carry only *which* thing is affected (platform key, step class, engine,
storage operation): they are the alert's identity. Measured values, verdicts
and reasons go in ``details``, so a verdict moving from NO_GO to INCONCLUSIVE
updates the open alert instead of opening a second one. Every alert has an
``action`` detail telling on-call what to do first.

=====================  ========  ===========================  ===========================
name                   severity  labels                       raised when
=====================  ========  ===========================  ===========================
AttributionNotGo       page      platform                     the gate leaves GO
AttributionDrift       warning   platform, step_class         a drift detector fires
TapSilent              warning   engine (optional)            no frames for too long
TapDroppingFrames      warning   engine (optional)            the tap drops frames
CalibrationMissing     warning   platform                     no model for this platform
CalibrationStale       warning   platform                     the model is too old
StorageErrors          warning   operation                    DuckDB writes/queries fail
JobFailing             warning   job                          a scheduled job keeps failing
CalibrationWindowCut   warning   platform                     windows cut to fit memory
=====================  ========  ===========================  ===========================

>>> a = gate_left_go("NO_GO", platform="h100/llama-8b", failing_checks=["residual_p99"])
>>> a.name, a.severity, a.labels
('AttributionNotGo', 'page', {'platform': 'h100/llama-8b'})
>>> a.summary
'attribution confidence dropped; the scheduler must fall back to its conservative quota'
>>> gate_left_go("INCONCLUSIVE", platform="h100/llama-8b").fingerprint == a.fingerprint
True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .alert import Alert

GATE_NOT_GO = "AttributionNotGo"
DRIFT = "AttributionDrift"
TAP_SILENT = "TapSilent"
TAP_DROPPING = "TapDroppingFrames"
CALIBRATION_MISSING = "CalibrationMissing"
CALIBRATION_STALE = "CalibrationStale"
STORAGE_ERRORS = "StorageErrors"
JOB_FAILING = "JobFailing"
CALIBRATION_WINDOW_CUT = "CalibrationWindowCut"
#: every name above, e.g. for ``Notifier.sync(..., names=...)``
NAMES = (
    GATE_NOT_GO,
    DRIFT,
    TAP_SILENT,
    TAP_DROPPING,
    CALIBRATION_MISSING,
    CALIBRATION_STALE,
    STORAGE_ERRORS,
    JOB_FAILING,
    CALIBRATION_WINDOW_CUT,
)


def _engine(engine: str) -> dict[str, str]:
    return {"engine": engine} if engine else {}


def gate_left_go(
    verdict: str,
    *,
    platform: str,
    failing_checks: Sequence[str] = (),
    details: Mapping[str, Any] | None = None,
) -> Alert:
    """The gate says NO_GO or INCONCLUSIVE: attribution must stop governing scheduling (pages)."""
    return Alert(
        GATE_NOT_GO,
        "page",
        {"platform": platform},
        summary="attribution confidence dropped; the scheduler must fall back to its conservative quota",
        details={
            "verdict": verdict,
            "failing_checks": ", ".join(failing_checks) or "none reported",
            "action": "confirm the scheduler uses its conservative quota; `shadowd gate` shows the failing checks",
            **(details or {}),
        },
    )


def drift_detected(
    step_class: str,
    *,
    platform: str,
    detector: str,
    details: Mapping[str, Any] | None = None,
) -> Alert:
    """A drift detector fired on residuals or coefficients for one step class."""
    return Alert(
        DRIFT,
        "warning",
        {"platform": platform, "step_class": step_class},
        summary=f"attribution model drift detected on {step_class} steps",
        details={
            "detector": detector,
            "action": "check for a runtime, model or workload change; recalibrate if it persists",
            **(details or {}),
        },
    )


def tap_silent(*, seconds_since_last_frame: float, engine: str = "") -> Alert:
    """No frames from the vLLM tap: the engine is idle, down, or the tap is not loaded."""
    return Alert(
        TAP_SILENT,
        "warning",
        _engine(engine),
        summary="no step frames from the vLLM tap",
        details={
            "seconds_since_last_frame": round(seconds_since_last_frame, 1),
            "action": "check that vLLM runs with the shadowd scheduler class and can reach the ingest socket",
        },
    )


def tap_dropping_frames(*, dropped: int, window_s: float, engine: str = "") -> Alert:
    """The tap dropped frames (it never blocks the engine, so it drops): evidence has gaps."""
    return Alert(
        TAP_DROPPING,
        "warning",
        _engine(engine),
        summary="the vLLM tap is dropping step frames",
        details={
            "dropped": dropped,
            "window_s": window_s,
            "action": "check daemon CPU and ingest lag; the daemon is not keeping up with the engine",
        },
    )


def calibration_missing(*, platform: str) -> Alert:
    """No calibrated model for the running platform key: the gate cannot pass."""
    return Alert(
        CALIBRATION_MISSING,
        "warning",
        {"platform": platform},
        summary="no attribution calibration for the running platform",
        details={"action": "run `shadowd calibrate` on this platform"},
    )


def calibration_stale(*, platform: str, age_s: float, max_age_s: float) -> Alert:
    """The platform's calibration is older than allowed."""
    return Alert(
        CALIBRATION_STALE,
        "warning",
        {"platform": platform},
        summary="attribution calibration is stale for the running platform",
        details={
            "age_s": round(age_s),
            "max_age_s": round(max_age_s),
            "action": "run `shadowd calibrate` on this platform",
        },
    )


def storage_error(*, operation: str, error: str, count: int = 1) -> Alert:
    """DuckDB writes or queries fail: evidence is being lost (``operation`` e.g. append, export)."""
    return Alert(
        STORAGE_ERRORS,
        "warning",
        {"operation": operation},
        summary=f"storage {operation} is failing",
        details={
            "error": error[:500],
            "count": count,
            "action": "check disk space and the database file's permissions",
        },
    )


def job_failing(*, job: str, failures: int, error: str) -> Alert:
    """A scheduled job (export, retention, ...) failed ``failures`` times in a row: e.g. export
    stuck means raw rows of unexported days are kept and the disk fills."""
    return Alert(
        JOB_FAILING,
        "warning",
        {"job": job},
        summary=f"scheduled job {job} keeps failing",
        details={
            "error": error[:500],
            "consecutive_failures": failures,
            "action": f"read the journal for 'job {job} failed'; check disk space and the export directory",
        },
    )


def calibration_window_cut(
    *, platform: str, window: str, steps: int, rows: int, memory_limit_bytes: int | None
) -> Alert:
    """The last calibration, re-fit, envelope-extension or stability window of some kind was
    cut short to fit under the daemon's memory limit: narrower than the gate's design asks, so
    a step class may go unwatched.  Not a page: the gate still judges what it has; the fix is
    more memory."""
    return Alert(
        CALIBRATION_WINDOW_CUT,
        "warning",
        {"platform": platform},
        summary="calibration windows are cut short to fit the daemon's memory limit",
        details={
            "window": window,
            "steps": steps,
            "request_rows_at_most": rows,
            "memory_limit_bytes": memory_limit_bytes if memory_limit_bytes is not None else "unknown",
            "action": "raise the unit's MemoryMax/MemoryHigh (docs/benchmarks.md sizes them per request "
            "row) or set [calibration] max_window_rows; the journal says 'window cut to'",
        },
    )
