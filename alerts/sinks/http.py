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
import functools
import http.client
import json
import socket
import threading
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


class _Deadline:
    """Connection mixin: shut the socket down once the attempt's total time is spent.

    ``timeout`` bounds each socket operation only, so a receiver that trickles a byte at a time
    could hold the sink's outbox (and every alert queued behind it) indefinitely."""

    total_s: float

    def __init__(self, *args: Any, total_s: float, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[call-arg]
        self.total_s = total_s
        self._timer: threading.Timer | None = None

    def connect(self) -> None:
        timer = threading.Timer(self.total_s, self._expire)
        timer.daemon = True
        self._timer = timer
        timer.start()
        super().connect()  # type: ignore[misc]
        self._socket = self.sock  # urllib drops ``self.sock`` before the body is read

    def _expire(self) -> None:
        sock = getattr(self, "_socket", None)
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        super().close()  # type: ignore[misc]


class _DeadlineHTTP(_Deadline, http.client.HTTPConnection):
    pass


class _DeadlineHTTPS(_Deadline, http.client.HTTPSConnection):
    pass


class _HTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req):  # type: ignore[no-untyped-def]
        return self.do_open(functools.partial(_DeadlineHTTP, total_s=req.timeout), req)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def https_open(self, req):  # type: ignore[no-untyped-def]
        return self.do_open(
            functools.partial(_DeadlineHTTPS, total_s=req.timeout), req, context=self._context
        )


_OPENER = urllib.request.build_opener(_NoRedirect(), _HTTPHandler(), _HTTPSHandler())


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

    ``timeout`` bounds the whole attempt (connect, send, response), not only each socket operation.

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
    except http.client.HTTPException as err:  # cut short, e.g. at the attempt's deadline
        raise DeliveryError(f"POST {shown}: {type(err).__name__}", retryable=True) from None
    except (urllib.error.URLError, OSError) as err:  # refused, reset, DNS, timeout
        reason = getattr(err, "reason", err)
        raise DeliveryError(f"POST {shown}: {reason}", retryable=True) from None
