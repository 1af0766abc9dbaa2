"""Tap settings, read from the engine process's environment once.

``SHADOWD_TAP``          zmq endpoint of the daemon (e.g. ``ipc:///run/shadowd/tap.sock``);
                         unset means the tap is off.
``SHADOWD_ENGINE_ID``    names this engine; default ``<hostname>-dp<data-parallel rank>``.

Tenant sources (``shadowd.tap.tenant``), each off unless set; the first that yields a label wins:

``SHADOWD_TENANT_KEY``   the ``extra_args`` key holding the tenant (``vllm_xargs``: any client can
                         set it, so only with a gateway that overwrites it).
``SHADOWD_TENANT_LORA``  ``1``: the LoRA adapter name.
``SHADOWD_TENANT_PREFIX_SEP``  the request id's prefix before this separator.
``SHADOWD_TAP_ENCODER``  ``thread`` (default): frames are built on the tap's own encoder thread, off
                         the engine thread's path; ``inline``: at the end of each step's output
                         hook (``shadowd.tap.recorder``).  Anything else: the default, with a warning.
``SHADOWD_TAP_HWM``      frames queued for a slow daemon before dropping (default 4096, bounded to
                         ``HWM_RANGE``; a value that is not a whole number, or out of range, is
                         replaced by the default or the nearest bound, with a warning).

A bad value never stops the engine: the tap falls back and says so in the engine's log.

>>> TapConfig.from_env(env={"SHADOWD_TAP_HWM": "10"}).hwm, TapConfig.from_env(env={"SHADOWD_TAP_HWM": "lots"}).hwm
(16, 4096)
>>> TapConfig.from_env(env={}).threaded, TapConfig.from_env(env={"SHADOWD_TAP_ENCODER": "inline"}).threaded
(True, False)
"""

from __future__ import annotations

import logging
import os
import socket
from dataclasses import dataclass

log = logging.getLogger("shadowd.tap")
DEFAULT_HWM = 4096
HWM_RANGE = (16, 1_000_000)  # below: drops at the first hiccup; above: unbounded engine memory


@dataclass(frozen=True)
class TapConfig:
    endpoint: str | None
    engine_id: str
    tenant_key: str | None = None
    tenant_prefix_sep: str | None = None
    tenant_lora: bool = False
    hwm: int = DEFAULT_HWM
    threaded: bool = True

    @classmethod
    def from_env(cls, dp_rank: int = 0, env: dict[str, str] | None = None) -> TapConfig:
        env = os.environ if env is None else env
        hwm = _hwm(env.get("SHADOWD_TAP_HWM"))
        return cls(
            endpoint=env.get("SHADOWD_TAP") or None,
            engine_id=env.get("SHADOWD_ENGINE_ID") or f"{socket.gethostname()}-dp{dp_rank}",
            tenant_key=env.get("SHADOWD_TENANT_KEY") or None,
            tenant_prefix_sep=env.get("SHADOWD_TENANT_PREFIX_SEP") or None,
            tenant_lora=env.get("SHADOWD_TENANT_LORA", "") in ("1", "true", "yes"),
            hwm=hwm,
            threaded=_threaded(env.get("SHADOWD_TAP_ENCODER")),
        )


def _threaded(raw: str | None) -> bool:
    if raw is None or raw.strip() in ("", "thread"):
        return True
    if raw.strip() == "inline":
        return False
    log.warning("SHADOWD_TAP_ENCODER=%r is neither 'thread' nor 'inline'; using 'thread'", raw[:40])
    return True


def _hwm(raw: str | None) -> int:
    if raw is None or not raw.strip():
        return DEFAULT_HWM
    lo, hi = HWM_RANGE
    try:
        value = int(raw)
    except ValueError:
        log.warning("SHADOWD_TAP_HWM=%r is not a whole number; using %d", raw[:40], DEFAULT_HWM)
        return DEFAULT_HWM
    if not lo <= value <= hi:
        bounded = min(max(value, lo), hi)
        log.warning("SHADOWD_TAP_HWM=%d is outside %d..%d; using %d", value, lo, hi, bounded)
        return bounded
    return value
