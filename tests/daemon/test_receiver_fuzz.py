"""Fuzzed frames never crash decoding, column building or a running daemon.

What is fuzzed, and how much (each test bounded to well under a minute here):

* ``test_million_mutated_frames``: 1,000,000 byte strings derived from real encoded frames
  (1–256 requests) and batches of frames (the tap's batched messages): random byte overwrites,
  truncations, insertions, splices of two messages, and pure random bytes;
* ``test_structured_random_frames``: 100,000 msgpack arrays shaped like frames whose fields
  take edge values (negative, 2**31, 2**63, 2**64 - 1, floats, strings, None, nested lists)
  and ragged columns: they decode to the right *types*, so range checks must catch them;
* ``test_hypothesis_frame_structures``: 400 hypothesis-generated nested structures;
* ``test_fuzzed_stream_through_daemon``: 20,000 frames, half valid, half fuzzed, over the
  real socket into a running daemon.

The contract: ``decode_frame`` either returns a frame or raises ``FrameError`` (nothing else);
``decode_message`` (what the daemon calls on each message) never raises; and whatever they
return, ``frames_to_columns`` turns into columns without raising, so one bad frame can never
take a batch of good ones down with it.
"""

from __future__ import annotations

import random
import time

import msgspec
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shadowd.steps.columns import frames_to_columns
from shadowd.tap.frame import (
    FRAME_VERSION,
    FrameError,
    StepFrame,
    decode_frame,
    decode_message,
    encode_batch,
    encode_frame,
)
from tests.helpers import Pusher, make_daemon, make_frame, wait_until

N_MUTATED = 1_000_000
N_STRUCTURED = 100_000


def _corpus() -> list[bytes]:
    from benchmarks.framegen import make_frames

    frames = [encode_frame(make_frame(i + 1, n=n)) for i, n in enumerate((1, 2, 4, 8, 32, 64))]
    frames += make_frames(8, requests=256, seed=3)[::2] + make_frames(8, requests=16, seed=4)[::2]
    small = make_frames(6, requests=8, seed=5)
    return frames + [encode_batch(small[:2]), encode_batch(small[2:]), encode_batch(frames[:3])]


def _check_columns(frames: list[StepFrame]) -> None:
    cols = frames_to_columns(frames)
    n = sum(len(f.req_ids) for f in frames)
    assert all(len(v) == n for v in cols.requests.values())
    assert all(len(v) == len(frames) for v in cols.steps.values())
    lat = cols.steps["latency_ms"]
    assert not (lat <= 0).any()  # positive or NaN, never negative


class _Mutator:
    """Cheap mutations of valid frames, driven by one seeded RNG."""

    def __init__(self, corpus: list[bytes], seed: int) -> None:
        self.corpus = corpus
        self.rng = random.Random(seed)

    def __call__(self) -> bytes:
        r = self.rng
        base = r.choice(self.corpus)
        kind = r.random()
        if kind < 0.45:  # overwrite 1-4 bytes
            b = bytearray(base)
            for _ in range(r.randint(1, 4)):
                b[r.randrange(len(b))] = r.randrange(256)
            return bytes(b)
        if kind < 0.6:  # truncate
            return base[: r.randrange(len(base))]
        if kind < 0.75:  # insert random bytes
            i = r.randrange(len(base))
            return base[:i] + r.randbytes(r.randint(1, 8)) + base[i:]
        if kind < 0.9:  # splice two frames
            other = r.choice(self.corpus)
            return base[: r.randrange(len(base))] + other[r.randrange(len(other)) :]
        return r.randbytes(r.randint(0, 64))  # garbage


def test_million_mutated_frames():
    mutate = _Mutator(_corpus(), seed=20240611)
    decoded: list[StepFrame] = []
    accepted = rejected = 0
    t0 = time.monotonic()
    for _ in range(N_MUTATED):
        frames, errors = decode_message(mutate())
        accepted += bool(frames)
        rejected += not frames
        assert all(isinstance(e, FrameError) for e in errors) and (frames or errors)
        decoded += frames
        if len(decoded) >= 2000:
            _check_columns(decoded)
            decoded.clear()
    if decoded:
        _check_columns(decoded)
    elapsed = time.monotonic() - t0
    print(
        f"{N_MUTATED} mutated messages in {elapsed:.1f} s: {accepted} gave frames (columned), "
        f"{rejected} only FrameErrors"
    )
    assert accepted + rejected == N_MUTATED
    assert accepted > 0 and rejected > 0


_EDGE_INTS = (0, 1, -1, 2**31 - 1, 2**31, -(2**31) - 1, 2**63 - 1, 2**63, 2**64 - 1, -(2**63))
_JUNK = (None, 1.5, float("nan"), "x", b"\x00", [], {}, True, [1, "a"], {"k": 1})


def _value(r: random.Random, kind: str):
    roll = r.random()
    if roll < 0.08:
        return r.choice(_JUNK)
    if kind == "int":
        return r.choice(_EDGE_INTS) if roll < 0.3 else r.randrange(0, 10**6)
    if kind == "str":
        return (
            ""
            if roll < 0.15
            else "".join(r.choice("ab\u00e9\U0001f600\x00") for _ in range(r.randint(1, 12)))
        )
    return r.random() < 0.5


_FIELDS = (
    [("int", False)]
    + [("str", False)] * 2
    + [("int", False)] * 7
    + [("str", True)] * 2
    + [("int", True)] * 4
    + [("bool", True), ("int", True)]
)


def _structured(r: random.Random) -> bytes:
    n = r.choice((0, 1, 3, 16))
    out = []
    for i, (kind, is_list) in enumerate(_FIELDS):
        if not is_list:
            out.append(FRAME_VERSION if i == 0 and r.random() < 0.9 else _value(r, kind))
            continue
        m = n if r.random() < 0.85 else max(0, n + r.choice((-1, 1)))  # sometimes ragged
        out.append([_value(r, kind) for _ in range(m)] if r.random() > 0.03 else _value(r, kind))
    if r.random() < 0.05:
        out = out[: r.randrange(len(out))] if r.random() < 0.5 else out + [1]
    return msgspec.msgpack.encode(out)


def test_structured_random_frames():
    r = random.Random(7)
    decoded: list[StepFrame] = []
    accepted = rejected = 0
    for _ in range(N_STRUCTURED):
        try:
            frame = decode_frame(_structured(r))
        except FrameError:
            rejected += 1
            continue
        accepted += 1
        decoded.append(frame)
        if len(decoded) >= 500:
            _check_columns(decoded)
            decoded.clear()
    if decoded:
        _check_columns(decoded)
    print(f"{N_STRUCTURED} structured frames: {accepted} decoded, {rejected} rejected")
    assert accepted + rejected == N_STRUCTURED and accepted > 100


_msgpack_ints = st.integers(min_value=-(2**63), max_value=2**64 - 1)  # what msgpack can carry
_leaf = st.one_of(
    _msgpack_ints,
    st.text(max_size=8),
    st.booleans(),
    st.none(),
    st.floats(allow_nan=True),
    st.binary(max_size=8),
)
_any = st.recursive(_leaf, lambda inner: st.lists(inner, max_size=4), max_leaves=12)


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    head=st.lists(st.one_of(_msgpack_ints, _any), min_size=0, max_size=12),
    columns=st.lists(
        st.lists(
            st.one_of(st.integers(min_value=-2, max_value=2**64 - 1), st.booleans(), st.text(max_size=4)),
            max_size=5,
        ),
        min_size=0,
        max_size=9,
    ),
)
def test_hypothesis_frame_structures(head, columns):
    data = msgspec.msgpack.encode([FRAME_VERSION, *head[:9], *columns])
    frames, _ = decode_message(data)
    frames += decode_message(encode_batch([data, encode_frame(make_frame(1))]))[0]
    try:
        frames.append(decode_frame(data))
    except FrameError:
        pass
    if frames:
        _check_columns(frames)


def test_fuzzed_stream_through_daemon(ipc_endpoint, db_path):
    """20,000 messages over the socket, half fuzzed: every frame that decodes is stored, every
    message that yields none is counted as a fault."""
    daemon = make_daemon(ipc_endpoint, db_path)
    daemon.start(http=False, jobs=False)
    mutate = _Mutator(_corpus(), seed=99)
    r = random.Random(5)
    push = Pusher(ipc_endpoint)
    sent = 0
    try:
        for i in range(10_000):
            push.send(make_frame(i + 1, n=8, run="fuzz-run"))
            push.send(mutate() if r.random() < 0.8 else _structured(r))
            sent += 2
        rx = daemon.receiver
        assert wait_until(lambda: rx.messages_received == sent, timeout=60)
        bad = sum(v for k, v in rx.faults.items() if k not in ("gap", "consumer"))
        assert rx.alive and rx.faults["consumer"] == 0, dict(rx.faults)
        assert rx.frames_received + bad >= sent  # each message: frames, or a counted fault
    finally:
        push.close()
        daemon.stop()
    import duckdb

    con = duckdb.connect(db_path, read_only=True)
    stored = con.execute("SELECT count(*) FROM steps").fetchone()[0]
    valid = con.execute(
        "SELECT count(*) FROM steps WHERE run_id = 'fuzz-run' AND engine_id = 'e0'"
    ).fetchone()[0]
    con.close()
    print(f"sent {sent}: stored {stored} steps ({valid} of the 10,000 valid ones), faults {dict(rx.faults)}")
    assert stored == rx.frames_received  # everything that decoded was stored
    assert valid >= 10_000  # every valid frame was (a mutation may mimic one)


@pytest.mark.parametrize(
    "field,value",
    [("context_tokens", [2**64 - 1]), ("new_tokens", [-1]), ("preemptions", [2**15]), ("t_done", 2**63)],
)
def test_out_of_range_values_are_malformed(field, value):
    """Values that fit msgpack but not the stored column types are refused at decode."""
    frame = msgspec.structs.replace(make_frame(1, n=1), **{field: value})
    with pytest.raises(FrameError, match="malformed"):
        decode_frame(encode_frame(frame))
    assert np.isfinite(frames_to_columns([make_frame(1, n=1)]).steps["latency_ms"]).all()
