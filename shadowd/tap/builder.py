"""Encodes the tap's frames: every piece of per-row work, none of it on the engine's path.

``StepRecorder`` (``shadowd.tap.recorder``) runs in vLLM's scheduling loop and does only the
work whose inputs change under it (which requests may be prefilling, who got a first token,
how a request ended), then queues the step.  ``FrameBuilder`` takes the queued steps in order,
on the tap's encoder thread, and does everything that is proportional to the batch: the
tenant and prompt columns (one dict lookup per row, in C), the token, prefill and preemption
columns, msgpack encoding, and batching frames into zmq messages.  What it reads from a step
is ``SchedulerOutput``'s own lists, which vLLM builds afresh for every step and never changes
afterwards (``_make_cached_request_data``); mutable request state is never read here, except
a request's tenant and prompt length when it was not seen admitted.  One exception in vLLM
0.33: with the GPU n-gram proposer and the model runner in the engine process, invalid draft
tokens are trimmed from the step's counts in place while it runs, so a frame built after that
carries the trimmed counts (the tokens that ran); built during it, a row's draft and token
counts may disagree by the trimmed drafts.

The work stays proportional to what changed where it can:

* *Per request, once.*  ``admit`` resolves a request's tenant and prompt length; ``finish``
  drops them.  A step's tenant and prompt columns are one dict lookup per row, in C (``map``).
* *Per step, only the requests that may be prefilling.*  The recorder names them (new and
  resumed requests and those whose prompt was still unfinished after their last step); every
  other row is a one-token decode step, which the step's token total proves.  Columns that are
  all zeros, ones or ``False`` come from a cache of encoded columns.
* *A steady decode step* (the same running requests as the step before, one token each,
  nothing new, resumed or speculative) reuses the previous frame's encoded columns whole: only
  the context column and the stamps are encoded.

Frames are byte for byte what ``encode_frame`` would produce for the same columns.  They are
sent in batches (one zmq message, ``encode_batch``): a frame leaves at once if no frame was
sent in the last ``SEND_INTERVAL_NS`` (engine clock); otherwise it waits until that much time
has passed, ``BATCH_FRAMES`` frames are waiting, or no further step is in flight (the engine
is going idle, or scheduling is synchronous), so frames never wait for traffic that may not
come.  A batch the sender cannot pass on is dropped and counted as a whole.

Request ids are chosen by clients: one longer than ``MAX_REQ_ID_LEN`` goes on the wire
shortened (``short_id``, unique) and is counted in ``ids_truncated``.  Lifecycle records that
cannot be queued (more than ``MAX_FINISHED_QUEUED`` waiting for a frame) are counted in
``records_dropped``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from itertools import repeat
from typing import Any

import msgspec

from shadowd.tap.fault_log import FaultLog
from shadowd.tap.frame import FRAME_VERSION, StepFrame, array_header, encode_batch
from shadowd.tap.sender import BATCH_FRAMES  # frames per zmq message at most
from shadowd.tap.tenant import TenantResolver

SEND_INTERVAL_NS = 100_000_000  # at most one send per 100 ms of engine clock, unless idle or full
MAX_REQ_ID_LEN = 128  # longer request ids are shortened on the wire (short_id) and counted
MAX_FINISHED_QUEUED = 4096  # lifecycle records waiting for a frame; beyond: dropped, counted
_encode = msgspec.msgpack.Encoder().encode
_N_FIELDS = len(StepFrame.__struct_fields__)
_FRAME_HEAD = array_header(_N_FIELDS)
_NO_REQUESTS = _encode(None)  # the requests section of a frame where no request finished
_ZERO, _ONE, _FALSE = _encode(0), _encode(1), _encode(False)


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


class _ConstColumns(dict):
    """(encoded value, n) -> the encoded column of ``n`` times that value (zeros, ones, ``False``)."""

    def __missing__(self, key: tuple[bytes, int]) -> bytes:
        if len(self) > 4096:
            self.clear()
        value, n = key
        col = self[key] = array_header(n) + value * n
        return col


class FrameBuilder:
    """Owns the encoder's state: per-request facts, the steady-step cache, frames not yet sent.

    Its methods are called in the order the recorder queued them, from one thread at a time.
    ``send(message, frames=1)`` takes one encoded frame, or a batch of ``frames`` frames
    (``encode_batch``), and returns whether it was passed on (``FrameSender.send``).
    """

    def __init__(
        self,
        send: Callable[..., bool],
        *,
        engine_id: str,
        run_id: str,
        requests: dict[str, Any],
        tenants: TenantResolver,
    ) -> None:
        self.send = send
        self.send_dropped: Callable[[], int] = lambda: 0  # frames the sender could not pass on
        self.engine_id = engine_id
        self.run_id = run_id
        self.dropped = 0  # frames not produced because of an encoder error
        self.ids_truncated = 0  # request ids longer than MAX_REQ_ID_LEN, shortened on the wire
        self.records_dropped = 0  # lifecycle records lost (queue full, or an encoder error)
        self._tenants = tenants
        self._tenant_of = _RequestFacts(lambda rid: tenants.resolve(requests[rid]))
        self._prompt_of = _RequestFacts(lambda rid: int(requests[rid].num_prompt_tokens))
        self._long_ids: dict[str, str] = {}  # over-long request id -> its shortened form
        self._preemptions: dict[str, int] = {}
        self._finishing: list[tuple] = []
        self._reasons: dict[Any, str] = {}  # vLLM RequestStatus -> finish reason, filled as met
        self._const = _ConstColumns()
        self._steady: tuple | None = None  # last all-decode step: (ids, encoded columns around ctx)
        self._prev_done = 0
        self._outbox: list[bytes] = []  # encoded frames waiting for their batch
        self._last_send = 0  # t_done of the step whose frame went out last
        self._faults = FaultLog()

    # -- per request ---------------------------------------------------------
    def admit(self, rid: str, request: Any, life: list[int]) -> None:
        """A new request: tenant and prompt length resolved once, arrival stamped on its record."""
        life[0] = _wall_ns(getattr(request, "arrival_time", 0))
        self._tenant_of[rid] = self._tenants.resolve(request)
        self._prompt_of[rid] = int(request.num_prompt_tokens)
        if len(rid) > MAX_REQ_ID_LEN:
            self.ids_truncated += 1
            self._long_ids[rid] = short_id(rid)

    def restream(self, rid: str) -> None:
        """A streaming-input update of a live request: its prompt length is re-read when next needed."""
        self._prompt_of.pop(rid, None)

    def preempt(self, rid: str, count: int) -> None:
        self._steady = None
        self._preemptions[rid] = count or self._preemptions.get(rid, 0) + 1

    def finish(self, rid: str, request: Any, life: list[int] | None, t_finish: int) -> None:
        """Queue the lifecycle record of a request that left at ``t_finish`` and drop its facts.
        How it ended is read off the request now: once freed by the scheduler it no longer changes."""
        tenant, prompt = self._tenant_of.pop(rid, None), self._prompt_of.pop(rid, None)
        if life is not None:
            if len(self._finishing) < MAX_FINISHED_QUEUED:
                status = request.status
                reason = self._reasons.get(status)
                if reason is None:
                    reason = self._reasons[status] = _REASONS.get(getattr(status, "name", ""), "unknown")
                preempted = getattr(request, "num_preemptions", 0)
                self._finishing.append(
                    (
                        self._long_ids.get(rid, rid) if self._long_ids else rid,
                        tenant if tenant is not None else self._tenants.resolve(request),
                        life,
                        t_finish,
                        prompt if prompt is not None else int(request.num_prompt_tokens),
                        request.num_output_tokens,
                        preempted if preempted < 32767 else 32767,
                        reason,
                    )
                )
            else:
                self.records_dropped += 1
        if self._preemptions or self._long_ids:
            self._preemptions.pop(rid, None)
            self._long_ids.pop(rid, None)

    def forget(self, rid: str) -> None:
        """Drop a request the recorder found gone without a finish (``StepRecorder._reconcile``)."""
        self._tenant_of.pop(rid, None)
        self._prompt_of.pop(rid, None)
        self._preemptions.pop(rid, None)
        self._long_ids.pop(rid, None)

    @property
    def known(self) -> int:
        return len(self._tenant_of)

    # -- per step ----------------------------------------------------------------
    def columns(self, out: Any, t_start: int, t_end: int, cands: list | None, slot: list) -> None:
        """Fill ``slot`` with the step's columns: (t_start, t_end, encoded columns before ctx, ctx
        list, encoded columns after ctx).  ``cands``: the rows that may be prefilling, by id (new
        ones first), or ``None`` when every row must be looked at."""
        new = out.scheduled_new_reqs
        cached = out.scheduled_cached_reqs
        drafts = out.scheduled_spec_decode_tokens
        total = out.total_num_scheduled_tokens
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
            slot[0] = (t_start, t_end, steady[1], ctx, steady[2])
            return
        self._steady = None
        nst = out.num_scheduled_tokens
        # Two C-level dict lookups per row: cheaper than any Python-level update of kept columns
        # (the running order is not the next step's order: async scheduling skips requests whose
        # last token is in flight, budgets skip others).
        tenants = list(map(self._tenant_of.__getitem__, ids))
        prompt = list(map(self._prompt_of.__getitem__, ids))
        tokens = None
        if cands is not None and not drafts:
            tokens = self._sparse_tokens(len(new), cands, ids, ctx, prompt, nst, total)
        if tokens is None:
            tokens = self._dense_tokens(ids, ctx, prompt, nst, drafts, all_ones)
        new_tokens, spec, prefill, any_prefill = tokens
        before = b"".join((self._ids_column(ids, nst), _encode(tenants), new_tokens))
        after = b"".join((_encode(prompt), spec, prefill, self._preempt_column(ids, nst)))
        if all_ones and not any_prefill:
            self._steady = (list(ids), before, after)
        slot[0] = (t_start, t_end, before, ctx, after)

    def frame(self, slot: list, seq: int, t_done: int, wall_ns: int, counts: tuple, in_flight: bool) -> None:
        """Encode step ``seq``'s frame (its columns in ``slot``) and send the batch when due.
        ``counts``: the recorder's (frames dropped, records dropped, preemptions, missed finishes)."""
        cols = slot[0]
        if cols is None:  # its columns failed (counted); the step is a gap
            return
        dropped, records_dropped, preempted, missed = counts
        head = _encode(
            (
                FRAME_VERSION,
                self.engine_id,
                self.run_id,
                seq,
                cols[0],
                cols[1],
                t_done,
                self._prev_done,
                wall_ns,
                dropped + self.dropped + self.send_dropped(),
            )
        )
        self._prev_done = t_done
        tail = self._records() if self._finishing else _NO_REQUESTS
        counters = _encode((self.ids_truncated, records_dropped + self.records_dropped, missed, preempted))
        outbox = self._outbox
        outbox.append(b"".join((_FRAME_HEAD, head[1:], cols[2], _encode(cols[3]), cols[4], tail, counters)))
        if t_done - self._last_send >= SEND_INTERVAL_NS or len(outbox) >= BATCH_FRAMES or not in_flight:
            self._last_send = t_done
            self.flush()

    def flush(self) -> None:
        """Pass the queued frames on now (one batch)."""
        outbox, self._outbox = self._outbox, []
        if not outbox:
            return
        try:
            if len(outbox) == 1:
                self.send(outbox[0])
            else:
                self.send(encode_batch(outbox), len(outbox))
        except Exception as exc:  # the sender counts its own drops; this is a bug guard
            self.dropped += len(outbox) - 1
            self.fault(exc)

    @property
    def queued(self) -> int:
        """Frames built but not yet passed to the sender."""
        return len(self._outbox)

    def fault(self, exc: Exception) -> None:
        """An encoder error: one frame lost, counted, logged at most once a minute."""
        self.dropped += 1
        self._faults.frame_lost(exc)

    # -- columns -------------------------------------------------------------------
    def _sparse_tokens(
        self, k_new: int, cands: list, ids: list, ctx: list, prompt: list, nst: dict, total: int
    ) -> tuple | None:
        """Encoded token, spec and prefill columns, looking only at the candidate rows.

        Every other scheduled request is a decode step of one token, which the token total
        proves: the candidates' tokens plus one per other request must add up to it, or the
        dense path runs instead.  A one-token step of a request whose prompt is done is not
        prefill work (``c >= p``)."""
        n = len(ids)
        const = self._const
        zeros = const[_ZERO, n]
        if not cands:
            if total != n:
                return None
            return const[_ONE, n], zeros, const[_FALSE, n], False
        rev = None
        index = list(range(k_new))
        for rid in cands[k_new:]:
            # A request still in its prompt was admitted lately: it sits near the end of the
            # running order, so it is searched for from the end.
            if rev is None:
                rev = ids[::-1]
            index.append(n - 1 - rev.index(rid))
        new_tokens = [1] * n
        prefill = [False] * n
        counted = 0
        any_prefill = False
        for i in index:
            k = nst[ids[i]]
            counted += k
            new_tokens[i] = k
            if k > 1 or ctx[i] < prompt[i]:
                prefill[i] = any_prefill = True
        if counted + n - len(index) != total:
            return None
        prefill_col = _encode(prefill) if any_prefill else const[_FALSE, n]
        return _encode(new_tokens), zeros, prefill_col, any_prefill

    @staticmethod
    def _dense_tokens(ids: list, ctx: list, prompt: list, nst: dict, drafts: Any, all_ones: bool) -> tuple:
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
        return _encode(new_tokens), _encode(spec), _encode(prefill), any(prefill)

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

    def _ids_column(self, ids: list, nst: dict) -> bytes:
        """``ids`` encoded as they go on the wire: over-long ids (counted at admission) shortened."""
        long = self._long_ids
        if long and any(r in nst for r in long):
            return _encode([long.get(r, r) for r in ids])
        return _encode(ids)

    def _records(self) -> bytes:
        """The encoded ``requests`` section: every request finished since the last frame (read
        from the request when it finished; first scheduled and first token filled in since)."""
        finishing, self._finishing = self._finishing, []
        return _encode([(w, tenant, *life, *rest) for w, tenant, life, *rest in finishing])
