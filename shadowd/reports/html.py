"""The report as one self-contained HTML file (``shadowd report --html``, the daemon's ``/report.html``).

Plots are inline SVG drawn by matplotlib, styles inline, no scripts, fonts or fetches — so it can be
mailed or attached to a ticket and opened offline.  Labels are drawn as plain text (no mathtext), so a
tenant named ``$x$`` is shown as written.  ``write_html`` replaces the file atomically: a half-written
report is worse than the old one.
"""

from __future__ import annotations

import datetime as dt
import html
import io
import os
import threading
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from shadowd.reports.model import CDF_P, CLASSES, MAX_TENANTS, MODELS, ReportData
from shadowd.reports.tables import _NUMERIC, Table, _fmt, _pct, empty_note, tables

VERDICT_LEVEL = {"NO_GO": 0, "INCONCLUSIVE": 1, "GO": 2}
_MATPLOTLIB = threading.Lock()  # pyplot-free Figures, but rcParams are process-global


# -- plots -----------------------------------------------------------------------------------------
COLOURS = {
    "prefill": "#1f77b4",
    "decode": "#2ca02c",
    "mixed": "#d62728",
    "llmvisor": "#1f77b4",
    "token": "#ff7f0e",
}


def new_figure(width: float, height: float):
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def figure_svg(fig) -> str:
    """The figure as inline SVG (log axes ticked as plain numbers: mathtext is off, see ``draw_plots``)."""
    from matplotlib.ticker import FuncFormatter, LogFormatter

    for ax in fig.axes:
        for axis, scale in ((ax.xaxis, ax.get_xscale()), (ax.yaxis, ax.get_yscale())):
            if scale == "log":
                axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
                axis.set_minor_formatter(LogFormatter(labelOnlyBase=False))
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None})
    text = buf.getvalue()
    return text[text.index("<svg") :]


def plot_scatter(data: ReportData) -> str | None:
    s = data.scatter
    if not len(s.get("latency_ms", ())):
        return None
    fig = new_figure(11, 4.6)
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
    return figure_svg(fig)


def plot_error_cdfs(data: ReportData) -> str | None:
    classes = [c for c in CLASSES if c in data.cdf]
    if not classes:
        return None
    fig = new_figure(11, 3.8)
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
    return figure_svg(fig)


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
    fig = new_figure(11, 3.8)
    ax = fig.subplots()
    ax.stackplot(buckets, series, labels=tenants, alpha=0.85, step="post")
    ax.set(
        ylabel=f"attributed GPU s per {data.bucket_label}",
        title="Per-tenant attributed time (LLMVisor, normalised to measured latency)",
    )
    ax.legend(loc="upper left", fontsize=8, ncols=min(4, len(tenants)))
    ax.grid(True, alpha=0.3)
    return figure_svg(fig)


def plot_service(data: ReportData) -> str | None:
    """TTFT p99 per tenant over time, under the attributed-time plot's buckets."""
    ss = data.service_series
    if not len(ss.get("b", ())):
        return None
    fig = new_figure(11, 3.2)
    ax = fig.subplots()
    tenants = [t["tenant"] for t in data.service[:MAX_TENANTS]]
    for tenant in tenants:
        m = ss["tenant"] == tenant
        if m.any():
            ax.step(ss["b"][m], ss["ttft_p99_ms"][m], where="post", label=tenant)
    ax.set(
        ylabel=f"TTFT p99 (ms) per {data.bucket_label}",
        yscale="log",
        title="Service received: time to first token, p99 per tenant",
    )
    ax.legend(loc="upper left", fontsize=8, ncols=min(4, max(1, len(tenants))))
    ax.grid(True, alpha=0.3)
    return figure_svg(fig)


def plot_drift(data: ReportData) -> str | None:
    es = data.error_series
    if not data.drift and not len(es.get("b", ())):
        return None
    fig = new_figure(11, 4.2)
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
    return figure_svg(fig)


def plot_gate(data: ReportData) -> str | None:
    if not data.gate:
        return None
    t = [g[0] for g in data.gate]
    level = [VERDICT_LEVEL.get(g[1], 1) for g in data.gate]
    fig = new_figure(11, 2.6)
    ax = fig.subplots()
    ax.step(t, level, where="post", color="#333333", lw=1.2)
    colours = ["#d62728", "#ff7f0e", "#2ca02c"]
    ax.scatter(t, level, c=[colours[v] for v in level], s=12, zorder=3)
    ax.set_yticks([0, 1, 2], ["NO_GO", "INCONCLUSIVE", "GO"])
    ax.set_ylim(-0.5, 2.5)
    ax.set_title("Gate history")
    ax.grid(True, alpha=0.3)
    return figure_svg(fig)


PLOTS = (
    ("scatter", "Predicted vs measured step latency", plot_scatter),
    ("error-cdf", "Error CDFs per step class", plot_error_cdfs),
    ("tenant-time", "Per-tenant attributed time", plot_tenant_time),
    ("service", "Per-tenant time to first token", plot_service),
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


def html_table(t: Table) -> str:
    """A report table as HTML: text cells left-aligned (``class="t"``), numbers right-aligned."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in t.headers)
    body = "".join("<tr>" + "".join(_td(c) for c in row) + "</tr>" for row in t.rows)
    note = f'<p class="note">{html.escape(t.note)}</p>' if t.note else ""
    return f"<h2>{html.escape(t.title)}</h2><table><tr>{head}</tr>{body}</table>{note}"


def figure_html(key: str, caption: str, svg: str) -> str:
    return (
        f'<figure class="plot" data-plot="{html.escape(key)}"><figcaption>{html.escape(caption)}'
        f"</figcaption>{svg}</figure>"
    )


def page(title: str, meta: str, parts: list[str]) -> str:
    """One self-contained HTML document: inline styles, no scripts, nothing fetched."""
    gen = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{CSS}</style></head><body>"
        f"<h1>{html.escape(title)}</h1>"
        f'<p class="meta">generated {gen} · {html.escape(meta)}</p>' + "\n".join(parts) + "</body></html>\n"
    )


def render_html(data: ReportData) -> str:
    """One self-contained HTML document: summary tables and inline SVG plots."""
    scope = (
        ", ".join(
            f"{k} {v}"
            for k, v in (("since", data.since), ("until", data.until), ("engine", data.engine_id))
            if v
        )
        or "all data"
    )
    parts = []
    note = empty_note(data)
    if data.accuracy_note:
        parts.append(f'<p class="note">{html.escape(data.accuracy_note)}</p>')
    if note:
        parts.append(
            f'<section class="empty" id="no-data"><h2>No data yet</h2><p>{html.escape(note)}</p></section>'
            if not data.has_steps
            else f'<section class="empty" id="no-attribution"><p>{html.escape(note)}</p></section>'
        )
    tabs = tables(data)
    parts.append(html_table(tabs[0]))
    parts += [figure_html(key, caption, svg) for key, caption, svg in draw_plots(PLOTS, data)]
    parts += [html_table(t) for t in tabs[1:]]
    return page(data.title, str(scope), parts)


def draw_plots(
    plots: Iterable[tuple[str, str, Callable[[Any], str | None]]], data: Any
) -> list[tuple[str, str, str]]:
    """Every plot with data, drawn under one rc context (labels as plain text: tenant names are
    client-controlled, so no mathtext; stable SVG ids); ``(key, caption, svg)`` for those drawn."""
    import matplotlib

    rc = {"svg.fonttype": "none", "svg.hashsalt": "shadowd", "text.parse_math": False}
    with _MATPLOTLIB, matplotlib.rc_context(rc):
        drawn = [(key, caption, plot(data)) for key, caption, plot in plots]
    return [(k, c, svg) for k, c, svg in drawn if svg is not None]


def write_html(data: ReportData, path: str) -> str:
    """Render and replace ``path`` atomically; returns the path."""
    write_atomic(path, render_html(data))
    return path


def write_atomic(path: str, text: str) -> None:
    """Write to a temporary file beside ``path``, fsync, rename over it."""
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
