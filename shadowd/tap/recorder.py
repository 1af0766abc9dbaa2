"""Turns scheduler outputs into ``StepFrame``s, cheaply, inside the engine.

``on_schedule`` runs right after the scheduler returns a ``SchedulerOutput``:
it copies the request columns the scheduler already holds (request ids,
computed-token counts, scheduled-token counts) into lists.  ``on_output``
runs when that step's model output arrives: it stamps the time and queues the
encoded frame.  Per-request facts that never change (tenant, prompt length) are
resolved once, at admission, and looked up by ``map`` over dicts.

Cost (``docs/benchmarks.md``): a steady decode step (the same running
requests as the step before, one token each, nothing new, resumed or
speculative) reuses the previous step's tenant, prompt, prefill and
preemption columns instead of looking them up again, and their msgpack
encoding too: the frame is assembled from the encoded parts (byte for byte
what ``encode_frame`` would produce), so only the context column and the
stamps are encoded afresh.  Frames are sent in
batches (one zmq message, ``encode_batch``): a zmq send wakes zmq's I/O
thread and costs tens of µs, more than building the frame.  A frame leaves at once if no frame was
sent in the last ``SEND_INTERVAL_NS`` (engine clock); otherwise it waits until
that much time has passed, ``BATCH_FRAMES`` frames are waiting, or no further
step is in flight (the engine is going idle, or scheduling is synchronous), so
frames never wait for traffic that may not come.  Slow steps thus go one
frame per message, as soon as they finish; fast steps (shorter than the
interval) share a message, which bounds the sends to about 1/interval per
second and a frame's extra delay to one interval plus one step.  A batch the
sender cannot pass on is dropped and counted as a whole.

Both hooks swallow every exception (counted as a dropped frame): the engine
must never see an error from the tap.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections import deque
from collections.abc import Callable
from itertools import repeat
from typing import Any

import msgspec

from shadowd.tap.frame import FRAME_VERSION, StepFrame, encode_batch
from shadowd.tap.sender import BATCH_FRAMES  # frames per zmq message at most
from shadowd.tap.tenant import TenantResolver

log = logging.getLogger("shadowd.tap")
PRUNE_EVERY_STEPS = 4096
SEND_INTERVAL_NS = 16_000_000  # at most one send per 16 ms of engine clock, unless idle or full
_encode = msgspec.msgpack.Encoder().encode
_N_FIELDS = len(StepFrame.__struct_fields__)
_FRAME_HEAD = _encode([None] * _N_FIELDS)[:-_N_FIELDS]  # msgpack array header of a frame


class _RequestFacts(dict):
    """rid -> fact, filled at admission; falls back to the live request if missed."""

    def __init__(self, lookup: Callable[[str], Any]) -> None:
        super().__init__()
        self._lookup = lookup

    def __missing__(self, rid: str) -> Any:
        value = self[rid] = self._lookup(rid)
        return value


class StepRecorder:
    """Owns the tap's per-run state: step counter, pending steps, drop count.

    ``send(message, frames=1)`` takes one encoded frame, or a batch of
    ``frames`` frames (``encode_batch``), and returns whether it was passed on
    (``FrameSender.send``).
    """

    def __init__(
        self,
        send: Callable[..., bool],
        *,
        engine_id: str,
        requests: dict[str, Any],
        tenants: TenantResolver,
        clock: Callable[[], int] = time.monotonic_ns,
        wall_clock: Callable[[], int] = time.time_ns,
    ) -> None:
        self.engine_id = engine_id
        self.run_id = uuid.uuid4().hex[:16]
        self.step_seq = 0
        self.dropped = 0  # frames not produced because of a tap error
        self.clock = clock
        self.wall_clock = wall_clock
        self._send = send
        self._send_dropped: Callable[[], int] = lambda: 0
        self._requests = requests
        self._tenants = tenants
        self._tenant_of = _RequestFacts(lambda rid: tenants.resolve(requests[rid]))
        self._prompt_of = _RequestFacts(lambda rid: int(requests[rid].num_prompt_tokens))
        self._preemptions: dict[str, int] = {}
        self._pending: deque = deque(maxlen=16)
        self._prev_done = 0
        self._last_error_log = 0.0
        self._outbox: list[bytes] = []  # encoded frames waiting for their batch
        self._last_send = 0  # t_done of the step whose frame went out last
        self._steady: tuple | None = None  # last all-decode step's (ids, reusable columns)
        self._encoded: tuple | None = None  # (tenants list, encoded ids..new_tokens, prompt..preemptions)

    def count_send_drops_with(self, fn: Callable[[], int]) -> None:
        self._send_dropped = fn

    @property
    def dropped_total(self) -> int:
        return self.dropped + self._send_dropped()

    # -- hooks called by the scheduler subclass -------------------------
    def on_admit(self, request: Any) -> None:
        try:
            rid = request.request_id
            self._tenant_of[rid] = self._tenants.resolve(request)
            self._prompt_of[rid] = int(request.num_prompt_tokens)
        except Exception as exc:
            self._fault(exc)

    def on_preempt(self, request: Any) -> None:
        self._steady = None
        try:
            self._preemptions[request.request_id] = (
                int(getattr(request, "num_preemptions", 0))
                or self._preemptions.get(request.request_id, 0) + 1
            )
        except Exception as exc:
            self._fault(exc)

    def on_schedule(self, out: Any, t_start: int, t_end: int) -> None:
        try:
            self._pending.append((out, self._columns(out, t_start, t_end)))
        except Exception as exc:
            self._pending.append((out, None))
            self._fault(exc)

    def on_output(self, out: Any, t_done: int) -> None:
        try:
            cols = self._pop_pending(out)
            if cols is None:
                return
            self.step_seq += 1
            head = _encode(
                (
                    FRAME_VERSION,
                    self.engine_id,
                    self.run_id,
                    self.step_seq,
                    cols[0],
                    cols[1],
                    t_done,
                    self._prev_done,
                    self.wall_clock(),
                    self.dropped_total,
                )
            )
            self._prev_done = t_done
            enc = self._encoded
            if enc is None or enc[0] is not cols[3]:  # columns not reused from the last frame
                enc = self._encoded = (cols[3], _encode(cols[2:5])[1:], _encode(cols[6:])[1:])
            outbox = self._outbox
            outbox.append(b"".join((_FRAME_HEAD, head[1:], enc[1], _encode(cols[5]), enc[2])))
            if (
                t_done - self._last_send >= SEND_INTERVAL_NS
                or len(outbox) >= BATCH_FRAMES
                or not self._step_in_flight()
            ):
                self._last_send = t_done
                self.flush()
            if self.step_seq % PRUNE_EVERY_STEPS == 0:
                self._prune()
        except Exception as exc:
            self._fault(exc)

    def flush(self) -> None:
        """Pass the queued frames on now (one batch)."""
        outbox, self._outbox = self._outbox, []
        if not outbox:
            return
        try:
            if len(outbox) == 1:
                self._send(outbox[0])
            else:
                self._send(encode_batch(outbox), len(outbox))
        except Exception as exc:  # the sender counts its own drops; this is a bug guard
            self.dropped += len(outbox) - 1
            self._fault(exc)

    @property
    def queued(self) -> int:
        """Frames built but not yet passed to the sender."""
        return len(self._outbox)

    # -- internals ---------------------------------------------------------
    def _step_in_flight(self) -> bool:
        """Whether a non-empty step is already scheduled behind the one just finished."""
        for _, cols in self._pending:
            if cols is not None:
                return True
        return False

    def _columns(self, out: Any, t_start: int, t_end: int) -> tuple | None:
        if out.total_num_scheduled_tokens <= 0:
            self._steady = None
            return None
        new = out.scheduled_new_reqs
        cached = out.scheduled_cached_reqs
        drafts = out.scheduled_spec_decode_tokens
        if new:
            ids = [r.req_id for r in new] + cached.req_ids
            ctx = [r.num_computed_tokens for r in new] + cached.num_computed_tokens
        else:
            ids, ctx = cached.req_ids, cached.num_computed_tokens
        n = len(ids)
        all_ones = out.total_num_scheduled_tokens == n and not drafts
        steady = self._steady
        if all_ones and steady is not None and not new and not cached.resumed_req_ids and steady[0] == ids:
            # The same running requests as the last step, which was all decode, one token
            # each again: context only grew, so every column but ids/ctx is unchanged.
            return (t_start, t_end, ids, *steady[1:3], ctx, *steady[3:])
        new_tokens = [1] * n if all_ones else list(map(out.num_scheduled_tokens.__getitem__, ids))
        prompt = list(map(self._prompt_of.__getitem__, ids))
        if drafts:
            spec = [len(drafts.get(r, ())) for r in ids]
            prefill = [c < p or k - s > 1 for c, p, k, s in zip(ctx, prompt, new_tokens, spec)]
        else:
            spec = [0] * n
            prefill = [c < p or k > 1 for c, p, k in zip(ctx, prompt, new_tokens)]
        pre = self._preemptions
        preempt = list(map(pre.get, ids, repeat(0))) if pre and not pre.keys().isdisjoint(ids) else [0] * n
        tenants = list(map(self._tenant_of.__getitem__, ids))
        self._steady = None
        if all_ones and not any(prefill):
            self._steady = (list(ids), tenants, new_tokens, prompt, spec, prefill, preempt)
        return (t_start, t_end, ids, tenants, new_tokens, ctx, prompt, spec, prefill, preempt)

    def _pop_pending(self, out: Any) -> tuple | None:
        while self._pending:
            o, cols = self._pending.popleft()
            if o is out:
                return cols
            self.dropped += cols is not None  # an output we never saw: count, move on
        return None

    def _prune(self) -> None:
        live = self._requests
        for facts in (self._tenant_of, self._prompt_of, self._preemptions):
            for rid in [r for r in facts if r not in live]:
                del facts[rid]

    def _fault(self, exc: Exception) -> None:
        self.dropped += 1
        now = time.monotonic()
        if now - self._last_error_log > 60.0:
            self._last_error_log = now
            log.warning(
                "shadowd tap: %s: %s (frame dropped; the engine is unaffected)", type(exc).__name__, exc
            )
