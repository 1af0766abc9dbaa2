"""Service received beside cost caused, in the text, JSON and HTML report."""

from __future__ import annotations

import datetime as dt

import duckdb

from shadowd.reports.html import render_html
from shadowd.reports.model import collect, to_json
from shadowd.reports.text import render_text
from storage.schema import migrate
from storage.service_rollup import retire_requests

START = dt.datetime(2025, 3, 1, 8, 0)


def _db() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    migrate(con)
    rows = []
    for i in range(400):
        tenant = "victim" if i % 2 else "noisy"
        ttft = 50.0 + (i if tenant == "victim" else 0.0)  # the victim's TTFT climbs
        ended = START + dt.timedelta(seconds=10 * i)
        rows.append(
            ("e0", f"q{i}", tenant, ended, ttft / 2, ttft, 20.0, ttft + 500, "abort" if i == 1 else "stop")
        )
    con.executemany(
        "INSERT INTO requests (engine_id, run_id, req_id, tenant, ended_ts, queue_ms, ttft_ms, tpot_ms, e2e_ms, "
        "prompt_tokens, output_tokens, preemptions, finish_reason) VALUES (?, 'r', ?, ?, ?, ?, ?, ?, ?, 64, 32, 0, ?)",
        rows,
    )
    return con


def test_service_per_tenant_in_every_renderer():
    con = _db()
    data = collect(con, title="service")
    rep = to_json(data)
    by = {s["tenant"]: s for s in rep["service"]}
    assert by["victim"]["requests"] == 200 and by["victim"]["aborted"] == 1
    assert by["victim"]["ttft_p99_ms"] > 4 * by["noisy"]["ttft_p99_ms"]
    text = render_text(data)
    assert "Cost caused and service received, per tenant" in text and "victim" in text
    page = render_html(data)
    assert 'data-plot="service"' in page and "TTFT p99" in page


def test_service_read_back_from_rollups_after_retention():
    con = _db()
    exact = to_json(collect(con))["service"]
    retire_requests(con, raw_days=1, rollup_days=400, now=START + dt.timedelta(days=2))
    data = collect(con)
    back = {s["tenant"]: s for s in to_json(data)["service"]}
    for s in exact:
        b = back[s["tenant"]]
        assert b["source"] == "rollup" and b["requests"] == s["requests"]
        assert abs(b["ttft_p99_ms"] / s["ttft_p99_ms"] - 1) < 0.05
