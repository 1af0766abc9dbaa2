"""The single DuckDB writer: units stored together, bounded queue, bounded back-pressure."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import duckdb
import numpy as np

from storage.row_groups import ROW_GROUP_ROWS, Alignment
from storage.schema import migrate
from storage.writer import Writer
from tests.helpers import wait_until

ROOT = str(Path(__file__).resolve().parents[2])


def _rows(n: int) -> dict[str, np.ndarray]:
    return {"x": np.arange(n, dtype=np.int64)}


def _writer(tmp_path, **kw) -> Writer:
    w = Writer(
        str(tmp_path / "w.duckdb"),
        setup=lambda con: (
            migrate(con),
            con.execute("CREATE TABLE a (x BIGINT)"),
            con.execute("CREATE TABLE b (x BIGINT)"),
        ),
        **kw,
    )
    w.start()
    return w


def _count(w: Writer, table: str) -> int:
    w.flush()
    return w.submit(lambda con: con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]).result()


def test_a_refused_unit_drops_every_table_in_it(tmp_path):
    w = _writer(tmp_path, queue_max_rows=10)
    gate = threading.Event()
    try:
        w.submit(lambda con: gate.wait(10))  # the writer thread is busy
        assert w.append_many({"a": _rows(6), "b": _rows(6)})  # an empty queue takes any unit
        assert not w.append_many({"a": _rows(3), "b": _rows(3)})  # full: neither table
        assert w.stats.rows_dropped == 6
        gate.set()
        assert (_count(w, "a"), _count(w, "b")) == (6, 6)
    finally:
        gate.set()
        w.close()


def test_back_pressure_waits_for_room_and_gives_up_after_wait_s(tmp_path):
    w = _writer(tmp_path, queue_max_rows=10)
    gate = threading.Event()
    try:
        w.submit(lambda con: gate.wait(10))
        assert w.append_many({"a": _rows(12)})
        # A wedged writer: the wait is bounded, then the unit is dropped and counted.
        assert not w.append_many({"a": _rows(5)}, wait_s=0.2)
        assert w.stats.rows_dropped == 5
        # A writer that catches up: the waiting caller gets in.
        threading.Timer(0.2, gate.set).start()
        assert w.append_many({"a": _rows(5)}, wait_s=10)
        assert _count(w, "a") == 17 and w.stats.rows_dropped == 5
    finally:
        gate.set()
        w.close()


# -- request rows cut at DuckDB's row-group boundaries (storage.row_groups) ------------------


def _units(first_seq: int, steps: int, n: int = 250, run: str = "run1") -> list[dict]:
    """Steps of ``n`` request rows each, as the pipeline hands them over (20 steps per unit)."""
    from shadowd.steps.columns import frames_to_columns
    from tests.helpers import make_frame

    out = []
    for s in range(first_seq, first_seq + steps, 20):
        cols = frames_to_columns(
            [make_frame(q, n=n, run=run) for q in range(s, min(s + 20, first_seq + steps))]
        )
        out.append({"steps": cols.steps, "step_requests": cols.requests})
    return out


def _aligned_writer(path: str, **kw) -> Writer:
    w = Writer(path, setup=migrate, alignment=Alignment(), flush_interval_s=3600, **kw)
    w.start()
    return w


def _layout(con) -> tuple:
    groups = [
        r[0]
        for r in con.execute(
            "SELECT max(start + count) FROM pragma_storage_info('step_requests') "
            "WHERE column_id = 0 GROUP BY row_group_id ORDER BY row_group_id"
        ).fetchall()
    ]
    con.execute("CHECKPOINT")
    free = con.execute("SELECT free_blocks FROM pragma_database_size()").fetchone()[0]
    one = lambda sql: con.execute(sql).fetchone()[0]
    return (
        groups,
        free,
        one("SELECT count(*) FROM steps"),
        one("SELECT count(*) FROM step_requests"),
        one("SELECT count(*) FROM step_requests SEMI JOIN steps USING (engine_id, run_id, step_seq)"),
    )


def test_request_rows_fill_whole_row_groups_and_leave_no_free_blocks(tmp_path):
    w = _aligned_writer(str(tmp_path / "a.duckdb"))
    try:
        for unit in _units(1, 1200):  # 300,000 request rows, 60 units of 5,000
            assert w.append_many(unit, wait_s=5)
        w.submit(lambda con: None).result()  # a job: flushes everything first
        groups, free, steps, rows, stored = w.submit(_layout).result()
    finally:
        w.close()
    assert (steps, rows, stored) == (1200, 300_000, 300_000)
    assert groups[:2] == [ROW_GROUP_ROWS, ROW_GROUP_ROWS] and sum(groups) == 300_000
    assert free == 0
    assert w.stats.flushes >= 3 and w.stats.rows_dropped == 0


def test_a_step_cut_in_two_is_whole_or_absent_after_a_crash(tmp_path):
    """The daemon dies between the two transactions of a step the row-group cut divided: the next
    open deletes the half that was stored, so no request row is left without its step."""
    db = str(tmp_path / "crash.duckdb")
    script = f"""
import os, sys
sys.path.insert(0, {ROOT!r})
from tests.storage.test_writer import _aligned_writer, _units
w = _aligned_writer({db!r})
for unit in _units(1, 500):                    # 125,000 rows: the cut falls inside step 492
    w.append_many(unit, wait_s=5)
import time
deadline = time.monotonic() + 30
while w.stats.flushes == 0 and time.monotonic() < deadline:
    time.sleep(0.01)
os._exit(0 if w.stats.flushes == 1 else 3)      # die without flushing the rest
"""
    proc = subprocess.run([sys.executable, "-c", script], check=False, timeout=120)
    assert proc.returncode == 0
    con = duckdb.connect(db, read_only=True)
    before = con.execute("SELECT count(*), max(step_seq) FROM step_requests").fetchone()
    marked = con.execute("SELECT step_seq FROM partial_steps").fetchall()
    steps_before = con.execute("SELECT count(*) FROM steps").fetchone()[0]
    con.close()
    assert before == (ROW_GROUP_ROWS, 492) and marked == [(492,)] and steps_before == 491

    w = _aligned_writer(db)
    try:
        after = w.submit(
            lambda con: (
                con.execute("SELECT count(*), max(step_seq) FROM step_requests").fetchone(),
                con.execute("SELECT count(*) FROM partial_steps").fetchone()[0],
            )
        ).result()
        assert after == ((491 * 250, 491), 0)
        assert w.stats.partial_rows_removed == ROW_GROUP_ROWS - 491 * 250
        for unit in _units(492, 20):  # the run goes on: step 492 arrives again, whole
            w.append_many(unit, wait_s=5)
        w.flush()
        assert (
            w.submit(
                lambda con: con.execute("SELECT count(*) FROM step_requests WHERE step_seq = 492").fetchone()[
                    0
                ]
            ).result()
            == 250
        )
    finally:
        w.close()


def test_cut_divides_child_rows_by_their_parents_counts():
    a = Alignment(group_rows=10)
    parent = {
        "engine_id": np.array(["e"] * 3, object),
        "run_id": np.array(["r"] * 3, object),
        "step_seq": np.arange(1, 4),
        "num_requests": np.array([4, 6, 5], np.int32),
    }
    child = {"step_seq": np.repeat(np.arange(1, 4), [4, 6, 5])}
    tables = {"steps": parent, "step_requests": child, "other": {"x": np.arange(2)}}
    assert [a.take(15, f) for f in (0, 3, 9)] == [10, 7, 11]
    now, later, partial = a.split(tables, 10)  # on a step boundary: nothing divided
    assert partial is None and now["steps"]["step_seq"].tolist() == [1, 2]
    assert later["steps"]["step_seq"].tolist() == [3] and len(now["other"]["x"]) == 2
    now, later, partial = a.split(tables, 7)
    assert partial == ("e", "r", 2) and type(partial[2]) is int
    assert (
        now["steps"]["step_seq"].tolist() == [1]
        and later["step_requests"]["step_seq"].tolist() == [2] * 3 + [3] * 5
    )
    mismatched = {"steps": parent, "step_requests": {"step_seq": np.arange(14)}}
    now, later, partial = a.split(mismatched, 7)  # counts do not add up: not cut
    assert later == {} and partial is None and len(now["step_requests"]["step_seq"]) == 14


def test_cuts_follow_the_layout_after_a_job_deletes_rows(tmp_path):
    """Retention deletes old rows and a checkpoint compacts row groups: the writer notices the
    job changed the table and cuts the next appends where the new last row group ends."""
    w = _aligned_writer(str(tmp_path / "r.duckdb"))
    try:
        for unit in _units(1, 1000):  # 250,000 rows
            w.append_many(unit, wait_s=5)
        w.flush()
        w.submit(
            lambda con: (
                con.execute("DELETE FROM step_requests WHERE step_seq <= 900"),
                con.execute("CHECKPOINT"),
            )
        ).result()
        for unit in _units(1001, 1000):
            w.append_many(unit, wait_s=5)
        w.submit(lambda con: None).result()
        groups, free, steps, rows, stored = w.submit(_layout).result()
    finally:
        w.close()
    assert rows == 100 * 250 + 250_000 and stored == rows
    # What the delete left (compacted or not) may be one short row group; every row group the
    # new rows filled is whole, but the last.
    short = [g for g in groups[:-1] if g != ROW_GROUP_ROWS]
    assert len(groups) >= 3 and len(short) <= 1, groups


def test_while_the_database_fails_the_oldest_units_are_dropped_whole(tmp_path):
    """The request-row table is unwritable for a while (renamed away by a job): rows wait, the
    buffer bound drops the oldest steps with all their request rows, and once the table is back
    every stored step has exactly its rows."""
    w = Writer(
        str(tmp_path / "f.duckdb"),
        setup=migrate,
        alignment=Alignment(),
        flush_interval_s=0.05,
        buffer_max_rows=12_000,
    )
    w.start()
    try:
        w.submit(lambda con: con.execute("ALTER TABLE step_requests RENAME TO away")).result()
        for unit in _units(1, 200):  # 10 units of 20 steps, 5,000 rows each
            assert w.append_many(unit, wait_s=5)
            time.sleep(0.08)  # a failed flush between units
        assert wait_until(lambda: w.stats.rows_dropped > 0 and w.stats.errors > 0)
        w.submit(lambda con: con.execute("ALTER TABLE away RENAME TO step_requests")).result()
        w.flush()
        steps, rows, whole = w.submit(
            lambda con: con.execute(
                "SELECT count(*), sum(num_requests), count(*) FILTER (WHERE r.n = s.num_requests) "
                "FROM steps s LEFT JOIN (SELECT engine_id, run_id, step_seq, count(*) AS n FROM step_requests "
                "GROUP BY ALL) r USING (engine_id, run_id, step_seq)"
            ).fetchone()
        ).result()
        total = w.submit(lambda con: con.execute("SELECT count(*) FROM step_requests").fetchone()[0]).result()
    finally:
        w.close()
    assert 0 < steps < 200 and whole == steps and total == rows
    assert w.stats.rows_dropped == (200 - steps) * 251  # 250 request rows and the step row


def test_the_rest_of_a_divided_step_dropped_unstored_takes_its_stored_part_with_it(tmp_path):
    """A cut divides step 4; the database then fails (the table renamed away from another
    connection) long enough for the buffer bound to drop the unit holding step 4's rest.  The
    next commit deletes step 4's stored part: no request row is left without its step."""
    w = Writer(
        str(tmp_path / "o.duckdb"),
        setup=migrate,
        alignment=Alignment(group_rows=1000),
        flush_interval_s=3600,
        buffer_max_rows=600,
    )
    w.start()
    other = w.cursor()
    try:
        (first,) = _units(1, 4, n=300)  # 1,200 rows: cut at 1,000, inside step 4
        w.append_many(first, wait_s=5)
        assert wait_until(lambda: w.stats.rows_written.get("step_requests") == 1000)
        assert w.row_groups.partial == ("e0", "run1", 4)
        other.execute("ALTER TABLE step_requests RENAME TO away")
        for unit in _units(5, 12, n=300):  # flushes fail; the bound drops units
            w.append_many(unit, wait_s=5)
        assert wait_until(lambda: w.stats.errors > 0 and w.row_groups.orphaned)
        other.execute("ALTER TABLE away RENAME TO step_requests")
        w.flush()
        check = w.submit(
            lambda con: (
                con.execute("SELECT count(*) FROM step_requests WHERE step_seq = 4").fetchone()[0],
                con.execute("SELECT count(*) FROM partial_steps").fetchone()[0],
                con.execute(
                    "SELECT count(*) FROM step_requests ANTI JOIN steps USING (engine_id, run_id, step_seq)"
                ).fetchone()[0],
            )
        ).result()
    finally:
        other.close()
        w.close()
    assert check == (0, 0, 0)
    assert w.row_groups.orphan_rows_removed == 100 and w.stats.rows_dropped > 0
    assert "away" not in (w.stats.last_error or "") and "step_requests" in (w.stats.last_error or "")
