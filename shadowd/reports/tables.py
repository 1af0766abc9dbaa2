"""The report's tables, shared by the text and HTML renderers (so both show the same figures)."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Any

from shadowd.reports.model import CLASSES, ReportData

_NUMERIC = re.compile(r"^([-+]?[\d,.]+(e[-+]?\d+)?(%|×| pp)?|–)$")  # right-aligned cells


@dataclass
class Table:
    title: str
    headers: list[str]
    rows: list[list[Any]]
    note: str = ""


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
    if not data.attributed and not data.accuracy:
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
    if data.service:
        out.append(_service_table(data))
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


def _ms(v: float | None) -> str:
    return "–" if v is None else (f"{v:,.0f} ms" if v >= 100 else f"{v:.3g} ms")


def _service_table(data: ReportData) -> Table:
    """Cost caused beside service received, one row per tenant."""
    share = {t["tenant"]: t for t in data.tenants}
    rows = []
    for s in data.service:
        cost = share.get(s["tenant"], {})
        lv = cost.get("llmvisor_pct")
        rows.append(
            [
                s["tenant"],
                "–" if lv is None else f"{lv:.1f}%",
                "–" if cost.get("vtc_pct") is None else f"{cost['vtc_pct']:.1f}%",
                s["requests"],
                _ms(s.get("queue_p99_ms")),
                _ms(s.get("ttft_p50_ms")),
                _ms(s.get("ttft_p99_ms")),
                _ms(s.get("tpot_p50_ms")),
                _ms(s.get("tpot_p99_ms")),
                _ms(s.get("e2e_p99_ms")),
                s["aborted"],
                s["preemptions"],
            ]
        )
    note = (
        "Ended requests in the window (raw rows)."
        if data.service[0]["source"] == "raw"
        else ("Ended requests, read back from the per-minute histograms retention keeps (within one bucket).")
    )
    return Table(
        "Cost caused and service received, per tenant",
        [
            "tenant",
            "LLMVisor share",
            "token share",
            "requests",
            "queue p99",
            "TTFT p50",
            "TTFT p99",
            "TPOT p50",
            "TPOT p99",
            "E2E p99",
            "aborted",
            "preemptions",
        ],
        rows,
        note + " A noisy neighbour shows as one tenant's share rising while another's TTFT p99 rises.",
    )
