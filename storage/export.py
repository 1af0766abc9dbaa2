"""Parquet export of the raw step log, partitioned by engine and day, for fleet-wide analysis.

Layout under the export root (Hive partitioning, readable by DuckDB, Spark, Polars, Arrow)::

    steps/engine_id=<id>/day=<YYYY-MM-DD>/data_0.parquet
    step_requests/engine_id=<id>/day=<YYYY-MM-DD>/data_0.parquet

Incremental by *write-once partitions*: only complete UTC days (ended ``settle_s`` before
``now``) are exported, and an (engine, day) whose ``steps`` partition exists is never written
again.  Each run writes into a staging directory inside the root and renames partitions into
place, ``step_requests`` first and ``steps`` last, so a ``steps`` partition on disk means the
day is complete on disk; a crash leaves at most a staging directory (removed by the next run)
or a ``step_requests`` partition without ``steps`` (rewritten by the next run).  Consequence:
rows that arrive for a day after it was exported are not exported (they stay in DuckDB).

Export only reads the database, so it can run on a cursor of the daemon's connection off the
writer thread.  Retention should keep raw rows of days not exported yet: pass
:func:`first_unexported` as its ``protect_since``.

>>> import duckdb, tempfile
>>> from storage.schema import migrate
>>> con = duckdb.connect(); _ = migrate(con)
>>> export_parquet(con, tempfile.mkdtemp()).partitions
[]
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote

import duckdb

TABLES = ("step_requests", "steps")  # write order: steps last marks a partition complete
HIVE_TYPES = "{'engine_id': VARCHAR, 'day': DATE}"


@dataclass(frozen=True)
class ExportResult:
    partitions: list[tuple[str, dt.date]] = field(default_factory=list)  # (engine_id, day) written
    rows: dict[str, int] = field(default_factory=dict)  # per table
    files: list[str] = field(default_factory=list)


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


def exported_partitions(root: str | os.PathLike, table: str = "steps") -> set[tuple[str, dt.date]]:
    """(engine_id, day) pairs present on disk for ``table``."""
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


def pending_partitions(
    con: duckdb.DuckDBPyConnection,
    root: str | os.PathLike,
    *,
    now: dt.datetime | None = None,
    settle_s: float = 300.0,
) -> list[tuple[str, dt.date]]:
    """Complete (engine, day) pairs with rows in ``steps`` and no ``steps`` partition on disk."""
    upto = ((now or _utcnow()) - dt.timedelta(seconds=settle_s)).date()
    have = exported_partitions(root)
    rows = con.execute(
        """SELECT DISTINCT engine_id, CAST(ts AS DATE) AS day FROM steps
                          WHERE ts < CAST(? AS TIMESTAMP) ORDER BY 1, 2""",
        [upto],
    ).fetchall()
    return [(e, d) for e, d in rows if (e, d) not in have]


def first_unexported(con: duckdb.DuckDBPyConnection, root: str | os.PathLike) -> dt.datetime | None:
    """Start of the earliest day with raw rows not exported yet (retention's ``protect_since``)."""
    have = exported_partitions(root)
    rows = con.execute("SELECT DISTINCT engine_id, CAST(ts AS DATE) FROM steps ORDER BY 2").fetchall()
    days = [d for e, d in rows if (e, d) not in have]
    return dt.datetime.combine(days[0], dt.time()) if days else None


def _copy(con: duckdb.DuckDBPyConnection, table: str, staging: Path) -> int:
    if table == "steps":
        select = "SELECT s.*, CAST(s.ts AS DATE) AS day FROM steps s"
    else:
        select = """SELECT r.*, CAST(s.ts AS DATE) AS day FROM step_requests r
                    JOIN steps s ON s.engine_id = r.engine_id AND s.run_id = r.run_id
                                AND s.step_seq = r.step_seq"""
    sql = f"""COPY (SELECT q.* FROM ({select}) q
                    SEMI JOIN _export_todo t ON t.engine_id = q.engine_id AND t.day = q.day)
              TO '{staging / table}' (FORMAT parquet, PARTITION_BY (engine_id, day),
                                      COMPRESSION zstd)"""
    row = con.execute(sql).fetchone()
    return int(row[0]) if row else 0


def _move_into_place(staging: Path, root: Path, table: str, replace: bool) -> list[str]:
    files: list[str] = []
    src_base = staging / table
    if not src_base.is_dir():
        return files
    for eng in sorted(src_base.iterdir()):
        for day in sorted(eng.iterdir()):
            dest = root / table / eng.name / day.name
            if dest.exists():
                if not replace:
                    continue
                shutil.rmtree(dest)
            dest.parent.mkdir(parents=True, exist_ok=True)
            os.rename(day, dest)
            files += sorted(str(p) for p in dest.rglob("*.parquet"))
    return files


def export_parquet(
    con: duckdb.DuckDBPyConnection,
    root: str | os.PathLike,
    *,
    now: dt.datetime | None = None,
    settle_s: float = 300.0,
) -> ExportResult:
    """Write every pending complete (engine, day) partition of steps and step_requests."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    for stale in root.glob(".staging-*"):
        shutil.rmtree(stale, ignore_errors=True)
    todo = pending_partitions(con, root, now=now, settle_s=settle_s)
    if not todo:
        return ExportResult()
    staging = root / f".staging-{uuid.uuid4().hex[:12]}"
    staging.mkdir()
    con.execute("CREATE OR REPLACE TEMP TABLE _export_todo (engine_id VARCHAR, day DATE)")
    try:
        con.executemany("INSERT INTO _export_todo VALUES (?, ?)", [list(t) for t in todo])
        rows = {table: _copy(con, table, staging) for table in TABLES}
        files: list[str] = []
        for table in TABLES:  # steps last: its partition is the completion marker
            files += _move_into_place(staging, root, table, replace=table != "steps")
    finally:
        con.execute("DROP TABLE IF EXISTS _export_todo")
        shutil.rmtree(staging, ignore_errors=True)
    return ExportResult(partitions=todo, rows=rows, files=files)


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
