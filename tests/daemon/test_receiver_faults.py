"""Bad frames never stop ingest; each kind is counted; good frames around them are stored."""

from __future__ import annotations

import duckdb
import msgspec

from shadowd.tap.frame import encode_frame
from tests.helpers import Pusher, make_daemon, make_frame


def test_bad_frames_are_counted_and_skipped(ipc_endpoint, db_path):
    daemon = make_daemon(ipc_endpoint, db_path)
    daemon.start()
    push = Pusher(ipc_endpoint)
    good = encode_frame(make_frame(1))
    push.send(good)
    push.send(good[: len(good) // 2])  # truncated
    push.send(b"\x00\xff garbage \x13\x37")  # garbage
    push.send(msgspec.msgpack.encode([99] + list(msgspec.msgpack.decode(good))[1:]))  # version 99
    push.send(msgspec.msgpack.encode([1, "e0", "run1", 2]))  # too few fields
    daemon.receiver.max_frame_bytes = 4096
    push.send(b"\x90" * 10_000)  # oversized
    push.send(make_frame(2))
    rx = daemon.receiver
    assert push.close_when(lambda: rx.frames_received == 2 and sum(rx.faults.values()) == 5)
    daemon.stop()
    assert rx.faults == {"malformed": 3, "version": 1, "oversized": 1}
    con = duckdb.connect(db_path, read_only=True)
    assert con.execute("SELECT list(step_seq ORDER BY step_seq) FROM steps").fetchone()[0] == [1, 2]
    assert con.execute("SELECT count(*) FROM step_requests").fetchone()[0] == 8


def test_version_error_names_the_fix():
    import pytest

    from shadowd.tap.frame import FRAME_VERSION, FrameError, decode_frame

    future = FRAME_VERSION + 1
    raw = msgspec.msgpack.encode([future] + list(msgspec.msgpack.decode(encode_frame(make_frame(1))))[1:])
    with pytest.raises(FrameError, match=f"unsupported frame version {future}.*upgrade shadowd"):
        decode_frame(raw)


def test_older_frame_versions_still_read():
    """Taps one or two versions behind (no counters section; no requests section either) are
    still understood; an older frame claiming a section its version lacks is not."""
    import pytest

    from shadowd.tap.frame import FrameError, decode_frame

    fields = list(msgspec.msgpack.decode(encode_frame(make_frame(1))))
    head = fields[1:-2]  # without the requests and counters sections
    v1 = decode_frame(msgspec.msgpack.encode([1, *head]))
    assert v1.version == 1 and v1.requests is None and v1.req_ids == make_frame(1).req_ids
    with pytest.raises(FrameError, match="version 1 frame has no requests"):
        decode_frame(msgspec.msgpack.encode([1, *head, []]))
    v2 = decode_frame(msgspec.msgpack.encode([2, *head, []]))
    assert v2.version == 2 and v2.requests == [] and v2.counters is None
    with pytest.raises(FrameError, match="version 2 frame has no counters"):
        decode_frame(msgspec.msgpack.encode([2, *head, None, [0, 0, 0, 0]]))
    v3 = decode_frame(msgspec.msgpack.encode([3, *head, None, [1, 2, 3, 4]]))
    assert (v3.counters.records_dropped, v3.counters.preemptions) == (2, 4)


def test_ragged_columns_rejected():
    import pytest

    from shadowd.tap.frame import FrameError, decode_frame

    f = make_frame(1, n=3)
    bad = msgspec.structs.replace(f, new_tokens=[1, 1])
    with pytest.raises(FrameError, match="new_tokens has 2 rows"):
        decode_frame(encode_frame(bad))


def test_unexplained_gaps_are_counted(ipc_endpoint, db_path):
    daemon = make_daemon(ipc_endpoint, db_path)
    daemon.start()
    push = Pusher(ipc_endpoint)
    push.send(make_frame(1))
    push.send(make_frame(3, dropped=1))  # step 2 dropped by the tap and counted: no gap
    push.send(make_frame(6, dropped=1))  # steps 4, 5 lost in transit: gap of 2
    assert push.close_when(lambda: daemon.receiver.frames_received == 3)
    daemon.stop()
    assert daemon.receiver.faults["gap"] == 2
