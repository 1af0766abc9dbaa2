"""Retention keeps per-tenant service quantiles after the raw ``requests`` rows are gone."""

from __future__ import annotations

import datetime as dt

import duckdb
import numpy as np

from storage.schema import migrate
from storage.service_rollup import RATIO, retire_requests, service_quantiles

START = dt.datetime(2025, 3, 1, 8, 0)


def _requests(con: duckdb.DuckDBPyConnection, n: int = 5000, seed: int = 1) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    tenants = rng.choice(["chat", "code"], size=n)
    ttft = np.where(tenants == "chat", rng.lognormal(4.0, 0.6, n), rng.lognormal(6.0, 0.9, n))
    ended = [START + dt.timedelta(seconds=float(s)) for s in np.sort(rng.uniform(0, 6 * 3600, n))]
    con.executemany(
        "INSERT INTO requests (engine_id, run_id, req_id, tenant, ended_ts, queue_ms, ttft_ms, tpot_ms, e2e_ms, "
        "prompt_tokens, output_tokens, preemptions, finish_reason) VALUES (?, 'r', ?, ?, ?, ?, ?, ?, ?, 100, 20, 0, ?)",
        [
            (
                "e0",
                f"q{i}",
                str(tenants[i]),
                ended[i],
                ttft[i] / 4,
                float(ttft[i]),
                20.0,
                ttft[i] + 400,
                "abort" if i % 50 == 0 else "stop",
            )
            for i in range(n)
        ],
    )
    return {t: ttft[tenants == t] for t in ("chat", "code")}


def test_quantiles_survive_retention_within_one_bucket():
    con = duckdb.connect()
    migrate(con)
    truth = _requests(con)
    deleted, _ = retire_requests(con, raw_days=1, rollup_days=400, now=START + dt.timedelta(days=3))
    assert deleted == 5000 and con.execute("SELECT count(*) FROM requests").fetchone()[0] == 0
    back = service_quantiles(con, "ttft_ms", [0.5, 0.99])
    for tenant, values in truth.items():
        exact = np.quantile(values, [0.5, 0.99])
        assert np.all(np.abs(np.asarray(back[tenant]) / exact - 1) < RATIO - 1), (tenant, back[tenant], exact)
    outcomes = dict(
        con.execute("SELECT finish_reason, sum(requests) FROM outcome_minutes GROUP BY 1").fetchall()
    )
    assert outcomes == {"abort": 100, "stop": 4900}


def test_retirement_is_idempotent_and_spares_recent_and_protected_rows():
    con = duckdb.connect()
    migrate(con)
    _requests(con)
    now = START + dt.timedelta(days=1, hours=3)  # cutoff at START + 3 h: half the rows are older
    protect = START + dt.timedelta(hours=2)  # not yet exported from here on
    deleted, _ = retire_requests(con, raw_days=1, rollup_days=400, now=now, protect_since=protect)
    left = con.execute("SELECT min(ended_ts), count(*) FROM requests").fetchone()
    assert left[0] >= protect and deleted + left[1] == 5000
    again, _ = retire_requests(con, raw_days=1, rollup_days=400, now=now, protect_since=protect)
    total = con.execute("SELECT sum(requests) FROM outcome_minutes").fetchone()[0]
    assert again == 0 and total == deleted  # nothing counted twice
