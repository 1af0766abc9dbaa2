"""POST JSON with the standard library and classify failures for retry.

Standard library only, so the daemon's alert path needs no HTTP dependency
(the daemon runs on hosts without vLLM and its transitive packages). The
classification is the whole retry policy for HTTP sinks:

- 2xx: delivered;
- 408, 429 and 5xx, timeouts, refused connections, DNS errors: retryable
  (``Retry-After`` honoured);
- any other status, including redirects (a moved webhook is a config error and
  following a redirect would turn the POST into a body-less GET): not retryable.

>>> retryable_status(429), retryable_status(503), retryable_status(400)
(True, True, False)
>>> parse_retry_after("7")
7.0
>>> redact("https://hooks.slack.com/services/T0/B0/secret")
'https://hooks.slack.com/...'
"""

from __future__ import annotations

import email.utils
import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from typing import Any

from .base import DeliveryError

USER_AGENT = "shadowd-alerts/0.1"


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):  # type: ignore[override]
        return None  # urllib then raises HTTPError with the 3xx status


_OPENER = urllib.request.build_opener(_NoRedirect())


def retryable_status(status: int) -> bool:
    """Whether an HTTP status means *try again later* rather than *fix the request*."""
    return status in (408, 429) or status >= 500


def parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or HTTP date)."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def redact(url: str) -> str:
    """Scheme and host only: webhook URLs carry their secret in the path, query or user info."""
    parts = urllib.parse.urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return f"{parts.scheme}://{host}/..."


def post_json(
    url: str,
    body: Any,
    *,
    timeout: float,
    headers: Mapping[str, str] | None = None,
    secret_url: bool = False,
) -> tuple[int, bytes]:
    """POST ``body`` as JSON; return (status, response body) on 2xx, else raise :class:`DeliveryError`.

    Error messages name the URL's scheme and host only: any webhook may carry a token in its
    path or query (``secret_url`` is kept for callers; every URL is treated so).
    """
    shown = redact(url)
    request = urllib.request.Request(
        url,
        data=json.dumps(body, default=str).encode(),
        method="POST",
        headers={"Content-Type": "application/json", "User-Agent": USER_AGENT, **(headers or {})},
    )
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            return response.status, response.read(1 << 16)
    except urllib.error.HTTPError as err:
        detail = err.read(512).decode(errors="replace").strip()
        raise DeliveryError(
            f"POST {shown}: HTTP {err.code} {detail}".rstrip(),
            retryable=retryable_status(err.code),
            retry_after=parse_retry_after(err.headers.get("Retry-After")),
        ) from None
    except (urllib.error.URLError, OSError) as err:  # refused, reset, DNS, timeout
        reason = getattr(err, "reason", err)
        raise DeliveryError(f"POST {shown}: {reason}", retryable=True) from None
