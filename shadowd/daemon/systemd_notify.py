"""The systemd notify protocol, without a dependency: READY, STATUS, STOPPING and the watchdog.

systemd (``Type=notify``) passes ``$NOTIFY_SOCKET``, a unix datagram socket (a leading ``@``
means the abstract namespace); each datagram is newline-separated ``KEY=VALUE`` lines.  With
``WatchdogSec=`` it also passes ``$WATCHDOG_USEC`` (and ``$WATCHDOG_PID``) and restarts the
service when ``WATCHDOG=1`` stops arriving.  A thread that pings unconditionally only proves the
interpreter is alive, so :class:`Watchdog` pings only while a ``healthy()`` callback — ingest and
the job scheduler making progress — says so.  Outside systemd every call is a cheap no-op.

>>> notify("READY=1", env={})      # no NOTIFY_SOCKET: nothing to tell
False
>>> watchdog_interval_s({"WATCHDOG_USEC": "20000000"})
10.0
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Callable, Mapping

log = logging.getLogger("shadowd.daemon.systemd_notify")


def _address(env: Mapping[str, str]) -> str | None:
    addr = env.get("NOTIFY_SOCKET")
    if not addr or not (addr.startswith("/") or addr.startswith("@")):
        return None  # unset, or a vsock address we do not speak
    return "\0" + addr[1:] if addr.startswith("@") else addr


def notify(message: str, *, env: Mapping[str, str] | None = None) -> bool:
    """Send one datagram to ``$NOTIFY_SOCKET``; True if it was sent.

    Never raises: a lost notification must not take the daemon down (systemd will then
    time out start-up or the watchdog, which is the right failure).
    """
    addr = _address(os.environ if env is None else env)
    if addr is None:
        return False
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            sock.connect(addr)
            sock.sendall(message.encode())
        return True
    except OSError as exc:
        log.warning("sd_notify(%r) failed: %s", message.split("\n", 1)[0], exc)
        return False


def ready(status: str | None = None) -> bool:
    """Tell systemd start-up is complete (after the tap socket is bound and the DB is open)."""
    return notify("READY=1" + (f"\nSTATUS={status}" if status else ""))


def stopping(status: str | None = None) -> bool:
    return notify("STOPPING=1" + (f"\nSTATUS={status}" if status else ""))


def reloading(status: str | None = None) -> bool:
    """Bracket a SIGHUP reload with ``reloading()`` and ``ready()``."""
    return notify("RELOADING=1" + (f"\nSTATUS={status}" if status else ""))


def status(text: str) -> bool:
    """One line for ``systemctl status``; newlines would start new protocol keys."""
    return notify("STATUS=" + " ".join(text.splitlines()))


def watchdog_interval_s(env: Mapping[str, str] | None = None) -> float | None:
    """Seconds between pings: half of ``$WATCHDOG_USEC`` (as sd_watchdog_enabled advises).

    None when no watchdog is configured, or ``$WATCHDOG_PID`` names another process.
    """
    env = os.environ if env is None else env
    usec, pid = env.get("WATCHDOG_USEC"), env.get("WATCHDOG_PID")
    if not usec or not usec.isdigit() or int(usec) == 0:
        return None
    if pid and pid.isdigit() and int(pid) != os.getpid():
        return None
    return int(usec) / 2e6


class Watchdog:
    """Pings ``WATCHDOG=1`` every ``interval_s`` while ``healthy()`` returns True.

    When ``healthy()`` returns False or raises, the ping is skipped (and the reason put in
    ``STATUS=`` if ``describe()`` is given), so a wedged ingest gets the service restarted.
    """

    def __init__(
        self,
        healthy: Callable[[], bool],
        interval_s: float | None = None,
        *,
        describe: Callable[[], str] | None = None,
    ) -> None:
        self.healthy = healthy
        self.describe = describe
        self.interval_s = interval_s if interval_s is not None else watchdog_interval_s()
        self.pings = 0
        self.skipped = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="shadowd-watchdog", daemon=True)

    @property
    def enabled(self) -> bool:
        return bool(self.interval_s)

    def start(self) -> Watchdog:
        """Start the thread when a watchdog is configured (else do nothing)."""
        if self.enabled:
            self._thread.start()
        return self

    def beat(self) -> bool:
        """One check-and-ping; True if ``WATCHDOG=1`` was sent."""
        try:
            ok = bool(self.healthy())
        except Exception:
            log.exception("watchdog health check raised; not pinging")
            ok = False
        if not ok:
            self.skipped += 1
            if self.describe is not None:
                try:
                    status("unhealthy: " + self.describe())
                except Exception:
                    log.exception("watchdog describe() raised")
            return False
        if notify("WATCHDOG=1"):
            self.pings += 1
            return True
        return False

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.beat()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)
