"""Frame receiver: the daemon's end of the tap socket.

A zmq PULL socket bound at the listen endpoint; one thread receives messages
(each one frame, or a batch of frames the tap sent together), decodes them,
and hands batches of decoded frames to a consumer (the pipeline).  Bad input
never stops it, and a bad frame in a batch costs only itself: oversized,
undecodable, malformed and wrong-version frames are counted per kind, logged
(rate-limited) and skipped.  A message over the size limit is refused by zmq itself while
reading its header (``ZMQ_MAXMSGSIZE``), so it is never buffered: zmq drops that connection (the
tap reconnects) and the steps lost with it show as a gap.  Gaps in a run's ``step_seq`` that the tap's own drop counter does
not explain (frames lost in transit, e.g. across a daemon restart) are
counted too, so no step is lost silently.
"""

from __future__ import annotations

import gc
import logging
import os
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable
from pathlib import Path

import msgspec
import zmq

from shadowd.tap.frame import FrameError, StepFrame, TapCounters, decode_message

log = logging.getLogger("shadowd.daemon.receiver")
MAX_FRAME_BYTES = 8 << 20
# zmq's receive queue, in messages (a frame, or a batch of up to 32 the tap sent together): 512
# single 256-request frames are ~9 MB; beyond it the tap's non-blocking send drops and counts.
RCV_HWM_MESSAGES = 512
BATCH_ROWS = 32_768  # request rows per hand-over to the pipeline (bounds memory per batch)
MAX_RUNS = 1024  # (engine, run) pairs tracked for gap counting; the least recently seen go first
CLOCK_TOLERANCE_S = 60.0  # a frame dated this far after receipt gets receipt time instead
GC_YOUNG_THRESHOLD = 50_000  # allocations between young-generation collections (CPython: 700)


def tune_gc_for_ingest() -> None:
    """Run CPython's young-generation collection every 50,000 allocations instead of 700.

    A decoded frame is a handful of lists of a few hundred items each, and a young-generation
    pass walks every item of every young list: at the default it ran every few dozen frames and
    took a large part of decoding (before and after: docs/benchmarks.md, "What was optimised"
    under the daemon's ingest, from ``benchmarks/ingest.py``'s stage table).
    Cyclic garbage is still collected, just less often; process-wide, so set once by the
    process that ingests.
    """
    young, middle, old = gc.get_threshold()
    if young < GC_YOUNG_THRESHOLD:
        gc.set_threshold(GC_YOUNG_THRESHOLD, middle, old)


class RunTracker:
    """Per (engine, run): last step_seq and drop count seen, to find unexplained gaps; and the
    tap's own counters (version 3 frames), summed over runs for ``/metrics``.

    At most ``max_runs`` runs are tracked, least recently seen forgotten first: anything that
    can reach the socket can invent runs, and a forgotten run only loses gap counting across
    its next frame.
    """

    def __init__(
        self, known: dict[tuple[str, str], tuple[int, int]] | None = None, max_runs: int = MAX_RUNS
    ) -> None:
        self.max_runs = max_runs
        self._last: OrderedDict[tuple[str, str], tuple[int, int]] = OrderedDict()
        self._counters: dict[tuple[str, str], TapCounters] = {}
        for key, value in (known or {}).items():
            self._remember(key, value)

    def _remember(self, key: tuple[str, str], value: tuple[int, int]) -> None:
        self._last[key] = value
        self._last.move_to_end(key)
        while len(self._last) > self.max_runs:
            gone, _ = self._last.popitem(last=False)
            self._counters.pop(gone, None)

    def observe(self, frame: StepFrame) -> int:
        """Steps missing before ``frame`` that neither the tap counted nor we received."""
        key = (frame.engine_id, frame.run_id)
        prev = self._last.get(key)
        self._remember(key, (frame.step_seq, frame.dropped_total))
        if frame.counters is not None:
            self._counters[key] = frame.counters
        if prev is None:
            return 0  # a run this database has never seen: what came before is unknowable
        seq, dropped = prev
        if frame.step_seq <= seq:
            return 0
        return max(0, frame.step_seq - seq - 1 - (frame.dropped_total - dropped))

    def runs(self) -> dict[tuple[str, str], tuple[int, int]]:
        return dict(self._last)

    def tap_counters(self) -> dict[str, int]:
        """The taps' counters (latest per run), summed over the runs tracked.  Read from the HTTP
        and watchdog threads while the receiver's thread writes: the values are copied first."""
        sums = dict.fromkeys(TapCounters.__struct_fields__, 0)
        for counters in list(self._counters.values()):
            for name in sums:
                sums[name] += getattr(counters, name)
        return sums


class FrameReceiver:
    """Receives and decodes frames on its own thread; calls ``consume(frames)`` in batches.

    A batch is handed over after ``batch_interval_s``, or once it holds
    ``batch_frames`` frames or ``batch_rows`` request rows.  Memory is bounded:
    zmq queues at most ``rcv_hwm`` messages (the tap's non-blocking send then
    drops and counts), and one batch of decoded frames is held at a time.
    """

    def __init__(
        self,
        endpoint: str,
        consume: Callable[[list[StepFrame]], None],
        *,
        batch_frames: int = 2000,
        batch_rows: int = BATCH_ROWS,
        rcv_hwm: int = RCV_HWM_MESSAGES,
        batch_interval_s: float = 0.05,
        max_frame_bytes: int = MAX_FRAME_BYTES,
        socket_mode: int | None = 0o660,
        known_runs: dict[tuple[str, str], tuple[int, int]] | None = None,
        clock_tolerance_s: float = CLOCK_TOLERANCE_S,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.endpoint = endpoint
        self.consume = consume
        self.batch_frames = batch_frames
        self.batch_rows = batch_rows
        self._batch_rows = 0
        self.batch_interval_s = batch_interval_s
        self.max_frame_bytes = max_frame_bytes
        self.socket_mode = socket_mode
        self.faults: Counter[str] = Counter()
        self.messages_received = 0  # zmq messages: a frame or a batch of frames (or junk)
        self.frames_received = 0
        self.rows_received = 0
        self.last_frame_monotonic = 0.0
        self.last_loop_monotonic = time.monotonic()
        self.tracker = RunTracker(known_runs)
        self.clock_tolerance_ns = int(clock_tolerance_s * 1e9)
        self.wall_clock = wall_clock
        self._stop = threading.Event()
        self._ctx = zmq.Context()
        self._sock = self._ctx.socket(zmq.PULL)
        self._sock.setsockopt(zmq.RCVHWM, rcv_hwm)
        self._sock.setsockopt(zmq.LINGER, 0)
        # zmq refuses a larger message while reading its header (and drops that connection; the
        # tap reconnects), so an oversized message is never buffered whole.
        self._sock.setsockopt(zmq.MAXMSGSIZE, max_frame_bytes)
        if endpoint.startswith("tcp://["):
            self._sock.setsockopt(zmq.IPV6, 1)
        self._bind()
        self._thread = threading.Thread(target=self._run, name="shadowd-ingest", daemon=True)
        self._last_log = 0.0

    def _bind(self) -> None:
        if self.endpoint.startswith("ipc://"):
            path = Path(self.endpoint[len("ipc://") :])
            path.parent.mkdir(parents=True, exist_ok=True)
            if path.is_socket():
                path.unlink()  # a stale socket from a previous daemon
            elif path.exists() or path.is_symlink():
                raise OSError(
                    f"cannot listen on {self.endpoint}: {path} exists and is not a socket; "
                    "remove it or pick another --listen path"
                )
        try:
            self._sock.bind(self.endpoint)
        except zmq.ZMQError as exc:
            raise OSError(
                f"cannot listen on {self.endpoint}: {exc}; pick another --listen "
                "endpoint or stop the process holding it"
            ) from None
        if self.endpoint.startswith("ipc://") and self.socket_mode is not None:
            os.chmod(self.endpoint[len("ipc://") :], self.socket_mode)

    def start(self) -> None:
        tune_gc_for_ingest()
        self._thread.start()

    def stop(self, drain: bool = True, timeout: float = 30.0) -> None:
        """Stop receiving; with ``drain``, first consume every frame already queued."""
        self._drain_on_stop = drain
        self._stop.set()
        self._thread.join(timeout)
        self._sock.close(linger=0)
        self._ctx.term()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def _run(self) -> None:
        poller = zmq.Poller()
        poller.register(self._sock, zmq.POLLIN)
        batch: list[StepFrame] = []
        deadline = time.monotonic() + self.batch_interval_s
        while not self._stop.is_set():
            self.last_loop_monotonic = time.monotonic()
            if poller.poll(timeout=max(1, int(self.batch_interval_s * 1000))):
                self._recv_available(batch)
            if batch and (len(batch) >= self.batch_frames or time.monotonic() >= deadline):
                self._hand_over(batch)
                batch.clear()
            if not batch:
                deadline = time.monotonic() + self.batch_interval_s
        if getattr(self, "_drain_on_stop", True):
            self._recv_available(batch, limit=None)
        if batch:
            self._hand_over(batch)

    def _recv_available(self, batch: list[StepFrame], limit: int | None = 10_000) -> None:
        n = 0
        while limit is None or n < limit:
            try:
                data = self._sock.recv(zmq.NOBLOCK, copy=False)
            except zmq.Again:
                return
            n += 1
            self.messages_received += 1
            for frame in self._decode(data.buffer):
                batch.append(frame)
                self._batch_rows += len(frame.req_ids)
                if len(batch) >= self.batch_frames or self._batch_rows >= self.batch_rows:
                    self._hand_over(batch)
                    batch.clear()

    def _decode(self, data: memoryview) -> list[StepFrame]:
        """The good frames of one message (a frame or a batch of frames); bad ones counted."""
        if len(data) > self.max_frame_bytes:
            self._fault("oversized", f"{len(data)} bytes > {self.max_frame_bytes}")
            return []
        try:
            frames, errors = decode_message(data)
        except Exception as exc:  # anything else the decoder might raise
            frames, errors = [], [FrameError(f"{type(exc).__name__}: {exc}")]
        for exc in errors:
            self._fault("version" if "version" in str(exc) else "malformed", str(exc))
        if frames:
            frames = self._clock_checked(frames)
        for frame in frames:
            gap = self.tracker.observe(frame)
            if gap:
                self.faults["gap"] += gap
            self.rows_received += len(frame.req_ids)
        if frames:
            self.frames_received += len(frames)
            self.last_frame_monotonic = time.monotonic()
        return frames

    def _clock_checked(self, frames: list[StepFrame]) -> list[StepFrame]:
        """Frames dated more than the tolerance after receipt time get receipt time (counted).

        Freshness, evidence windows and retention all read ``ts``, anchored at its maximum: one
        future-dated frame (a clock step, a bad clock, a forged frame) would look fresh forever,
        push real steps out of the windows and escape retention.  A frame dated in the past
        moves none of these (it can only fall out of a window early), and replays and late
        frames are legitimately old, so only the future is bounded.
        """
        now = int(self.wall_clock() * 1e9)
        hi = now + self.clock_tolerance_ns
        if all(f.wall_ns <= hi for f in frames):
            return frames
        out = []
        for f in frames:
            if f.wall_ns <= hi:
                out.append(f)
            else:
                self._fault("clock", f"wall clock {(f.wall_ns - now) / 1e9:+.0f} s ahead of receipt time")
                out.append(msgspec.structs.replace(f, wall_ns=now))
        return out

    def _hand_over(self, batch: list[StepFrame]) -> None:
        self._batch_rows = 0
        try:
            self.consume(list(batch))
        except Exception:
            self.faults["consumer"] += 1
            log.exception("ingest: consumer failed on %d frames (dropped, counted)", len(batch))
        # A hand-over may wait (bounded) on a busy writer, and one burst may hand over many
        # batches: each one returning is the loop making progress, not a wedge.
        self.last_loop_monotonic = time.monotonic()

    def _fault(self, kind: str, detail: str) -> None:
        self.faults[kind] += 1
        now = time.monotonic()
        if now - self._last_log > 10.0:
            self._last_log = now
            log.warning("ingest: %s frame (%s); fault totals %s", kind, detail, dict(self.faults))
        return None
