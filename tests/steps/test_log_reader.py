"""Reading the step log back: a step's rows come in the order they were written, whatever is read.

A fit sums each step's rows in that order, so it must not depend on the columns read or on
DuckDB's threads (``shadowd.steps.log_reader.load_batch``).
"""

from __future__ import annotations

import duckdb
import numpy as np
import pytest

from shadowd.steps.log_reader import Window, last_steps_within, load_batch
from storage.schema import migrate

STEPS = 4000
# Batches that change size, as the engine's do: with them DuckDB's sort on several threads gave
# a step's rows in another order from one read to the next, before the order was made explicit.
ROWS_IN_STEP = "1 + (s * 7919) % 300"


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A log whose rows were written in a known order: ``prompt_tokens`` counts the writes."""
    path = str(tmp_path_factory.mktemp("log") / "log.duckdb")
    con = duckdb.connect(path)
    migrate(con)
    con.execute(f"""
        INSERT INTO steps (engine_id, run_id, step_seq, ts, latency_ms, kind, num_requests,
                           prefill_tokens, decode_tokens, dropped_frames_total)
        SELECT 'e', 'r', s, TIMESTAMP '2026-01-01' + to_microseconds(s * 1000), 10.0 + s % 7,
               'decode', {ROWS_IN_STEP}, 0, {ROWS_IN_STEP}, 0
        FROM range({STEPS}) t(s)""")
    con.execute(f"""
        INSERT INTO step_requests (engine_id, run_id, step_seq, req_id, tenant, phase, new_tokens,
                                   context_tokens, prompt_tokens, spec_tokens)
        SELECT 'e', 'r', s, 'r' || ((s * 1000 + j) * 7919 % 100003), 't' || (j % 3), 'decode', 1,
               100 + (j * 53) % 999, (row_number() OVER (ORDER BY s, j) - 1)::INTEGER, 0
        FROM range({STEPS}) a(s), range(300) b(j)
        WHERE j < {ROWS_IN_STEP}
        ORDER BY s, j""")
    con.close()
    return path


@pytest.mark.parametrize("threads", [1, 4])
@pytest.mark.parametrize("request_ids", [True, False])
def test_a_steps_rows_come_in_write_order(log: str, threads: int, request_ids: bool) -> None:
    con = duckdb.connect(log, read_only=True)
    con.execute(f"SET threads = {threads}")
    for window in (Window(), Window(last_steps=1700)):
        batch = load_batch(con, window, request_ids=request_ids)
        assert batch.num_steps == (window.last_steps or STEPS)
        assert np.all(np.diff(batch.prompt_tokens) == 1), "a step's rows out of their write order"
        assert np.all(np.diff(batch.req_step) >= 0)
        assert (batch.req_id is not None) == request_ids


def test_without_request_ids_every_other_column_is_the_same(log: str) -> None:
    con = duckdb.connect(log, read_only=True)
    con.execute("SET threads = 4")
    a, b = load_batch(con, request_ids=True), load_batch(con, request_ids=False)
    for name in (
        "latency_ms",
        "req_step",
        "new_tokens",
        "context_tokens",
        "prompt_tokens",
        "prefill",
        "tenant",
    ):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert b.req_id is None and a.req_id is not None


@pytest.mark.parametrize("rows", [None, 0, 5_000, 100_000, 10**9])
def test_the_most_recent_steps_within_a_row_bound(log: str, rows: int | None) -> None:
    """A re-fit's window cut to ``max_window_rows``: the most recent steps whose rows fit."""
    con = duckdb.connect(log, read_only=True)
    per_step = 1 + (np.arange(STEPS) * 7919) % 300
    window = Window(last_steps=1700)
    got = last_steps_within(con, window, rows)
    if rows is None:
        assert got == 1700
        return
    held = np.cumsum(per_step[::-1][:1700])
    assert got == int(np.searchsorted(held, rows, side="right"))
    if got:
        assert load_batch(con, Window(last_steps=got), request_ids=False).num_requests <= rows
