"""``vllm.general_plugins`` entry point: govern whichever scheduler vLLM picks.

Does nothing unless ``SHADOWD_GOVERN`` is set to a mode other than ``off`` (off by default).  Then
``SchedulerConfig.get_scheduler_cls`` is wrapped so the class vLLM would have used (possibly
already tapped by the tap's plugin) comes back as its governed subclass.
"""

from __future__ import annotations

import logging
import os

log = logging.getLogger("shadowd.govern")


def register() -> None:
    if (os.environ.get("SHADOWD_GOVERN") or "off").strip().lower() in ("off", "0", "false"):
        return
    try:
        from vllm.config.scheduler import SchedulerConfig

        from shadowd.govern.vllm import governed
    except Exception as exc:  # never break vLLM start-up
        log.warning("shadowd governor plugin not installed: %s", exc)
        return
    original = SchedulerConfig.get_scheduler_cls
    if getattr(original, "_shadowd_governed", False):
        return

    def get_scheduler_cls(self):  # type: ignore[no-untyped-def]
        return governed(original(self))

    get_scheduler_cls._shadowd_governed = True  # type: ignore[attr-defined]
    SchedulerConfig.get_scheduler_cls = get_scheduler_cls
