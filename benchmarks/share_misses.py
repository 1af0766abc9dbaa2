"""The held-out studies' share misses, read against the truth's own error and what the fit held:
a section of docs/accuracy.md, counted from the stored study results (``docs/accuracy.json``).

A tenant error over the 3 % target can be three things: the truth's own Monte Carlo error (a
small tenant's Shapley sum rests on few rows), the engine's jitter (the noise-free refit tells),
or the model (its fixed term and per-token prices as fitted, divided by the share policy).  Per
tenant over the target, on the multi-request steps of a run's scored half, this section gives
the error beside the truth's standard error (``shapley_se_ms``, :mod:`shadowd.sim.truth`), the
noise-free refit's error, the other policy's and the token split's, and what the fit made of
the step: its fixed term against the mean step, its per-token prefill price, the token counts
the steps carried.  Studies stored before the standard error was measured show a dash.
"""

from __future__ import annotations

from typing import Any

TARGET = 0.03  # the per-tenant share error target (issue 15), as the study holds it
NOISE_SE = 2.0  # a miss is the truth's noise if it is within this many standard errors of the target


def _pct(x: float | None, nd: int = 1) -> str:
    return "–" if x is None else f"{100 * x:.{nd}f}%"


def beyond_noise(v: dict[str, Any]) -> bool | None:
    """Whether a tenant's error is over the target by more than ``NOISE_SE`` standard errors of
    its Shapley sum (``None``: the error was not measured).

    >>> beyond_noise({"attributed_ms": 110.0, "shapley_ms": 100.0, "shapley_se_ms": 1.0})
    True
    >>> beyond_noise({"attributed_ms": 104.0, "shapley_ms": 100.0, "shapley_se_ms": 1.0})
    False
    """
    se = v.get("shapley_se_ms")
    if se is None or not v["shapley_ms"]:
        return None
    return (abs(v["attributed_ms"] - v["shapley_ms"]) - NOISE_SE * se) / v["shapley_ms"] > TARGET


def misses(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Every tenant over the target in a held-out study's own runs (multi-request steps)."""
    from benchmarks.accuracy_study import held_out_parts

    out = []
    for part in held_out_parts(doc):
        for r in part.get("runs", []):
            shares = r["shares"]["multi_request"]
            per = shares["llmvisor"]["per_tenant"]
            if shares.get("tenants_sampled", len(per)) < 2:  # one tenant sampled: not a test
                continue
            total = sum(v["shapley_ms"] for v in per.values())
            for t, v in sorted(per.items()):
                if v["error"] is None or v["error"] <= TARGET:
                    continue
                out.append(_miss(part["set"], r, t, v, total))
    return out


def _tenant_error(block: dict[str, Any] | None, t: str) -> float | None:
    return (((block or {}).get("per_tenant") or {}).get(t) or {}).get("error")


def _miss(set_: str, r: dict[str, Any], t: str, v: dict[str, Any], total: float) -> dict[str, Any]:
    shares = r["shares"]["multi_request"]
    segs = r["coefficients"]["segments"]
    se = v.get("shapley_se_ms")
    return {
        "set": set_,
        "run": r["case"]["name"],
        "tenant": t,
        "tenant_share": v["shapley_ms"] / total if total else None,
        "error": v["error"],
        "truth_se": se / v["shapley_ms"] if se is not None and v["shapley_ms"] else None,
        "beyond_noise": beyond_noise(v),
        "noise_free": _tenant_error(r["noise_free"]["shares"]["llmvisor"], t),
        "pro_rata": _tenant_error(shares["llmvisor_policies"].get("pro_rata"), t),
        "token_split": _tenant_error(shares["token_baseline"], t),
        "breakpoint": r["coefficients"]["breakpoint_tokens"],
        "beta_ms": [s["beta_ms"] for s in segs],
        "prefill_per_token": [s["prefill"]["p"] for s in segs],
        "mean_step_ms": 1000 * r["regime"]["simulated_s"] / r["case"]["steps"],
        "tokens_per_step": r["regime"]["tokens_per_step"],
    }


def summary(doc: dict[str, Any]) -> str:
    """One sentence for the top of docs/accuracy.md: how many misses lie beyond the truth's noise."""
    found = misses(doc)
    measured = [m for m in found if m["beyond_noise"] is not None]
    if not measured:
        return ""
    beyond = sum(1 for m in measured if m["beyond_noise"])
    n = len(measured)
    return (
        f" Of the {n} tenant{'s' if n != 1 else ''} over the target where the truth's Monte Carlo "
        f"error was measured, {beyond} {'is' if beyond == 1 else 'are'} over it by more than "
        f"{NOISE_SE:g} standard errors of the Shapley sum: the model's error, not the truth's "
        '(section "Held-out share misses").'
    )


def section(doc: dict[str, Any]) -> list[str]:
    """The table of misses, one row per tenant over the target."""
    found = misses(doc)
    if not found:
        return []
    lines = [
        "## Held-out share misses: the truth's error, the jitter, the fit",
        "",
        "Every tenant over the 3 % target on the multi-request steps of a held-out study's own "
        "run (`benchmarks/share_misses.py`, from `docs/accuracy.json`). *truth SE*: the Monte Carlo "
        "standard error of the tenant's Shapley sum, as a share of it (`shapley_se_ms`); *beyond "
        f"noise*: over the target by more than {NOISE_SE:g} of them. *noise-free*: the same fit "
        "and scoring on the noiseless engine's steps (the model's own error). *pro_rata* and "
        "*token split*: the same tenant under the other fixed-term policy and under VTC's token "
        "split. *fixed term*: the fitted segments' β against the run's mean step; *prefill "
        "per token*: each segment's price of a prompt token (ms), which a fit on steps that all "
        "carry the same token count cannot tell from the fixed term; *tokens per step*: p50 / p90 "
        "/ p99 over the scored half.",
        "",
        "| set | run | tenant | its share of the time | error | truth SE | beyond noise | noise-free "
        "| pro_rata | token split | fixed term β₀ / β₁ (ms) vs mean step | prefill per token (ms) "
        "| tokens per step |",
        "|---|---|---|---:|---:|---:|---|---:|---:|---:|---|---|---|",
    ]
    for m in found:
        beyond = {True: "yes", False: "no", None: "–"}[m["beyond_noise"]]
        tps = m["tokens_per_step"]
        lines.append(
            f"| {m['set'].replace('_', '-')} | {m['run']} | {m['tenant']} | {_pct(m['tenant_share'])} "
            f"| {_pct(m['error'])} | {_pct(m['truth_se'], 2)} | {beyond} | {_pct(m['noise_free'])} "
            f"| {_pct(m['pro_rata'])} | {_pct(m['token_split'])} "
            f"| {' / '.join(f'{b:.2f}' for b in m['beta_ms'])} vs {m['mean_step_ms']:.1f} "
            f"| {' / '.join(f'{p:.2g}' for p in m['prefill_per_token'])} "
            f"| {tps['p50']:.0f} / {tps['p90']:.0f} / {tps['p99']:.0f} |"
        )
    return [*lines, "", *pattern(found), ""]


SMALL_TENANT = 0.1  # of the time: a tenant whose relative error rests on little of it


def pattern(found: list[dict[str, Any]]) -> list[str]:
    """What the misses beyond the truth's noise have in common, counted."""
    real = [m for m in found if m["beyond_noise"]]
    if not real:
        return []
    flat = sum(1 for m in real if m["tokens_per_step"]["p50"] == m["tokens_per_step"]["p99"])
    small = sum(1 for m in real if (m["tenant_share"] or 0) < SMALL_TENANT)
    pro = sum(1 for m in real if m["pro_rata"] is not None and m["pro_rata"] <= TARGET)
    tok = sum(1 for m in real if m["token_split"] is not None and m["token_split"] <= TARGET)
    nf = sum(1 for m in real if m["noise_free"] is not None and m["noise_free"] > TARGET)
    return [
        f"Misses beyond the truth's noise, {len(real)}: {nf} miss on the noiseless engine too "
        f"(the model's error, not the jitter); {flat} lie in runs whose scored steps nearly all "
        "carried one token count (tokens per step p50 = p99, the scheduler's budget), where step "
        "totals cannot tell a prompt token's price from the fixed term; "
        f"{small} are of tenants with under {SMALL_TENANT:.0%} of the time. The same tenants "
        f"would have been within the target under `pro_rata` in {pro} and under the token split "
        f"in {tok}."
    ]
