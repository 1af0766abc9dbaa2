"""/report of a running daemon over a large database stays within the daemon's memory bound.

A busy host stores ~330 M request rows a day; a report must aggregate them inside DuckDB (under
``[storage] memory_limit``), not pull them into Python.  The database here holds 50 M request
rows (400,000 steps of 125 requests over ~22 h), generated inside DuckDB with ``range()``; the
daemon runs as its own process so its peak RSS (VmHWM) is its own.
"""

from __future__ import annotations

import json
import socket
import urllib.request
from pathlib import Path

import duckdb
import pytest

from storage.schema import migrate
from tests.helpers import start_daemon_process, stop_daemon_process, wait_until

REQUEST_ROWS = 50_000_000
PER_STEP = 125
STEP_S = 0.2  # 400,000 steps 0.2 s apart: 22.2 h, inside the daemon's 1-day report maximum
MEMORY_LIMIT_MB = 192  # [storage] memory_limit, the daemon's default
PYTHON_SLACK_MIB = 160  # interpreter, numpy, matplotlib and report objects beside DuckDB


def _generate(path: str) -> None:
    steps = REQUEST_ROWS // PER_STEP
    con = duckdb.connect(path)
    migrate(con)
    con.execute("SET threads = 2")
    con.execute(
        f"""INSERT INTO steps SELECT 'e0', 'run1', i,
                   now()::TIMESTAMP - INTERVAL 1 SECOND * ({steps} - i) * {STEP_S},
                   5.0 + i % 7, 'decode', {PER_STEP}, 0, {PER_STEP}, 0, 0, 0, 0, 0, 5.0 + i % 5, 5.5, 'm1'
            FROM range({steps}) t(i)"""
    )
    con.execute(
        f"""INSERT INTO step_requests SELECT 'e0', 'run1', i // {PER_STEP}, 'r',
                   CASE WHEN i % 2 = 0 THEN 'acme' ELSE 'beta' END, 'decode',
                   1, (i % 4000)::INTEGER, 100, 0, 0, 0.04, 0.04, 0.04, 1.0, 'm1'
            FROM range({REQUEST_ROWS}) t(i)"""
    )
    assert con.execute("SELECT count(*) FROM step_requests").fetchone()[0] == REQUEST_ROWS
    con.close()


def _vm_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(field)


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=600) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


@pytest.mark.slow
def test_report_over_50m_request_rows_stays_under_the_memory_bound(ipc_endpoint, tmp_path):
    db = str(tmp_path / "big.duckdb")
    _generate(db)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = start_daemon_process(ipc_endpoint, db, "--http", f"127.0.0.1:{port}")
    url = f"http://127.0.0.1:{port}"
    try:
        assert wait_until(lambda: _listening(port), timeout=60)
        base_kib = _vm_kib(proc.pid, "VmRSS")
        status, body = _get(url + "/report")  # default window: the last hour
        assert status == 200, body[:500]
        assert 0 < json.loads(body)["steps"] <= 3600 / STEP_S + 1
        status, body = _get(url + "/report?since=1970-01-01T00:00:00")  # longer than the maximum
        assert status == 400 and b"max_window_s" in body
        # Every step: all 50 M request rows are aggregated.
        status, body = _get(url + "/report?steps=400000")
        assert status == 200, body[:500]
        rep = json.loads(body)
        assert rep["requests"] == REQUEST_ROWS
        assert {t["tenant"] for t in rep["tenants"]} == {"acme", "beta"}
        status, _ = _get(url + "/report.html?steps=400000")
        assert status == 200
        peak_mib = _vm_kib(proc.pid, "VmHWM") / 1024
        bound_mib = base_kib / 1024 + MEMORY_LIMIT_MB * 1e6 / 2**20 + PYTHON_SLACK_MIB
        print(
            f"daemon RSS at start {base_kib / 1024:.0f} MiB, peak {peak_mib:.0f} MiB, bound {bound_mib:.0f} MiB"
        )
        assert peak_mib < bound_mib
    finally:
        assert stop_daemon_process(proc) == 0
