"""vLLM scheduler classes with the governor (and the tap).

Use one of these with ``--scheduler-cls`` and set ``SHADOWD_GOVERN`` (see
:mod:`shadowd.govern.config`):

* ``shadowd.govern.vllm.GovernedAsyncScheduler`` – async scheduling (vLLM's default);
* ``shadowd.govern.vllm.GovernedScheduler`` – sync scheduling;

or install the ``vllm.general_plugins`` entry point ``shadowd.govern.plugin``, which governs
whichever class vLLM picked when ``SHADOWD_GOVERN`` is set.  Both classes include the tap (inert
unless ``SHADOWD_TAP`` is set); the governor wraps outside it, so the tap's step timing does not
include the governor's charge.

With the governor off (``SHADOWD_GOVERN`` unset) the mixin is one attribute read per step and
vLLM's own FCFS queue stays in place: the same batches as the untouched scheduler
(``tests/govern/test_vllm.py``).  Every governor error is caught and counted; the engine never
sees one.  Cost per step: ``benchmarks/govern_cost.py`` (``docs/admission.md``).
"""

from __future__ import annotations

import logging
from typing import Any

from vllm.v1.core.sched.request_queue import SchedulingPolicy

from shadowd.govern.config import GovernConfig
from shadowd.govern.governor import Governor
from shadowd.tap.vllm import TapAsyncScheduler, TapScheduler

log = logging.getLogger("shadowd.govern")


class GovernMixin:
    """Replaces ``self.waiting`` with a fair queue and charges each scheduled step."""

    shadowd_governor: Governor | None = None
    governor_config: GovernConfig | None = None  # set on a subclass to bypass the environment

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.shadowd_governor = None
        try:
            cfg = self.governor_config or GovernConfig.from_env()
            if not cfg.enabled:
                return
            if getattr(self, "policy", None) != SchedulingPolicy.FCFS:
                log.warning("shadowd governor off: vLLM runs the %s policy, not fcfs", self.policy)
                return
            gov = Governor(cfg, self.requests)
            old, self.waiting = self.waiting, gov.queue
            for request in old:
                gov.queue.add_request(request)
            self.shadowd_governor = gov
            log.info("shadowd governor on: mode %s, state file %s", cfg.mode, cfg.state_file)
        except Exception as exc:  # a broken governor must not stop the engine
            log.error("shadowd governor disabled: %s", exc)

    def schedule(self, *args: Any, **kwargs: Any) -> Any:
        gov = self.shadowd_governor
        if gov is not None and gov.config.preempt == "over-served":
            self._order_victims(gov)
        out = super().schedule(*args, **kwargs)
        if gov is not None:
            gov.on_schedule(out)
        return out

    def shutdown(self) -> None:
        gov = self.shadowd_governor
        if gov is not None:
            try:
                gov.close()
            except Exception as exc:  # shutting down regardless
                log.warning("shadowd governor: close failed: %s", exc)
        super().shutdown()

    def _order_victims(self, gov: Governor) -> None:
        """Before vLLM's loop: under KV pressure, the most over-served tenant's requests last.

        A running request needs at most ``1 + (new + lookahead tokens) / block_size`` new blocks
        in a step; one past its prompt schedules one token (plus lookahead), and only running
        requests still prefilling (vLLM 0.33's ``_inflight_prefills``) take chunks, at most
        ``max_num_scheduled_tokens`` together.  So with more free blocks than
        ``len(running) * (1 + ceil(lookahead / bs))``, plus ``ceil(budget / bs)`` while any running
        prompt is unfinished (or vLLM does not say), no running request can fail to get its blocks
        and vLLM preempts nothing.  That keeps the ordering, a sort of the running list, off the
        steps of moderate KV pressure; under deep pressure a preemption is possible in nearly
        every step and it runs there (``benchmarks/govern_cost.py``, workload ``pressure``)."""
        try:
            running, bs = self.running, self.block_size
            look = -(-self.num_lookahead_tokens // bs)
            need = len(running) * (1 + look)
            if getattr(self, "_inflight_prefills", True):  # a chunk may take up to the budget
                need += -(-self.max_num_scheduled_tokens // bs)
            gov.order_victims(running, self.kv_cache_manager.block_pool.get_num_free_blocks(), need)
        except Exception as exc:  # never into the engine: vLLM's own order stays
            gov.errors += 1
            if gov.errors == 1:
                log.warning("shadowd governor: victims not ordered: %r", exc)


class GovernedScheduler(GovernMixin, TapScheduler):
    """vLLM's sync ``Scheduler`` with the governor and the tap."""


class GovernedAsyncScheduler(GovernMixin, TapAsyncScheduler):
    """vLLM's ``AsyncScheduler`` with the governor and the tap."""


_governed: dict[type, type] = {}


def governed(cls: type) -> type:
    """The governed subclass of any scheduler class (cached), e.g. for the plugin."""
    if issubclass(cls, GovernMixin):
        return cls
    if cls not in _governed:
        _governed[cls] = type(f"Governed{cls.__name__}", (GovernMixin, cls), {"__module__": __name__})
    return _governed[cls]
