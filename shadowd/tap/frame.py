"""The wire format between the tap (inside vLLM) and the daemon.

One ``StepFrame`` per non-empty engine step, MessagePack-encoded by msgspec as a
positional array (compact, no per-field names on the wire).  The first element
is the format version, so a daemon can refuse frames it does not understand
without guessing.  Request columns are parallel lists: the tap copies lists the
scheduler already holds instead of building one object per request.

Timestamps are raw ``time.monotonic_ns()`` readings of the engine process, plus
one wall-clock reading at output arrival for the ``ts`` column; latencies are
computed from the monotonic readings only, so a wall-clock jump cannot make
them negative.

No prompt text, token ids or sampling content ever appear here: only counts,
request ids (opaque, chosen by the client or gateway) and tenant labels.

Version 2 adds a trailing ``requests`` section, nil (one byte) unless some
request finished during the frame's step (or since the previous frame): then
one ``RequestRecord`` per finished request, its lifecycle once (arrival, first
scheduled step, first token step, finish, prompt and output tokens,
preemptions, finish reason).  Version 3 adds a trailing ``counters`` section
(``TapCounters``): the tap's own running counts of what it shortened, lost or
saw (request ids shortened, lifecycle records dropped, finishes it missed,
preemptions), so an operator sees them on the daemon's ``/metrics``.  This
module reads all three versions (version 1 has neither section, version 2 no
counters).

>>> f = StepFrame(version=FRAME_VERSION, engine_id="e", run_id="r", step_seq=1, t_sched_start=0, t_sched_end=5,
...               t_done=90, t_prev_done=40, wall_ns=0, dropped_total=0,
...               req_ids=["a"], tenants=["acme"], new_tokens=[1], context_tokens=[7],
...               prompt_tokens=[5], spec_tokens=[0], prefill=[False], preemptions=[0])
>>> decode_frame(encode_frame(f)) == f
True

Several frames may travel as one message, a *batch*: a msgpack array whose
elements are the encoded frames (``encode_batch``), so the tap pays for one
send per batch.  ``decode_message`` reads either; a batch's frames are
validated one by one, and a bad one costs only itself (a batch that is not
even msgpack is one error; its steps then show as a gap in the run):

>>> bad = msgspec.msgpack.encode([FRAME_VERSION, "engine-0"])
>>> frames, errors = decode_message(encode_batch([encode_frame(f), bad, encode_frame(f)]))
>>> len(frames), [str(e)[:15] for e in errors]
(2, ['malformed frame'])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

import msgspec

from shadowd.tap.tenant import MAX_TENANT_LEN

FRAME_VERSION = 3
READABLE_VERSIONS = (1, 2, 3)  # version 1: no ``requests`` section; 1 and 2: no ``counters``

# Range limits, checked by msgspec while decoding (in C, per element): a frame that decodes is
# safe to put in the int64/int32/int16 columns the daemon stores, so one bad frame is counted
# as malformed instead of failing (and losing) the whole batch it arrived in.
Count = Annotated[int, msgspec.Meta(ge=0, le=2**31 - 1)]  # tokens: INTEGER columns
Small = Annotated[int, msgspec.Meta(ge=0, le=2**15 - 1)]  # preemptions: SMALLINT
Stamp = Annotated[int, msgspec.Meta(ge=0, le=2**63 - 1)]  # ns stamps, counters: BIGINT
# Length limits, checked from the msgpack headers before anything is built: a forged frame
# cannot make the daemon allocate beyond them.  Lists are what amplify (one wire byte per empty
# element, many bytes per Python object), so every list is bounded, generously next to real
# engines (vLLM's max_num_seqs is at most a few thousand).  Strings cost what they weigh on the
# wire, already bounded by the message limit; ids the tap sets and labels it truncates
# (MAX_TENANT_LEN) are bounded too.  Request ids are not: a client may choose them, and one long
# id must not get its whole step rejected.
MAX_ROWS = 16_384  # request rows per step
MAX_BATCH = 256  # frames per message (the tap sends at most BATCH_FRAMES)
EngineId = Annotated[str, msgspec.Meta(max_length=128)]
RunId = Annotated[str, msgspec.Meta(max_length=64)]
Tenant = Annotated[str, msgspec.Meta(max_length=MAX_TENANT_LEN)]


def _rows(item: Any) -> Any:
    return Annotated[list[item], msgspec.Meta(max_length=MAX_ROWS)]


FinishReason = Literal["stop", "length", "abort", "error", "repetition", "unknown"]
Label = Annotated[str, msgspec.Meta(max_length=256)]


class RequestRecord(msgspec.Struct, array_like=True, frozen=True):
    """One request's lifecycle, sent once, in the frame of the step at whose output it finished
    (or, for a request finished outside a step, e.g. aborted while waiting, the next frame).

    Times: ``arrival_wall_ns`` is vLLM's ``Request.arrival_time`` (wall clock, set when the
    request reached the engine's front end); the ``t_*`` stamps are monotonic ns of the engine
    process like the frame's own, so a wall time is ``frame.wall_ns - (frame.t_done - t)``.  A
    step is named by its ``step_seq``; 0 means it never happened (never scheduled, no token).
    """

    req_id: Label  # as in the step columns (shortened if over-long)
    tenant: Tenant
    arrival_wall_ns: Stamp
    first_sched_seq: Stamp  # the step that first scheduled it
    t_first_sched: Stamp  # that step's schedule() entry
    first_token_seq: Stamp  # the step whose output held its first generated token
    t_first_token: Stamp  # that step's output arrival
    t_finish: Stamp  # when the scheduler let it go (finished, aborted)
    prompt_tokens: Count
    output_tokens: Count  # tokens generated by then
    preemptions: Small
    finish_reason: FinishReason  # stop, length (incl. ignored), abort (incl. cancelled), ...


class TapCounters(msgspec.Struct, array_like=True, frozen=True):
    """The tap's running counts for its run (``StepRecorder``), as of the frame."""

    ids_truncated: Stamp  # request ids longer than the tap's limit, shortened on the wire
    records_dropped: Stamp  # lifecycle records lost (queue full, or a tap error)
    missed_finishes: Stamp  # requests that left without the tap seeing them go
    preemptions: Stamp  # preemptions seen


class StepFrame(msgspec.Struct, array_like=True, frozen=True):
    """One engine step as the tap saw it (version ``FRAME_VERSION``)."""

    version: int  # FRAME_VERSION; first on the wire
    engine_id: EngineId
    run_id: RunId
    step_seq: Stamp  # per run, increments once per non-empty step
    t_sched_start: Stamp  # monotonic ns, schedule() entry
    t_sched_end: Stamp  # monotonic ns, schedule() return
    t_done: Stamp  # monotonic ns, update_from_output() entry (output arrival)
    t_prev_done: Stamp  # monotonic ns, previous step's t_done in this run (0 if none)
    wall_ns: Stamp  # wall clock (time.time_ns) at output arrival
    dropped_total: Stamp  # frames this tap has dropped so far in this run
    req_ids: _rows(str)
    tenants: _rows(Tenant)
    new_tokens: _rows(Count)  # tokens processed this step, speculative drafts included
    context_tokens: _rows(Count)  # tokens already in the KV cache before the step
    prompt_tokens: _rows(Count)
    spec_tokens: _rows(Count)  # speculative draft tokens scheduled this step
    prefill: _rows(bool)  # prefill-like work (prompt chunk or recompute after preemption)
    preemptions: _rows(Small)  # times this request has been preempted so far
    # Requests that finished since the last frame; nil when none (absent in version 1 frames).
    requests: Annotated[list[RequestRecord], msgspec.Meta(max_length=MAX_ROWS)] | None = None
    counters: TapCounters | None = None  # absent before version 3


class FrameError(ValueError):
    """A frame could not be decoded; the message says why (never fatal to the daemon)."""


_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(StepFrame)
_batch_decoder = msgspec.msgpack.Decoder(Annotated[list[StepFrame], msgspec.Meta(max_length=MAX_BATCH)])
_raw_list_decoder = msgspec.msgpack.Decoder(Annotated[list[msgspec.Raw], msgspec.Meta(max_length=MAX_BATCH)])
_ARRAY_STARTS = frozenset(range(0x90, 0xA0)) | {0xDC, 0xDD}
_COLUMNS = (
    "tenants",
    "new_tokens",
    "context_tokens",
    "prompt_tokens",
    "spec_tokens",
    "prefill",
    "preemptions",
)


def encode_frame(frame: StepFrame) -> bytes:
    return _encoder.encode(frame)


def decode_frame(data: bytes) -> StepFrame:
    """Decode and validate one frame, raising ``FrameError`` with the reason."""
    try:
        frame = _decoder.decode(data)
    except msgspec.ValidationError as exc:
        version = _peek_version(data)
        if version is not None and version not in READABLE_VERSIONS:
            raise FrameError(
                f"unsupported frame version {version} (this daemon reads "
                f"{READABLE_VERSIONS}); upgrade shadowd to match the tap"
            ) from None
        raise FrameError(f"malformed frame: {exc}") from None
    except msgspec.DecodeError as exc:
        raise FrameError(f"undecodable frame: {exc}") from None
    return _validated(frame)


def _validated(frame: StepFrame) -> StepFrame:
    if frame.version not in READABLE_VERSIONS:
        raise FrameError(
            f"unsupported frame version {frame.version} (this daemon reads "
            f"{READABLE_VERSIONS}); upgrade shadowd to match the tap"
        )
    if frame.requests is not None and frame.version < 2:
        raise FrameError("a version 1 frame has no requests section")
    if frame.counters is not None and frame.version < 3:
        raise FrameError(f"a version {frame.version} frame has no counters section")
    n = len(frame.req_ids)
    for name in _COLUMNS:
        if len(getattr(frame, name)) != n:
            raise FrameError(f"column {name} has {len(getattr(frame, name))} rows, req_ids has {n}")
    return frame


def array_header(n: int) -> bytes:
    """The msgpack header of an ``n``-element array, as msgspec writes it.

    >>> all(array_header(n) == msgspec.msgpack.encode([0] * n)[:-n] for n in (1, 15, 16, 65535, 65536))
    True
    """
    if n < 16:
        return bytes((0x90 | n,))
    return b"\xdc" + n.to_bytes(2, "big") if n < 65536 else b"\xdd" + n.to_bytes(4, "big")


def encode_batch(encoded: list[bytes]) -> bytes:
    """Encoded frames as one message: a msgpack array header, then the frames as they are."""
    return array_header(len(encoded)) + b"".join(encoded)


def is_batch(data: bytes | memoryview) -> bool:
    """A batch is an array whose first element is an array (a frame); a frame's is its version."""
    if not data:
        return False
    first = {0xDC: 3, 0xDD: 5}.get(data[0], 1 if 0x90 <= data[0] <= 0x9F else None)
    return first is not None and len(data) > first and data[first] in _ARRAY_STARTS


def decode_message(data: bytes | memoryview) -> tuple[list[StepFrame], list[FrameError]]:
    """The frames in one message (one frame or a batch) and an error for each bad frame."""
    if not is_batch(data):
        try:
            return [decode_frame(data)], []
        except FrameError as exc:
            return [], [exc]
    try:
        frames = _batch_decoder.decode(data)
    except (msgspec.ValidationError, msgspec.DecodeError):
        frames = None
    if frames is not None:
        return _each(_validated, frames)
    try:  # some frame is bad: find which, keep the rest
        parts = _raw_list_decoder.decode(data)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        return [], [FrameError(f"undecodable batch: {exc}")]
    return _each(decode_frame, parts)


def _each(check: Callable[[Any], StepFrame], items: list) -> tuple[list[StepFrame], list[FrameError]]:
    """``check`` applied to each item: the frames that pass, and an error for each that does not."""
    good, errors = [], []
    for item in items:
        try:
            good.append(check(item))
        except FrameError as exc:
            errors.append(exc)
    return good, errors


_UINT_SIZES = {0xCC: 1, 0xCD: 2, 0xCE: 4, 0xCF: 8}


def _peek_version(data: bytes | memoryview | msgspec.Raw) -> int | None:
    """The first element of a msgpack array if it is a non-negative integer: reads a few bytes,
    never the rest (a rejected frame is not decoded again in full).

    >>> _peek_version(msgspec.msgpack.encode([7, "x"])), _peek_version(b"\\xc0")
    (7, None)
    """
    data = memoryview(data)  # bytes, a memoryview or a msgspec.Raw
    if len(data) < 2:
        return None
    at = {0xDC: 3, 0xDD: 5}.get(data[0], 1 if 0x91 <= data[0] <= 0x9F else None)
    if at is None or len(data) <= at:
        return None
    tag = data[at]
    if tag <= 0x7F:
        return tag
    size = _UINT_SIZES.get(tag)
    if size is None or len(data) < at + 1 + size:
        return None
    return int.from_bytes(bytes(data[at + 1 : at + 1 + size]), "big")
