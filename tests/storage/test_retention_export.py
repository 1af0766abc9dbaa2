"""Retention, roll-ups and Parquet export on real DuckDB files with rows of known ages."""

from __future__ import annotations

import datetime as dt
import os
from collections import defaultdict
from pathlib import Path

import duckdb
import pytest

from storage.export import (
    attach_exports,
    export_parquet,
    exported_partitions,
    first_unexported,
    unexported_partitions,
)
from storage.retention import apply_retention, prune, rollup
from storage.schema import migrate

NOW = dt.datetime(2025, 3, 20, 12, 0, 0)
STEP_COLS = (
    "engine_id, run_id, step_seq, ts, latency_ms, kind, num_requests, prefill_tokens, "
    "decode_tokens, dropped_frames_total, predicted_ms, baseline_ms, model_version"
)
REQ_COLS = (
    "engine_id, run_id, step_seq, req_id, tenant, phase, new_tokens, context_tokens, "
    "prompt_tokens, spec_tokens, llmvisor_ms, llmvisor_measured_ms, vtc_ms, vtc_tokens, "
    "model_version"
)


class Log:
    """Inserts steps (2-3 requests each) and remembers them, to compute expected roll-ups."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con
        self.seq: dict[str, int] = defaultdict(int)
        self.requests: list[tuple] = []  # (engine, ts, run, seq, req_id, tenant, new, lv, lvm, vtc, vt)

    def steps(self, engine: str, start: dt.datetime, n: int, every_s: float = 7.0) -> None:
        steps, reqs = [], []
        for i in range(n):
            self.seq[engine] += 1
            seq, ts = self.seq[engine], start + dt.timedelta(seconds=i * every_s)
            k = 2 + seq % 2
            steps.append((engine, "run1", seq, ts, 10.0 + k, "decode", k, 0, k, 0, 10.5, 11.0, "v1"))
            for j in range(k):
                tenant = ("acme", "beta", "gamma")[(seq + j) % 3]
                lv, lvm, vtc = 3.0 + j, 3.5 + j, 4.0 + 0.5 * j
                row = (
                    engine,
                    "run1",
                    seq,
                    f"q{seq % 5}-{j}",
                    tenant,
                    "decode",
                    1,
                    100 * j,
                    50,
                    0,
                    lv,
                    lvm,
                    vtc,
                    2.0,
                    "v1",
                )
                reqs.append(row)
                self.requests.append((engine, ts, "run1", seq, row[3], tenant, 1, lv, lvm, vtc, 2.0))
        self.con.executemany(f"INSERT INTO steps ({STEP_COLS}) VALUES ({', '.join('?' * 13)})", steps)
        self.con.executemany(f"INSERT INTO step_requests ({REQ_COLS}) VALUES ({', '.join('?' * 15)})", reqs)

    def expected_rollup(self, before: dt.datetime, since: dict[str, dt.datetime] | None = None) -> dict:
        """(minute, engine, tenant) -> (steps, requests, new_tokens, lv, lvm, vtc, vtc_tokens)."""
        acc: dict = defaultdict(lambda: [set(), set(), 0, 0.0, 0.0, 0.0, 0.0])
        for e, ts, run, seq, rid, tenant, new, lv, lvm, vtc, vt in self.requests:
            if ts >= before or (since and e in since and ts < since[e]):
                continue
            a = acc[(ts.replace(second=0, microsecond=0), e, tenant)]
            a[0].add((run, seq))
            a[1].add((run, rid))
            a[2] += new
            a[3] += lv
            a[4] += lvm
            a[5] += vtc
            a[6] += vt
        return {k: (len(v[0]), len(v[1]), v[2], *(round(x, 6) for x in v[3:])) for k, v in acc.items()}


def rollups(con) -> dict:
    rows = con.execute("""SELECT minute, engine_id, tenant, steps, requests, new_tokens, llmvisor_ms,
                          llmvisor_measured_ms, vtc_ms, vtc_tokens FROM tenant_minutes""").fetchall()
    return {(m, e, t): (s, r, n, *(round(x, 6) for x in rest)) for m, e, t, s, r, n, *rest in rows}


def count(con, sql: str) -> int:
    return con.execute(sql).fetchone()[0]


@pytest.fixture
def con(tmp_path: Path):
    c = duckdb.connect(str(tmp_path / "shadowd.duckdb"))
    migrate(c)
    yield c
    c.close()


def test_rollup_matches_raw_rows_and_old_raw_rows_go(con):
    log = Log(con)
    log.steps("e0", NOW - dt.timedelta(days=20), 40)  # past raw_days
    log.steps("e0", NOW - dt.timedelta(days=10), 40)
    log.steps("e1", NOW - dt.timedelta(hours=1), 30)
    log.steps("e1", NOW - dt.timedelta(seconds=30), 3, every_s=5)  # not settled yet
    expected = log.expected_rollup(before=NOW - dt.timedelta(minutes=2))

    res = apply_retention(con, raw_days=14, rollup_days=400, now=NOW)

    assert rollups(con) == expected
    assert res.rollup_rows == len(expected)
    assert res.steps_deleted == 40 and res.rollups_deleted == 0
    assert res.requests_deleted == sum(1 for r in log.requests if r[1] < NOW - dt.timedelta(days=14))
    assert count(con, "SELECT count(*) FROM steps") == 73
    assert count(con, "SELECT min(ts) FROM steps") >= NOW - dt.timedelta(days=14)
    assert (
        count(
            con,
            """SELECT count(*) FROM step_requests r ANTI JOIN steps s
                         USING (engine_id, run_id, step_seq)""",
        )
        == 0
    )

    again = apply_retention(con, raw_days=14, rollup_days=400, now=NOW)  # idempotent
    assert rollups(con) == expected
    assert (again.steps_deleted, again.requests_deleted, again.rollups_deleted) == (0, 0, 0)

    later = NOW + dt.timedelta(minutes=5)  # the unsettled minute is now complete
    apply_retention(con, raw_days=14, rollup_days=400, now=later)
    assert rollups(con) == log.expected_rollup(before=later - dt.timedelta(minutes=2))
    assert len(rollups(con)) > len(expected)


def test_raw_rows_not_rolled_up_are_never_deleted(con):
    log = Log(con)
    log.steps("e0", NOW - dt.timedelta(days=30), 20)
    con.execute(
        "INSERT INTO steps (engine_id, run_id, step_seq, ts, kind, num_requests, "
        "prefill_tokens, decode_tokens, dropped_frames_total) "
        "VALUES ('e0', 'run1', 999, ?, 'decode', 0, 0, 0, 0)",
        [NOW - dt.timedelta(days=30)],
    )
    steps, requests, _ = prune(con, raw_days=14, rollup_days=400, now=NOW)
    assert (steps, requests) == (0, 0)  # nothing is rolled up yet, not even the empty step
    assert count(con, "SELECT count(*) FROM steps") == 21

    rollup(con, now=NOW)
    steps, requests, _ = prune(con, raw_days=14, rollup_days=400, now=NOW)
    assert steps == 21 and requests == len(log.requests)


def test_protect_since_keeps_unexported_days(con):
    log = Log(con)
    log.steps("e0", NOW - dt.timedelta(days=20), 10)
    res = apply_retention(
        con, raw_days=14, rollup_days=400, now=NOW, protect_since=NOW - dt.timedelta(days=25)
    )
    assert res.steps_deleted == 0 and res.rollup_rows > 0
    assert apply_retention(con, raw_days=14, rollup_days=400, now=NOW).steps_deleted == 10


def test_old_rollups_expire_and_an_idle_engines_last_minute_survives(con):
    log = Log(con)
    log.steps("idle", NOW - dt.timedelta(days=20), 5)  # engine that went quiet
    con.execute(
        "INSERT INTO tenant_minutes (minute, engine_id, tenant, steps) VALUES (?, 'e9', 'x', 1)",
        [NOW - dt.timedelta(days=500)],
    )
    first = apply_retention(con, raw_days=14, rollup_days=400, now=NOW)
    assert first.rollups_deleted == 1 and first.steps_deleted == 5
    kept = rollups(con)
    assert kept == log.expected_rollup(before=NOW) and kept
    apply_retention(con, raw_days=14, rollup_days=400, now=NOW + dt.timedelta(hours=1))
    assert rollups(con) == kept  # high-water minute not wiped


# -- export ------------------------------------------------------------------------------------
DAY0 = dt.datetime(2025, 3, 18)


def test_parquet_export_reads_back_equal_and_is_incremental(con, tmp_path):
    log = Log(con)
    for engine in ("e0", "0"):  # "0" must stay a string
        for d in range(3):
            log.steps(engine, DAY0 + dt.timedelta(days=d, hours=23, minutes=50), 20, every_s=45)
    root = tmp_path / "export"
    noon_day2 = DAY0 + dt.timedelta(days=2, hours=12)

    res = export_parquet(con, root, now=noon_day2)

    # Day 0 and day 1 are complete (each spills past midnight into the next day); day 2 is not.
    assert sorted(res.partitions) == sorted(
        (e, (DAY0 + dt.timedelta(days=d)).date()) for e in ("e0", "0") for d in range(2)
    )
    assert all(f.endswith(".parquet") and os.path.exists(f) for f in res.files)
    assert exported_partitions(root) == set(res.partitions)
    assert not list(root.glob(".staging-*"))

    cutoff = DAY0 + dt.timedelta(days=2)
    want = {
        "steps": con.execute("SELECT * FROM steps WHERE ts < ?", [cutoff]).fetchall(),
        "step_requests": con.execute(
            """SELECT r.* FROM step_requests r JOIN steps s
                USING (engine_id, run_id, step_seq) WHERE s.ts < ?""",
            [cutoff],
        ).fetchall(),
    }
    cols = {t: [r[0] for r in con.execute(f"DESCRIBE {t}").fetchall()] for t in want}
    with duckdb.connect() as fleet:
        attach_exports(fleet, str(root))
        for table in want:
            got = fleet.execute(f"SELECT {', '.join(cols[table])} FROM {table}").fetchall()
            assert sorted(got, key=repr) == sorted(want[table], key=repr)
            assert len(got) == res.rows[table] > 0
        assert fleet.execute("SELECT DISTINCT typeof(engine_id), typeof(day) FROM steps").fetchall() == [
            ("VARCHAR", "DATE")
        ]
        assert fleet.execute("SELECT count(*) FROM steps WHERE day <> CAST(ts AS DATE)").fetchone()[0] == 0

    mtimes = {f: os.stat(f).st_mtime_ns for f in res.files}
    assert export_parquet(con, root, now=noon_day2).partitions == []  # nothing new
    assert {f: os.stat(f).st_mtime_ns for f in res.files} == mtimes
    assert first_unexported(con, root) == DAY0 + dt.timedelta(days=2)

    nxt = export_parquet(con, root, now=DAY0 + dt.timedelta(days=4, hours=1))
    assert {d for _, d in nxt.partitions} == {(DAY0 + dt.timedelta(days=d)).date() for d in (2, 3)}
    assert first_unexported(con, root) is None


def test_interrupted_export_is_repaired(con, tmp_path):
    Log(con).steps("e0", DAY0, 10)
    root = tmp_path / "export"
    (root / ".staging-dead").mkdir(parents=True)
    half = root / "step_requests" / "engine_id=e0" / f"day={DAY0.date()}"
    half.mkdir(parents=True)
    (half / "junk.parquet").write_bytes(b"not parquet")  # no steps partition: incomplete

    res = export_parquet(con, root, now=DAY0 + dt.timedelta(days=2))

    assert res.partitions == [("e0", DAY0.date())]
    assert not (half / "junk.parquet").exists() and not (root / ".staging-dead").exists()
    with duckdb.connect() as fleet:
        attach_exports(fleet, str(root))
        assert fleet.execute("SELECT count(*) FROM step_requests").fetchone()[0] == res.rows["step_requests"]


def test_odd_engine_names_round_trip_and_missing_tables_read_as_empty(con, tmp_path):
    con.execute(
        "INSERT INTO steps (engine_id, run_id, step_seq, ts, kind, num_requests, prefill_tokens, "
        "decode_tokens, dropped_frames_total) VALUES ('rack 3/gpu=1', 'r', 1, ?, 'decode', 0, 0, 0, 0)",
        [DAY0],
    )
    root = tmp_path / "export"
    res = export_parquet(con, root, now=DAY0 + dt.timedelta(days=2))
    assert res.partitions == [("rack 3/gpu=1", DAY0.date())] and res.rows["step_requests"] == 0
    assert exported_partitions(root) == {("rack 3/gpu=1", DAY0.date())}
    assert export_parquet(con, root, now=DAY0 + dt.timedelta(days=2)).partitions == []
    with duckdb.connect() as fleet:
        attach_exports(fleet, str(root))
        assert fleet.execute("SELECT engine_id, day FROM steps").fetchall() == [("rack 3/gpu=1", DAY0.date())]
        assert fleet.execute("SELECT count(*) FROM step_requests").fetchone()[0] == 0
        assert "tenant" in [r[0] for r in fleet.execute("DESCRIBE step_requests").fetchall()]


def test_rows_arriving_after_their_minute_was_rolled_up_are_rolled_up_before_prune(con):
    """Rows older than the engine's last rolled-up minute (a late frame, a second run of the
    engine with a clock behind) reach the roll-up before their raw rows are pruned."""
    log = Log(con)
    t0 = NOW - dt.timedelta(days=20)
    log.steps("e0", t0, 40, every_s=15)  # 10 minutes
    apply_retention(con, raw_days=14, rollup_days=400, now=t0 + dt.timedelta(hours=1))
    late_before = len(log.requests)
    log.steps("e0", t0 + dt.timedelta(minutes=2, seconds=3), 4, every_s=5)  # behind the mark
    assert len(log.requests) > late_before

    res = apply_retention(con, raw_days=14, rollup_days=400, now=NOW)

    assert count(con, "SELECT count(*) FROM steps") == 0 and res.steps_deleted == 44
    assert rollups(con) == log.expected_rollup(before=NOW)


def test_a_partition_that_cannot_be_exported_holds_back_only_its_own_rows(con, tmp_path):
    log = Log(con)
    for engine in ("e0", "e1"):
        for d in range(3):
            log.steps(engine, NOW - dt.timedelta(days=20 - d), 10)
    root = tmp_path / "export"
    blocked = root / "step_requests" / "engine_id=e1"
    blocked.parent.mkdir(parents=True)
    blocked.write_text("a file where the engine's directory would go")  # mkdir fails: a real OSError

    res = export_parquet(con, root, now=NOW)

    assert sorted(res.partitions) == [("e0", (NOW - dt.timedelta(days=20 - d)).date()) for d in range(3)]
    assert sorted((e, d) for e, d, _ in res.failed) == [
        ("e1", (NOW - dt.timedelta(days=20 - d)).date()) for d in range(3)
    ]
    assert all("Error" in why for *_, why in res.failed)
    keep = unexported_partitions(con, root)
    assert {e for e, _ in keep} == {"e1"}

    out = apply_retention(con, raw_days=14, rollup_days=400, now=NOW, keep_partitions=keep)

    left = con.execute("SELECT DISTINCT engine_id FROM steps").fetchall()
    assert left == [("e1",)] and out.steps_deleted == 30
    with duckdb.connect() as fleet:
        attach_exports(fleet, str(root))
        assert fleet.execute("SELECT count(*) FROM steps").fetchone()[0] == 30


def test_export_files_are_fsynced_before_rename(con, tmp_path, monkeypatch):
    """Every published partition's file and directory were fsynced before the rename that
    publishes them, and the parent directory after it."""
    Log(con).steps("e0", DAY0, 10)
    synced: list[str] = []
    renamed: list[tuple[str, str]] = []
    real_fsync, real_rename = os.fsync, os.rename

    def fsync(fd):
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        return real_fsync(fd)

    def rename(a, b):
        renamed.append((str(a), str(b)))
        synced.append(f"rename {a}")
        return real_rename(a, b)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "rename", rename)
    res = export_parquet(con, tmp_path / "export", now=DAY0 + dt.timedelta(days=2))
    assert res.partitions == [("e0", DAY0.date())] and len(renamed) == 2
    for src, dest in renamed:
        i = synced.index(f"rename {src}")
        assert f"{src}/data_0.parquet" in synced[:i] and src in synced[:i]
        assert str(Path(dest).parent) in synced[i:]


def test_an_engine_id_too_long_for_a_file_name_is_exported_once(con, tmp_path):
    long_id = "gpu-host-" + "é/" * 150  # percent-encoded, far past 255 bytes
    con.execute(
        "INSERT INTO steps (engine_id, run_id, step_seq, ts, kind, num_requests, prefill_tokens, "
        "decode_tokens, dropped_frames_total) VALUES (?, 'r', 1, ?, 'decode', 0, 0, 0, 0)",
        [long_id, DAY0],
    )
    root = tmp_path / "export"
    res = export_parquet(con, root, now=DAY0 + dt.timedelta(days=2))
    assert res.partitions == [(long_id, DAY0.date())] and res.failed == []
    (name,) = [p.name for p in (root / "steps").iterdir()]
    assert len(name.encode()) <= 255 and "~" in name
    assert export_parquet(con, root, now=DAY0 + dt.timedelta(days=2)).partitions == []  # not again
    assert unexported_partitions(con, root) == []
