"""``vllm.general_plugins`` entry point: tap whichever scheduler vLLM picks.

vLLM loads general plugins in every process it starts, so this does nothing
unless ``SHADOWD_TAP`` is set.  When it is, ``SchedulerConfig.get_scheduler_cls``
is wrapped so the class vLLM would have used (``AsyncScheduler``,
``Scheduler``, or an operator's own) comes back as its tapped subclass.
Operators change an environment variable, not their ``vllm serve`` command line.

vLLM calls general plugins without a ``try``, in every process: nothing here may
raise.  A vLLM without ``get_scheduler_cls`` (or any other surprise) leaves the
engine untapped, with a warning; a failure inside the wrapper returns vLLM's own class.
"""

from __future__ import annotations

import logging
import os

log = logging.getLogger("shadowd.tap")


def register() -> None:
    if not os.environ.get("SHADOWD_TAP"):
        return
    try:
        _wrap_scheduler_cls()
    except Exception as exc:  # never break vLLM start-up
        log.warning("shadowd tap plugin not installed (engine runs untapped): %s", exc)


def _wrap_scheduler_cls() -> None:
    from vllm.config.scheduler import SchedulerConfig

    from shadowd.tap.vllm import tapped

    original = SchedulerConfig.get_scheduler_cls  # AttributeError on a vLLM without it
    if getattr(original, "_shadowd_wrapped", False):
        return

    def get_scheduler_cls(self):  # type: ignore[no-untyped-def]
        cls = original(self)
        try:
            return tapped(cls)
        except Exception as exc:
            log.warning("shadowd tap not applied to %r (engine runs untapped): %s", cls, exc)
            return cls

    get_scheduler_cls._shadowd_wrapped = True  # type: ignore[attr-defined]
    SchedulerConfig.get_scheduler_cls = get_scheduler_cls
