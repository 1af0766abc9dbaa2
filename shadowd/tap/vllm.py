"""vLLM scheduler classes with the shadowd tap.

Use one of these with ``--scheduler-cls``:

* ``shadowd.tap.vllm.TapAsyncScheduler`` – async scheduling (vLLM's default).
  A custom class must subclass ``AsyncScheduler`` then, or vLLM silently
  serialises the pipeline.
* ``shadowd.tap.vllm.TapScheduler`` – sync scheduling.

or install the ``vllm.general_plugins`` entry point (``shadowd.tap.plugin``),
which taps whichever class vLLM picked when ``SHADOWD_TAP`` is set.

Imports only the standard library, zmq, msgspec and vLLM: this code runs in
the engine-core process, inside the scheduling loop.  Tested against vLLM
0.33; internals are reached through ``getattr`` where they are not public.
"""

from __future__ import annotations

import logging
from typing import Any

from vllm.v1.core.sched.async_scheduler import AsyncScheduler
from vllm.v1.core.sched.scheduler import Scheduler

from shadowd.tap.config import TapConfig
from shadowd.tap.recorder import StepRecorder
from shadowd.tap.sender import FrameSender
from shadowd.tap.tenant import TenantResolver

log = logging.getLogger("shadowd.tap")
TESTED_VLLM = ("0.33",)


class TapMixin:
    """Wraps ``schedule``/``update_from_output`` of a vLLM scheduler with a ``StepRecorder``.

    With ``SHADOWD_TAP`` unset the mixin is inert apart from two attribute
    reads per step.
    """

    shadowd_tap: StepRecorder | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.shadowd_tap = None
        try:
            self.shadowd_tap = _make_recorder(self)
        except Exception as exc:  # a broken tap must not stop the engine
            log.warning("shadowd tap disabled: %s", exc)

    def add_request(self, request: Any) -> None:
        super().add_request(request)
        if self.shadowd_tap is not None:
            self.shadowd_tap.on_admit(request)

    def _preempt_request(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        result = super()._preempt_request(request, *args, **kwargs)
        if self.shadowd_tap is not None:
            self.shadowd_tap.on_preempt(request)
        return result

    def _free_request(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        result = super()._free_request(request, *args, **kwargs)
        if self.shadowd_tap is not None:
            self.shadowd_tap.on_finish(request)
        return result

    def shutdown(self) -> None:
        if self.shadowd_tap is not None:
            try:
                self.shadowd_tap.close()  # stop the encoder thread, send what is left
            except Exception as exc:
                log.warning("shadowd tap: close failed: %s", exc)
        super().shutdown()

    def schedule(self, *args: Any, **kwargs: Any) -> Any:
        tap = self.shadowd_tap
        if tap is None:
            return super().schedule(*args, **kwargs)
        t_start = tap.clock()
        out = super().schedule(*args, **kwargs)
        tap.on_schedule(out, t_start, tap.clock())
        return out

    def update_from_output(self, scheduler_output: Any, model_runner_output: Any) -> Any:
        tap = self.shadowd_tap
        if tap is None:
            return super().update_from_output(scheduler_output, model_runner_output)
        t_done = tap.clock()  # output arrival; the frame is built once the scheduler took it in,
        result = super().update_from_output(scheduler_output, model_runner_output)
        tap.on_output(scheduler_output, t_done)  # so it carries the requests that just finished
        return result


def _make_recorder(scheduler: Any) -> StepRecorder | None:
    dp_rank = getattr(getattr(scheduler, "parallel_config", None), "data_parallel_rank", 0) or 0
    cfg = TapConfig.from_env(dp_rank=dp_rank)
    if not cfg.endpoint:
        return None
    sender = FrameSender(cfg.endpoint, hwm=cfg.hwm)
    recorder = StepRecorder(
        sender.send,
        engine_id=cfg.engine_id,
        requests=scheduler.requests,
        tenants=TenantResolver(cfg.tenant_key, cfg.tenant_prefix_sep, cfg.tenant_lora),
        # A KV connector can roll computed tokens back behind the tap's back (invalid blocks):
        # then every step's token columns are computed in full.
        sparse=getattr(scheduler, "connector", None) is None,
        threaded=cfg.threaded,
    )
    recorder.count_send_drops_with(lambda: sender.dropped)
    log.info("shadowd tap on: engine %s run %s -> %s", cfg.engine_id, recorder.run_id, cfg.endpoint)
    return recorder


class TapScheduler(TapMixin, Scheduler):
    """vLLM's sync ``Scheduler`` with the tap."""


class TapAsyncScheduler(TapMixin, AsyncScheduler):
    """vLLM's ``AsyncScheduler`` with the tap (use this with async scheduling, the default)."""


_tapped: dict[type, type] = {}


def tapped(cls: type) -> type:
    """The tapped subclass of any scheduler class (cached), e.g. for the plugin."""
    if issubclass(cls, TapMixin):
        return cls
    if cls not in _tapped:
        _tapped[cls] = type(f"Tap{cls.__name__}", (TapMixin, cls), {"__module__": __name__})
    return _tapped[cls]
