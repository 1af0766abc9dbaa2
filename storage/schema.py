"""DuckDB schema for shadowd, as an ordered list of migrations.

The table and column names in migration 1 are a contract: analysts, the CLI
and outside tools query them.  Never edit a migration that has shipped; append
a new one.  ``migrate()`` applies what a database lacks, inside one
transaction per migration, and records each in ``schema_migrations``.

>>> import duckdb
>>> con = duckdb.connect()
>>> migrate(con)
[1, 2, 3, 4, 5, 6]
>>> migrate(con)
[]
"""

from __future__ import annotations

import duckdb

MIGRATIONS: list[tuple[int, str]] = [
    (
        1,
        """
    CREATE TABLE steps (
        engine_id            VARCHAR   NOT NULL,
        run_id               VARCHAR   NOT NULL,
        step_seq             BIGINT    NOT NULL,
        ts                   TIMESTAMP NOT NULL,   -- wall clock (UTC) at step end
        latency_ms           DOUBLE,               -- measured (async estimator)
        kind                 VARCHAR   NOT NULL,   -- 'prefill' | 'decode' | 'mixed'
        num_requests         INTEGER   NOT NULL,
        prefill_tokens       INTEGER   NOT NULL,
        decode_tokens        INTEGER   NOT NULL,
        t_sched_start_ns     BIGINT,               -- raw monotonic stamps of the engine process
        t_sched_end_ns       BIGINT,
        t_done_ns            BIGINT,
        t_prev_done_ns       BIGINT,
        dropped_frames_total BIGINT    NOT NULL,
        predicted_ms         DOUBLE,               -- LLMVisor T-hat (NULL before calibration)
        baseline_ms          DOUBLE,               -- token-count model T-hat
        model_version        VARCHAR
    );
    CREATE TABLE step_requests (
        engine_id            VARCHAR   NOT NULL,
        run_id               VARCHAR   NOT NULL,
        step_seq             BIGINT    NOT NULL,
        req_id               VARCHAR   NOT NULL,
        tenant               VARCHAR   NOT NULL,
        phase                VARCHAR   NOT NULL,   -- 'prefill' | 'decode'
        new_tokens           INTEGER   NOT NULL,
        context_tokens       INTEGER   NOT NULL,
        prompt_tokens        INTEGER   NOT NULL,
        spec_tokens          INTEGER   NOT NULL,
        preemptions          SMALLINT  NOT NULL DEFAULT 0,
        llmvisor_ms          REAL,                 -- share of predicted_ms
        llmvisor_measured_ms REAL,                 -- share normalised to latency_ms
        vtc_ms               REAL,                 -- token-proportional share of latency_ms
        vtc_tokens           REAL,                 -- VTC weighted tokens charged this step
        model_version        VARCHAR
    );
    CREATE TABLE model_versions (
        version        VARCHAR PRIMARY KEY,
        platform_key   VARCHAR NOT NULL,
        created_at     TIMESTAMP NOT NULL,
        fit_steps      BIGINT,
        fit_since      TIMESTAMP,
        fit_until      TIMESTAMP,
        body           VARCHAR NOT NULL            -- JSON: coefficients, platform, metrics
    );
    CREATE TABLE drift_events (
        ts             TIMESTAMP NOT NULL,
        engine_id      VARCHAR,
        step_seq       BIGINT,
        detector       VARCHAR NOT NULL,
        statistic      DOUBLE,
        threshold      DOUBLE,
        step_class     VARCHAR,
        details        VARCHAR,
        resolved_at    TIMESTAMP
    );
    CREATE TABLE gate_decisions (
        ts                 TIMESTAMP NOT NULL,
        verdict            VARCHAR NOT NULL,       -- 'GO' | 'NO_GO' | 'INCONCLUSIVE'
        reason             VARCHAR,
        consecutive_passes INTEGER,
        checks             VARCHAR                 -- JSON list of check results
    );
    """,
    ),
    (
        2,
        """
    CREATE TABLE ingest_faults (
        ts        TIMESTAMP NOT NULL,
        kind      VARCHAR NOT NULL,                -- 'malformed' | 'version' | 'oversized' | 'gap' | 'storage'
        count     BIGINT NOT NULL,
        detail    VARCHAR
    );
    CREATE TABLE tenant_minutes (
        minute         TIMESTAMP NOT NULL,
        engine_id      VARCHAR NOT NULL,
        tenant         VARCHAR NOT NULL,
        steps          BIGINT,
        requests       BIGINT,
        new_tokens     BIGINT,
        llmvisor_ms    DOUBLE,
        llmvisor_measured_ms DOUBLE,
        vtc_ms         DOUBLE,
        vtc_tokens     DOUBLE
    );
    """,
    ),
    (
        3,
        """
    ALTER TABLE gate_decisions ADD COLUMN valid_until TIMESTAMP;
    ALTER TABLE gate_decisions ADD COLUMN decision VARCHAR;    -- the whole decision as JSON
    """,
    ),
    (
        4,
        """
    -- A step whose request rows are committed in part (storage.row_groups): at most one row,
    -- between the two transactions that store the step.  Left behind by a crash, it names the
    -- rows to delete when the database is next opened.
    CREATE TABLE partial_steps (
        engine_id  VARCHAR NOT NULL,
        run_id     VARCHAR NOT NULL,
        step_seq   BIGINT  NOT NULL
    );
    """,
    ),
    (
        5,
        """
    -- What retention rolled up (storage.retention): per engine and minute, how many raw steps
    -- tenant_minutes holds, and how many of them were pruned since.  A minute whose raw step
    -- count differs (rows that arrived after it was rolled up) is rolled up again before any
    -- of its rows may be pruned.
    CREATE TABLE rollup_marks (
        engine_id     VARCHAR   NOT NULL,
        minute        TIMESTAMP NOT NULL,
        steps         BIGINT    NOT NULL,
        pruned_steps  BIGINT    NOT NULL DEFAULT 0
    );
    """,
    ),
    (
        6,
        """
    -- One row per request that ended (finished, hit its length limit, or was aborted): the
    -- service it received.  Times are milliseconds from vLLM's arrival time, so queueing in the
    -- engine counts; NULL where the request never got that far (an abort before its first token).
    CREATE TABLE requests (
        engine_id      VARCHAR   NOT NULL,
        run_id         VARCHAR   NOT NULL,
        req_id         VARCHAR   NOT NULL,
        tenant         VARCHAR   NOT NULL,
        arrival_ts     TIMESTAMP,              -- wall clock (UTC) of Request.arrival_time
        ended_ts       TIMESTAMP NOT NULL,     -- wall clock (UTC) when the engine let it go
        queue_ms       DOUBLE,                 -- arrival -> first scheduled
        ttft_ms        DOUBLE,                 -- arrival -> first output token
        tpot_ms        DOUBLE,                 -- first -> last output token, per later token
        e2e_ms         DOUBLE,                 -- arrival -> end
        prompt_tokens  INTEGER   NOT NULL,
        output_tokens  INTEGER   NOT NULL,
        preemptions    SMALLINT  NOT NULL DEFAULT 0,
        finish_reason  VARCHAR   NOT NULL,     -- 'stop' | 'length' | 'abort' | 'error'
        first_step_seq BIGINT,                 -- step that first scheduled it
        first_token_step_seq BIGINT,           -- step that produced its first output token
        end_step_seq   BIGINT
    );
    -- Per-tenant per-minute latency histograms of ended requests, kept after retention drops the
    -- raw rows: log-spaced buckets (storage.service_rollup) merge by addition, so quantiles over
    -- any span of minutes can still be read back.
    CREATE TABLE service_minutes (
        minute     TIMESTAMP NOT NULL,
        engine_id  VARCHAR   NOT NULL,
        tenant     VARCHAR   NOT NULL,
        metric     VARCHAR   NOT NULL,         -- 'queue_ms' | 'ttft_ms' | 'tpot_ms' | 'e2e_ms'
        bucket     SMALLINT  NOT NULL,
        count      BIGINT    NOT NULL
    );
    CREATE TABLE outcome_minutes (
        minute         TIMESTAMP NOT NULL,
        engine_id      VARCHAR   NOT NULL,
        tenant         VARCHAR   NOT NULL,
        finish_reason  VARCHAR   NOT NULL,
        requests       BIGINT    NOT NULL,
        output_tokens  BIGINT    NOT NULL,
        preemptions    BIGINT    NOT NULL
    );
    """,
    ),
]

LATEST = MIGRATIONS[-1][0]


def current_version(con: duckdb.DuckDBPyConnection) -> int:
    con.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TIMESTAMP)"
    )
    row = con.execute("SELECT max(version) FROM schema_migrations").fetchone()
    return int(row[0] or 0)


def migrate(con: duckdb.DuckDBPyConnection) -> list[int]:
    """Apply missing migrations in order; returns the versions applied."""
    have = current_version(con)
    if have > LATEST:
        raise RuntimeError(
            f"database schema version {have} is newer than this shadowd ({LATEST}); "
            "upgrade shadowd, or point --db at another file"
        )
    applied = []
    for version, sql in MIGRATIONS:
        if version <= have:
            continue
        con.execute("BEGIN TRANSACTION")
        try:
            con.execute(sql)
            con.execute("INSERT INTO schema_migrations VALUES (?, now())", [version])
            con.execute("COMMIT")
        except Exception:
            con.execute("ROLLBACK")
            raise
        applied.append(version)
    return applied
