"""Validation reports for capacity planners and billing owners: one HTML file, or terminal tables.

Everything is aggregated in DuckDB (quantiles, buckets, a fixed-seed sample for the scatter), so
a report over weeks of raw rows stays cheap in memory.  The HTML is self-contained — plots are
inline SVG drawn by matplotlib, styles inline, no scripts, fonts or fetches — so it can be mailed
or attached to a ticket and opened offline.  An empty or not-yet-calibrated database gives a
report that says so and what to do, not an error.

Errors are the stored per-step predictions against measured latency, ``|T̂ − T| / T``: each step
was scored by the model version in force when it ran, and calibration warm-up steps carry no
prediction, so these are out-of-sample figures.  Per-tenant time combines raw rows with the
per-minute roll-ups of minutes whose raw rows retention has already removed.

>>> import duckdb
>>> from storage.schema import migrate
>>> con = duckdb.connect(); _ = migrate(con)
>>> "No data yet" in render_text_report(con, title="t")
True
"""

from __future__ import annotations

import datetime as dt
import html
import io
import math
import os
import re
from dataclasses import dataclass, field
from typing import Any

import duckdb
import numpy as np

from shadowd.steps.log_reader import Window

CLASSES = ("prefill", "decode", "mixed")
MODELS = (("llmvisor", "predicted_ms", "LLMVisor"), ("token", "baseline_ms", "token baseline"))
CDF_P = [round(0.005 + 0.01 * i, 4) for i in range(100)]
SCATTER_POINTS = 3000
MAX_TENANTS = 7
BUCKETS = (
    (60, "1 minute"),
    (300, "5 minutes"),
    (900, "15 minutes"),
    (3600, "1 hour"),
    (6 * 3600, "6 hours"),
    (86400, "1 day"),
)
VERDICT_LEVEL = {"NO_GO": 0, "INCONCLUSIVE": 1, "GO": 2}
_NUMERIC = re.compile(r"^([-+]?[\d,.]+(e[-+]?\d+)?(%|×| pp)?|–)$")  # right-aligned cells


# -- data ----------------------------------------------------------------------------------------
@dataclass
class Table:
    title: str
    headers: list[str]
    rows: list[list[Any]]
    note: str = ""


@dataclass
class ReportData:
    """What both renderers show, gathered by :func:`collect`."""

    title: str
    since: dt.datetime | None
    until: dt.datetime | None
    engine_id: str | None
    bucket_label: str = "1 hour"
    overview: dict[str, Any] = field(default_factory=dict)
    accuracy: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)  # class -> model -> stats
    cdf: dict[str, dict[str, list[float]]] = field(default_factory=dict)  # class -> model -> quantiles
    scatter: dict[str, np.ndarray] = field(default_factory=dict)
    error_series: dict[str, np.ndarray] = field(default_factory=dict)
    tenants: list[dict[str, Any]] = field(default_factory=list)
    tenant_series: dict[str, np.ndarray] = field(default_factory=dict)
    drift: list[tuple] = field(default_factory=list)
    gate: list[tuple] = field(default_factory=list)
    models: list[tuple] = field(default_factory=list)

    @property
    def has_steps(self) -> bool:
        return bool(self.overview.get("steps"))

    @property
    def attributed(self) -> bool:
        return bool(self.overview.get("attributed_steps"))


def _time_where(
    column: str, since, until, engine: str | None, engine_col: str | None = "engine_id"
) -> tuple[str, list]:
    clauses, params = ["TRUE"], []
    if since is not None:
        clauses.append(f"{column} >= CAST(? AS TIMESTAMP)")
        params.append(since)
    if until is not None:
        clauses.append(f"{column} < CAST(? AS TIMESTAMP)")
        params.append(until)
    if engine and engine_col:
        clauses.append(f"{engine_col} = ?")
        params.append(engine)
    return " AND ".join(clauses), params


def _resolve(con: duckdb.DuckDBPyConnection, window: Window) -> tuple[Any, Any]:
    """The window as a time range; ``last_steps`` becomes the time of the Nth latest step."""
    since, until = window.since, window.until
    if window.last_steps:
        where, params = window.where()
        row = con.execute(
            f"SELECT min(ts) FROM (SELECT ts FROM steps WHERE {where} "
            f"ORDER BY ts DESC LIMIT {int(window.last_steps)})",
            params,
        ).fetchone()
        since = row[0] if row and row[0] is not None else since
    return since, until


def _bucket(span_s: float) -> tuple[int, str]:
    return next(((s, label) for s, label in BUCKETS if span_s / s <= 300), BUCKETS[-1])


def _num(x: Any) -> float | None:
    return float(x) if x is not None and math.isfinite(float(x)) else None


def collect(
    con: duckdb.DuckDBPyConnection, window: Window = Window(), *, title: str = "shadowd report"
) -> ReportData:
    """Run the report's queries over ``window``."""
    since, until = _resolve(con, window)
    data = ReportData(title=title, since=since, until=until, engine_id=window.engine_id)
    sw, sp = _time_where("ts", since, until, window.engine_id)
    sw += " AND latency_ms > 0"
    o = con.execute(
        f"""SELECT count(*), count(predicted_ms), min(ts), max(ts),
                               count(DISTINCT engine_id), count(DISTINCT model_version),
                               sum(num_requests), max(dropped_frames_total)
                        FROM steps WHERE {sw}""",
        sp,
    ).fetchone()
    data.overview = dict(
        zip(
            (
                "steps",
                "attributed_steps",
                "first",
                "last",
                "engines",
                "model_versions",
                "request_rows",
                "dropped_frames",
            ),
            o,
        )
    )
    first, last = data.overview["first"] or since, data.overview["last"] or until
    span = (last - first).total_seconds() if first and last else 3600.0
    width, data.bucket_label = _bucket(max(span, 60.0))
    _collect_accuracy(con, data, sw, sp)
    _collect_series(con, data, sw, sp, width)
    _collect_tenants(con, data, since, until, window.engine_id, width)
    # Parquet exports (``storage.export.attach_exports``) carry steps and requests only.
    if _has(con, "drift_events"):
        dw, dp = _time_where("ts", since, until, window.engine_id)
        data.drift = con.execute(
            f"""SELECT ts, engine_id, step_seq, detector, step_class, statistic,
                                            threshold, resolved_at FROM drift_events WHERE {dw}
                                     ORDER BY ts""",
            dp,
        ).fetchall()
    if _has(con, "gate_decisions"):
        gw, gp = _time_where("ts", since, until, None)
        data.gate = con.execute(
            f"SELECT ts, verdict, reason, consecutive_passes FROM gate_decisions WHERE {gw} ORDER BY ts", gp
        ).fetchall()
    if _has(con, "model_versions"):
        data.models = con.execute(
            f"""
            SELECT m.version, m.platform_key, m.created_at, m.fit_steps, coalesce(s.n, 0)
            FROM model_versions m LEFT JOIN (SELECT model_version, count(*) AS n FROM steps
                                             WHERE {sw} GROUP BY 1) s ON s.model_version = m.version
            ORDER BY m.created_at""",
            sp,
        ).fetchall()
    return data


def _has(con: duckdb.DuckDBPyConnection, table: str) -> bool:
    try:
        con.execute(f"SELECT * FROM {table} LIMIT 0")
        return True
    except duckdb.CatalogException:
        return False


def _collect_accuracy(con, data: ReportData, sw: str, sp: list) -> None:
    for key, col, _ in MODELS:
        rows = con.execute(
            f"""
            WITH e AS (SELECT kind, latency_ms AS t, {col} AS p, abs({col} - latency_ms) / latency_ms AS err
                       FROM steps WHERE {sw} AND {col} IS NOT NULL)
            SELECT kind, count(*), quantile_cont(err, [0.5, 0.9, 0.99]),
                   1 - sum((p - t) ^ 2) / nullif(count(*) * var_pop(t), 0),
                   quantile_cont(err, {CDF_P})
            FROM e GROUP BY ROLLUP (kind)""",
            sp,
        ).fetchall()
        for kind, n, q, r2, grid in rows:
            if not n:
                continue
            name = kind or "all"
            data.accuracy.setdefault(name, {})[key] = {
                "steps": n,
                "p50": _num(q[0]),
                "p90": _num(q[1]),
                "p99": _num(q[2]),
                "r2": _num(r2),
            }
            data.cdf.setdefault(name, {})[key] = grid
    data.scatter = con.execute(
        f"""
        SELECT kind, latency_ms, predicted_ms, baseline_ms FROM
            (SELECT * FROM steps WHERE {sw} AND predicted_ms IS NOT NULL AND baseline_ms IS NOT NULL)
        USING SAMPLE reservoir({SCATTER_POINTS} ROWS) REPEATABLE (7)""",
        sp,
    ).fetchnumpy()


def _collect_series(con, data: ReportData, sw: str, sp: list, width: int) -> None:
    data.error_series = con.execute(
        f"""
        SELECT time_bucket(INTERVAL '{width} seconds', ts) AS b,
               quantile_cont(abs(predicted_ms - latency_ms) / latency_ms, 0.9) AS llmvisor,
               quantile_cont(abs(baseline_ms - latency_ms) / latency_ms, 0.9) AS token
        FROM steps WHERE {sw} AND predicted_ms IS NOT NULL GROUP BY b ORDER BY b""",
        sp,
    ).fetchnumpy()


def _collect_tenants(con, data: ReportData, since, until, engine, width: int) -> None:
    rw, rp = _time_where("s.ts", since, until, engine, "s.engine_id")
    mw, mp = _time_where("minute", since, until, engine)
    rollups = (
        f"""UNION ALL
        SELECT minute, engine_id, tenant, steps, new_tokens, llmvisor_ms, llmvisor_measured_ms, vtc_ms
        FROM tenant_minutes t WHERE {mw}
          AND NOT EXISTS (SELECT 1 FROM raw WHERE raw.engine_id = t.engine_id AND raw.minute = t.minute)
        """
        if _has(con, "tenant_minutes")
        else ""
    )
    con.execute(
        f"""CREATE OR REPLACE TEMP TABLE _report_tm AS
        WITH raw AS (
            SELECT date_trunc('minute', s.ts) AS minute, r.engine_id, r.tenant,
                   count(DISTINCT (r.run_id, r.step_seq)) AS steps, sum(r.new_tokens) AS new_tokens,
                   sum(r.llmvisor_ms) AS llmvisor_ms, sum(r.llmvisor_measured_ms) AS llmvisor_measured_ms,
                   sum(r.vtc_ms) AS vtc_ms
            FROM step_requests r JOIN steps s ON s.engine_id = r.engine_id AND s.run_id = r.run_id
                                             AND s.step_seq = r.step_seq
            WHERE {rw} GROUP BY ALL)
        SELECT * FROM raw
        {rollups}""",
        rp + (mp if _has(con, "tenant_minutes") else []),
    )
    try:
        rows = con.execute("""SELECT tenant, sum(steps), sum(new_tokens), sum(llmvisor_ms),
                                     sum(llmvisor_measured_ms), sum(vtc_ms)
                              FROM _report_tm GROUP BY tenant
                              ORDER BY sum(coalesce(llmvisor_measured_ms, vtc_ms, 0)) DESC, tenant""").fetchall()
        lv_total = sum(r[4] or 0.0 for r in rows)
        vtc_total = sum(r[5] or 0.0 for r in rows)
        data.tenants = [
            {
                "tenant": t,
                "steps": int(s or 0),
                "new_tokens": int(n or 0),
                "llmvisor_s": _sec(lv),
                "llmvisor_measured_s": _sec(lvm),
                "vtc_s": _sec(v),
                "llmvisor_pct": 100 * lvm / lv_total if lvm is not None and lv_total else None,
                "vtc_pct": 100 * v / vtc_total if v is not None and vtc_total else None,
            }
            for t, s, n, lv, lvm, v in rows
        ]
        top = [r["tenant"] for r in data.tenants[:MAX_TENANTS]]
        data.tenant_series = con.execute(
            f"""
            SELECT time_bucket(INTERVAL '{width} seconds', minute) AS b,
                   CASE WHEN list_contains(CAST(? AS VARCHAR[]), tenant) THEN tenant ELSE 'other' END
                       AS tenant,
                   sum(coalesce(llmvisor_measured_ms, 0)) / 1000.0 AS seconds
            FROM _report_tm GROUP BY ALL ORDER BY b""",
            [top],
        ).fetchnumpy()
    finally:
        con.execute("DROP TABLE IF EXISTS _report_tm")


def _sec(ms: float | None) -> float | None:
    return None if ms is None else ms / 1000.0


# -- tables (shared by both renderers) -------------------------------------------------------------
def _fmt(v: Any) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:,.4g}" if abs(v) < 1e4 else f"{v:,.0f}"
    if isinstance(v, dt.datetime):
        return v.strftime("%Y-%m-%d %H:%M:%S")
    return str(v)


def _pct(v: float | None) -> str:
    return "–" if v is None else f"{100 * v:.1f}%"


def empty_note(data: ReportData) -> str | None:
    """What the reader should know when there is nothing (yet) to plot."""
    if not data.has_steps:
        return (
            "No data yet: no steps with a measured latency in this window. Check that the vLLM "
            "engine runs with the shadowd tap (SHADOWD_TAP set, see docs/operations.md), that "
            "`systemctl status shadowd` shows frames arriving, and that the window covers them."
        )
    if not data.attributed:
        return (
            "Steps are recorded but none is attributed yet: the daemon calibrates after "
            "calibration.warmup_steps steps on a known platform. Accuracy and attribution "
            "plots appear once a model version is in force."
        )
    return None


def tables(data: ReportData) -> list[Table]:
    o = data.overview
    out = [
        Table(
            "Overview",
            ["window", "steps", "attributed", "engines", "model versions", "request rows", "dropped frames"],
            [
                [
                    f"{_fmt(o.get('first'))} – {_fmt(o.get('last'))}" if o.get("first") else "–",
                    o.get("steps"),
                    o.get("attributed_steps"),
                    o.get("engines"),
                    o.get("model_versions"),
                    o.get("request_rows"),
                    o.get("dropped_frames"),
                ]
            ],
        )
    ]
    if data.accuracy:
        rows = []
        for name in (*CLASSES, "all"):
            acc = data.accuracy.get(name)
            if not acc:
                continue
            lv, tb = acc.get("llmvisor", {}), acc.get("token", {})
            ratio = (tb["p90"] / lv["p90"]) if lv.get("p90") and tb.get("p90") is not None else None
            rows.append(
                [
                    name,
                    lv.get("steps"),
                    _pct(lv.get("p50")),
                    _pct(lv.get("p90")),
                    _pct(lv.get("p99")),
                    _fmt(lv.get("r2")),
                    _pct(tb.get("p50")),
                    _pct(tb.get("p90")),
                    _pct(tb.get("p99")),
                    _fmt(tb.get("r2")),
                    "–" if ratio is None else f"{ratio:.2f}×",
                ]
            )
        out.append(
            Table(
                "Accuracy per step class (relative error |T̂−T|/T)",
                [
                    "class",
                    "steps",
                    "LLMVisor p50",
                    "p90",
                    "p99",
                    "R²",
                    "token p50",
                    "p90",
                    "p99",
                    "R²",
                    "token/LLMVisor p90",
                ],
                rows,
            )
        )
    if data.tenants:
        out.append(
            Table(
                "Per-tenant attributed GPU time",
                [
                    "tenant",
                    "steps",
                    "new tokens",
                    "LLMVisor s (T̂)",
                    "LLMVisor s (measured)",
                    "token split s",
                    "LLMVisor share",
                    "token share",
                    "difference",
                ],
                [
                    [
                        t["tenant"],
                        t["steps"],
                        t["new_tokens"],
                        _fmt(t["llmvisor_s"]),
                        _fmt(t["llmvisor_measured_s"]),
                        _fmt(t["vtc_s"]),
                        "–" if t["llmvisor_pct"] is None else f"{t['llmvisor_pct']:.1f}%",
                        "–" if t["vtc_pct"] is None else f"{t['vtc_pct']:.1f}%",
                        "–"
                        if t["llmvisor_pct"] is None or t["vtc_pct"] is None
                        else f"{t['llmvisor_pct'] - t['vtc_pct']:+.1f} pp",
                    ]
                    for t in data.tenants
                ],
                "Both splits sum to the measured step latency; the difference is what billing "
                "by tokens would move between tenants.",
            )
        )
    if data.gate:
        last = data.gate[-1]
        changes = [g for i, g in enumerate(data.gate) if i == 0 or g[1] != data.gate[i - 1][1]]
        out.append(
            Table(
                f"Gate: {last[1]} now ({last[2] or 'no reason recorded'})",
                ["since", "verdict", "reason", "consecutive passes"],
                [[_fmt(t), v, r or "", c] for t, v, r, c in changes[-20:]],
                f"{len(data.gate)} evaluations, {len(changes)} verdict changes (last 20 shown).",
            )
        )
    if data.drift:
        out.append(
            Table(
                "Drift events",
                ["time", "engine", "step", "detector", "class", "statistic", "threshold", "resolved"],
                [
                    [_fmt(t), e, s, d, c, _fmt(st), _fmt(th), _fmt(r) if r else "open"]
                    for t, e, s, d, c, st, th, r in data.drift[-30:]
                ],
                f"{len(data.drift)} events, {sum(1 for d in data.drift if d[7] is None)} unresolved "
                "(last 30 shown).",
            )
        )
    if data.models:
        out.append(
            Table(
                "Model versions",
                ["version", "platform", "created", "fit steps", "steps here"],
                [[v, p, _fmt(c), f, n] for v, p, c, f, n in data.models],
            )
        )
    return out


# -- text ------------------------------------------------------------------------------------------
def _text_table(t: Table) -> str:
    cells = [[_fmt(c) if not isinstance(c, str) else c for c in row] for row in t.rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(t.headers)]
    right = [i > 0 and all(_NUMERIC.match(r[i]) for r in cells) for i in range(len(t.headers))]
    line = lambda row: "  ".join(
        c.rjust(w) if r else c.ljust(w)  # noqa: E731
        for c, w, r in zip(row, widths, right)
    ).rstrip()
    out = [t.title, "=" * len(t.title), line(t.headers), line(["-" * w for w in widths])]
    out += [line(r) for r in cells]
    if t.note:
        out.append(t.note)
    return "\n".join(out)


def render_text_report(
    con: duckdb.DuckDBPyConnection, *, title: str = "shadowd report", window: Window = Window()
) -> str:
    """The report as plain-text tables for a terminal."""
    data = collect(con, window, title=title)
    parts = [title, ""]
    note = empty_note(data)
    if note:
        parts += [note, ""]
    parts += [_text_table(t) + "\n" for t in tables(data)]
    return "\n".join(parts)


# -- plots -----------------------------------------------------------------------------------------
COLOURS = {
    "prefill": "#1f77b4",
    "decode": "#2ca02c",
    "mixed": "#d62728",
    "llmvisor": "#1f77b4",
    "token": "#ff7f0e",
}


def _figure(width: float, height: float):
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def _svg(fig) -> str:
    import matplotlib

    buf = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "shadowd"}):
        fig.savefig(buf, format="svg", metadata={"Date": None})
    text = buf.getvalue()
    return text[text.index("<svg") :]


def plot_scatter(data: ReportData) -> str | None:
    s = data.scatter
    if not len(s.get("latency_ms", ())):
        return None
    fig = _figure(11, 4.6)
    axes = fig.subplots(1, 2, sharex=True, sharey=True)
    lo = float(min(np.min(s["latency_ms"]), np.min(s["predicted_ms"]), np.min(s["baseline_ms"])))
    hi = float(max(np.max(s["latency_ms"]), np.max(s["predicted_ms"]), np.max(s["baseline_ms"])))
    lo, hi = max(lo, 1e-3) * 0.8, hi * 1.25
    for ax, (_key, col, label) in zip(axes, MODELS):
        for name in CLASSES:
            m = s["kind"] == name
            if m.any():
                ax.scatter(
                    s["latency_ms"][m],
                    s[col][m],
                    s=5,
                    alpha=0.45,
                    color=COLOURS[name],
                    label=f"{name} ({int(m.sum())})",
                    rasterized=True,
                )
        ax.plot([lo, hi], [lo, hi], color="black", lw=0.8, ls="--", label="ideal")
        ax.set(
            xscale="log",
            yscale="log",
            xlim=(lo, hi),
            ylim=(lo, hi),
            xlabel="measured step latency (ms)",
            title=f"{label}: predicted vs measured",
        )
        ax.grid(True, which="major", alpha=0.3)
    axes[0].set_ylabel("predicted (ms)")
    axes[0].legend(loc="upper left", fontsize=8)
    return _svg(fig)


def plot_error_cdfs(data: ReportData) -> str | None:
    classes = [c for c in CLASSES if c in data.cdf]
    if not classes:
        return None
    fig = _figure(11, 3.8)
    axes = np.atleast_1d(fig.subplots(1, len(classes), sharey=True))
    for ax, name in zip(axes, classes):
        for key, _, label in MODELS:
            grid = data.cdf[name].get(key)
            if grid:
                x = np.maximum(np.asarray(grid, dtype=float), 1e-5)
                p90 = data.accuracy[name][key]["p90"]
                ax.plot(x, CDF_P, color=COLOURS[key], label=f"{label} (p90 {_pct(p90)})")
        ax.axhline(0.9, color="grey", lw=0.6, ls=":")
        steps = data.accuracy[name]["llmvisor"]["steps"]
        ax.set(xscale="log", title=f"{name} ({steps} steps)", xlabel="relative error |T̂−T|/T")
        ax.grid(True, alpha=0.3)
        ax.legend(loc="lower right", fontsize=8)
    axes[0].set_ylabel("fraction of steps ≤ error")
    return _svg(fig)


def plot_tenant_time(data: ReportData) -> str | None:
    ts = data.tenant_series
    if not len(ts.get("b", ())):
        return None
    buckets = np.unique(ts["b"])
    tenants = [t["tenant"] for t in data.tenants[:MAX_TENANTS]]
    if "other" in set(ts["tenant"].tolist()) and "other" not in tenants:
        tenants.append("other")
    index = {b: i for i, b in enumerate(buckets)}
    series = np.zeros((len(tenants), len(buckets)))
    for b, t, v in zip(ts["b"], ts["tenant"], ts["seconds"]):
        if t in tenants:
            series[tenants.index(t), index[b]] += v
    fig = _figure(11, 3.8)
    ax = fig.subplots()
    ax.stackplot(buckets, series, labels=tenants, alpha=0.85, step="post")
    ax.set(
        ylabel=f"attributed GPU s per {data.bucket_label}",
        title="Per-tenant attributed time (LLMVisor, normalised to measured latency)",
    )
    ax.legend(loc="upper left", fontsize=8, ncols=min(4, len(tenants)))
    ax.grid(True, alpha=0.3)
    return _svg(fig)


def plot_drift(data: ReportData) -> str | None:
    es = data.error_series
    if not data.drift and not len(es.get("b", ())):
        return None
    fig = _figure(11, 4.2)
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=(2, 1))
    if len(es.get("b", ())):
        for key, _, label in MODELS:
            top.plot(es["b"], np.asarray(es[key], dtype=float), color=COLOURS[key], label=f"{label} p90")
    top.set(ylabel="p90 relative error", title=f"Error over time (per {data.bucket_label}) and drift events")
    top.grid(True, alpha=0.3)
    labels = sorted({f"{d[3]}/{d[4] or '-'}" for d in data.drift})
    for t, _, _, det, cls, *_, resolved in data.drift:
        y = labels.index(f"{det}/{cls or '-'}")
        colour = "#d62728" if resolved is None else "#7f7f7f"
        bottom.scatter([t], [y], marker="v", color=colour, s=40)
        top.axvline(t, color=colour, lw=0.6, alpha=0.5)
    bottom.set_yticks(range(len(labels)), labels, fontsize=8)
    bottom.set_ylim(-0.7, max(len(labels), 1) - 0.3)
    bottom.set_title("drift events (red: unresolved, grey: resolved)", fontsize=9)
    if len(es.get("b", ())) or data.drift:
        top.legend(loc="upper left", fontsize=8)
    return _svg(fig)


def plot_gate(data: ReportData) -> str | None:
    if not data.gate:
        return None
    t = [g[0] for g in data.gate]
    level = [VERDICT_LEVEL.get(g[1], 1) for g in data.gate]
    fig = _figure(11, 2.6)
    ax = fig.subplots()
    ax.step(t, level, where="post", color="#333333", lw=1.2)
    colours = ["#d62728", "#ff7f0e", "#2ca02c"]
    ax.scatter(t, level, c=[colours[v] for v in level], s=12, zorder=3)
    ax.set_yticks([0, 1, 2], ["NO_GO", "INCONCLUSIVE", "GO"])
    ax.set_ylim(-0.5, 2.5)
    ax.set_title("Gate history")
    ax.grid(True, alpha=0.3)
    return _svg(fig)


PLOTS = (
    ("scatter", "Predicted vs measured step latency", plot_scatter),
    ("error-cdf", "Error CDFs per step class", plot_error_cdfs),
    ("tenant-time", "Per-tenant attributed time", plot_tenant_time),
    ("drift", "Drift timeline", plot_drift),
    ("gate", "Gate history", plot_gate),
)


# -- HTML ------------------------------------------------------------------------------------------
CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:2em auto;max-width:1150px;color:#222;
background:#fff}
h1{margin-bottom:0}.meta{color:#666;margin-top:.2em}
table{border-collapse:collapse;margin:.5em 0 1.5em;font-size:.9em}
th,td{border-bottom:1px solid #ddd;padding:.25em .6em;text-align:right}th{background:#f4f4f4}
td:first-child,th:first-child,td.t{text-align:left}
.note{color:#555;font-size:.9em}.empty{background:#fff6e0;border-left:4px solid #f0a000;padding:.8em 1em}
figure{margin:1em 0 2em}figure svg{max-width:100%;height:auto}figcaption{font-weight:600;margin-bottom:.3em}
"""


def _td(c: Any) -> str:
    text = c if isinstance(c, str) else _fmt(c)
    cls = "" if _NUMERIC.match(text) else ' class="t"'
    return f"<td{cls}>{html.escape(text)}</td>"


def _html_table(t: Table) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in t.headers)
    body = "".join("<tr>" + "".join(_td(c) for c in row) + "</tr>" for row in t.rows)
    note = f'<p class="note">{html.escape(t.note)}</p>' if t.note else ""
    return f"<h2>{html.escape(t.title)}</h2><table><tr>{head}</tr>{body}</table>{note}"


def render_report(
    con: duckdb.DuckDBPyConnection, *, title: str = "shadowd report", window: Window = Window()
) -> str:
    """One self-contained HTML document: summary tables and inline SVG plots."""
    data = collect(con, window, title=title)
    gen = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    scope = (
        ", ".join(
            f"{k} {v}"
            for k, v in (("since", data.since), ("until", data.until), ("engine", data.engine_id))
            if v
        )
        or "all data"
    )
    parts = [
        f"<h1>{html.escape(title)}</h1>",
        f'<p class="meta">generated {gen} · {html.escape(str(scope))}</p>',
    ]
    note = empty_note(data)
    if note:
        parts.append(
            f'<section class="empty" id="no-data"><h2>No data yet</h2><p>{html.escape(note)}</p></section>'
            if not data.has_steps
            else f'<section class="empty" id="no-attribution"><p>{html.escape(note)}</p></section>'
        )
    tabs = tables(data)
    parts.append(_html_table(tabs[0]))
    for key, caption, plot in PLOTS:
        svg = plot(data)
        if svg is not None:
            parts.append(
                f'<figure class="plot" data-plot="{key}"><figcaption>{html.escape(caption)}'
                f"</figcaption>{svg}</figure>"
            )
    parts += [_html_table(t) for t in tabs[1:]]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{CSS}</style></head><body>"
        + "\n".join(parts)
        + "</body></html>\n"
    )


def write_report(con: duckdb.DuckDBPyConnection, path: str, **kwargs: Any) -> str:
    """Render and write atomically (a half-written report is worse than the old one)."""
    text = render_report(con, **kwargs)
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)
    return path
