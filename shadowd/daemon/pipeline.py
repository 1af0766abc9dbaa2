"""What the daemon does with each batch of frames.

Frames -> columns -> (attribution with the current model version, if any) ->
the single writer.  Observers (drift monitor, metrics, the calibration
buffer) see every batch after it is queued for storage; an observer that
fails is counted and logged, and never stops ingest.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np

from shadowd.steps.columns import StepColumns, frames_to_columns
from shadowd.tap.frame import StepFrame
from storage.writer import Writer

log = logging.getLogger("shadowd.daemon.pipeline")

STEP_ATTRIBUTION = ("predicted_ms", "baseline_ms")
REQUEST_ATTRIBUTION = ("llmvisor_ms", "llmvisor_measured_ms", "vtc_ms", "vtc_tokens")
APPEND_WAIT_S = 1.0  # longest the receiver waits for the writer before dropping a batch


class Attributor(Protocol):
    version: str

    def attribute_columns(self, cols: StepColumns) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """Per-step and per-request attribution columns for ``cols``."""


Observer = Callable[[StepColumns], None]


class IngestPipeline:
    """Consumes frame batches; one instance per daemon."""

    def __init__(self, writer: Writer) -> None:
        self.writer = writer
        self.observers: list[Observer] = []
        self.prepare: list[Observer] = []  # rewrite columns before anything uses them (tenants, ids)
        self.attributor: Attributor | None = None
        self.steps_ingested = 0
        self.steps_observed = 0  # ingested and seen by every observer (calibration, drift, stats)
        self.rows_ingested = 0
        self.observer_errors = 0
        self._lock = threading.Lock()

    def set_attributor(self, attributor: Attributor | None) -> None:
        with self._lock:
            self.attributor = attributor

    def __call__(self, frames: Sequence[StepFrame]) -> None:
        cols = frames_to_columns(frames)
        for step in self.prepare:
            step(cols)
        self._attribute(cols)
        # Steps and their request rows are stored (or dropped) together.  While the writer is
        # behind, wait a little: zmq's queue then fills and the tap drops and counts, which the
        # next frames carry into the database; after APPEND_WAIT_S the batch is dropped here.
        tables = {"steps": cols.steps, "step_requests": cols.requests}
        if cols.ended is not None:
            tables["requests"] = cols.ended  # requests that ended: the service they received
        self.writer.append_many(tables, wait_s=APPEND_WAIT_S)
        self.steps_ingested += cols.num_steps
        self.rows_ingested += cols.num_requests
        for observe in self.observers:
            try:
                observe(cols)
            except Exception:
                self.observer_errors += 1
                log.exception("observer %r failed (ingest continues)", observe)
        self.steps_observed += cols.num_steps

    def _attribute(self, cols: StepColumns) -> None:
        with self._lock:
            attributor = self.attributor
        s, r = cols.num_steps, cols.num_requests
        step_cols = {k: np.full(s, np.nan) for k in STEP_ATTRIBUTION}
        req_cols = {k: np.full(r, np.nan, dtype=np.float32) for k in REQUEST_ATTRIBUTION}
        version = None
        if attributor is not None:
            try:
                got_s, got_r = attributor.attribute_columns(cols)
                step_cols.update(got_s)
                req_cols.update({k: np.asarray(v, dtype=np.float32) for k, v in got_r.items()})
                version = attributor.version
            except Exception:
                self.observer_errors += 1
                log.exception("attribution failed; rows stored unattributed")
        cols.steps.update(step_cols)
        cols.requests.update(req_cols)
        cols.steps["model_version"] = _constant(s, version)
        cols.requests["model_version"] = _constant(r, version)


def _constant(n: int, value: object) -> np.ndarray:
    """An object column of ``n`` times ``value``: ``np.full`` with a str costs ~35x more."""
    out = np.empty(n, dtype=object)
    out.fill(value)
    return out
