"""``vllm.general_plugins`` entry point: tap whichever scheduler vLLM picks.

vLLM loads general plugins in every process it starts, so this does nothing
unless ``SHADOWD_TAP`` is set.  When it is, ``SchedulerConfig.get_scheduler_cls``
is wrapped so the class vLLM would have used (``AsyncScheduler``,
``Scheduler``, or an operator's own) comes back as its tapped subclass.
Operators change an environment variable, not their ``vllm serve`` command line.
"""

from __future__ import annotations

import logging
import os

log = logging.getLogger("shadowd.tap")


def register() -> None:
    if not os.environ.get("SHADOWD_TAP"):
        return
    try:
        from vllm.config.scheduler import SchedulerConfig

        from shadowd.tap.vllm import tapped
    except Exception as exc:  # never break vLLM start-up
        log.warning("shadowd tap plugin not installed: %s", exc)
        return
    original = SchedulerConfig.get_scheduler_cls
    if getattr(original, "_shadowd_wrapped", False):
        return

    def get_scheduler_cls(self):  # type: ignore[no-untyped-def]
        return tapped(original(self))

    get_scheduler_cls._shadowd_wrapped = True  # type: ignore[attr-defined]
    SchedulerConfig.get_scheduler_cls = get_scheduler_cls
