"""Parquet export of the raw step log, partitioned by engine and day, for fleet-wide analysis.

Layout under the export root (Hive partitioning, readable by DuckDB, Spark, Polars, Arrow)::

    steps/engine_id=<id>/day=<YYYY-MM-DD>/data_0.parquet
    step_requests/engine_id=<id>/day=<YYYY-MM-DD>/data_0.parquet

Incremental by *write-once partitions*: only complete UTC days (ended ``settle_s`` before
``now``) are exported, and an (engine, day) whose ``steps`` partition exists is never written
again.  Each partition is its own COPY into a staging directory inside the root; its file and
directory are fsynced, then it is renamed into place (``step_requests`` first, ``steps`` last)
and the parent directories fsynced, so a ``steps`` partition on disk means the day is complete
and durable (after a power loss no empty file can mark a day exported whose raw rows retention
then prunes).  A crash leaves at most a staging directory (removed by the next run) or a
``step_requests`` partition without ``steps`` (rewritten by the next run).  A partition that
fails is reported in ``ExportResult.failed`` and does not stop the others.  Consequence of
write-once: rows that arrive for a day after it was exported are not exported (they stay in DuckDB).

Export only reads the database, so it can run on a cursor of the daemon's connection off the
writer thread.  Retention keeps raw rows of partitions not exported yet: pass
:func:`unexported_partitions` as its ``keep_partitions``.

>>> import duckdb, tempfile
>>> from storage.schema import migrate
>>> con = duckdb.connect(); _ = migrate(con)
>>> export_parquet(con, tempfile.mkdtemp()).partitions
[]
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, unquote

import duckdb

TABLES = ("step_requests", "steps")  # write order: steps last marks a partition complete
MAX_NAME_BYTES = 255  # one path component on Linux file systems
HIVE_TYPES = "{'engine_id': VARCHAR, 'day': DATE}"


@dataclass(frozen=True)
class ExportResult:
    partitions: list[tuple[str, dt.date]] = field(default_factory=list)  # (engine_id, day) written
    rows: dict[str, int] = field(default_factory=dict)  # per table
    files: list[str] = field(default_factory=list)
    failed: list[tuple[str, dt.date, str]] = field(default_factory=list)  # (engine_id, day, error)


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


def partition_dir(engine_id: str, day: dt.date) -> str:
    """``engine_id=<id>/day=<date>``, the id percent-encoded so any id is one safe path component.

    An id whose encoding would pass the file-name limit is shortened, with a hash of the whole
    id so two long ids never share a directory (readers then see the shortened id).

    >>> partition_dir("rack 3/gpu=1", dt.date(2025, 1, 2))
    'engine_id=rack%203%2Fgpu%3D1/day=2025-01-02'
    >>> len(partition_dir("é" * 200, dt.date(2025, 1, 2)).split("/")[0]) <= MAX_NAME_BYTES
    True
    """
    name = "engine_id=" + quote(engine_id, safe="")
    if len(name.encode()) > MAX_NAME_BYTES:
        digest = hashlib.sha256(engine_id.encode()).hexdigest()[:16]
        name = name[: MAX_NAME_BYTES - 18].rstrip("%0123456789ABCDEF") + "~" + digest
    return f"{name}/day={day.isoformat()}"


def exported_partitions(root: str | os.PathLike, table: str = "steps") -> set[tuple[str, dt.date]]:
    """(engine_id, day) pairs present on disk for ``table`` (shortened ids as on disk)."""
    base = Path(root) / table
    out: set[tuple[str, dt.date]] = set()
    if not base.is_dir():
        return out
    for eng in base.iterdir():
        if not eng.name.startswith("engine_id=") or not eng.is_dir():
            continue
        for day in eng.iterdir():
            if day.name.startswith("day=") and day.is_dir():
                try:
                    out.add((unquote(eng.name[10:]), dt.date.fromisoformat(unquote(day.name[4:]))))
                except ValueError:
                    continue
    return out


def _is_exported(root: Path, engine_id: str, day: dt.date) -> bool:
    return (root / "steps" / partition_dir(engine_id, day)).is_dir()


def pending_partitions(
    con: duckdb.DuckDBPyConnection,
    root: str | os.PathLike,
    *,
    now: dt.datetime | None = None,
    settle_s: float = 300.0,
) -> list[tuple[str, dt.date]]:
    """Complete (engine, day) pairs with rows in ``steps`` and no ``steps`` partition on disk."""
    upto = ((now or _utcnow()) - dt.timedelta(seconds=settle_s)).date()
    rows = con.execute(
        """SELECT DISTINCT engine_id, CAST(ts AS DATE) AS day FROM steps
                          WHERE ts < CAST(? AS TIMESTAMP) ORDER BY 1, 2""",
        [upto],
    ).fetchall()
    return [(e, d) for e, d in rows if not _is_exported(Path(root), e, d)]


def unexported_partitions(
    con: duckdb.DuckDBPyConnection, root: str | os.PathLike
) -> list[tuple[str, dt.date]]:
    """Every (engine, day) with raw rows and no export on disk: retention keeps these rows.
    Per partition, so one that cannot be written holds back only its own rows."""
    rows = con.execute("SELECT DISTINCT engine_id, CAST(ts AS DATE) FROM steps ORDER BY 2, 1").fetchall()
    return [(e, d) for e, d in rows if not _is_exported(Path(root), e, d)]


def first_unexported(con: duckdb.DuckDBPyConnection, root: str | os.PathLike) -> dt.datetime | None:
    """Start of the earliest day with raw rows not exported yet."""
    days = [d for _, d in unexported_partitions(con, root)]
    return dt.datetime.combine(min(days), dt.time()) if days else None


def _sql_string(path: Path) -> str:
    """A path as a SQL string literal (quotes doubled): COPY takes no parameter for its target."""
    return "'" + str(path).replace("'", "''") + "'"


def _copy_partition(
    con: duckdb.DuckDBPyConnection, table: str, engine_id: str, day: dt.date, dest: Path
) -> int:
    """One table's rows of one (engine, day) into ``dest/data_0.parquet`` (fsynced); returns rows.
    Partition columns live in the path, as Hive partitioning has them."""
    if table == "steps":
        select = (
            "SELECT s.* EXCLUDE (engine_id) FROM steps s WHERE s.engine_id = $e AND CAST(s.ts AS DATE) = $d"
        )
    else:
        select = """SELECT r.* EXCLUDE (engine_id) FROM step_requests r
                    JOIN steps s ON s.engine_id = r.engine_id AND s.run_id = r.run_id
                                AND s.step_seq = r.step_seq
                    WHERE s.engine_id = $e AND CAST(s.ts AS DATE) = $d"""
    n = con.execute(f"SELECT count(*) FROM ({select})", {"e": engine_id, "d": day}).fetchone()[0]
    if not n and table != "steps":
        return 0  # no file: readers see the table's columns from the others (attach_exports)
    dest.mkdir(parents=True, exist_ok=True)
    target = dest / "data_0.parquet"
    con.execute(
        f"COPY ({select}) TO {_sql_string(target)} (FORMAT parquet, COMPRESSION zstd)",
        {"e": engine_id, "d": day},
    )
    _fsync(target)
    _fsync(dest)
    return int(n)


def _fsync(path: Path) -> None:
    """Make a file's data, or a directory's entries, durable (before a rename publishes them)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _publish(staging: Path, root: Path, table: str, part: str) -> list[str]:
    """Rename one staged partition into place, durably (the parent directories fsynced)."""
    src, dest = staging / table / part, root / table / part
    if not src.is_dir():
        return []
    if dest.exists():
        shutil.rmtree(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    os.rename(src, dest)
    _fsync(dest.parent)
    _fsync(src.parent)
    return sorted(str(p) for p in dest.rglob("*.parquet"))


def _export_one(
    con: duckdb.DuckDBPyConnection, root: Path, staging: Path, engine_id: str, day: dt.date
) -> tuple[dict[str, int], list[str]]:
    part = partition_dir(engine_id, day)
    rows = {t: _copy_partition(con, t, engine_id, day, staging / t / part) for t in TABLES}
    files: list[str] = []
    for table in TABLES:  # steps last: its partition is the completion marker
        files += _publish(staging, root, table, part)
    return rows, files


def export_parquet(
    con: duckdb.DuckDBPyConnection,
    root: str | os.PathLike,
    *,
    now: dt.datetime | None = None,
    settle_s: float = 300.0,
) -> ExportResult:
    """Write every pending complete (engine, day) partition of steps and step_requests.

    One COPY per table and partition: a partition that cannot be written (disk full, a bad
    directory) is reported in ``failed`` and the others are still written."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    for stale in root.glob(".staging-*"):
        shutil.rmtree(stale, ignore_errors=True)
    todo = pending_partitions(con, root, now=now, settle_s=settle_s)
    if not todo:
        return ExportResult()
    staging = root / f".staging-{uuid.uuid4().hex[:12]}"
    staging.mkdir()
    done: list[tuple[str, dt.date]] = []
    rows = dict.fromkeys(TABLES, 0)
    files: list[str] = []
    failed: list[tuple[str, dt.date, str]] = []
    try:
        for engine_id, day in todo:
            try:
                got, written = _export_one(con, root, staging, engine_id, day)
            except (OSError, duckdb.Error) as exc:
                failed.append((engine_id, day, f"{type(exc).__name__}: {exc}"))
                continue
            done.append((engine_id, day))
            files += written
            for table, n in got.items():
                rows[table] += n
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return ExportResult(partitions=done, rows=rows, files=files, failed=failed)


def parquet_source(glob: str) -> str:
    """A ``read_parquet`` expression over exported files (a local glob or object-store URL).

    Partition columns are typed explicitly, so an engine called ``0`` stays a string.

    >>> parquet_source("/x/steps/**/*.parquet")
    "read_parquet('/x/steps/**/*.parquet', hive_partitioning = true, hive_types = {'engine_id': VARCHAR, 'day': DATE}, union_by_name = true)"
    """
    quoted = glob.replace("'", "''")
    return (
        f"read_parquet('{quoted}', hive_partitioning = true, hive_types = {HIVE_TYPES}, union_by_name = true)"
    )


def attach_exports(con: duckdb.DuckDBPyConnection, root_glob: str) -> None:
    """Views ``steps`` and ``step_requests`` over the exports under ``root_glob``.

    ``root_glob`` names one or many export roots, e.g. ``/srv/exports/*`` for every host's,
    or ``s3://bucket/shadowd/*`` with DuckDB's httpfs extension loaded.
    """
    base = root_glob.rstrip("/")
    for table in ("steps", "step_requests"):
        pattern = f"{base}/{table}/*/*/*.parquet"
        found = con.execute("SELECT count(*) FROM glob(?)", [pattern]).fetchone()[0]
        source = f"SELECT * FROM {parquet_source(pattern)}" if found else _empty_select(table)
        con.execute(f"CREATE OR REPLACE TEMP VIEW {table} AS {source}")


def _empty_select(table: str) -> str:
    """A zero-row SELECT shaped like an exported ``table`` (no files yet for it)."""
    from storage.schema import migrate

    with duckdb.connect() as scratch:
        migrate(scratch)
        cols = scratch.execute(f"DESCRIBE {table}").fetchall()
    exprs = [f'CAST(NULL AS {typ}) AS "{name}"' for name, typ, *_ in cols if name != "engine_id"]
    exprs += ["CAST(NULL AS VARCHAR) AS engine_id", "CAST(NULL AS DATE) AS day"]
    return f"SELECT {', '.join(exprs)} WHERE false"
