"""The single DuckDB writer: one thread owns the write connection.

DuckDB allows one writing process per file and is fastest with large columnar
appends, so every producer hands the writer *columns* (dicts of numpy arrays)
through a bounded queue, a *unit* at a time (one or several tables' rows that
belong together, e.g. steps and their request rows); the writer buffers units and
appends them in batches, on a row count or a time interval, whichever comes first.  Other work
that must touch the database (small inserts, updates, migrations) goes through
``submit()`` and runs on the same thread, so there is exactly one owner.

Appends of the request-row table are cut where DuckDB's row groups end
(``storage.row_groups``, when the writer is given an ``Alignment``): a step may
then reach the database in two transactions, and ``partial_steps`` records it
in between so a crash never leaves half a step behind.  ``flush()`` and
``close()`` write everything buffered.

A storage fault (disk full, I/O error) never kills the thread: the batch stays
buffered (bounded; beyond the bound the oldest units are dropped whole, counted),
the error is counted and kept in ``stats``, and the next flush retries.  A *fatal*
DuckDB error (e.g. a failed checkpoint or fsync) invalidates the database instance
for good, so retrying on it would store nothing forever: the writer closes the
connection and reopens the file (every ``reopen_interval_s`` until it succeeds),
then retries.  ``stats.last_flush_monotonic`` (a commit, or a flush that found
nothing waiting) and ``rows_waiting`` tell a health check whether storage keeps up.

Memory is bounded in rows, not only in queue items: ``append`` refuses (and
counts) rows once ``queue_max_rows`` are queued and not yet taken by the
writer thread, and the retry buffer holds at most ``buffer_max_rows``.  A
queued request row costs its numpy columns plus the Python strings they
reference, so the defaults bound the writer's queue and buffers under
sustained overload.  DuckDB's own memory (buffer pool, checkpoints) is bounded
by ``memory_limit``; unset, DuckDB allows itself 80% of the host's RAM (its
documented default), and a checkpoint grows into that.  Peak RSS under
overload, with and without the limit, is measured by ``benchmarks/overload.py``
(docs/benchmarks.md, "Peak RSS under sustained overload").

>>> import numpy as np, tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "t.duckdb")
>>> w = Writer(path, setup=lambda con: con.execute("CREATE TABLE t (a BIGINT)"))
>>> w.start()
>>> w.append("t", {"a": np.arange(5)})
True
>>> w.submit(lambda con: con.execute("SELECT count(*) FROM t").fetchone()[0]).result()
5
>>> w.close()
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import duckdb
import numpy as np

from storage.errors import redact_error
from storage.row_groups import Alignment, RowGroupCursor

log = logging.getLogger(__name__)
_STOP = object()
_MANY = object()  # queue item tag: {table: columns} appended as one unit
FILE_MODE = 0o640  # the database holds every tenant's usage: owner writes, group (operators) reads
# No extension is installed or loaded behind the daemon's back (DuckDB would fetch one over the
# network on first use of e.g. read_json): what runs is what was installed.
DUCKDB_CONFIG = {"autoinstall_known_extensions": False, "autoload_known_extensions": False}
# DuckDB's message when a commit is durable and the checkpoint after it failed (the instance is
# invalidated all the same): those rows are stored and must not be written again.
_COMMITTED_BEFORE_FATAL = "COMMIT succeeded"


def restrict_mode(path: str, mode: int = FILE_MODE) -> None:
    """Take away any permission beyond ``mode`` from ``path`` and its WAL (a file made by hand
    or under a loose umask); DuckDB creates files from the umask, which the daemon tightens."""
    for p in (path, path + ".wal"):
        try:
            st = os.stat(p)
        except FileNotFoundError:
            continue
        if st.st_mode & 0o777 & ~mode:
            os.chmod(p, st.st_mode & 0o777 & mode)


def _rows(columns: dict[str, np.ndarray]) -> int:
    return len(next(iter(columns.values()), ()))


def _merged(units: list[dict[str, dict[str, np.ndarray]]]) -> dict[str, dict[str, np.ndarray]]:
    """One set of columns per table, in the order the units arrived."""
    parts: dict[str, list[dict[str, np.ndarray]]] = {}
    for unit in units:
        for table, columns in unit.items():
            parts.setdefault(table, []).append(columns)
    return {
        t: c[0] if len(c) == 1 else {k: np.concatenate([x[k] for x in c]) for k in c[0]}
        for t, c in parts.items()
    }


@dataclass
class WriterStats:
    rows_written: dict[str, int] = field(default_factory=dict)
    flushes: int = 0
    errors: int = 0
    rows_dropped: int = 0  # dropped because the queue or the retry buffer was full
    partial_rows_removed: int = 0  # request rows of half-committed steps deleted at open (after a crash)
    last_error: str | None = None
    last_flush_monotonic: float = 0.0  # a commit, or a flush with nothing waiting
    last_progress_monotonic: float = 0.0  # any successful flush or job
    reopens: int = 0  # the database reopened after a fatal error
    job: str | None = None  # the job running on the writer thread now
    job_progress_monotonic: float = 0.0  # when it started (a long job runs as many short ones)


class Writer:
    """Owns one DuckDB connection on one thread; fed by a bounded queue."""

    def __init__(
        self,
        path: str,
        *,
        setup: Callable[[duckdb.DuckDBPyConnection], Any] | None = None,
        flush_rows: int = 131_072,
        flush_interval_s: float = 0.5,
        queue_max: int = 4096,
        queue_max_rows: int = 131_072,
        buffer_max_rows: int = 1_000_000,
        memory_limit: str | None = None,
        threads: int | None = None,
        alignment: Alignment | None = None,
        reopen_interval_s: float = 1.0,
    ) -> None:
        self.path = path
        self.flush_rows = flush_rows
        self.flush_interval_s = flush_interval_s
        self.queue_max_rows = queue_max_rows
        self.buffer_max_rows = buffer_max_rows
        self.memory_limit = memory_limit
        self.threads = threads
        self.alignment = alignment
        self.row_groups = RowGroupCursor(alignment) if alignment is not None else None
        self.reopen_interval_s = reopen_interval_s
        self._invalid = False  # the connection's database instance was invalidated (fatal error)
        self._next_reopen = 0.0
        self.stats = WriterStats()
        self._setup = setup
        self._queue: queue.Queue = queue.Queue(maxsize=queue_max)
        self._units: list[dict[str, dict[str, np.ndarray]]] = []  # {table: columns}, oldest first
        self._buffered_rows: dict[str, int] = {}
        self._queued_rows = 0  # rows appended and not yet taken by the writer thread
        self._queued_lock = threading.Condition()  # notified when the writer takes rows
        self._thread = threading.Thread(target=self._run, name="shadowd-writer", daemon=True)
        self._ready = threading.Event()
        self._start_error: BaseException | None = None
        self.con: duckdb.DuckDBPyConnection | None = None

    # -- producer side ---------------------------------------------------
    def start(self) -> None:
        """Open the database on the writer thread; raises if it cannot be opened."""
        self._thread.start()
        self._ready.wait()
        if self._start_error is not None:
            raise self._start_error

    def append(self, table: str, columns: dict[str, np.ndarray]) -> bool:
        """Queue rows for ``table``; never blocks. False (and counted) if the queue is full."""
        return self.append_many({table: columns})

    def append_many(self, tables: dict[str, dict[str, np.ndarray]], wait_s: float = 0.0) -> bool:
        """Queue rows for several tables as one unit (e.g. steps with their request rows):
        all are stored, or none and all are counted as dropped.

        Refused once ``queue_max_rows`` rows wait for the writer thread (a unit is always
        accepted into an empty queue, so one larger than the bound still gets through).
        ``wait_s`` > 0 waits up to that long for room first: back-pressure on the caller
        (the daemon's receiver, so overload turns into drops the tap counts and reports),
        bounded so a wedged database cannot stall the caller for good."""
        n = sum(_rows(c) for c in tables.values())
        with self._queued_lock:
            if wait_s > 0:
                self._queued_lock.wait_for(lambda: self._queued_rows < self.queue_max_rows, wait_s)
            if self._queued_rows >= self.queue_max_rows:
                self.stats.rows_dropped += n
                return False
            self._queued_rows += n
        try:
            self._queue.put_nowait((_MANY, tables))
            return True
        except queue.Full:
            self._taken(n)
            self.stats.rows_dropped += n
            return False

    def _taken(self, n: int) -> None:
        with self._queued_lock:
            self._queued_rows -= n
            self._queued_lock.notify_all()

    def submit(self, fn: Callable[[duckdb.DuckDBPyConnection], Any], name: str = "job") -> Future:
        """Run ``fn(con)`` on the writer thread once the rows queued before it are written, except
        request rows the row-group cut holds back (fewer than one row group, stored with the next
        flush); ``flush()`` writes those too.  ``name`` shows in ``stats.job`` while it runs."""
        fut: Future = Future()
        self._queue.put((None, (fn, fut, name)))
        return fut

    def flush(self, timeout: float | None = 30.0) -> None:
        """Block until everything queued so far is written (or failed)."""
        self.submit(lambda con: self._flush_all(con), "flush").result(timeout)

    def cursor(self) -> duckdb.DuckDBPyConnection:
        """A read connection to the same database instance (safe from other threads)."""
        assert self.con is not None, "writer not started"
        return self.con.cursor()

    def close(self, timeout: float = 60.0) -> None:
        """Drain the queue, flush, close the connection, stop the thread."""
        if self._thread.is_alive():
            self._queue.put(_STOP)
            self._thread.join(timeout)

    @property
    def queue_depth(self) -> int:
        return self._queue.qsize()

    @property
    def queued_rows(self) -> int:
        return self._queued_rows

    @property
    def rows_waiting(self) -> int:
        """Rows handed to the writer and not stored yet (queued or buffered for retry)."""
        try:  # read from other threads while the writer thread updates it
            buffered = sum(tuple(self._buffered_rows.values()))
        except RuntimeError:
            buffered = 0
        return self._queued_rows + buffered

    # -- writer thread -----------------------------------------------------
    def _connect(self, keep: tuple | None = None) -> duckdb.DuckDBPyConnection:
        con = duckdb.connect(self.path, config=DUCKDB_CONFIG)
        restrict_mode(self.path)
        try:
            if self.memory_limit is not None:  # DuckDB's default is 80% of the host's RAM
                con.execute("SET memory_limit = ?", [self.memory_limit])
            if self.threads is not None:  # DuckDB's default is every core of the host
                con.execute(f"SET threads = {int(self.threads)}")
            if self._setup is not None:
                self._setup(con)
            if self.row_groups is not None:
                self._recover(con, keep)
        except BaseException:
            con.close()
            raise
        return con

    def _run(self) -> None:
        try:
            self.con = self._connect()
        except BaseException as exc:  # report to start(), never raise on the thread
            self._start_error = exc
            self._ready.set()
            return
        self._ready.set()
        self.stats.last_progress_monotonic = self.stats.last_flush_monotonic = time.monotonic()
        next_flush = time.monotonic() + self._tick_s
        while True:
            timeout = max(0.0, next_flush - time.monotonic())
            try:
                item = self._queue.get(timeout=timeout)
            except queue.Empty:
                item = None
            if item is _STOP:
                self._drain_queue()
                self._flush_all(self.con)
                try:
                    self.con.close()
                except duckdb.Error:
                    pass
                return
            if item is not None:
                self._handle(item)
            if time.monotonic() >= next_flush or self._any_buffer_full():
                self._flush_all(self.con, whole=False)
                next_flush = time.monotonic() + self._tick_s

    def _drain_queue(self) -> None:
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return
            if item is not _STOP:
                self._handle(item)
                if self._any_buffer_full():  # flush as we go: memory stays bounded
                    self._flush_all(self.con, whole=False)

    def _handle(self, item: tuple) -> None:
        table, payload = item
        if table is _MANY:
            self._buffer(payload)
            return
        fn, fut, name = payload
        self._flush_all(self.con, whole=False)  # a job sees the rows queued before it (see submit)
        if self._invalid and not self._reopen():
            fut.set_exception(RuntimeError(f"{name}: database invalidated, reopening failed"))
            return
        self.stats.job, self.stats.job_progress_monotonic = name, time.monotonic()
        try:
            fut.set_result(fn(self.con))
            self.stats.last_progress_monotonic = time.monotonic()
        except BaseException as exc:
            self._record_error(f"job {name} failed: {exc}")
            self._invalid |= isinstance(exc, duckdb.FatalException)
            fut.set_exception(exc)
        finally:
            self.stats.job = None
        if self.row_groups is not None and not self._invalid:
            self.row_groups.after_job(self.con)

    def _buffer(self, unit: dict[str, dict[str, np.ndarray]]) -> None:
        self._taken(sum(_rows(c) for c in unit.values()))
        unit = {t: c for t, c in unit.items() if _rows(c)}
        if not unit:
            return
        self._units.append(unit)
        for table, columns in unit.items():
            self._buffered_rows[table] = self._buffered_rows.get(table, 0) + _rows(columns)
        self._enforce_bound()

    @property
    def _tick_s(self) -> float:
        """Time between flushes.  A row the row-group cut holds back waits one more flush, so
        with a cut the writer flushes twice per ``flush_interval_s``: no row waits longer than
        that (the bound a ``kill -9`` loses)."""
        return self.flush_interval_s / 2 if self.row_groups is not None else self.flush_interval_s

    def _any_buffer_full(self) -> bool:
        rg = self.row_groups
        if (
            rg is not None
            and (room := rg.room(self.con)) is not None
            and self._buffered_rows.get(rg.alignment.child, 0) >= room
        ):
            return True  # a row group can be completed
        return any(n >= self.flush_rows for n in self._buffered_rows.values())

    def _recover(self, con: duckdb.DuckDBPyConnection, keep: tuple | None = None) -> None:
        assert self.row_groups is not None
        removed = self.row_groups.open(con, keep)
        if removed:
            self.stats.partial_rows_removed += removed
            log.warning(
                "storage: removed %d request rows of a step the last run stored only in part "
                "(it stopped between the step's two transactions)",
                removed,
            )

    def _enforce_bound(self) -> None:
        """Beyond ``buffer_max_rows`` rows of a table waiting (the database failing for a while),
        drop the oldest units whole, counted: a step never loses its request rows alone."""
        while len(self._units) > 1 and any(n > self.buffer_max_rows for n in self._buffered_rows.values()):
            unit = self._units.pop(0)
            for table, columns in unit.items():
                self._buffered_rows[table] -= _rows(columns)
                self.stats.rows_dropped += _rows(columns)
            if self.row_groups is not None:
                self.row_groups.dropped(unit)

    def _flush_all(self, con: duckdb.DuckDBPyConnection, whole: bool = True) -> None:
        """Insert buffered rows of every table in one transaction: a crash or a storage fault never
        leaves steps without their request rows; on failure all stay buffered.  Unless ``whole``,
        the aligned table is cut at its last row-group boundary and the rest waits."""
        merged = _merged(self._units)
        if not merged:
            self.stats.last_flush_monotonic = time.monotonic()  # nothing waits: storage keeps up
            return
        if self._invalid and not self._reopen():
            return
        con = self.con
        now, later, partial = self._cut(con, merged, whole)
        try:
            con.execute("BEGIN TRANSACTION")
            try:
                for table, columns in now.items():
                    if _rows(columns):
                        self._insert(con, table, columns)
                pending = self.row_groups.record(con, now, partial) if self.row_groups else None
                con.execute("COMMIT")
            except BaseException:
                try:
                    con.execute("ROLLBACK")
                except duckdb.Error:
                    pass
                raise
        except duckdb.FatalException as exc:
            self._record_error(f"insert into {', '.join(merged)} failed, database invalidated: {exc}")
            self._invalid = True
            if _COMMITTED_BEFORE_FATAL not in str(exc):
                self._units = [merged]  # not stored: retry once reopened
                return
            if self.row_groups is not None:  # stored; the fill is asked again after the reopen
                self.row_groups.partial, self.row_groups.orphaned = pending, []
        except (duckdb.Error, OSError) as exc:
            self._record_error(f"insert into {', '.join(merged)} failed: {exc}")
            self._units = [merged]  # keep for retry, bounded
            return
        else:
            if self.row_groups is not None:
                self.row_groups.committed(con, now, pending)
        now_s = time.monotonic()
        for table, columns in now.items():
            self.stats.rows_written[table] = self.stats.rows_written.get(table, 0) + _rows(columns)
        rest = {t: c for t, c in later.items() if _rows(c)}
        self._units = [rest] if rest else []
        self._buffered_rows = {t: _rows(rest[t]) if t in rest else 0 for t in self._buffered_rows}
        self.stats.flushes += 1
        self.stats.last_flush_monotonic = self.stats.last_progress_monotonic = now_s

    def _reopen(self) -> bool:
        """Replace an invalidated connection with a new one on the same file (rate-limited)."""
        now = time.monotonic()
        if now < self._next_reopen:
            return False
        self._next_reopen = now + self.reopen_interval_s
        try:
            if self.con is not None:
                self.con.close()
        except duckdb.Error:
            pass
        keep = self.row_groups.partial if self.row_groups is not None else None
        if self.alignment is not None:
            self.row_groups = RowGroupCursor(self.alignment)
            self.row_groups.partial = keep  # its rest is buffered here: not an orphan
        try:
            con = self._connect(keep)
            con.execute("SELECT 1").fetchall()  # an instance another cursor kept alive stays invalid
        except Exception as exc:
            self._record_error(f"reopening the database failed: {exc}")
            return False
        self.con, self._invalid = con, False
        self.stats.reopens += 1
        log.warning("storage: database reopened after a fatal error (%d reopens)", self.stats.reopens)
        return True

    def _cut(
        self, con: duckdb.DuckDBPyConnection, merged: dict, whole: bool
    ) -> tuple[dict, dict, tuple | None]:
        if whole or self.row_groups is None:
            return merged, {}, None
        return self.row_groups.cut(con, merged)

    @staticmethod
    def _insert(con: duckdb.DuckDBPyConnection, table: str, columns: dict[str, np.ndarray]) -> None:
        cols = ", ".join(columns)
        con.register("_shadowd_buf", columns)
        try:
            con.execute(f"INSERT INTO {table} ({cols}) SELECT {cols} FROM _shadowd_buf")
        finally:
            try:
                con.unregister("_shadowd_buf")
            except duckdb.Error:  # the transaction failed: keep its error, not this one's
                pass

    def _record_error(self, message: str) -> None:
        message = redact_error(message)  # DuckDB quotes the values it failed on
        self.stats.errors += 1
        self.stats.last_error = message
        log.error("storage: %s", message)
