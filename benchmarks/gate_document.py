"""docs/validation.md from the gate matrix's stored rows: where the design in force stands
(``benchmarks.gate_targets``), the protocol, the design notes, the confusion matrix, what kept
healthy held-out rows from GO, and the commands.

Re-render without running anything:
``.venv/bin/python -m benchmarks.gate_matrix --from-json docs/validation.json``.
"""

from __future__ import annotations

import math
import re
from typing import Any

from benchmarks.gate_designs import DESIGN, DESIGN_REVISION, revision
from benchmarks.gate_protocol import latest_held_out
from benchmarks.gate_targets import DETECTION_BUDGET_STEPS
from benchmarks.gate_targets import section as targets_section
from checks.policy import GatePolicy
from shadowd.demo.step_slices import SLICE_STEPS


def _long_run_line(rows: list[dict[str, Any]]) -> list[str]:
    """Each long healthy run's false-alarm bound, measured on the held-out engine itself."""
    out = []
    for r in rows:
        if not r["scenario"]["name"].endswith(("-long", "-xl")) or r.get("false_alarm_upper95") is None:
            continue
        bound = r["false_alarm_upper95"]
        out.append(
            f"{r['scenario']['name']} (design {r.get('design', 'r1')}) runs the held-out engine itself that "
            f"long: {r['false_alarms']} false alarm(s) in {r['judged_steps']:,} judged steps, 95 % bound "
            f"{bound:.1e} per step ({'within' if bound <= 1e-5 else 'above'} the 1e-5 target). Judged "
            f"from calibration, at step {r['calibrated_by_step']:,}: the demo's warm-up window grows "
            "with the run's length."
        )
    return out


def window_cut_lines(rows: list[dict[str, Any]]) -> list[str]:
    """Rows whose calibration or re-fit windows were cut short (the memory guard under a cgroup
    limit, or ``[calibration] max_window_rows``): narrower than the design asks, so a reader
    knows which rows ran the design as declared.  Only rows run since the count was recorded.

    >>> row = lambda name, cuts: {"scenario": {"name": name}, "window_cuts": cuts}
    >>> window_cut_lines([row("H1", {"rows": 0, "memory": 0}), {"scenario": {"name": "H0"}}])[1]
    'Calibration, re-fit and extension windows cut short (the memory guard under a cgroup memory limit, or `[calibration] max_window_rows`), over the 1 rows run since the count was recorded: none.'
    >>> window_cut_lines([row("H2", {"rows": 0, "memory": 2})])[1].endswith(": H2 (memory 2).")
    True
    """
    recorded = [r for r in rows if r.get("window_cuts") is not None]
    if not recorded:
        return []
    cut = [
        f"{r['scenario']['name']} ({', '.join(f'{k} {v}' for k, v in r['window_cuts'].items() if v)})"
        for r in recorded
        if any(r["window_cuts"].values())
    ]
    return [
        "",
        "Calibration, re-fit and extension windows cut short (the memory guard under a cgroup memory "
        f"limit, or `[calibration] max_window_rows`), over the {len(recorded)} rows run since the "
        f"count was recorded: {', '.join(cut) or 'none'}.",
    ]


def outcome(row: dict[str, Any]) -> tuple[bool, str]:
    """Whether the row meets its target, and why not."""
    s = row["scenario"]
    if row["final"] == "ERROR":
        return False, "run failed"
    if s["expect"] == "healthy":
        if row["final"] != "GO":
            return False, f"ended {row['final']}"
        if row["pages_after_first_go"]:
            return False, f"{row['pages_after_first_go']} NO_GO evaluations after the first GO"
        return True, ""
    if row.get("fault_unfired"):  # the whole run was a healthy engine: a page there is the news
        pages = row.get("pages_after_first_go") or 0
        lead = f"{pages} NO_GO evaluations after the first GO on the healthy engine; " if pages else ""
        return (
            False,
            f"{lead}not a test: the gate never said GO from step {s['fault_step']} on (the armed fault never fired)",
        )
    at = fault_at(row)
    # A fault row that ends GO says so first, test or not: the gate vouched for a faulty engine.
    lead = "ended GO with the fault in force; " if row["final"] == "GO" else ""
    if row.get("first_go_step") is None or row["first_go_step"] >= at:
        return False, f"{lead}not a test: the gate was never GO before the fault"
    spanning = [e for e in row.get("episodes") or [] if e["first_step"] < at <= e["last_step"]]
    if spanning:  # GO once, but not when the fault began: what follows is not the fault's doing
        e = spanning[0]
        return (
            False,
            f"{lead}not a test: the gate was {e['verdict']} from step {e['first_step']}, before the fault",
        )
    inj = (s["injects"] or [""])[0]
    if inj.startswith("tenant:"):
        name = inj.split(":", 1)[1].split("=", 1)[0]
        ran = row.get("tenants_run")
        sampled = ((row.get("truth") or {}).get("llmvisor") or {}).get("per_tenant")
        if ran is not None and name not in ran:
            return False, f"not a test: tenant {name!r} never ran a step"
        if ran is None and sampled is not None and name not in sampled:
            return False, f"not a test: tenant {name!r} is in none of the steps sampled after calibration"
    if row["final"] == "GO":
        left = s["steps"] - at if s.get("steps") else DETECTION_BUDGET_STEPS  # (no length: no note)
        if left <= 0:
            return (
                False,
                f"ended GO: the fault fired at the run's last evaluation (step {at:,}), so no step ran with it",
            )
        if left < DETECTION_BUDGET_STEPS:  # still a miss: the reader learns why it could be one
            return False, (
                f"ended GO {left:,} steps after the fault began, when the run ended (a drift event "
                f"may take {DETECTION_BUDGET_STEPS})"
            )
        return False, "ended GO"
    if inj.startswith("step-slowdown:0.08") and (
        row["drift_delay_steps"] is None or row["drift_delay_steps"] > DETECTION_BUDGET_STEPS
    ):
        return False, f"8 % slowdown: no drift event within {DETECTION_BUDGET_STEPS} steps"
    return True, ""


def fault_at(row: dict[str, Any]) -> int | None:
    """The engine step the row's fault began (rows stored before held-out 32: the scenario's)."""
    return row["fault_at"] if "fault_at" in row else row["scenario"].get("fault_step")


def _fault_cell(row: dict[str, Any]) -> str:
    at, armed = fault_at(row), row["scenario"].get("fault_step")
    if row.get("fault_unfired"):
        return f"never (armed from {armed})"
    if any("@go:" in i for i in row["scenario"].get("injects") or ()):
        return f"{_f(at)} (armed from {armed})"
    return _f(at)


def share_error(split: dict[str, Any] | None) -> float | None:
    """Largest |attributed - Shapley| of a tenant, as a fraction of the Shapley total."""
    per = (split or {}).get("per_tenant") or {}
    total = sum(v["shapley_ms"] for v in per.values())
    if not per or total <= 0:
        return None
    return max(abs(v["attributed_ms"] - v["shapley_ms"]) for v in per.values()) / total


def _f(x: Any, nd: int = 0) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if isinstance(x, float):
        return f"{x:.{nd}f}" if nd else f"{x:.0f}"
    return str(x)


def _pct(x: Any) -> str:
    return "–" if x is None else f"{100 * x:.1f}%"


def _episodes(row: dict[str, Any]) -> str:
    eps = row.get("episodes") or []
    if not eps:
        return "none"
    return "<br>".join(
        f"{e['verdict']} {e['first_step']}–{e['last_step']} ({e['evaluations']}): "
        + (", ".join(e["causes"]) or "held")
        for e in eps
    )


CAUSES = {
    "stability": "share stability (compare the share error vs Shapley in the next table)",
    "coverage.extrapolation": "traffic beyond the calibrated envelope (INCONCLUSIVE; way out: recalibrate)",
    "drift": "drift (residual detectors fired, or were blind: most recent steps of a required class "
    "outside the batch compositions calibration saw)",
    "accuracy": "accuracy beyond its limits on a step class",
    "coverage.new_tenants": "tenants calibration never saw carrying a real share of the recent time",
    "evidence": "evidence minimums not yet met (too few steps of a class to judge, shadow time, tenants)",
    "platform": "platform mismatch",
}


def _kind(check: str, verdict: str) -> str:
    """The kind of a check behind an episode; an accuracy check that is inconclusive lacks steps."""
    if check.startswith("accuracy") and verdict == "INCONCLUSIVE":
        return "evidence"
    return next((k for k in CAUSES if check == k or check.startswith(k + ".")), check.split(".")[0])


_CHECK_IN_REASON = re.compile(r"(?:(?<=: )|(?<=; ))([a-z_]+(?:\.[a-z0-9_]+)*) \(")
BLOCKERS = (
    "share stability",
    "beyond the envelope",
    "new tenants",
    "drift: detectors too dull",
    "drift: detectors blind",
    "drift: events",
    "evidence minimums",
    "accuracy",
    "platform",
)


def blockers(reason: str) -> set[str]:
    """What a final reason names as keeping the gate from GO, in ``BLOCKERS``' words (a reason
    names at most four checks, then says how many more).

    >>> sorted(blockers("inconclusive: stability (effect CI ...); drift (no unresolved drift "
    ...                 "events, but the detectors would not raise a real slowdown in time (...))"))
    ['drift: detectors too dull', 'share stability']
    """
    found = list(_CHECK_IN_REASON.finditer(reason))
    out = set()
    for m, nxt in zip(found, found[1:] + [None]):
        name, detail = m.group(1), reason[m.end() : nxt.start() if nxt else len(reason)]
        if name == "stability":
            out.add("share stability")
        elif name == "coverage.extrapolation":
            out.add("beyond the envelope")
        elif name == "coverage.new_tenants":
            out.add("new tenants")
        elif name == "drift":
            out.add(
                "drift: detectors too dull"
                if "would not raise" in detail
                else "drift: detectors blind"
                if "blind" in detail
                else "drift: events"
            )
        elif name.startswith("evidence."):
            out.add("evidence minimums")
        elif name.startswith("accuracy."):
            out.add("accuracy")
        elif name == "platform":
            out.add("platform")
    return out


def blocker_table(rows: list[dict[str, Any]]) -> list[str]:
    """Per design, the healthy held-out rows that did not end GO, counted by what their last
    evaluation named as keeping the gate from GO: where the work on GO reach lies."""
    lines = [
        "| design | healthy held-out rows | ended GO | not GO | " + " | ".join(BLOCKERS) + " |",
        "|---|---:|---:|---:|" + "---:|" * len(BLOCKERS),
    ]
    for design in sorted({r.get("design", "r1") for r in rows}, key=lambda d: int(d[1:])):
        mine = [
            r
            for r in rows
            if r.get("design", "r1") == design
            and r["scenario"]["expect"] == "healthy"
            and r["scenario"]["set"].startswith("held_out")
        ]
        if not mine:
            continue
        # A row that failed to run (ERROR) has no last evaluation: not GO, nothing named.
        stuck = [blockers(r.get("final_reason", "")) for r in mine if r["final"] != "GO"]
        counts = [sum(1 for b in stuck if name in b) for name in BLOCKERS]
        lines.append(
            f"| {design} | {len(mine)} | {len(mine) - len(stuck)} | {len(stuck)} | "
            + " | ".join(str(c) for c in counts)
            + " |"
        )
    return lines


def findings(rows: list[dict[str, Any]]) -> list[str]:
    """Per missed row, the kinds of checks behind its non-GO episodes (computed, not written)."""
    out = []
    for r in rows:
        ok, why = outcome(r)
        if ok:
            continue
        kinds = sorted(
            {
                _kind(c, e["verdict"])
                for e in r.get("episodes") or []
                if fault_at(r) is None or e["first_step"] < fault_at(r)
                for c in e["causes"]
            }
        )
        what = "; ".join(CAUSES.get(k, k) for k in kinds) or "no non-GO episode"
        when = " before the fault" if r["scenario"].get("fault_step") else ""
        out.append(
            f"- {r['scenario']['name']} ({r.get('design', 'r1')}): {why}. Non-GO{when}: {what}.{_newcomer_note(r)}"
        )
    if not out:
        out.append("- none: every scenario met its target.")
    return out


def _newcomer_note(row: dict[str, Any]) -> str:
    """For a new-tenant fault that ran: how much of the truth sample's time the newcomer carried,
    against the gate's new-tenant limit, or that it is in none of the sampled steps (it ran, but
    too little to be sampled)."""
    inj = (row["scenario"]["injects"] or [""])[0]
    sampled = ((row.get("truth") or {}).get("llmvisor") or {}).get("per_tenant")
    if not inj.startswith("tenant:") or sampled is None:
        return ""
    name = inj.split(":", 1)[1].split("=", 1)[0]
    ran = row.get("tenants_run")
    if ran is not None and name not in ran:  # the outcome already says it never ran
        return ""
    if name in sampled:  # how much of the time it carried, against the new-tenant limit
        total = sum(float(t.get("shapley_ms") or 0.0) for t in sampled.values())
        share = float(sampled[name].get("shapley_ms") or 0.0) / total if total > 0 else 0.0
        return (
            f" Tenant {name!r} carried {share:.1%} of the Shapley time of the steps sampled after "
            f"calibration (the gate's new-tenant limit is {GatePolicy().max_new_tenant_share:.0%} of "
            "recent attributed time)."
        )
    return (
        f" Tenant {name!r} ran, but is in none of the steps sampled for the Shapley truth: it barely arrived."
    )


def _parallelism(command: str) -> str:
    """How many scenarios the last command ran at once (``--jobs``, default 2).

    >>> _parallelism("python -m benchmarks.gate_matrix --only X --jobs 1"), _parallelism("x")
    ('scenarios one at a time', 'scenarios two at a time')
    """
    words = command.split()
    jobs = words[words.index("--jobs") + 1] if "--jobs" in words[:-1] else "2"
    return f"scenarios {dict(zip('1234', ('one', 'two', 'three', 'four'))).get(jobs, jobs)} at a time"


def _host(m: dict[str, Any]) -> str:
    return f"{m.get('nproc')} CPUs ({m.get('cpu_model')}), vLLM {m.get('versions', {}).get('vllm')}"


def markdown(res: dict[str, Any]) -> str:
    rows = res["rows"]
    lines = [
        "# Validation: the gate on held-out traffic",
        "",
        "Generated by `benchmarks/gate_matrix.py` from `docs/validation.json` (re-render: `--from-json",
        "docs/validation.json`); do not edit by hand. Last command:",
        "",
        f"    {res['command']}",
        "",
        f"Last run {res['finished_at']} on {_host(res['machine'])}, {res['total_wall_seconds']:.0f} s "
        f"wall ({_parallelism(res['command'])}); rows of earlier runs are kept by `--merge` (the full matrix:",
        "`.venv/bin/python -m benchmarks.gate_matrix`), and each row's own demo command is listed at",
        "the end.",
        "",
        *targets_section(rows),
        "## Protocol (declared before the held-out runs)",
        "",
    ]
    for name, p in res["protocol"].items():
        lines.append(f"**{name.replace('_', ' ')}** — {p['note']}")
        lines.append("")
        for key in ("platforms", "models", "tenants", "regimes"):
            lines.append(f"- {key}: {', '.join(p[key])}")
        lines.append(f"- seeds: {p['seeds']}")
        if p.get("long_run"):
            lines.append(f"- long run: {p['long_run']}")
        lines.append("")
    lines += [
        "Long rows' tenants: when each tenant of a long row sends requests, read from the workload its",
        "demo offers before any run, is in `docs/tenant_spans.md` (`benchmarks/tenant_spans.py`). A trace",
        "tenant that ends or pauses for hours leaves the row's gate fewer tenants than declared, and with",
        "one left it cannot say GO (`evidence.tenants`). From held-out 49 on, a set's long row is declared",
        "only after that command shows each of its tenants sending through the simulated time its run",
        "covers, read with `--engine ROW` (the row's engine alone: no tap, daemon or gate), which also",
        "shows whether its backlog drains. A run whose backlog does not drain stops with the reason",
        "(`shadowd demo --max-waiting-tokens`; what a backlog costs: `docs/benchmarks.md`).",
        "",
        "Each scenario is one `shadowd demo` run: the real vLLM scheduler (CPU) forms the batches on",
        "simulated time, the reference engine (kernel tables) times them with jitter, the tap sends",
        "every step to a real daemon, which calibrates after a settle and warm-up window (widened",
        "until each common step class has held-out steps, up to 60 % of the run), attributes,",
        "watches for drift and runs the gate every 200 engine steps. The gate's evidence minimums",
        "are scaled to the run's length (the policy note of each run says by how much). Healthy",
        'scenarios inject nothing; fault scenarios inject after the gate could reach GO. "Steady"',
        "means no load profile: each ServeGen client's own rate changes (its trace, time-compressed to",
        "the stated mean rate) remain, and can take the engine from light to saturated by themselves",
        "(the regime table shows the range each run went through).",
        "",
        "The daemon takes the tap's frames in slices cut at fixed steps (`shadowd/demo/step_slices.py`:",
        f"every {SLICE_STEPS} steps and at each gate evaluation), so a row is the same run when repeated: rows",
        "stored with `ingest: steps` in `docs/validation.json` ran so. Earlier rows ran on the",
        "receiver's timed batches, where the step a model came into force at moved with thread",
        "timing, and so did every later decision counted from it (when a re-fit may start, above",
        "all); rows re-run since are listed as superseded at the end.",
        "",
        f"## The gate as validated here (design {DESIGN_REVISION}; r1 differed from r2 only in the "
        "stability check; r3 and r6 added the points named after them; r4, r25, r30, r33 and r39 were withdrawn; r5 "
        "was never run on a held-out set)",
        "",
        *(f"- {d}" for d in DESIGN),
        "",
        "## Confusion matrix (final verdict)",
        "",
        "| set | expected | GO | NO_GO | INCONCLUSIVE | meets target |",
        "|---|---|---|---|---|---|",
    ]
    newest = latest_held_out(r["scenario"]["set"] for r in rows)
    groups = sorted(
        {(r["scenario"]["set"], r.get("design", "r1")) for r in rows},
        key=lambda g: (g[0] != newest, g[0], g[1]),
    )
    for set_, design in groups:
        for expect in ("healthy", "fault"):
            mine = [
                r
                for r in rows
                if r["scenario"]["set"] == set_
                and r.get("design", "r1") == design
                and r["scenario"]["expect"] == expect
            ]
            if not mine:
                continue
            count = {v: sum(1 for r in mine if r["final"] == v) for v in ("GO", "NO_GO", "INCONCLUSIVE")}
            met = sum(1 for r in mine if outcome(r)[0])
            lines.append(
                f"| {set_.replace('_', ' ')}, design {design} | {expect} "
                f"({'GO' if expect == 'healthy' else 'not GO'}) | "
                f"{count['GO']} | {count['NO_GO']} | {count['INCONCLUSIVE']} | {met} of {len(mine)} |"
            )
    lines += [
        "",
        "Targets: a healthy scenario ends GO and raises no NO_GO (page) after its first GO; a fault",
        "scenario is a test only if the gate was GO when the fault began (since held-out 9: GO at the",
        "last evaluation before it, not only once), and then must end not GO; an 8 % whole-step",
        "slowdown must also raise a residual drift event within 500 engine steps. From held-out 32",
        "the faults are armed (`--inject ...@go:7000`): each fires at the first GO verdict from step",
        "7000 on, so it lands on a gate vouching for the engine; the 'fault at' column gives the step",
        "it fired at, and a row whose gate never said GO from 7000 on is not a test.",
        "",
        "## Per scenario",
        "",
        "| scenario | set (design) | what | final | target | first GO (step) | pages after GO | drift events before fault / judged steps (95 % upper rate) | fault at | drift event after (steps) | not GO after (steps) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        s = r["scenario"]
        ok, why = outcome(r)
        rate = r.get("false_alarm_upper95")
        lines.append(
            f"| {s['name']} | {s['set'].replace('_', ' ')} ({r.get('design', 'r1')}) | {s['what']} | {r['final']} | "
            f"{'met' if ok else 'missed: ' + why} | {_f(r.get('first_go_step'))} | "
            f"{_f(r.get('pages_after_first_go'))} | {_f(r.get('false_alarms'))} / {_f(r.get('judged_steps'))} "
            f"({'–' if rate is None else f'{rate:.1e}'}) | {_fault_cell(r)} | "
            f"{_f(r.get('drift_delay_steps'))} | {_f(r.get('not_go_delay_steps'))} |"
        )
    lines += [
        "",
        "False alarms: residual drift events (Page-Hinkley, ADWIN, coefficient) before the fault, over",
        "the engine steps judged since calibration; a few thousand steps can only bound a rate of 1e-5",
        "from above (the 95 % Poisson bound beside it), not show it. docs/checks.md measures the rate",
        "on long resampled streams.",
        *_long_run_line(rows),
        "",
        "## Episodes (non-GO runs of evaluations: engine steps, evaluations, checks behind them)",
        "",
        "| scenario | episodes | final reason |",
        "|---|---|---|",
    ]
    for r in rows:
        reason = (r.get("final_reason") or "").replace("|", "/")
        lines.append(f"| {r['scenario']['name']} | {_episodes(r)} | {reason[:300]} |")
    refitted = [r for r in rows if revision(r) >= 3]
    if refitted:
        lines += [
            "",
            "## Re-fits (design r3: installed, or refused by the guard)",
            "",
            "| scenario | engine step | parent → new version | steps in window | why |",
            "|---|---|---|---|---|",
        ]
        for r in refitted:
            for x in r.get("refits") or []:
                why = (x.get("why") or "").replace("|", "/")
                lines.append(
                    f"| {r['scenario']['name']} | {_f(x.get('step'))} | {x.get('parent')} → "
                    f"{x.get('version') or 'refused'} | {_f(x.get('steps'))} | {why[:400]} |"
                )
            if not r.get("refits"):
                lines.append(f"| {r['scenario']['name']} | – | none considered | – | – |")
    lines += window_cut_lines(rows)
    lines += [
        "",
        "## Regime, accuracy and advantage as run",
        "",
        "Requests per step: the lowest and highest 500-step block mean (light vs saturated). Accuracy:",
        "LLMVisor's out-of-sample relative step-latency error over the run's attributed steps (all",
        "classes). Advantage: token-baseline p90 / LLMVisor p90 per class, reported, not judged.",
        "Share error: per-tenant totals of attributed time against Monte Carlo Shapley values of the",
        "noiseless engine on sampled steps after calibration (`shadowd.sim.truth.tenant_truth_errors`),",
        "as the largest difference of a tenant's share of the sampled total (points of the total);",
        "all sampled steps, not only multi-request ones.",
        "",
        "| scenario | requests/step (min–max block) | steps attributed | LLMVisor p90 / p99 | tokens p90 / p99 | advantage | share error vs Shapley (points of total), max over tenants: LLMVisor / token split | wall s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        reg = r.get("regime") or {}
        acc = (r.get("accuracy") or {}).get("all") or {}
        lv, tb = acc.get("llmvisor") or {}, acc.get("token_baseline") or {}
        adv = ", ".join(f"{k} {v['ratio']:.2f}" for k, v in sorted((r.get("advantage") or {}).items()))
        truth = share_error((r.get("truth") or {}).get("llmvisor"))
        token = share_error((r.get("truth") or {}).get("token_baseline"))
        lines.append(
            f"| {r['scenario']['name']} | {_f(reg.get('min_block_requests'), 1)}–"
            f"{_f(reg.get('max_block_requests'), 1)} | {_f(acc.get('steps'))} | "
            f"{_pct(lv.get('p90'))} / {_pct(lv.get('p99'))} | {_pct(tb.get('p90'))} / {_pct(tb.get('p99'))} | "
            f"{adv or '–'} | {_pct(truth)} / {_pct(token)} | {_f(r.get('wall_seconds'))} |"
        )
    lines += [
        "",
        "CI: `tests/demo/test_gate_held_out.py` runs two held-out 36 scenarios as declared (H36-steady",
        "and F36-step8, the same runs as their rows) and asserts their targets: the healthy run reaches",
        "GO without a page or a residual drift event; the 8 % slowdown (armed: it fires at the first GO",
        "from step 7000) comes after a GO, ends not GO with a drift event within 500 steps, and no",
        "re-fit takes it in. Held-out 21's H21-steady and F21-step5 ran in CI under r23 to r37,",
        "held-out 18's under r19 to r22, held-out 9's before r19; shortened runs are scenarios nobody",
        "declared (shortened, H6-steady ends NO_GO on decode accuracy, its calibration window being",
        "shorter).",
    ]
    lines += [
        "",
        "## What keeps healthy held-out runs from GO (their last evaluation)",
        "",
        "Per design, the healthy rows of every held-out set it ran (the sets it was built on among",
        "them: development evidence for it, marked so in the DESIGN notes above) that did not end GO,",
        "counted by what their last evaluation named (`blockers`; a row may name several, a reason at",
        "most four). A row that ended NO_GO counts under what paged.",
        "",
    ]
    lines += blocker_table(rows)
    lines += ["", "## What the misses say", ""]
    lines += findings(rows)
    old = res.get("superseded_rows") or []
    if old:
        lines += ["", "## Superseded runs (kept, not counted above)", ""]
        lines += [
            "| scenario | design | fault at | final | target | replaced by |",
            "|---|---|---|---|---|---|",
        ]
        for r in old:
            ok, why = outcome(r)
            lines.append(
                f"| {r['scenario']['name']} | {r.get('design', 'r1')} | {_fault_cell(r)} | "
                f"{r['final']} | {'met' if ok else 'missed: ' + why} | "
                f"{r.get('superseded_by') or 'a re-run with the scenario changed (fault step or run length)'} |"
            )
    lines += ["", "## Commands", ""]
    for r in rows:
        lines.append(f"- {r['scenario']['name']}: `{r['command']}`")
    lines.append("")
    return "\n".join(lines)
