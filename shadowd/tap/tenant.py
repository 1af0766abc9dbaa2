"""Which tenant a request belongs to, decided once per request, from configured sources only.

Any API client can put ``vllm_xargs`` (``SamplingParams.extra_args``) in its request body, so
no source is read unless the operator names it: the ``extra_args`` key (only safe when a
gateway overwrites it), the LoRA adapter name, or a request-id prefix before a separator.
The first configured source that yields a label wins; with none configured, or none yielding
a label, the tenant is ``"unknown"``.  Labels are truncated so a client cannot bloat frames;
the daemon caps and folds the set of labels (``shadowd.daemon.tenants``).  The OpenAI
``user`` field is not used: vLLM ignores it.

>>> from types import SimpleNamespace as NS
>>> r = NS(sampling_params=NS(extra_args={"tenant": "acme"}), lora_request=None, request_id="x")
>>> TenantResolver().resolve(r), TenantResolver(key="tenant").resolve(r)
('unknown', 'acme')
>>> TenantResolver(prefix_sep=":").resolve(NS(sampling_params=None, lora_request=None, request_id="beta:42"))
'beta'
>>> TenantResolver(lora=True).resolve(NS(sampling_params=None, lora_request=NS(lora_name="sql"), request_id="1"))
'sql'
"""

from __future__ import annotations

MAX_TENANT_LEN = 64
UNKNOWN = "unknown"


class TenantResolver:
    def __init__(self, key: str | None = None, prefix_sep: str | None = None, lora: bool = False) -> None:
        self.key = key or None
        self.prefix_sep = prefix_sep or None
        self.lora = lora

    def resolve(self, request: object) -> str:
        if self.key is not None:
            try:  # a vLLM request: plain attribute reads (once per request, in the engine thread)
                extra = request.sampling_params.extra_args  # type: ignore[attr-defined]
            except AttributeError:  # sampling_params None (pooling) or another object
                extra = getattr(getattr(request, "sampling_params", None), "extra_args", None)
            if isinstance(extra, dict):
                value = extra.get(self.key)
                if isinstance(value, str) and value:
                    return value[:MAX_TENANT_LEN]
        if self.lora:
            name = getattr(getattr(request, "lora_request", None), "lora_name", None)
            if isinstance(name, str) and name:
                return name[:MAX_TENANT_LEN]
        rid = getattr(request, "request_id", "")
        if self.prefix_sep and isinstance(rid, str) and self.prefix_sep in rid:
            return rid.split(self.prefix_sep, 1)[0][:MAX_TENANT_LEN] or UNKNOWN
        return UNKNOWN
