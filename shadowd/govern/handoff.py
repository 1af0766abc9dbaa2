"""The gate's state file as the governor reads it: may attributed time be charged now?

The daemon replaces the file atomically after each gate evaluation (``write_state_file``) with the
decision and, beside it, the model version in force (``model``: id, platform key, LLMVisor
coefficients, ``valid_until``).  The engine must never wait on it, so ``poll`` costs one clock read
on most steps: at most once per ``interval_s`` it stats the file and re-reads it only when the
stat changed; a judgment (the same ``Verdict`` object, coefficients included) stands until the
file changes or its ``valid_until`` passes, so the governor rebuilds nothing while nothing
changed.  Anything but a fresh GO for this engine's platform means VTC, with the reason:

``missing``, ``unreadable``, ``no_platform_key`` (the engine's key is not configured),
``wrong_platform``, ``no_model``, ``bad_model``, ``stale`` (the decision or the model is past its
``valid_until``), ``not_go:<verdict>``; ``go`` otherwise.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from shadowd.govern.price import StepPricer

MAX_STATE_BYTES = 1 << 20


@dataclass(frozen=True)
class Verdict:
    """What the governor charges now: ``pricer`` while GO, ``None`` (VTC) otherwise."""

    reason: str
    pricer: StepPricer | None = None
    model_version: str | None = None
    valid_until: float = 0.0

    @property
    def go(self) -> bool:
        return self.pricer is not None


class StateReader:
    """Non-blocking, rate-limited reader of the gate state file."""

    def __init__(
        self,
        path: str,
        platform_key: str | None,
        *,
        interval_s: float = 1.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.path = path
        self.platform_key = platform_key
        self.interval_s = interval_s
        self.clock = clock
        self._next_poll = float("-inf")
        self._stat: tuple | None = None
        self._doc: dict[str, Any] | None = None
        self._doc_reason = "missing"
        self.pricer: StepPricer | None = None  # the latest coefficients for this platform, GO or not
        self.current = Verdict("missing")
        self._judged_until = float("-inf")  # the current judgment holds until then, file unchanged
        self.reads = 0

    def poll(self) -> Verdict:
        now = self.clock()
        if now < self._next_poll:
            return self.current if now <= self.current.valid_until or not self.current.go else self._expire()
        self._next_poll = now + self.interval_s
        if self._restat() or now > self._judged_until:  # else the judgment stands: same object
            self.current = self._judge(now)
        return self.current

    def _restat(self) -> bool:
        """Stat the file and re-read it if the stat changed; whether it did."""
        try:
            st = os.stat(self.path)
            key = (st.st_mtime_ns, st.st_size, st.st_ino)
            if key == self._stat:
                return False
            self._stat = key
            self._load(st.st_size)
        except FileNotFoundError:
            changed = self._doc_reason != "missing"
            self._stat, self._doc, self._doc_reason = None, None, "missing"
            return changed
        except OSError:
            self._stat, self._doc, self._doc_reason = None, None, "unreadable"
        return True

    def _expire(self) -> Verdict:
        self.current = Verdict("stale")
        return self.current

    def _load(self, size: int) -> None:
        self._doc, self._doc_reason = None, "unreadable"
        if size > MAX_STATE_BYTES:
            return
        with open(self.path, "rb") as f:
            body = f.read(MAX_STATE_BYTES + 1)
        self.reads += 1
        try:
            doc = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            return
        if isinstance(doc, dict):
            self._doc, self._doc_reason = doc, ""
            self._adopt_model(doc.get("model"))

    def _adopt_model(self, model: Any) -> None:
        if not isinstance(model, dict) or model.get("platform_key") != self.platform_key:
            return
        try:
            pricer = StepPricer(model["llmvisor"])
        except (KeyError, TypeError, ValueError):
            return
        self.pricer = pricer

    def _judge(self, now: float) -> Verdict:
        self._judged_until = float("inf")  # a judgment that time cannot change
        doc = self._doc
        if doc is None:
            return Verdict(self._doc_reason)
        if not self.platform_key:
            return Verdict("no_platform_key")
        model = doc.get("model")
        if not isinstance(model, dict):
            return Verdict("no_model")
        if model.get("platform_key") != self.platform_key:
            return Verdict("wrong_platform")
        until = min(_number(doc.get("valid_until")), _number(model.get("valid_until")))
        if not now <= until:
            return Verdict("stale")
        self._judged_until = until  # past it, the same file is stale
        verdict = doc.get("verdict")
        if verdict != "GO":
            return Verdict(f"not_go:{verdict if isinstance(verdict, str) else 'invalid'}"[:40])
        try:
            pricer = StepPricer(model["llmvisor"])
        except (KeyError, TypeError, ValueError):
            return Verdict("bad_model")
        return Verdict("go", pricer, str(model.get("version"))[:64], until)


def _number(x: Any) -> float:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else float("-inf")
