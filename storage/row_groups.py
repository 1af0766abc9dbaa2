"""Appends cut at DuckDB row-group boundaries, so the file holds no dead blocks.

DuckDB stores a table in row groups of 122,880 rows.  An append that ends
part-way into a row group makes a later checkpoint rewrite that group, and a
large append that does not start on a boundary cannot keep the row groups DuckDB
wrote ahead of the commit ("optimistic writes").  Measured on the
``step_requests`` shape by ``benchmarks/duckdb_append.py`` (one DuckDB thread;
the free-blocks table in docs/benchmarks.md, "Daemon end-to-end ingest"):
appends of 131,072 rows left half of the file as free blocks after
``CHECKPOINT``; appends of exactly one row group left none and were the
cheapest per row; appends straddling the boundary, or of half a row group,
cost more per row.

So the writer cuts the request-row table where its last row group ends
(``Alignment.take``) and keeps the rest for the next flush.  The cut may fall
inside a step: that step's first request rows are committed without its
``steps`` row, which follows with the rest in the next transaction.  The same
transaction that commits such a part records the step in ``partial_steps``;
the transaction that commits the ``steps`` row removes the record.  A crash in
between leaves the record, and ``recover`` (run when the writer opens the
database) deletes the orphaned rows, so the database never holds request rows
of a step it does not have.

>>> import numpy as np
>>> a = Alignment(group_rows=4)
>>> steps = {"engine_id": np.array(["e", "e"], object), "run_id": np.array(["r", "r"], object),
...          "step_seq": np.array([1, 2]), "num_requests": np.array([3, 3], np.int32)}
>>> reqs = {"step_seq": np.array([1, 1, 1, 2, 2, 2])}
>>> a.take(rows=6, filled=0)
4
>>> now, later, partial = a.split({"steps": steps, "step_requests": reqs}, 4)
>>> now["step_requests"]["step_seq"].tolist(), now["steps"]["step_seq"].tolist(), partial
([1, 1, 1, 2], [1], ('e', 'r', 2))
>>> later["step_requests"]["step_seq"].tolist(), later["steps"]["step_seq"].tolist()
([2, 2], [2])
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import numpy as np

ROW_GROUP_ROWS = 122_880  # DuckDB's row-group size (storage/row_group.hpp: 120 * 1024)

Columns = dict[str, np.ndarray]
Key = tuple


@dataclass(frozen=True)
class Alignment:
    """Which table is cut at row-group boundaries, and how its rows belong to parent rows.

    ``child`` rows are grouped by parent row, contiguous and in parent order; the parent's
    ``count_column`` says how many child rows each parent row owns.
    """

    child: str = "step_requests"
    parent: str = "steps"
    count_column: str = "num_requests"
    key: tuple[str, ...] = ("engine_id", "run_id", "step_seq")
    marker_table: str = "partial_steps"
    group_rows: int = ROW_GROUP_ROWS

    def take(self, rows: int, filled: int) -> int:
        """How many of ``rows`` buffered child rows to append now, given ``filled`` rows in the
        table's last row group: up to the last boundary they reach, or all if they reach none."""
        room = self.group_rows - filled
        if rows < room:
            return rows
        return room + (rows - room) // self.group_rows * self.group_rows

    def filled(self, con: duckdb.DuckDBPyConnection) -> int:
        """Rows in the child table's last row group (0 when the table is empty or ends on a boundary)."""
        row = con.execute(  # segments' start is relative to their row group
            'SELECT "start" + "count" FROM pragma_storage_info(?) WHERE column_id = 0 '
            'ORDER BY row_group_id DESC, "start" + "count" DESC LIMIT 1',
            [self.child],
        ).fetchone()
        return 0 if row is None else int(row[0]) % self.group_rows

    def rows(self, con: duckdb.DuckDBPyConnection) -> int:
        """The child table's row count (from row-group metadata: cheap at any size)."""
        return int(con.execute(f"SELECT count(*) FROM {self.child}").fetchone()[0])

    def split(
        self, tables: dict[str, Columns], take: int
    ) -> tuple[dict[str, Columns], dict[str, Columns], Key | None]:
        """``(now, later, partial)``: the first ``take`` child rows and the parent rows they complete
        (every other table whole) now; the rest later; ``partial`` is the key of the parent row whose
        child rows the cut divides, or None.  Child and parent rows that do not match (the parent
        counts do not add up to the child rows) are not cut: all go now."""
        child, parent = tables.get(self.child), tables.get(self.parent)
        n = _rows(child) if child is not None else 0
        if take >= n:
            return tables, {}, None
        if parent is None:
            return _with(tables, self.child, _head(child, take)), {self.child: _tail(child, take)}, None
        ends = np.cumsum(parent[self.count_column], dtype=np.int64)
        if len(ends) == 0 or ends[-1] != n:
            return tables, {}, None
        j = int(np.searchsorted(ends, take, side="right"))  # parents [0, j) are complete
        cut_inside = j < len(ends) and (ends[j - 1] if j else 0) < take
        partial = tuple(_python(parent[k][j]) for k in self.key) if cut_inside else None
        now = _with(_with(tables, self.child, _head(child, take)), self.parent, _head(parent, j))
        later = {self.child: _tail(child, take), self.parent: _tail(parent, j)}
        return now, later, partial

    def mark(self, con: duckdb.DuckDBPyConnection, key: Key) -> None:
        """Record that part of ``key``'s child rows are committed without its parent row."""
        con.execute(
            f"INSERT INTO {self.marker_table} ({', '.join(self.key)}) VALUES ({', '.join('?' * len(key))})",
            list(key),
        )

    def unmark(self, con: duckdb.DuckDBPyConnection, key: Key) -> None:
        con.execute(f"DELETE FROM {self.marker_table} WHERE {_match(self.key)}", list(key))

    def forget(self, con: duckdb.DuckDBPyConnection, key: Key) -> int:
        """Delete the child rows of ``key`` if its parent row was never stored, and its record;
        returns the rows deleted.  Runs inside the caller's transaction."""
        have = con.execute(
            f"SELECT count(*) FROM {self.parent} WHERE {_match(self.key)}", list(key)
        ).fetchone()[0]
        deleted = (
            0
            if have
            else con.execute(f"DELETE FROM {self.child} WHERE {_match(self.key)}", list(key)).fetchone()[0]
        )
        self.unmark(con, key)
        return int(deleted)

    def recover(self, con: duckdb.DuckDBPyConnection, keep: Key | None = None) -> int:
        """Delete child rows of steps a crash left half-committed; returns how many were deleted.
        ``keep``: a step whose rest the caller still holds (a reopen, not a crash)."""
        keys = con.execute(f"SELECT {', '.join(self.key)} FROM {self.marker_table}").fetchall()
        keys = [k for k in keys if tuple(k) != keep]
        deleted = 0
        for key in keys:
            con.execute("BEGIN TRANSACTION")
            try:
                deleted += self.forget(con, key)
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK")
                raise
        return deleted


def _rows(columns: Columns) -> int:
    return len(next(iter(columns.values()), ()))


def _python(value: object) -> object:
    return value.item() if isinstance(value, np.generic) else value


def _head(columns: Columns, n: int) -> Columns:
    return {k: v[:n] for k, v in columns.items()}


def _tail(columns: Columns, n: int) -> Columns:
    return {k: v[n:] for k, v in columns.items()}


def _with(tables: dict[str, Columns], name: str, columns: Columns) -> dict[str, Columns]:
    return {**tables, name: columns}


def _match(key: tuple[str, ...]) -> str:
    return " AND ".join(f"{k} = ?" for k in key)


class RowGroupCursor:
    """Where the aligned table's last row group ends, and which step is stored in part.

    Owned by the writer thread.  The fill of the last row group is predicted from the writer's
    own appends and asked of DuckDB only when unknown (at open; after a job changed the table's
    row count, e.g. retention's deletes) and checked once after the next commit: DuckDB starts a
    new row group instead of filling one that holds deleted rows, which a prediction cannot see.
    Asking reads every segment's metadata, which grows with the table; ``count(*)`` reads only
    the row groups' counts.
    """

    def __init__(self, alignment: Alignment) -> None:
        self.alignment = alignment
        self.partial: Key | None = None  # step whose child rows are committed only in part
        self.orphaned: list[Key] = []  # such steps whose rest the writer dropped: to delete
        self.orphan_rows_removed = 0
        self._filled: int | None = None  # rows in the last row group; None: ask DuckDB
        self._rows = 0  # the table's row count when _filled was last right
        self._verify = True  # compare _filled with DuckDB after the next commit

    def open(self, con: duckdb.DuckDBPyConnection, keep: Key | None = None) -> int:
        """Recover from a crash between a step's two transactions; returns child rows deleted."""
        return self.alignment.recover(con, keep)

    def room(self, con: duckdb.DuckDBPyConnection) -> int | None:
        """Child rows that complete the last row group; None if DuckDB cannot say (no cut)."""
        filled = self._known_filled(con)
        return None if filled is None else self.alignment.group_rows - filled

    def cut(
        self, con: duckdb.DuckDBPyConnection, tables: dict[str, Columns]
    ) -> tuple[dict[str, Columns], dict[str, Columns], Key | None]:
        """``Alignment.split`` at the last row-group boundary the buffered child rows reach."""
        a, filled = self.alignment, self._known_filled(con)
        if filled is None or a.child not in tables:
            return tables, {}, None
        return a.split(tables, a.take(_rows(tables[a.child]), filled))

    def record(
        self, con: duckdb.DuckDBPyConnection, now: dict[str, Columns], partial: Key | None
    ) -> Key | None:
        """Inside the transaction that stores ``now``: keep ``partial_steps`` true.  Returns the
        step left in part once it commits (pass it to ``committed``)."""
        a, pending = self.alignment, self.partial
        for key in self.orphaned:
            self.orphan_rows_removed += a.forget(con, key)
        if pending is not None and _rows(now.get(a.parent, {})):
            a.unmark(con, pending)  # its parent row is the first one stored now
            pending = None
        if partial is not None and partial != pending:
            a.mark(con, partial)
        return partial if partial is not None else pending

    def committed(self, con: duckdb.DuckDBPyConnection, now: dict[str, Columns], pending: Key | None) -> None:
        """After the commit: the step left in part, and the new fill of the last row group."""
        self.partial, self.orphaned = pending, []
        n = _rows(now[self.alignment.child]) if self.alignment.child in now else 0
        if self._filled is None or not n:
            return
        self._filled = (self._filled + n) % self.alignment.group_rows
        self._rows += n
        if self._verify:
            try:
                actual = self.alignment.filled(con)
            except duckdb.Error:
                return
            self._verify = actual != self._filled
            self._filled = actual

    def dropped(self, unit: dict[str, Columns]) -> None:
        """The writer dropped ``unit`` unstored (its buffer bound).  If it held the rest of the step
        stored in part, the part already stored is deleted by the next commit (or, should the
        daemon stop first, by ``recover`` at the next open: its record stays until then)."""
        parent = unit.get(self.alignment.parent)
        if self.partial is None or parent is None or not _rows(parent):
            return
        if tuple(_python(parent[k][0]) for k in self.alignment.key) == self.partial:
            self.orphaned.append(self.partial)
            self.partial = None

    def after_job(self, con: duckdb.DuckDBPyConnection) -> None:
        """A job ran: if it changed the table's row count, ask DuckDB again before the next cut."""
        if self._filled is None:
            return
        try:
            changed = self.alignment.rows(con) != self._rows
        except duckdb.Error:
            changed = True
        if changed:
            self._filled, self._verify = None, True

    def _known_filled(self, con: duckdb.DuckDBPyConnection) -> int | None:
        if self._filled is None:
            try:
                self._filled = self.alignment.filled(con)
                self._rows = self.alignment.rows(con)
            except duckdb.Error:
                return None
        return self._filled
