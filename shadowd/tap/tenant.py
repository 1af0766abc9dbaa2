"""Which tenant a request belongs to, decided once per request.

Order: ``SamplingParams.extra_args[<key>]`` (the OpenAI server's
``vllm_xargs``, set by a trusted gateway), else the LoRA adapter name, else a
request-id prefix before a configured separator, else ``"unknown"``.  The
OpenAI ``user`` field is not used: vLLM ignores it.  Labels are truncated so a
hostile client cannot bloat frames or metrics.

>>> from types import SimpleNamespace as NS
>>> r = NS(sampling_params=NS(extra_args={"tenant": "acme"}), lora_request=None, request_id="x")
>>> TenantResolver().resolve(r)
'acme'
>>> TenantResolver(prefix_sep=":").resolve(NS(sampling_params=None, lora_request=None, request_id="beta:42"))
'beta'
>>> TenantResolver().resolve(NS(sampling_params=None, lora_request=None, request_id="42"))
'unknown'
"""

from __future__ import annotations

MAX_TENANT_LEN = 64
UNKNOWN = "unknown"


class TenantResolver:
    def __init__(self, key: str = "tenant", prefix_sep: str | None = None) -> None:
        self.key = key
        self.prefix_sep = prefix_sep or None

    def resolve(self, request: object) -> str:
        params = getattr(request, "sampling_params", None)
        extra = getattr(params, "extra_args", None)
        if isinstance(extra, dict):
            value = extra.get(self.key)
            if isinstance(value, str) and value:
                return value[:MAX_TENANT_LEN]
        lora = getattr(request, "lora_request", None)
        name = getattr(lora, "lora_name", None)
        if isinstance(name, str) and name:
            return name[:MAX_TENANT_LEN]
        rid = getattr(request, "request_id", "")
        if self.prefix_sep and isinstance(rid, str) and self.prefix_sep in rid:
            return rid.split(self.prefix_sep, 1)[0][:MAX_TENANT_LEN] or UNKNOWN
        return UNKNOWN
