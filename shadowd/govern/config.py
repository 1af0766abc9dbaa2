"""Governor settings, read from the engine process's environment once.

``SHADOWD_GOVERN``         ``on`` (charge attributed time while the gate says GO, VTC otherwise),
                           ``vtc`` (always VTC), unset/``off``: the governor is inert and vLLM
                           schedules exactly as without it.
``SHADOWD_GOVERN_STATE``   the daemon's gate state file (default ``/run/shadowd/gate.json``).
``SHADOWD_PLATFORM_KEY``   this engine's platform key, in the daemon's text form
                           (``gpu=H100-SXM/model=…/tp=1/…``); a state file for another key is ignored.
``SHADOWD_GOVERN_STATUS``  where the governor publishes its counters for the daemon (default, in
                           mode ``on``: ``governor.json`` beside the state file; ``off``: nowhere);
                           see :mod:`shadowd.govern.status_file`.
``SHADOWD_GOVERN_PREEMPT`` ``over-served``: under KV pressure vLLM preempts a request of the most
                           over-served tenant (the highest normalised service among those running);
                           unset/``vllm`` (default): vLLM's own choice, the last admitted request.
``SHADOWD_GOVERN_CHARGE``  ``thread`` (default): each step is charged on a thread of the governor's
                           own while the engine waits on the GPU (:mod:`shadowd.govern.charge_thread`);
                           ``inline``: in the engine thread, after ``schedule``.  The same charges
                           and admissions either way.
``SHADOWD_GOVERN_CHARGE_CPU`` ``engine`` (default): the charge thread runs on the CPU the engine
                           thread last ran on, followed once a second (a hand-over to another CPU
                           costs the engine thread more); ``any``: where the kernel puts it.
``SHADOWD_GOVERN_HAND_OVER_EVERY`` with the charge thread, steps that read no counter before the
                           next is scheduled are handed over to it together, at least every this
                           many steps (default 16, chosen by ``benchmarks/govern_cost.py
                           --hand-over``; 1: each step on its own); see :mod:`shadowd.govern.governor`.
                           The same charges and admissions either way.
``SHADOWD_GOVERN_TENANTS`` tenant weights and caps: inline ``acme=2,beta=1:500`` (weight, optional
                           cap in attributed ms per second) or the path of a JSON file
                           ``{"weights": {...}, "caps_ms_per_s": {...}, "default_weight": 1}``.

Inputs come from operators, so every value has a bound and a clear error (``ValueError``).
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

MODES = ("off", "on", "vtc")
PREEMPT = ("vllm", "over-served")
CHARGE = ("inline", "thread")
CHARGE_CPU = ("engine", "any")
HAND_OVER_EVERY = 16  # the default: ``benchmarks/govern_cost.py --hand-over`` (docs/admission.md)
MAX_HAND_OVER_EVERY = 64  # steps a hand-over may carry: the charge thread charges them in one GPU wait
MAX_TENANTS = 1024  # configured tenants, and tenants the ledger tracks (the rest share OTHER)
MAX_FILE_BYTES = 65536
MAX_WEIGHT = 1e6
MAX_CAP_MS_PER_S = 1e6
DEFAULT_STATE_FILE = "/run/shadowd/gate.json"


def _number(text: object, what: str, hi: float) -> float:
    try:
        x = float(text)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"{what}: {text!r} is not a number") from None
    if not math.isfinite(x) or x <= 0 or x > hi:
        raise ValueError(f"{what}: {x} must be > 0 and <= {hi:g}")
    return x


def _whole(text: str | None, what: str, default: int) -> int:
    """A whole number from the environment (unset or blank: ``default``); bounds are the config's."""
    if text is None or not text.strip():
        return default
    try:
        return int(text.strip())
    except ValueError:
        raise ValueError(f"{what}={text!r}: not a whole number") from None


@dataclass(frozen=True)
class TenantPolicy:
    """Weights (entitlement ∝ weight) and optional caps (attributed ms per second)."""

    weights: dict[str, float] = field(default_factory=dict)
    caps_ms_per_s: dict[str, float] = field(default_factory=dict)
    default_weight: float = 1.0

    def weight(self, tenant: str) -> float:
        return self.weights.get(tenant, self.default_weight)

    @classmethod
    def parse(cls, value: str | None) -> TenantPolicy:
        """Inline ``name=weight[:cap],…`` or a JSON file path; empty means equal weights."""
        if not value or not value.strip():
            return cls()
        if "=" in value:
            return cls._inline(value)
        return cls._file(Path(value))

    @classmethod
    def _inline(cls, value: str) -> TenantPolicy:
        weights, caps = {}, {}
        for item in filter(None, (s.strip() for s in value.split(","))):
            name, _, rest = item.partition("=")
            name = _tenant(name)
            w, _, cap = rest.partition(":")
            weights[name] = _number(w, f"weight of {name}", MAX_WEIGHT)
            if cap:
                caps[name] = _number(cap, f"cap of {name}", MAX_CAP_MS_PER_S)
        return cls._checked(weights, caps, 1.0)

    @classmethod
    def _file(cls, path: Path) -> TenantPolicy:
        try:
            size = path.stat().st_size
            if size > MAX_FILE_BYTES:
                raise ValueError(f"{path}: {size} bytes, at most {MAX_FILE_BYTES}")
            body = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise ValueError(f"tenant policy {path}: {exc}") from None
        if not isinstance(body, dict):
            raise ValueError(f"tenant policy {path}: expected a JSON object")
        weights = {_tenant(k): _number(v, f"weight of {k}", MAX_WEIGHT) for k, v in _obj(body, "weights")}
        caps = {
            _tenant(k): _number(v, f"cap of {k}", MAX_CAP_MS_PER_S) for k, v in _obj(body, "caps_ms_per_s")
        }
        default = _number(body.get("default_weight", 1.0), "default_weight", MAX_WEIGHT)
        return cls._checked(weights, caps, default)

    @classmethod
    def _checked(cls, weights: dict, caps: dict, default: float) -> TenantPolicy:
        if len(weights) > MAX_TENANTS or len(caps) > MAX_TENANTS:
            raise ValueError(f"at most {MAX_TENANTS} tenants may be configured")
        return cls(weights, caps, default)


def _obj(body: dict, key: str) -> list[tuple[str, object]]:
    value = body.get(key) or {}
    if not isinstance(value, dict):
        raise ValueError(f"tenant policy: {key} must be an object")
    return list(value.items())


def _tenant(name: object) -> str:
    if not isinstance(name, str) or not name.strip() or len(name.strip()) > 64:
        raise ValueError(f"tenant name {name!r}: 1 to 64 characters")
    return name.strip()


@dataclass(frozen=True)
class GovernConfig:
    mode: str = "off"
    state_file: str = DEFAULT_STATE_FILE
    platform_key: str | None = None
    tenants: TenantPolicy = field(default_factory=TenantPolicy)
    tenant_key: str = "tenant"
    tenant_prefix_sep: str | None = None
    w_p: float = 1.0  # VTC price of a prompt token
    w_q: float = 2.0  # VTC price of a generated token
    poll_interval_s: float = 1.0  # the state file is stat'ed at most this often
    status_file: str | None = None  # None: beside the state file in mode "on"; "off": none
    preempt: str = "vllm"  # "over-served": preemption victims from the most over-served tenant
    charge: str = "inline"  # "thread": steps charged off the engine thread (the environment's default)
    charge_cpu: str = "engine"  # "any": the charge thread where the kernel puts it
    hand_over_every: int = HAND_OVER_EVERY  # the most steps one hand-over to the charge thread carries

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"SHADOWD_GOVERN={self.mode!r}: expected one of {MODES}")
        if self.preempt not in PREEMPT:
            raise ValueError(f"SHADOWD_GOVERN_PREEMPT={self.preempt!r}: expected one of {PREEMPT}")
        if self.charge not in CHARGE:
            raise ValueError(f"SHADOWD_GOVERN_CHARGE={self.charge!r}: expected one of {CHARGE}")
        if self.charge_cpu not in CHARGE_CPU:
            raise ValueError(f"SHADOWD_GOVERN_CHARGE_CPU={self.charge_cpu!r}: expected one of {CHARGE_CPU}")
        every = self.hand_over_every
        if isinstance(every, bool) or not isinstance(every, int) or not 1 <= every <= MAX_HAND_OVER_EVERY:
            raise ValueError(
                f"SHADOWD_GOVERN_HAND_OVER_EVERY={every!r}: expected a whole number of steps, 1 to {MAX_HAND_OVER_EVERY}"
            )

    @property
    def enabled(self) -> bool:
        return self.mode != "off"

    @property
    def status_path(self) -> str | None:
        """Where the governor's status file goes, or None."""
        if self.status_file == "off" or (self.status_file is None and self.mode != "on"):
            return None
        return self.status_file or os.path.join(os.path.dirname(self.state_file), "governor.json")

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> GovernConfig:
        env = os.environ if env is None else env  # type: ignore[assignment]
        mode = (env.get("SHADOWD_GOVERN") or "off").strip().lower()
        mode = {"1": "on", "true": "on", "llmvisor": "on", "0": "off", "false": "off"}.get(mode, mode)
        return cls(
            mode=mode,
            state_file=env.get("SHADOWD_GOVERN_STATE") or DEFAULT_STATE_FILE,
            platform_key=env.get("SHADOWD_PLATFORM_KEY") or None,
            tenants=TenantPolicy.parse(env.get("SHADOWD_GOVERN_TENANTS")),
            tenant_key=env.get("SHADOWD_TENANT_KEY") or "tenant",
            tenant_prefix_sep=env.get("SHADOWD_TENANT_PREFIX_SEP") or None,
            status_file=(env.get("SHADOWD_GOVERN_STATUS") or "").strip() or None,
            preempt=(env.get("SHADOWD_GOVERN_PREEMPT") or "vllm").strip().lower(),
            charge=(env.get("SHADOWD_GOVERN_CHARGE") or "thread").strip().lower(),
            charge_cpu=(env.get("SHADOWD_GOVERN_CHARGE_CPU") or "engine").strip().lower(),
            hand_over_every=_whole(
                env.get("SHADOWD_GOVERN_HAND_OVER_EVERY"), "SHADOWD_GOVERN_HAND_OVER_EVERY", HAND_OVER_EVERY
            ),
        )
