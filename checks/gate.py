"""The go/no-go gate: checks every evaluation, a verdict with memory.

Modelled on Argo Rollouts analysis. Each evaluation runs every check
(``checks.rules.evaluate_checks``) and classifies the round as *fail* (any check fails),
*inconclusive* (none fails, some inconclusive) or *pass*. A fail is evidence that attribution
is wrong now (it pages); inconclusive means the gate cannot vouch yet, and each such check
names the way out (``checks.rules``). The verdict then follows:

- a failing round → ``NO_GO`` at once, pass count reset;
- GO only after ``consecutive_passes`` passing rounds in a row (a pass counts only if
  ``min_pass_interval_s`` has passed since the last counted one);
- leaving ``NO_GO`` needs the same run of passes: inconclusive rounds hold ``NO_GO`` (no
  flapping between 1 and 2 exit codes while evidence rebuilds);
- while ``GO``, up to ``inconclusive_grace`` consecutive inconclusive rounds are tolerated,
  but only when the inconclusive checks have their evidence and are not critical (e.g. a
  stability CI that straddles its threshold). Missing evidence, stale data, an unknown
  platform or a rule error drop GO at once: fail closed;
- starting fresh, or after a gap between evaluations longer than ``decision_ttl_s``, the
  verdict is ``INCONCLUSIVE`` until the pass run is complete.

State is a small dict (``state_dict``) so the daemon can restore it from ``gate_decisions``.

>>> from checks.policy import GatePolicy
>>> good = {"accuracy": {c: {"steps": 10**5, "p90": 0.03, "p99": 0.08, "baseline_p90": 0.10}
...                      for c in ("prefill", "decode", "mixed")},
...         "shadow_duration_s": 7200, "tenants_seen": 3, "max_context_seen": 8192,
...         "unresolved_drift_events": 0,
...         "stability": {"llmvisor": {"effect": 0.02, "ci_low": 0.01, "ci_high": 0.03}},
...         "calibrated_platform_key": "k", "running_platform_key": "k",
...         "tap_drop_rate": 0.0, "extrapolated_fraction": 0.0, "new_tenant_share": 0.0}
>>> gate = Gate(GatePolicy(consecutive_passes=2))
>>> [gate.evaluate({**good, "last_step_ts": t}, now=t).verdict for t in (0.0, 60.0, 120.0)]
['INCONCLUSIVE', 'GO', 'GO']
>>> d = gate.evaluate({**good, "last_step_ts": 180.0, "unresolved_drift_events": 1}, now=180.0)
>>> d.verdict, d.exit_code, d.reason.split(": check")[0]
('NO_GO', 1, 'failed: drift (unresolved drift events 1 > 0')
>>> "shadowd calibrate" in d.reason  # a page names the on-call's way out
True
>>> round(d.details["advantage"]["decode"]["ratio"], 2)  # reported, not judged
3.33
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from checks.check_result import CheckResult
from checks.decision import Decision
from checks.evidence import Evidence
from checks.policy import GatePolicy
from checks.rules import advantage_report, evaluate_checks, evidence_waits


@dataclass
class GateState:
    verdict: str | None = None
    since: float | None = None
    consecutive_passes: int = 0
    consecutive_inconclusive: int = 0
    last_counted_pass_at: float | None = None
    last_evaluated_at: float | None = None
    last_failure: str | None = None
    evaluations: int = 0


def _list(checks: list[CheckResult], limit: int = 4) -> str:
    shown = "; ".join(f"{c.name} ({c.reason})" for c in checks[:limit])
    return shown + (f"; and {len(checks) - limit} more" if len(checks) > limit else "")


class Gate:
    """Stateful evaluator: ``evaluate(evidence, now) -> Decision``."""

    def __init__(
        self, policy: GatePolicy | None = None, state: GateState | Mapping[str, Any] | None = None
    ) -> None:
        self.policy = policy or GatePolicy()
        if isinstance(state, Mapping):
            known = {f.name for f in fields(GateState)}
            state = GateState(**{k: v for k, v in state.items() if k in known})
        self.state = state or GateState()

    def state_dict(self) -> dict[str, Any]:
        return asdict(self.state)

    def evaluate(self, evidence: Evidence | Mapping[str, Any], now: float) -> Decision:
        """Run every check and advance the state machine; ``now`` in seconds (same clock as
        ``last_step_ts``). Malformed evidence (unknown keys) raises ``ValueError``: an error
        (exit 3), never a verdict."""
        ev = evidence if isinstance(evidence, Evidence) else Evidence.from_dict(evidence)
        pol, st = self.policy, self.state
        checks = evaluate_checks(ev, pol, now)
        fails = [c for c in checks if c.status == "fail"]
        unsure = [c for c in checks if c.status == "inconclusive"]

        if st.last_evaluated_at is not None and now - st.last_evaluated_at > pol.decision_ttl_s:
            st.consecutive_passes, st.last_counted_pass_at = 0, None  # chain broken by a gap
            if st.verdict == "GO":
                st.verdict = "INCONCLUSIVE"
        prev = st.verdict
        need = pol.consecutive_passes

        if fails:
            verdict = "NO_GO"
            st.consecutive_passes, st.consecutive_inconclusive = 0, 0
            st.last_counted_pass_at = None
            st.last_failure = _list(fails)
            reason = f"failed: {st.last_failure}"
        elif unsure:
            tolerable = all(not c.critical and not c.missing for c in unsure)
            st.consecutive_inconclusive += 1
            if prev == "GO" and tolerable and st.consecutive_inconclusive <= pol.inconclusive_grace:
                verdict = "GO"
                reason = (
                    f"GO held through inconclusive round {st.consecutive_inconclusive}/"
                    f"{pol.inconclusive_grace}: {_list(unsure)}"
                )
            else:
                st.consecutive_passes, st.last_counted_pass_at = 0, None
                if prev == "NO_GO":
                    verdict = "NO_GO"
                    reason = (
                        f"NO_GO held (last failure: {st.last_failure}); now inconclusive: "
                        f"{_list(unsure)}; {need} consecutive passes needed"
                    )
                else:
                    verdict = "INCONCLUSIVE"
                    reason = f"inconclusive: {_list(unsure)}"
        else:
            st.consecutive_inconclusive = 0
            if st.last_counted_pass_at is None or now - st.last_counted_pass_at >= pol.min_pass_interval_s:
                st.consecutive_passes += 1
                st.last_counted_pass_at = now
            if st.consecutive_passes >= need:
                verdict = "GO"
                reason = (
                    f"all {len(checks)} checks pass; {st.consecutive_passes} consecutive "
                    f"passing evaluations (need {need})"
                )
            else:
                verdict = prev if prev in ("NO_GO", "INCONCLUSIVE") else "INCONCLUSIVE"
                reason = (
                    f"all {len(checks)} checks pass; {st.consecutive_passes} of {need} "
                    f"consecutive passes needed for GO"
                )
                if verdict == "NO_GO":
                    reason += f" (NO_GO held; last failure: {st.last_failure})"

        if verdict != prev:
            st.since = now
        st.verdict = verdict
        st.last_evaluated_at = now
        st.evaluations += 1
        return Decision(
            verdict=verdict,
            checks=checks,
            consecutive_passes=st.consecutive_passes,
            required_passes=need,
            reason=reason,
            evaluated_at=now,
            valid_until=now + pol.decision_ttl_s,
            since=st.since,
            policy_scale=pol.scale,
            details={
                "previous_verdict": prev,
                "scale": pol.describe_scale(),
                "advantage": advantage_report(ev, pol),
                # classes the calibration never identified (r17, r28): the gate does not vouch
                "not_vouched": dict(sorted(ev.barely_held.items())),
                # evidence minimums not yet met: seconds to go at the rate so far (None: never)
                "evidence_wait_s": evidence_waits(ev, pol),
            },
        )
