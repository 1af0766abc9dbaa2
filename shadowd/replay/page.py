"""``shadowd replay --html``: the replay's result as one self-contained HTML page.

Built with the report's page helpers (:mod:`shadowd.reports.html`: inline SVG from matplotlib,
no scripts or fetches, labels drawn as plain text because tenant names are client-controlled,
atomic write).  The page holds, from the result object alone (no re-run):

* **Service received beside cost caused**: per tenant, its attributed share of GPU time and its
  TTFT p99 under each policy, and the governed policy's TTFT p99 against FCFS's — the noisy
  neighbour shows as one tenant's share above its entitlement under FCFS while its batch-mates'
  TTFT p99 is higher under FCFS than under the governed policy.
* **Share ÷ entitlement over simulated time**, one panel per policy, the entitlement at 1: the
  true (Shapley) share for a scenario replay, the model's attributed share for ``--db`` (no
  ground truth there).  How a window's share is formed: :func:`shadowd.replay.outcome.share_series`.
* **TTFT CDFs per tenant**, FCFS, VTC and governed overlaid, each panel titled with the tenant's
  attributed share under each policy.
* The per-tenant tables of the terminal view (and, for ``--db``, the FCFS fidelity check).

Plots show at most :data:`shadowd.reports.model.MAX_TENANTS` tenants (largest FCFS share
first); the tables show every tenant.
"""

from __future__ import annotations

import html
from typing import Any

import numpy as np

from shadowd.reports.html import (
    draw_plots,
    figure_html,
    figure_svg,
    html_table,
    new_figure,
    page,
    write_atomic,
)
from shadowd.reports.model import MAX_TENANTS
from shadowd.reports.tables import Table

LABEL = {"fcfs": "FCFS", "vtc": "VTC", "llmvisor": "governed"}
COLOUR = {"fcfs": "#7f7f7f", "vtc": "#ff7f0e", "llmvisor": "#1f77b4"}
MAX_LABEL = 32  # characters of a tenant name drawn in a plot


def _name(tenant: str) -> str:
    return tenant if len(tenant) <= MAX_LABEL else tenant[: MAX_LABEL - 1] + "…"


def entitlements(result: dict[str, Any]) -> dict[str, float]:
    """Each tenant's weight's share (scenario: as planned; ``--db``: its weight among all)."""
    if "tenants" in result:
        return {t: float(d["entitlement"]) for t, d in result["tenants"].items()}
    w = result.get("weights") or {}
    total = sum(w.values())
    return {t: v / total for t, v in w.items()} if total else {}


def _tenants(result: dict[str, Any]) -> list[str]:
    names: set[str] = set()
    for run in result["policies"].values():
        names |= set(run["service"])
    return sorted(names)


def attributed_share(run: dict[str, Any], tenant: str) -> float | None:
    """The model's share of the tenant's GPU time in this run (over the scored window)."""
    if "truth" in run:
        return run["truth"]["per_tenant"].get(tenant, {}).get("attributed_share")
    return (run.get("attributed_share") or {}).get(tenant)


def _true_share(run: dict[str, Any], tenant: str) -> float | None:
    return run["truth"]["per_tenant"].get(tenant, {}).get("true_share") if "truth" in run else None


def plotted_tenants(result: dict[str, Any]) -> list[str]:
    """At most ``MAX_TENANTS``: the largest share under the first policy first."""
    first = next(iter(result["policies"].values()), None)

    def largest_first(t: str) -> tuple[float, str]:
        return (-((attributed_share(first, t) if first else None) or 0.0), t)

    return sorted(_tenants(result), key=largest_first)[:MAX_TENANTS]


# -- plots -----------------------------------------------------------------------------------------
def plot_shares(result: dict[str, Any]) -> str | None:
    runs = [(p, r) for p, r in result["policies"].items() if r.get("series")]
    if not runs:
        return None
    ent = entitlements(result)
    tenants = [t for t in plotted_tenants(result) if ent.get(t)]
    fig = new_figure(11, 2.4 * len(runs) + 0.6)
    axes = np.atleast_1d(fig.subplots(len(runs), 1, sharex=True, sharey=True))
    warm_s = float(result.get("warmup_fraction") or 0.0) * 60.0 * float(result.get("minutes") or 0.0)
    for ax, (policy, run) in zip(axes, runs):
        s = run["series"]
        mid = np.asarray(s["t_s"], dtype=float) + s["width_s"] / 2
        for t in tenants:
            y = np.array([np.nan if v is None else v / ent[t] for v in s["share"].get(t, [])], dtype=float)
            if len(y):
                ax.plot(mid[: len(y)], y, marker=".", lw=1.2, label=_name(t))
        ax.axhline(1.0, color="black", lw=1.0, ls="--", label="entitlement")
        if warm_s > 0:
            ax.axvspan(0, warm_s, color="#999999", alpha=0.15, lw=0, label="warm-up (not scored)")
        basis = "true (Shapley)" if s.get("basis") == "true" else "attributed (LLMVisor)"
        jain = run.get("truth", {}).get("jain")
        extra = f", Jain's index over backlogged {jain:.3f}" if jain is not None else ""
        ax.set_title(f"{LABEL.get(policy, policy)}: {basis} GPU-time share ÷ entitlement{extra}", fontsize=10)
        ax.set_ylabel("share ÷ entitlement")
        ax.grid(True, alpha=0.3)
    axes[-1].set_xlabel(f"simulated time (s), windows of {runs[0][1]['series']['width_s']:.3g} s")
    axes[0].legend(loc="upper right", fontsize=8, ncols=min(5, len(tenants) + 2))
    return figure_svg(fig)


def _share_title(result: dict[str, Any], tenant: str) -> str:
    cells = []
    for policy, run in result["policies"].items():
        a = attributed_share(run, tenant)
        if a is not None:
            cells.append(f"{LABEL.get(policy, policy)} {100 * a:.1f}%")
    return f"{_name(tenant)}\nattributed share " + (" · ".join(cells) or "–")


def plot_ttft_cdfs(result: dict[str, Any]) -> str | None:
    levels = result.get("ttft_cdf_levels")
    tenants = [
        t
        for t in plotted_tenants(result)
        if any((r["service"].get(t) or {}).get("ttft_cdf_s") for r in result["policies"].values())
    ]
    if not levels or not tenants:
        return None
    cols = min(3, len(tenants))
    rows = -(-len(tenants) // cols)
    fig = new_figure(11, 3.3 * rows)
    axes = np.atleast_1d(fig.subplots(rows, cols, sharey=True)).ravel()
    for ax, tenant in zip(axes, tenants):
        for policy, run in result["policies"].items():
            svc = run["service"].get(tenant) or {}
            q = svc.get("ttft_cdf_s")
            if not q:
                continue
            p99 = svc.get("ttft_p99_s")
            label = LABEL.get(policy, policy) + ("" if p99 is None else f" (p99 {p99:.3g} s)")
            ax.plot(
                np.maximum(np.asarray(q, dtype=float), 1e-4), levels, color=COLOUR.get(policy), label=label
            )
        ax.axhline(0.99, color="grey", lw=0.6, ls=":")
        ax.set(xscale="log", xlabel="TTFT (s)")
        ax.set_title(_share_title(result, tenant), fontsize=8)
        ax.grid(True, alpha=0.3)
        ax.legend(loc="lower right", fontsize=8)
    for ax in axes[len(tenants) :]:
        ax.set_visible(False)
    for ax in axes[::cols]:
        ax.set_ylabel("fraction of requests ≤ TTFT")
    return figure_svg(fig)


PLOTS = (
    ("share-time", "GPU-time share ÷ entitlement over simulated time, per policy", plot_shares),
    ("ttft-cdf", "Time to first token per tenant: FCFS vs VTC vs governed", plot_ttft_cdfs),
)


# -- tables ----------------------------------------------------------------------------------------
def _num(x: Any, spec: str) -> str:
    return "–" if x is None else spec.format(x)


def roles(result: dict[str, Any]) -> dict[str, str]:
    """Who is the noisy neighbour and who its victims, read off the FCFS and governed runs.

    The noisy neighbour: the tenant holding the most GPU time over its entitlement under FCFS
    (attributed share ÷ entitlement, above 1).  Its victims: every other tenant whose TTFT p99 is
    lower under the governed policy than under FCFS.  Empty without both runs or an entitlement
    above which some tenant sits.

    >>> run = lambda share, p99: {"truth": {"per_tenant": {t: {"attributed_share": s} for t, s in share.items()}},
    ...                           "service": {t: {"ttft_p99_s": v} for t, v in p99.items()}}
    >>> roles({"tenants": {"a": {"entitlement": 0.5}, "b": {"entitlement": 0.5}},
    ...        "policies": {"fcfs": run({"a": 0.7, "b": 0.3}, {"a": 1.0, "b": 9.0}),
    ...                     "llmvisor": run({"a": 0.5, "b": 0.5}, {"a": 3.0, "b": 2.0})}})
    {'a': 'noisy neighbour', 'b': 'victim'}
    """
    runs, ent = result["policies"], entitlements(result)
    if "fcfs" not in runs or "llmvisor" not in runs:
        return {}
    over = {}
    for t in _tenants(result):
        share = attributed_share(runs["fcfs"], t)
        if share is not None and ent.get(t):
            over[t] = share / ent[t]
    noisy = max(over, key=lambda t: (over[t], t), default=None)
    if noisy is None or over[noisy] <= 1.0:
        return {}
    out = {noisy: "noisy neighbour"}
    for t in _tenants(result):
        f = (runs["fcfs"]["service"].get(t) or {}).get("ttft_p99_s")
        g = (runs["llmvisor"]["service"].get(t) or {}).get("ttft_p99_s")
        if t != noisy and f and g is not None and g < f:
            out[t] = "victim"
    return out


def service_beside_cost(result: dict[str, Any]) -> Table:
    """The noisy-neighbour view: each tenant's attributed share beside its TTFT p99, policy by policy."""
    policies = list(result["policies"])
    ent = entitlements(result)
    headers = ["tenant", "entitlement"]
    headers += [f"attributed {LABEL.get(p, p)}" for p in policies]
    headers += [f"TTFT p99 {LABEL.get(p, p)} s" for p in policies]
    both = "fcfs" in policies and "llmvisor" in policies
    if both:
        headers += ["p99 governed ÷ FCFS", "role under FCFS"]
    role = roles(result)
    rows = []
    for t in _tenants(result):
        p99 = {p: (r["service"].get(t) or {}).get("ttft_p99_s") for p, r in result["policies"].items()}
        row = [t, _num(ent.get(t), "{:.1%}")]
        row += [_num(attributed_share(result["policies"][p], t), "{:.1%}") for p in policies]
        row += [_num(p99[p], "{:.3f}") for p in policies]
        if both:
            f, g = p99["fcfs"], p99["llmvisor"]
            row += [_num(g / f if f and g is not None else None, "{:.2f}"), role.get(t, "")]
        rows.append(row)
    return Table(
        "Service received beside cost caused",
        headers,
        rows,
        "attributed = the LLMVisor model's share of the scored window's GPU time (what shadowd "
        "reports per tenant); a noisy neighbour holds more than its entitlement under FCFS while "
        "its batch-mates' TTFT p99 is higher under FCFS than governed.  Role: the noisy neighbour "
        "is the tenant furthest over its entitlement under FCFS; victims are the others whose "
        "TTFT p99 is lower governed than under FCFS.",
    )


def _interval(v: list[float] | None, spec: str) -> str:
    return "–" if v is None else f"[{spec.format(v[0])}, {spec.format(v[1])}]"


def _policy_table(result: dict[str, Any], policy: str, run: dict[str, Any]) -> Table:
    truth = run.get("truth")
    ent = entitlements(result)
    headers = ["tenant", "entitled"]
    headers += ["true", "÷ entitled", "÷ entitled 95%", "backlog"] if truth else []
    headers += ["attributed", "TTFT p50 s", "TTFT p99 s", "TPOT p50 ms", "TPOT p99 ms"]
    headers += ["tok/s", "preempt", "unserved", "requests"]
    rows = []
    for t, svc in run["service"].items():
        row = [t, _num(ent.get(t), "{:.1%}")]
        if truth:
            p = truth["per_tenant"].get(t, {})
            row += [
                _num(p.get("true_share"), "{:.1%}"),
                _num(p.get("normalised_share"), "{:.3f}"),
                _interval(p.get("normalised_share_ci95"), "{:.3f}"),
                _num(p.get("queued_fraction"), "{:.0%}"),
            ]
        row += [
            _num(attributed_share(run, t), "{:.1%}"),
            _num(svc["ttft_p50_s"], "{:.3f}"),
            _num(svc["ttft_p99_s"], "{:.3f}"),
            _num(svc["tpot_p50_ms"], "{:.1f}"),
            _num(svc["tpot_p99_ms"], "{:.1f}"),
            _num(svc["output_tokens_per_s"], "{:.0f}"),
            _num(svc["preemptions"], "{:d}"),
            _num(svc["unserved"], "{:d}"),
            _num(svc["requests"], "{:d}"),
        ]
        rows.append(row)
    if truth:
        jain, gap = truth["jain"], truth["max_gap"]
        note = (
            f"Jain's index over backlogged tenants {_num(jain, '{:.4f}')} "
            f"{_interval(truth.get('jain_ci95'), '{:.4f}')}, max |share ÷ entitlement − 1| "
            f"{_num(gap, '{:.1%}')} {_interval(truth.get('max_gap_ci95'), '{:.1%}')} (Shapley values on "
            f"all {truth['shapley_steps']} scored steps of {run['steps']}; 95% intervals of their Monte "
            "Carlo error in brackets). Shares of GPU time: true = Shapley, no model involved; attributed "
            "= the LLMVisor model; ÷ entitled = true share among backlogged tenants over their "
            "entitlement; backlog = fraction of the window's steps with a request waiting; unserved = "
            "no first token by the horizon (its TTFT counted at the horizon)."
        )
    else:
        note = f"{run['steps']} replayed steps; unserved = no first token by the horizon."
    gov = run.get("governor")
    if gov:
        note += f" Governor charging {gov.get('charging')}, errors {gov.get('errors')}."
    return Table(f"{LABEL.get(policy, policy)} ({policy}): per tenant", headers, rows, note)


def _fidelity_table(result: dict[str, Any]) -> Table | None:
    fid = result.get("fidelity")
    if not fid:
        return None
    rows = [
        [
            t,
            _num(p["requests"], "{:d}"),
            _num(p["recorded_ttft_p50_ms"], "{:.0f}"),
            _num(p["replayed_ttft_p50_ms"], "{:.0f}"),
            _num(p["relative_difference"], "{:+.1%}"),
            "yes" if p["within_tolerance"] else "NO",
        ]
        for t, p in fid["per_tenant"].items()
    ]
    return Table(
        "Fidelity: FCFS replayed against the record",
        ["tenant", "requests", "recorded TTFT p50 (ms)", "replayed TTFT p50 (ms)", "difference", "within"],
        rows,
        f"tolerance ±{fid['tolerance']:.0%} (shadowd.replay.recorded.TTFT_TOLERANCE says why).",
    )


def tables(result: dict[str, Any]) -> list[Table]:
    out = [t for t in (_fidelity_table(result),) if t is not None]
    out.append(service_beside_cost(result))
    out += [_policy_table(result, p, r) for p, r in result["policies"].items()]
    return out


# -- page ------------------------------------------------------------------------------------------
def _heading(result: dict[str, Any]) -> tuple[str, str]:
    engine = f"{result['model']} on {result['platform']} (tp {result['tp']})"
    if "db" in result:
        return (
            "shadowd replay of recorded traffic",
            f"{result['db']} · {engine} · oracle {result['oracle']} · model {result.get('model_version')} · "
            f"{result['horizon_s']:.1f} s recorded, {result['requests']} requests",
        )
    offered = ", ".join(f"{t} {d['demand']:g}× entitlement" for t, d in result["tenants"].items())
    return (
        f"shadowd replay: {result['scenario']}",
        f"{engine} · {result['minutes']:g} simulated min · seed {result['seed']} · "
        f"model {result.get('model_version')} · offered {offered}",
    )


def render_replay_html(result: dict[str, Any]) -> str:
    """The page for a ``replay`` or ``replay_recorded`` result."""
    title, meta = _heading(result)
    tabs = tables(result)
    lead = 2 if result.get("fidelity") else 1  # fidelity and the side-by-side view go first
    parts = [html_table(t) for t in tabs[:lead]]
    parts += [figure_html(key, caption, svg) for key, caption, svg in draw_plots(PLOTS, result)]
    parts += [html_table(t) for t in tabs[lead:]]
    if "db" in result:
        parts.append(
            '<p class="note">No Shapley ground truth for recorded traffic: shares are the stored '
            "model's attribution of the replayed steps. What the replay cannot know: docs/admission.md."
            "</p>"
        )
    if len(_tenants(result)) > MAX_TENANTS:
        shown = ", ".join(plotted_tenants(result))
        parts.append(f'<p class="note">{html.escape(f"Plots show {MAX_TENANTS} tenants: {shown}.")}</p>')
    return page(title, meta, parts)


def write_replay_html(result: dict[str, Any], path: str) -> str:
    """Render and replace ``path`` atomically; returns the path."""
    write_atomic(path, render_replay_html(result))
    return path
