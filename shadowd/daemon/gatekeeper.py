"""The go/no-go gate as the daemon runs it.

``GateKeeper`` owns the one ``checks.Gate`` (and so its pass streak and
hysteresis): each evaluation gathers evidence from the database, decides,
records the decision in ``gate_decisions``, publishes it atomically to the
state file a scheduler reads, and tells listeners (alerts, metrics) when the
verdict changes.  Beside the verdict the state file carries the model version in
force (``model``: id, platform key, LLMVisor coefficients, ``valid_until``;
:func:`published_model`), so the governor in the engine
(:mod:`shadowd.govern.handoff`) charges with the very coefficients the verdict is about.  An evaluation that cannot gather evidence yields no GO: the
error becomes an INCONCLUSIVE decision naming it.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import checks
from shadowd.daemon.gate_evidence import DaemonFacts, gather
from storage.records import save_gate_decision
from storage.writer import Writer

log = logging.getLogger("shadowd.gate")
Listener = Callable[[dict[str, Any] | None, dict[str, Any]], None]


def write_state_file(path: str | Path, decision: dict[str, Any]) -> None:
    """Replace ``path`` atomically (write a temp file in the same directory, then rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".gate-", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(decision, f, default=str)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def published_model(
    version: str,
    platform_key: str,
    llmvisor: dict[str, Any],
    policy: str,
    calibrated_at_s: float,
    max_age_s: float,
) -> dict[str, Any]:
    """The ``model`` section of the state file (the governor's contract, ``docs/admission.md``).

    ``valid_until`` is when the calibration becomes stale (the gate fails closed then too)."""
    return {
        "version": version,
        "platform_key": platform_key,
        "llmvisor": llmvisor,
        "policy": policy,
        "calibrated_at": calibrated_at_s,
        "valid_until": calibrated_at_s + max_age_s,
    }


class GateKeeper:
    def __init__(
        self,
        policy: checks.GatePolicy,
        writer: Writer,
        facts: Callable[[], DaemonFacts],
        *,
        state_file: str | None = None,
        window_s: float = 86400.0,
        min_class_share: float = 0.25,
        model: Callable[[], dict[str, Any] | None] | None = None,
    ) -> None:
        self.policy = policy
        self.min_class_share = min_class_share
        self.gate = checks.Gate(policy)
        self.writer = writer
        self.facts = facts
        self.state_file = state_file
        self.window_s = window_s
        self.last: dict[str, Any] | None = None
        self.listeners: list[Listener] = []
        self.evaluations = 0
        self.model = model  # the model section published beside each decision (None: none)
        self._lock = threading.Lock()

    def evaluate(self, now: float | None = None) -> dict[str, Any]:
        """One evaluation; safe to call from the scheduler thread or the demo loop."""
        now = time.time() if now is None else now
        with self._lock:
            try:
                facts = self.facts()
                self._require_common_classes(facts)
                evidence = gather(
                    self.writer.cursor(),
                    facts,
                    window_s=self.window_s,
                    required_classes=tuple(self.gate.policy.required_step_classes),
                    new_tenant_limit=self.gate.policy.max_new_tenant_share,
                    extrapolation_limit=self.gate.policy.max_extrapolated_fraction,
                    new_tenant_recent_steps=self.gate.policy.new_tenant_recent_steps,
                )
            except Exception as exc:
                log.exception("gate: evidence could not be gathered")
                evidence = checks.Evidence()  # all missing -> inconclusive, never GO
                error = f"evidence unavailable: {type(exc).__name__}: {exc}"
            else:
                error = None
            decision = self.gate.evaluate(evidence, now).to_dict()
            if error:
                decision["reason"] = f"{error}; {decision.get('reason') or ''}".strip("; ")
            decision["evidence"] = evidence.to_dict()
            decision["model"] = self._model()
            prev, self.last = self.last, decision
            self.evaluations += 1
        self._publish(decision)
        for listener in self.listeners:
            try:
                listener(prev, decision)
            except Exception:
                log.exception("gate listener failed")
        return decision

    def _require_common_classes(self, facts: DaemonFacts) -> None:
        """Of the policy's required step classes, require those carrying >= ``min_class_share``
        of the attributed steps (at least one).  A class that is a sliver of the traffic cannot
        gather evidence, and governs little; it is still reported.  ``min_class_share = 0``
        requires every listed class."""
        listed = tuple(self.policy.required_step_classes)
        required = listed
        if self.min_class_share > 0 and facts.model_version is not None:
            rows = (
                self.writer.cursor()
                .execute(
                    "SELECT kind, count(*) / sum(count(*)) OVER () FROM steps "
                    "WHERE list_contains(?, model_version) GROUP BY kind",
                    [facts.versions],
                )
                .fetchall()
            )
            common = {k for k, share in rows if share >= self.min_class_share}
            required = tuple(k for k in listed if k in common) or listed
        if tuple(self.gate.policy.required_step_classes) != required:
            self.gate.policy = dataclasses.replace(self.policy, required_step_classes=required)

    def _model(self) -> dict[str, Any] | None:
        try:
            return self.model() if self.model is not None else None
        except Exception:
            log.exception("gate: the model version could not be published")
            return None

    @property
    def required_classes(self) -> tuple[str, ...]:
        return tuple(self.gate.policy.required_step_classes)

    def set_policy(self, policy: checks.GatePolicy) -> None:
        self.policy = policy
        self.gate.policy = policy

    def _publish(self, decision: dict[str, Any]) -> None:
        self.writer.submit(lambda con: save_gate_decision(con, decision))
        if self.state_file:
            try:
                write_state_file(self.state_file, decision)
            except OSError as exc:
                log.error("gate: cannot write state file %s: %s", self.state_file, exc)
