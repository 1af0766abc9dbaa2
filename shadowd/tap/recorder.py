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

import hashlib
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
SWEEP_PER_STEP = 2  # admitted requests checked per step for a finish the tap missed
MAX_REQ_ID_LEN = 128  # longer request ids are shortened on the wire (short_id) and counted
SEND_INTERVAL_NS = 16_000_000  # at most one send per 16 ms of engine clock, unless idle or full
_encode = msgspec.msgpack.Encoder().encode
_N_FIELDS = len(StepFrame.__struct_fields__)
_FRAME_HEAD = _encode([None] * _N_FIELDS)[:-_N_FIELDS]  # msgpack array header of a frame


def short_id(rid: str) -> str:
    """A request id cut to ``MAX_REQ_ID_LEN`` characters that stays unique: a prefix, then a
    hash of the whole id (ids are chosen by clients, so they are bounded here).

    >>> s = short_id("x" * 500); len(s), s[:4], s == short_id("x" * 500), s == short_id("x" * 501)
    (128, 'xxxx', True, False)
    """
    digest = hashlib.blake2b(rid.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()
    return f"{rid[: MAX_REQ_ID_LEN - len(digest) - 1]}~{digest}"


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
        sparse: bool = True,
    ) -> None:
        self.engine_id = engine_id
        self.run_id = uuid.uuid4().hex[:16]
        self.step_seq = 0
        self.dropped = 0  # frames not produced because of a tap error
        self.ids_truncated = 0  # request ids longer than MAX_REQ_ID_LEN, shortened on the wire
        self.missed_finishes = 0  # per-request state dropped by the sweep, not by on_finish
        self.preempted = 0  # preemptions seen
        self.clock = clock
        self.wall_clock = wall_clock
        self._send = send
        self._send_dropped: Callable[[], int] = lambda: 0
        self._requests = requests
        self._tenants = tenants
        self._tenant_of = _RequestFacts(lambda rid: tenants.resolve(requests[rid]))
        self._prompt_of = _RequestFacts(lambda rid: int(requests[rid].num_prompt_tokens))
        self._preemptions: dict[str, int] = {}
        self._chunking: set[str] = set()  # requests whose prompt (or recompute) may be unfinished
        self._long_ids: dict[str, str] = {}  # over-long request id -> its shortened form
        self._admitted: deque[str] = deque()  # sweep order: each admitted id once
        self._sparse = sparse  # token/prefill columns from the candidates only (_sparse_tokens)
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
        """A request entered the scheduler: its facts, resolved once, kept until it finishes."""
        try:
            rid = request.request_id
            if rid in self._tenant_of:  # a streaming-input update of a live request
                self._prompt_of.pop(rid, None)  # re-read from the live request when next needed
                self._chunking.add(rid)  # its new prompt tokens are prefill work
                return
            self._tenant_of[rid] = self._tenants.resolve(request)
            self._prompt_of[rid] = int(request.num_prompt_tokens)
            self._admitted.append(rid)
            if len(rid) > MAX_REQ_ID_LEN:
                self._long_ids[rid] = short_id(rid)
                self.ids_truncated += 1
        except Exception as exc:
            self._fault(exc)

    def on_preempt(self, request: Any) -> None:
        self._steady = None
        try:
            rid = request.request_id
            self.preempted += 1
            self._preemptions[rid] = (
                int(getattr(request, "num_preemptions", 0)) or self._preemptions.get(rid, 0) + 1
            )
            self._chunking.add(rid)  # it recomputes from scratch when resumed
        except Exception as exc:
            self._fault(exc)

    def on_finish(self, request: Any) -> None:
        """A request left the scheduler (finished, aborted): drop its state, once."""
        try:
            self._forget(request.request_id)
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
            self._sweep()
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
        total = out.total_num_scheduled_tokens
        if total <= 0:
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
        all_ones = total == n and not drafts
        steady = self._steady
        if all_ones and steady is not None and not new and not cached.resumed_req_ids and steady[0] == ids:
            # The same running requests as the last step, which was all decode, one token
            # each again: context only grew, so every column but ids/ctx is unchanged.
            return (t_start, t_end, ids, *steady[1:3], ctx, *steady[3:])
        self._steady = None
        nst = out.num_scheduled_tokens
        prompt = list(map(self._prompt_of.__getitem__, ids))
        tokens = None
        if not drafts and self._sparse:
            tokens = self._sparse_tokens(len(new), cached, ids, ctx, prompt, nst, total)
        if tokens is None:
            tokens = self._dense_tokens(ids, ctx, prompt, nst, drafts, all_ones)
        new_tokens, spec, prefill, any_prefill = tokens
        tenants = list(map(self._tenant_of.__getitem__, ids))
        preempt = self._preempt_column(ids, nst)
        frame_ids = self._frame_ids(ids, nst)
        if all_ones and not any_prefill and frame_ids is ids:
            self._steady = (list(ids), tenants, new_tokens, prompt, spec, prefill, preempt)
        return (t_start, t_end, frame_ids, tenants, new_tokens, ctx, prompt, spec, prefill, preempt)

    def _sparse_tokens(
        self, k_new: int, cached: Any, ids: list, ctx: list, prompt: list, nst: dict, total: int
    ) -> tuple | None:
        """Token and prefill columns with per-request work only where a prompt may be in progress.

        Candidates: new and resumed requests, and those whose prompt (or recompute) was still
        unfinished after their last scheduled step (``_chunking``).  Every other scheduled request
        is a decode step of one token, which the token total proves: the candidates' tokens plus
        one per other request must add up to it, or the dense path runs instead.  A decode step
        of a request whose prompt is done is not prefill work (``c >= p``): a request only gets
        back into its prompt through preemption (``on_preempt`` marks it) or a streaming-input
        update (``on_admit`` marks it); KV-connector rollbacks are ruled out by ``_sparse``."""
        chunking = self._chunking
        if len(chunking) > 64:
            return None
        n = len(ids)
        cand = list(range(k_new))
        resumed = cached.resumed_req_ids
        for rid in (*chunking, *resumed) if resumed else chunking:
            if rid in nst:
                i = ids.index(rid)
                if i >= k_new and i not in cand:
                    cand.append(i)
        new_tokens = [1] * n
        prefill = [False] * n
        counted = 0
        any_prefill = False
        for i in cand:
            k = nst[ids[i]]
            counted += k
            new_tokens[i] = k
            if ctx[i] < prompt[i] or k > 1:
                prefill[i] = any_prefill = True
        if counted + n - len(cand) != total:
            return None
        reqs = self._requests
        for i in cand:
            rid = ids[i]
            flag = getattr(reqs[rid], "is_prefill_chunk", None)
            if flag is None:
                self._sparse = False
            elif flag:
                chunking.add(rid)
            else:
                chunking.discard(rid)
        return new_tokens, [0] * n, prefill, any_prefill

    def _dense_tokens(
        self, ids: list, ctx: list, prompt: list, nst: dict, drafts: Any, all_ones: bool
    ) -> tuple:
        """Token and prefill columns computed for every scheduled request (speculative decoding,
        or a step the sparse path cannot prove)."""
        n = len(ids)
        new_tokens = [1] * n if all_ones else list(map(nst.__getitem__, ids))
        if drafts:
            spec = [len(drafts.get(r, ())) for r in ids]
            prefill = [c < p or k - s > 1 for c, p, k, s in zip(ctx, prompt, new_tokens, spec)]
        else:
            spec = [0] * n
            prefill = [c < p or k > 1 for c, p, k in zip(ctx, prompt, new_tokens)]
        if self._sparse:  # keep the sparse path's candidates right for the next step
            reqs, chunking = self._requests, self._chunking
            for rid, p in zip(ids, prefill):
                if p and getattr(reqs[rid], "is_prefill_chunk", False):
                    chunking.add(rid)
                else:
                    chunking.discard(rid)
        return new_tokens, spec, prefill, any(prefill)

    def _preempt_column(self, ids: list, nst: dict) -> list:
        pre = self._preemptions
        n = len(ids)
        if not pre:
            return [0] * n
        hits = [r for r in pre if r in nst]
        if not hits:
            return [0] * n
        if len(hits) > 16:
            return list(map(pre.get, ids, repeat(0)))
        col = [0] * n
        for r in hits:
            col[ids.index(r)] = pre[r]
        return col

    def _frame_ids(self, ids: list, nst: dict) -> list:
        """``ids`` as they go on the wire: over-long ids (counted at admission) shortened."""
        long = self._long_ids
        if long and any(r in nst for r in long):
            return [long.get(r, r) for r in ids]
        return ids

    def _pop_pending(self, out: Any) -> tuple | None:
        while self._pending:
            o, cols = self._pending.popleft()
            if o is out:
                return cols
            self.dropped += cols is not None  # an output we never saw: count, move on
        return None

    def _forget(self, rid: str) -> None:
        self._tenant_of.pop(rid, None)
        self._prompt_of.pop(rid, None)
        self._preemptions.pop(rid, None)
        self._chunking.discard(rid)
        self._long_ids.pop(rid, None)

    def _sweep(self) -> None:
        """A safety net for finishes the tap never saw, spread over the steps: drop the ids of
        requests already forgotten from the front of the admission queue, then check
        ``SWEEP_PER_STEP`` live ones against the scheduler's requests, moving them to the back.
        Amortised O(1) per step and per admission; no step walks all admitted requests."""
        adm, known, live = self._admitted, self._tenant_of, self._requests
        for _ in range(SWEEP_PER_STEP):
            while adm and adm[0] not in known:
                adm.popleft()
            if not adm:
                return
            rid = adm.popleft()
            if rid in live:
                adm.append(rid)
            else:
                self._forget(rid)
                self.missed_finishes += 1

    def _fault(self, exc: Exception) -> None:
        self.dropped += 1
        now = time.monotonic()
        if now - self._last_error_log > 60.0:
            self._last_error_log = now
            log.warning(
                "shadowd tap: %s: %s (frame dropped; the engine is unaffected)", type(exc).__name__, exc
            )
