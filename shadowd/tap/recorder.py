"""Turns scheduler outputs into ``StepFrame``s, cheaply, inside the engine.

The tap's work is kept proportional to what changed, not to the batch:

* *Per request, once.*  ``on_admit`` resolves a request's tenant and prompt
  length; ``on_finish`` (vLLM's ``_free_request``, which every finish and abort
  goes through) drops them.  A step's tenant and prompt columns are then one
  dict lookup per row, in C (``map``), with no per-row Python work.
* *Per step, only the requests that may be prefilling.*  New and resumed
  requests and those whose prompt was still unfinished after their last step
  (``_chunking``) are the only rows whose token count and prefill flag are
  looked at; every other row is a one-token decode step, which the step's
  token total proves (``_sparse_tokens``).  Columns that are all zeros, ones or
  ``False`` come from a cache of encoded columns.
* *A steady decode step* (the same running requests as the step before, one
  token each, nothing new, resumed or speculative) reuses the previous frame's
  encoded columns whole: only the context column and the stamps are encoded.
* *No walk over all admitted requests*: the sweep that catches a finish the tap
  missed checks ``SWEEP_PER_STEP`` requests a step (``_sweep``).

Frames are byte for byte what ``encode_frame`` would produce for the same
columns.  ``on_schedule`` runs right after the scheduler returns a
``SchedulerOutput`` and builds the columns; ``on_output`` runs when that step's
model output arrives: it stamps the time and queues the encoded frame.  Frames
are sent in batches (one zmq message, ``encode_batch``): a zmq send wakes zmq's
I/O thread and costs tens of µs, more than building the frame.  A frame leaves
at once if no frame was sent in the last ``SEND_INTERVAL_NS`` (engine clock);
otherwise it waits until that much time has passed, ``BATCH_FRAMES`` frames are
waiting, or no further step is in flight (the engine is going idle, or
scheduling is synchronous), so frames never wait for traffic that may not come.
A batch the sender cannot pass on is dropped and counted as a whole.

Request ids are chosen by clients: one longer than ``MAX_REQ_ID_LEN`` goes on
the wire shortened (``short_id``, unique) and is counted in ``ids_truncated``.

Every hook swallows every exception (counted as a dropped frame): the engine
must never see an error from the tap.  Cost: ``docs/benchmarks.md``
(``benchmarks/tap_cost.py``, steady and churn workloads).
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

from shadowd.tap.frame import FRAME_VERSION, StepFrame, array_header, encode_batch
from shadowd.tap.sender import BATCH_FRAMES  # frames per zmq message at most
from shadowd.tap.tenant import TenantResolver

log = logging.getLogger("shadowd.tap")
SEND_INTERVAL_NS = 50_000_000  # at most one send per 50 ms of engine clock, unless idle or full
SWEEP_PER_STEP = 2  # admitted requests checked per step for a finish the tap missed
MAX_REQ_ID_LEN = 128  # longer request ids are shortened on the wire (short_id) and counted
MAX_CHUNKING = 64  # more possibly-prefilling requests than this: the dense path
_encode = msgspec.msgpack.Encoder().encode
_N_FIELDS = len(StepFrame.__struct_fields__)
_FRAME_HEAD = array_header(_N_FIELDS)
_NO_REQUESTS = _encode(None)  # the requests section of a frame where no request finished
MAX_FINISHED_QUEUED = 4096  # lifecycle records waiting for a frame; beyond: dropped, counted
_REASONS = {  # vLLM RequestStatus name -> finish reason (as vLLM reports it to clients)
    "FINISHED_STOPPED": "stop",
    "FINISHED_LENGTH_CAPPED": "length",
    "FINISHED_IGNORED": "length",
    "FINISHED_ABORTED": "abort",
    "FINISHED_ERROR": "error",
    "FINISHED_REPETITION": "repetition",
}


def _wall_ns(seconds: Any) -> int:
    """vLLM's ``arrival_time`` (wall-clock seconds, a float) as ns; 0 when absent or odd."""
    try:
        ns = int(seconds * 1e9)
    except (TypeError, ValueError, OverflowError):
        return 0
    return ns if 0 <= ns < 2**63 else 0


def short_id(rid: str) -> str:
    """A request id cut to ``MAX_REQ_ID_LEN`` characters that stays unique: a prefix, then a
    hash of the whole id.

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


_ZERO, _ONE, _FALSE = _encode(0), _encode(1), _encode(False)


class _ConstColumns(dict):
    """(encoded value, n) -> the encoded column of ``n`` times that value (zeros, ones, ``False``)."""

    def __missing__(self, key: tuple[bytes, int]) -> bytes:
        if len(self) > 4096:
            self.clear()
        value, n = key
        col = self[key] = array_header(n) + value * n
        return col


class StepRecorder:
    """Owns the tap's per-run state: step counter, pending steps, per-request facts, drops.

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
        self.records_dropped = 0  # lifecycle records lost (queue full, or a tap error)
        self.clock = clock
        self.wall_clock = wall_clock
        self._send = send
        self._send_dropped: Callable[[], int] = lambda: 0
        self._requests = requests
        self._tenants = tenants
        self._tenant_of = _RequestFacts(lambda rid: tenants.resolve(requests[rid]))
        self._prompt_of = _RequestFacts(lambda rid: int(requests[rid].num_prompt_tokens))
        self._long_ids: dict[str, str] = {}  # over-long request id -> its shortened form
        self._preemptions: dict[str, int] = {}
        # Lifecycle per admitted request: [arrival wall ns, first scheduled step, its t_sched_start,
        # first token step, its t_done]; finished ones wait in _finishing for the next frame.
        self._life: dict[str, list[int]] = {}
        self._finishing: list[tuple] = []
        self._chunking: set[str] = set()  # requests whose prompt (or recompute) may be unfinished
        self._admitted: deque[str] = deque()  # sweep order: each admitted id once
        self._sparse = sparse  # token/prefill columns from the candidates only (_sparse_tokens)
        self._const = _ConstColumns()
        self._pending: deque = deque(maxlen=16)
        self._prev_done = 0
        self._last_error_log = 0.0
        self._outbox: list[bytes] = []  # encoded frames waiting for their batch
        self._last_send = 0  # t_done of the step whose frame went out last
        self._steady: tuple | None = None  # last all-decode step: (ids, encoded columns around ctx)

    def count_send_drops_with(self, fn: Callable[[], int]) -> None:
        self._send_dropped = fn

    @property
    def dropped_total(self) -> int:
        return self.dropped + self._send_dropped()

    # -- hooks called by the scheduler subclass -------------------------
    def on_admit(self, request: Any) -> None:
        """A request entered the scheduler: its facts, resolved and encoded once."""
        try:
            rid = request.request_id
            if rid in self._tenant_of:  # a streaming-input update of a live request
                self._prompt_of.pop(rid, None)  # re-read from the live request when next needed
                self._chunking.add(rid)  # its new prompt tokens are prefill work
                return
            self._tenant_of[rid] = self._tenants.resolve(request)
            self._prompt_of[rid] = int(request.num_prompt_tokens)
            self._life[rid] = [_wall_ns(getattr(request, "arrival_time", 0)), 0, 0, 0, 0]
            if len(rid) > MAX_REQ_ID_LEN:
                self.ids_truncated += 1
                self._long_ids[rid] = short_id(rid)
            self._admitted.append(rid)
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
        """A request left the scheduler (finished, aborted): queue its lifecycle for the next
        frame and drop its state, once."""
        try:
            rid = request.request_id
            rec = self._life.get(rid)
            if rec is not None:
                if len(self._finishing) < MAX_FINISHED_QUEUED:
                    long = self._long_ids.get(rid) if self._long_ids else None
                    tenant, prompt = self._tenant_of.get(rid), self._prompt_of.get(rid)
                    self._finishing.append((long or rid, tenant, rec, request, self.clock(), prompt))
                else:
                    self.records_dropped += 1
            self._forget(rid)
        except Exception as exc:
            self.records_dropped += 1
            self._fault(exc)

    def on_schedule(self, out: Any, t_start: int, t_end: int) -> None:
        try:
            self._pending.append((out, self._columns(out, t_start, t_end)))
        except Exception as exc:
            self._pending.append((out, None))
            self._fault(exc)

    def on_output(self, out: Any, t_done: int) -> None:
        """After the scheduler took the step's output in (``t_done``: when it arrived)."""
        try:
            cols = self._pop_pending(out)
            if cols is None:
                return
            self.step_seq += 1
            if cols[5] or cols[6]:
                self._lifecycle(cols, t_done)
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
                    self.dropped + self._send_dropped(),
                )
            )
            self._prev_done = t_done
            outbox = self._outbox
            tail = self._records() if self._finishing else _NO_REQUESTS
            outbox.append(b"".join((_FRAME_HEAD, head[1:], cols[2], _encode(cols[3]), cols[4], tail)))
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
        """(t_start, t_end, encoded columns before ctx, ctx list, encoded columns after ctx)."""
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
            # each again: context only grew, so every column but ctx is unchanged.
            return (t_start, t_end, steady[1], ctx, steady[2], (), ())
        self._steady = None
        nst = out.num_scheduled_tokens
        k_new = len(new)
        # Two C-level dict lookups per row: cheaper than any Python-level update of kept columns
        # (the running order is not the next step's order: async scheduling skips requests whose
        # last token is in flight, budgets skip others).
        tenants = list(map(self._tenant_of.__getitem__, ids))
        prompt = list(map(self._prompt_of.__getitem__, ids))
        tokens = None
        if not drafts and self._sparse:
            tokens = self._sparse_tokens(k_new, cached, ids, ctx, prompt, nst, total)
        if tokens is None:
            tokens = self._dense_tokens(ids, ctx, prompt, nst, drafts, all_ones)
        new_tokens, spec, prefill, any_prefill, watch = tokens
        before = b"".join((self._ids_column(ids, nst), _encode(tenants), new_tokens))
        after = b"".join((_encode(prompt), spec, prefill, self._preempt_column(ids, nst)))
        if all_ones and not any_prefill:
            self._steady = (list(ids), before, after)
        new_recs = list(map(self._life.get, ids[:k_new])) if k_new else ()
        return (t_start, t_end, before, ctx, after, new_recs, watch)

    def _sparse_tokens(
        self, k_new: int, cached: Any, ids: list, ctx: list, prompt: list, nst: dict, total: int
    ) -> tuple | None:
        """Encoded token, spec and prefill columns, looking only at the requests that may be
        prefilling.

        Candidates: new and resumed requests, and those whose prompt (or recompute) was still
        unfinished after their last scheduled step (``_chunking``).  Every other scheduled request
        is a decode step of one token, which the token total proves: the candidates' tokens plus
        one per other request must add up to it, or the dense path runs instead.  A one-token
        step of a request whose prompt is done is not prefill work (``c >= p``): a request only
        gets back into its prompt through preemption (``on_preempt`` marks it) or a
        streaming-input update (``on_admit`` marks it); KV-connector rollbacks are ruled out by
        ``sparse`` (``shadowd.tap.vllm``)."""
        chunking = self._chunking
        if len(chunking) > MAX_CHUNKING:
            return None
        n = len(ids)
        cand = list(range(k_new))
        resumed = cached.resumed_req_ids
        for rid in (*chunking, *resumed) if resumed else chunking:
            if rid in nst:
                i = ids.index(rid)
                if i >= k_new and i not in cand:
                    cand.append(i)
        const = self._const
        zeros = const[_ZERO, n]
        if not cand:
            if total != n:
                return None
            return const[_ONE, n], zeros, const[_FALSE, n], False, ()
        new_tokens = [1] * n
        prefill = [False] * n
        counted = 0
        any_prefill = False
        for i in cand:
            k = nst[ids[i]]
            counted += k
            new_tokens[i] = k
            if k > 1 or ctx[i] < prompt[i]:
                prefill[i] = any_prefill = True
        if counted + n - len(cand) != total:
            return None
        reqs, life = self._requests, self._life
        watch = []
        for i in cand:
            rid = ids[i]
            req = reqs[rid]
            flag = getattr(req, "is_prefill_chunk", None)
            if flag is None:
                self._sparse = False
            elif flag:
                chunking.add(rid)
            else:
                chunking.discard(rid)
            rec = life.get(rid)
            if prefill[i] and rec is not None and not rec[3]:
                watch.append((rec, req))
        prefill_col = _encode(prefill) if any_prefill else const[_FALSE, n]
        return _encode(new_tokens), zeros, prefill_col, any_prefill, watch

    def _dense_tokens(
        self, ids: list, ctx: list, prompt: list, nst: dict, drafts: Any, all_ones: bool
    ) -> tuple:
        """Encoded token, spec and prefill columns computed for every scheduled request
        (speculative decoding, or a step the sparse path cannot prove)."""
        n = len(ids)
        new_tokens = [1] * n if all_ones else list(map(nst.__getitem__, ids))
        if drafts:
            spec = [len(drafts.get(r, ())) for r in ids]
            prefill = [c < p or k - s > 1 for c, p, k, s in zip(ctx, prompt, new_tokens, spec)]
        else:
            spec = [0] * n
            prefill = [c < p or k > 1 for c, p, k in zip(ctx, prompt, new_tokens)]
        reqs, chunking, life = self._requests, self._chunking, self._life
        sparse = self._sparse
        watch = []
        for rid, p in zip(ids, prefill):
            if p:
                req = reqs[rid]
                rec = life.get(rid)
                if rec is not None and not rec[3]:
                    watch.append((rec, req))
                if sparse and getattr(req, "is_prefill_chunk", False):
                    chunking.add(rid)
                    continue
            if sparse:  # keep the sparse path's candidates right for the next step
                chunking.discard(rid)
        return _encode(new_tokens), _encode(spec), _encode(prefill), any(prefill), watch

    def _preempt_column(self, ids: list, nst: dict) -> bytes:
        pre = self._preemptions
        n = len(ids)
        if pre:
            hits = [r for r in pre if r in nst]
            if len(hits) > 16:
                return _encode(list(map(pre.get, ids, repeat(0))))
            if hits:
                col = [0] * n
                for r in hits:
                    col[ids.index(r)] = pre[r]
                return _encode(col)
        return self._const[_ZERO, n]

    def _pop_pending(self, out: Any) -> tuple | None:
        while self._pending:
            o, cols = self._pending.popleft()
            if o is out:
                return cols
            self.dropped += cols is not None  # an output we never saw: count, move on
        return None

    def _lifecycle(self, cols: tuple, t_done: int) -> None:
        """First scheduled and first token, for the few requests where either can have happened
        in this step: its new requests, and its prefill rows that had no token yet (a first
        token comes at the output of the step that completes a prompt)."""
        seq = self.step_seq
        for rec in cols[5]:
            if rec is not None and not rec[1]:
                rec[1], rec[2] = seq, cols[0]
        for rec, req in cols[6]:
            if not rec[3] and req.num_output_tokens > 0:
                rec[3], rec[4] = seq, t_done

    def _records(self) -> bytes:
        """The encoded ``requests`` section: every request finished since the last frame."""
        finishing, self._finishing = self._finishing, []
        records = []
        for wire_id, tenant, rec, req, t_finish, prompt in finishing:
            status = getattr(getattr(req, "status", None), "name", "")
            records.append(
                (
                    wire_id,
                    tenant if tenant is not None else self._tenants.resolve(req),
                    *rec,
                    t_finish,
                    prompt if prompt is not None else int(req.num_prompt_tokens),
                    int(req.num_output_tokens),
                    min(int(getattr(req, "num_preemptions", 0)), 2**15 - 1),
                    _REASONS.get(status, "unknown"),
                )
            )
        return _encode(records)

    def _ids_column(self, ids: list, nst: dict) -> bytes:
        """``ids`` encoded as they go on the wire: over-long ids (counted at admission) shortened."""
        long = self._long_ids
        if long and any(r in nst for r in long):
            return _encode([long.get(r, r) for r in ids])
        return _encode(ids)

    def _forget(self, rid: str) -> None:
        self._tenant_of.pop(rid, None)
        self._prompt_of.pop(rid, None)
        self._life.pop(rid, None)
        if self._preemptions:
            self._preemptions.pop(rid, None)
        if self._long_ids:
            self._long_ids.pop(rid, None)
        self._chunking.discard(rid)

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
