"""The demo's ingest, cut at fixed steps, so a demo run is the same run whatever the threads' timing.

A live daemon hands the pipeline whatever frames arrived in the last few milliseconds, so where a
batch ends depends on timing.  So does everything decided at a batch's end: the warm-up
calibration runs once the batch that completes its window is observed, and the model attributes
from the next batch on, so the step a model came into force at moved by up to a batch from one
run to the next.  Downstream, the step at which a model has scored half a window (when a re-fit
may start) moved with it, and a held-out long run paged on one run and not on its repeat
(``benchmarks/gate_protocol.py`` ``INGEST``: the protocol's note on repeatable runs).

The demo's engine runs on simulated time, so its runs can be repeated exactly.  ``StepSlices``
stands between the receiver and the pipeline: it hands the pipeline the frames of steps
``(k * every, (k + 1) * every]``, and at a gate evaluation (``cut``) everything through the step
the engine stopped at.  Both kinds of cut are fixed by the run, not by the threads.  Frames the
tap dropped break that (which ones drop depends on timing); ``flush`` then hands over what is held.

>>> got = []
>>> s = StepSlices(lambda frames: got.append([f.step_seq for f in frames]), every=4)
>>> from types import SimpleNamespace as F
>>> s([F(step_seq=i) for i in (1, 2, 3)]); got
[]
>>> s([F(step_seq=i) for i in (4, 5, 6)]); got
[[1, 2, 3, 4]]
>>> s.cut(6); got
[[1, 2, 3, 4], [5, 6]]
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any

log = logging.getLogger("shadowd.demo.step_slices")

SLICE_STEPS = 64  # steps per slice between gate evaluations: ingest keeps pace with the engine


class StepSlices:
    """A receiver's consumer that forwards frames to ``consume`` in slices cut at fixed steps."""

    def __init__(self, consume: Callable[[list[Any]], None], every: int = SLICE_STEPS) -> None:
        self._consume = consume
        self.every = int(every)
        self._held: list[Any] = []  # frames received, not yet handed over, in arrival order
        self._cut = 0  # every frame through this step may go now (the last gate evaluation's)
        self._lock = threading.Lock()  # the receiver's thread and the demo's both hand over
        self.faults = 0

    def __call__(self, frames: Sequence[Any]) -> None:
        """The receiver's thread: hold ``frames``; hand over every slice now complete."""
        with self._lock:
            self._held.extend(frames)
            self._forward()

    def cut(self, step: int) -> None:
        """The demo's thread, the engine stopped at ``step``: everything through it goes now."""
        with self._lock:
            self._cut = max(self._cut, step)
            self._forward()

    def flush(self) -> None:
        """Hand over everything held (a slice's last frame was dropped, or the run ends)."""
        with self._lock:
            self._send(len(self._held))

    def _forward(self) -> None:
        held = self._held
        while held:
            first = held[0].step_seq
            bound = -(-first // self.every) * self.every  # the first multiple at or above it
            if first <= self._cut < bound:
                bound = self._cut
            if held[-1].step_seq < bound:
                return  # the slice's last frame has not come yet (frames come in step order)
            n = next((i for i, f in enumerate(held) if f.step_seq > bound), len(held))
            self._send(n)

    def _send(self, n: int) -> None:
        if not n:
            return
        frames = self._held[:n]
        del self._held[:n]  # in place: ``_forward`` holds this list
        try:
            self._consume(frames)
        except Exception:  # as the receiver's own hand-over: counted, ingest goes on
            self.faults += 1
            log.exception("demo ingest: consumer failed on %d frames (dropped, counted)", len(frames))
