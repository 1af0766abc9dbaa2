"""The single DuckDB writer: units stored together, bounded queue, bounded back-pressure."""
from __future__ import annotations

import threading

import numpy as np

from storage.schema import migrate
from storage.writer import Writer


def _rows(n: int) -> dict[str, np.ndarray]:
    return {"x": np.arange(n, dtype=np.int64)}


def _writer(tmp_path, **kw) -> Writer:
    w = Writer(str(tmp_path / "w.duckdb"), setup=lambda con: (migrate(con), con.execute(
        "CREATE TABLE a (x BIGINT)"), con.execute("CREATE TABLE b (x BIGINT)")), **kw)
    w.start()
    return w


def _count(w: Writer, table: str) -> int:
    w.flush()
    return w.submit(lambda con: con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]).result()


def test_a_refused_unit_drops_every_table_in_it(tmp_path):
    w = _writer(tmp_path, queue_max_rows=10)
    gate = threading.Event()
    try:
        w.submit(lambda con: gate.wait(10))               # the writer thread is busy
        assert w.append_many({"a": _rows(6), "b": _rows(6)})          # an empty queue takes any unit
        assert not w.append_many({"a": _rows(3), "b": _rows(3)})      # full: neither table
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
