"""What every sink is: a named destination that delivers one notification or says why not.

A sink's ``send`` runs on its own outbox thread (see :mod:`alerts.outbox`),
never on the caller's, so it may block on the network. It reports failure by
raising :class:`DeliveryError`, whose ``retryable`` flag is the only policy a
sink decides: *this* receiver rejected the payload (do not retry) versus *this
attempt* failed (retry with backoff). Retries, queues and counters live in the
outbox, so each sink module is only payload shape plus HTTP.

Each sink class declares its config ``options`` as :class:`Option` values, so
config validation (:mod:`alerts.config`) and construction share one table.

>>> Option(int, default=3).problem(True)
'expected int, got bool'
>>> Option(str, required=True, check=lambda v: None if v else "must be non-empty").problem("")
'must be non-empty'
"""

from __future__ import annotations

import abc
import dataclasses
import urllib.parse
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from ..notification import Notification


class DeliveryError(Exception):
    """A failed delivery; ``retryable`` says whether another attempt could succeed.

    ``retry_after`` (seconds) is the receiver's own hint (HTTP ``Retry-After``);
    the outbox waits at least that long before the next attempt.
    """

    def __init__(self, message: str, *, retryable: bool, retry_after: float | None = None):
        super().__init__(message)
        self.retryable = retryable
        self.retry_after = retry_after


@dataclasses.dataclass(frozen=True)
class Option:
    """One config key of a sink: its type, default, and an optional value check.

    ``check`` returns an error message (saying the fix) or ``None``.
    """

    kind: type | tuple[type, ...]
    required: bool = False
    default: Any = None
    help: str = ""
    check: Callable[[Any], str | None] | None = None

    def problem(self, value: Any) -> str | None:
        """Why ``value`` is not acceptable, or ``None`` if it is."""
        kinds = self.kind if isinstance(self.kind, tuple) else (self.kind,)
        if isinstance(value, bool) and bool not in kinds:
            return f"expected {_kind_name(kinds)}, got bool"
        if float in kinds and isinstance(value, int) and not isinstance(value, bool):
            pass  # TOML writes 60 for 60.0; accept ints for float options
        elif not isinstance(value, kinds):
            return f"expected {_kind_name(kinds)}, got {type(value).__name__}"
        return self.check(value) if self.check else None


def _kind_name(kinds: tuple[type, ...]) -> str:
    return " or ".join(k.__name__ for k in kinds)


def positive(value: float) -> str | None:
    """Option check: strictly positive numbers."""
    return None if value > 0 else "must be > 0"


def non_negative(value: float) -> str | None:
    """Option check: zero or more."""
    return None if value >= 0 else "must be >= 0"


def http_url(value: str) -> str | None:
    """Option check: an absolute http(s) URL.

    >>> http_url("127.0.0.1:9093")
    "must start with http:// or https:// and name a host (got '127.0.0.1:9093')"
    """
    parts = urllib.parse.urlsplit(value)
    if parts.scheme in ("http", "https") and parts.netloc:
        return None
    return f"must start with http:// or https:// and name a host (got {_shape(value)})"


def _shape(value: str) -> str:
    """What a rejected URL looked like, without its secret: a mistyped webhook URL still carries
    the token, and config problems go to the journal.

    >>> _shape("hooks.slack.com/services/T0/B0/secret"), _shape("127.0.0.1:9093")
    ("'hooks.slack.com/…'", "'127.0.0.1:9093'")
    """
    head, path = value.split("/", 1)[0], "/" in value
    return repr(head[:40] + ("/…" if path or len(head) > 40 else ""))


def http_urls(value: list) -> str | None:
    """Option check: a non-empty list of http(s) URLs."""
    if not value:
        return "must list at least one URL"
    for item in value:
        if not isinstance(item, str):
            return f"every entry must be a URL string (got {item!r})"
        if msg := http_url(item):
            return msg
    return None


#: ``timeout_s``, shared by the HTTP sinks
TIMEOUT = Option(float, default=10.0, check=positive, help="seconds per HTTP attempt")


class Sink(abc.ABC):
    """A named destination for notifications (Alertmanager, PagerDuty, Slack, ...)."""

    #: the ``type = "..."`` value that selects this class in config
    type: ClassVar[str]
    #: this sink's own config keys (the shared ones live in :mod:`alerts.config`)
    options: ClassVar[Mapping[str, Option]] = {}
    #: seconds between resends of a still-firing alert; 0 never resends
    default_resend_interval_s: ClassVar[float] = 3600.0

    def __init__(self, name: str):
        self.name = name

    @abc.abstractmethod
    def send(self, notification: Notification) -> None:
        """Deliver one notification, or raise :class:`DeliveryError`."""

    @classmethod
    def from_config(cls, name: str, settings: Mapping[str, Any]) -> Sink:
        """Build from validated settings (this class's ``options``, defaults filled in)."""
        return cls(name, **settings)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"
