"""The replay's result as a terminal table: one block per policy, one row per tenant."""

from __future__ import annotations

from typing import Any

COLUMNS = (
    ("tenant", "{:<10}"),
    ("ent", "{:>5}"),
    ("true", "{:>6}"),
    ("model", "{:>6}"),
    ("x/ent", "{:>6}"),
    ("x/ent 95%", "{:>13}"),
    ("backlog", "{:>7}"),
    ("TTFT p50", "{:>9}"),
    ("TTFT p99", "{:>9}"),
    ("TPOT p50", "{:>9}"),
    ("TPOT p99", "{:>9}"),
    ("tok/s", "{:>7}"),
    ("preempt", "{:>7}"),
    ("unserved", "{:>8}"),
)


def _f(x: Any, spec: str, fmt: str) -> str:
    return fmt.format("-" if x is None else spec.format(x))


def _ci(v: list[float] | None, spec: str = "{:.3f}") -> str | None:
    return None if v is None else "[" + spec.format(v[0]) + "," + spec.format(v[1]) + "]"


def render_table(result: dict[str, Any]) -> str:
    head = (
        f"replay {result['scenario']}: {result['model']} on {result['platform']} (tp {result['tp']}), "
        f"{result['minutes']:g} simulated min, seed {result['seed']}, model {result.get('model_version')}"
    )
    lines = [
        head,
        "offered (× entitlement): "
        + ", ".join(
            f"{t} {d['demand']:g}× ({d['rate_rps']:.2f} req/s)" for t, d in result["tenants"].items()
        ),
    ]
    header = " ".join(fmt.format(name) for name, fmt in COLUMNS)
    for policy, run in result["policies"].items():
        truth = run["truth"]
        jain, gap = truth["jain"], truth["max_gap"]
        gap_ci = truth.get("max_gap_ci95")
        lines += [
            "",
            f"{policy}: Jain's index over backlogged {jain if jain is None else round(jain, 4)} "
            f"{_ci(truth.get('jain_ci95'), '{:.4f}') or ''}, "
            f"max |share/entitlement - 1| {'-' if gap is None else f'{100 * gap:.1f}%'} "
            f"{'' if gap_ci is None else f'[{100 * gap_ci[0]:.1f}%,{100 * gap_ci[1]:.1f}%]'} "
            f"(Shapley on all {truth['shapley_steps']} scored steps of {run['steps']})",
            header,
        ]
        for tenant, svc in run["service"].items():
            t = truth["per_tenant"].get(tenant, {})
            cells = (
                tenant[:10],
                _f(t.get("entitlement"), "{:.2f}", "{:>5}"),
                _f(t.get("true_share"), "{:.3f}", "{:>6}"),
                _f(t.get("attributed_share"), "{:.3f}", "{:>6}"),
                _f(t.get("normalised_share"), "{:.3f}", "{:>6}"),
                "{:>13}".format(_ci(t.get("normalised_share_ci95")) or "-"),
                _f(t.get("queued_fraction"), "{:.0%}", "{:>7}"),
                _f(svc["ttft_p50_s"], "{:.2f}s", "{:>9}"),
                _f(svc["ttft_p99_s"], "{:.2f}s", "{:>9}"),
                _f(svc["tpot_p50_ms"], "{:.1f}ms", "{:>9}"),
                _f(svc["tpot_p99_ms"], "{:.1f}ms", "{:>9}"),
                _f(svc["output_tokens_per_s"], "{:.0f}", "{:>7}"),
                _f(svc["preemptions"], "{:d}", "{:>7}"),
                _f(svc["unserved"], "{:d}", "{:>8}"),
            )
            lines.append(" ".join(c if i else f"{c:<10}" for i, c in enumerate(cells)))
    lines += [
        "",
        "true = Shapley share of GPU time, every step of the window (no model); model = the LLMVisor",
        "model's share, for comparison; x/ent = true share among backlogged tenants / their entitlement,",
        "95% = interval of its Monte Carlo error (and in [] above); backlog = fraction of the window's",
        "steps with a request waiting; unserved = no first token by the horizon.",
    ]
    return "\n".join(lines)
