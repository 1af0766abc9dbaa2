"""Tap settings, read from the engine process's environment once.

``SHADOWD_TAP``          zmq endpoint of the daemon (e.g. ``ipc:///run/shadowd/tap.sock``);
                         unset means the tap is off.
``SHADOWD_ENGINE_ID``    names this engine; default ``<hostname>-dp<data-parallel rank>``.
Tenant sources (``shadowd.tap.tenant``), each off unless set; the first that yields a label wins:

``SHADOWD_TENANT_KEY``   the ``extra_args`` key holding the tenant (``vllm_xargs``: any client can
                         set it, so only with a gateway that overwrites it).
``SHADOWD_TENANT_LORA``  ``1``: the LoRA adapter name.
``SHADOWD_TENANT_PREFIX_SEP``  the request id's prefix before this separator.
``SHADOWD_TAP_HWM``      frames queued for a slow daemon before dropping (default 4096).
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass


@dataclass(frozen=True)
class TapConfig:
    endpoint: str | None
    engine_id: str
    tenant_key: str | None = None
    tenant_prefix_sep: str | None = None
    tenant_lora: bool = False
    hwm: int = 4096

    @classmethod
    def from_env(cls, dp_rank: int = 0, env: dict[str, str] | None = None) -> TapConfig:
        env = os.environ if env is None else env
        try:
            hwm = max(1, int(env.get("SHADOWD_TAP_HWM", "4096")))
        except ValueError:
            hwm = 4096
        return cls(
            endpoint=env.get("SHADOWD_TAP") or None,
            engine_id=env.get("SHADOWD_ENGINE_ID") or f"{socket.gethostname()}-dp{dp_rank}",
            tenant_key=env.get("SHADOWD_TENANT_KEY") or None,
            tenant_prefix_sep=env.get("SHADOWD_TENANT_PREFIX_SEP") or None,
            tenant_lora=env.get("SHADOWD_TENANT_LORA", "") in ("1", "true", "yes"),
            hwm=hwm,
        )
