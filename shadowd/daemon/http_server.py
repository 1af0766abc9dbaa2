"""The daemon's loopback HTTP endpoint: /metrics, /gate, /healthz, /report.

DuckDB allows one writing process per file, so while the daemon runs, the
CLI's ``report`` and ``gate`` ask it here instead of opening the file.
Binds to loopback unless configured otherwise; read-only; GET only; no
request can touch the database beyond the fixed reports.

The server shares its process with ingest, so every client-held resource is
bounded: one event-loop thread accepts connections and reads request heads
without blocking (an idle or slow connection costs a file descriptor and at
most ``MAX_HEAD_BYTES``, never a thread); at most ``max_connections`` are
open (the longest-idle is closed for a new one) and each is closed after
``timeout_s``; only complete requests reach the fixed pool of ``workers``
threads.  A request whose Host header is a DNS name other than ``localhost``
(or one configured) is refused: a web page rebinding its own name to
127.0.0.1 cannot read the API through a browser.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import selectors
import socket
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.registry import CollectorRegistry

log = logging.getLogger("shadowd.http")
Route = Callable[[dict[str, str]], tuple[int, str, bytes]]
MAX_HEAD_BYTES = 16 << 10  # request line + headers; larger heads are refused (431)
MAX_CONNECTIONS = 256


def json_body(obj: Any, status: int = 200) -> tuple[int, str, bytes]:
    return status, "application/json", json.dumps(obj, default=str, indent=1).encode()


def host_allowed(host_header: str | None, allowed: frozenset[str]) -> bool:
    """IP literals, ``localhost`` and configured names (any port); no header (HTTP/1.0) too.

    >>> [host_allowed(h, frozenset()) for h in ("127.0.0.1:9477", "[::1]:1", "localhost", "evil.example:9477")]
    [True, True, True, False]
    """
    if host_header is None:
        return True
    host = host_header.strip().lower()
    if host.startswith("["):
        host = host[1 : host.find("]")] if "]" in host else host
    elif host.count(":") == 1:
        host = host.split(":", 1)[0]
    if host in ("localhost", *allowed):
        return True
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return False


class _Connection:
    __slots__ = ("sock", "head", "opened")

    def __init__(self, sock: socket.socket) -> None:
        self.sock, self.head, self.opened = sock, b"", time.monotonic()


class ApiServer:
    """A small HTTP/1.0 server with fixed GET routes, bounded threads, connections and time."""

    def __init__(
        self,
        address: str,
        routes: dict[str, Route],
        registry: CollectorRegistry | None = None,
        *,
        workers: int = 8,
        timeout_s: float = 10.0,
        max_connections: int = MAX_CONNECTIONS,
        allowed_hosts: Iterable[str] = (),
    ) -> None:
        host, _, port = address.rpartition(":")
        host = host.strip("[]") or "127.0.0.1"
        self.routes = dict(routes)
        if registry is not None:
            self.routes["/metrics"] = lambda q: (200, CONTENT_TYPE_LATEST, generate_latest(registry))
        self.timeout_s = timeout_s
        self.max_connections = max_connections
        self.allowed_hosts = frozenset(h.lower() for h in allowed_hosts)
        self.refused = {"host": 0, "evicted": 0, "timeout": 0, "bad_request": 0}
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._listener = socket.socket(family, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self._listener.bind((host, int(port)))
        except OSError:
            self._listener.close()
            raise
        self._listener.listen(128)
        self._listener.setblocking(False)
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="shadowd-http")
        self._open: dict[socket.socket, _Connection] = {}  # waiting for a complete request head
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="shadowd-http", daemon=True)

    @property
    def server_address(self) -> tuple[str, int]:
        return self._listener.getsockname()[:2]

    @property
    def url(self) -> str:
        host, port = self.server_address
        return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5.0)
        self._pool.shutdown(wait=False, cancel_futures=True)

    # -- event loop: accept, read heads, expire -------------------------------------------------
    def _loop(self) -> None:
        sel = selectors.DefaultSelector()
        sel.register(self._listener, selectors.EVENT_READ)
        try:
            while not self._stop.is_set():
                for key, _ in sel.select(timeout=0.2):
                    if key.fileobj is self._listener:
                        self._accept(sel)
                    else:
                        self._read(sel, self._open[key.fileobj])
                self._expire(sel)
        finally:
            for conn in list(self._open.values()):
                self._drop(sel, conn)
            sel.close()
            self._listener.close()

    def _accept(self, sel: selectors.BaseSelector) -> None:
        for _ in range(64):
            try:
                sock, _ = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # e.g. out of file descriptors: keep serving the open ones
                log.warning("http: accept failed: %s", exc)
                return
            sock.setblocking(False)
            if len(self._open) >= self.max_connections:
                oldest = min(self._open.values(), key=lambda c: c.opened)
                self.refused["evicted"] += 1
                self._drop(sel, oldest)
            conn = self._open[sock] = _Connection(sock)
            sel.register(sock, selectors.EVENT_READ)
            del conn

    def _read(self, sel: selectors.BaseSelector, conn: _Connection) -> None:
        try:
            data = conn.sock.recv(MAX_HEAD_BYTES + 1 - len(conn.head))
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self._drop(sel, conn)
            return
        conn.head += data
        if b"\r\n\r\n" in conn.head or b"\n\n" in conn.head or len(conn.head) > MAX_HEAD_BYTES:
            sel.unregister(conn.sock)
            del self._open[conn.sock]
            self._pool.submit(self._respond, conn)

    def _expire(self, sel: selectors.BaseSelector) -> None:
        cutoff = time.monotonic() - self.timeout_s
        for conn in [c for c in self._open.values() if c.opened < cutoff]:
            self.refused["timeout"] += 1
            self._drop(sel, conn)

    def _drop(self, sel: selectors.BaseSelector, conn: _Connection) -> None:
        self._open.pop(conn.sock, None)
        try:
            sel.unregister(conn.sock)
        except (KeyError, ValueError):
            pass
        conn.sock.close()

    # -- workers -------------------------------------------------------------------------------
    def _respond(self, conn: _Connection) -> None:
        try:
            status, ctype, body = self._dispatch(conn.head)
            reason = HTTPStatus(status).phrase
            head = (
                f"HTTP/1.0 {status} {reason}\r\nContent-Type: {ctype}\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
            ).encode()
            conn.sock.settimeout(self.timeout_s)
            conn.sock.sendall(head + body)
        except OSError:
            pass
        except Exception:
            log.exception("http: response failed")
        finally:
            conn.sock.close()

    def _dispatch(self, raw: bytes) -> tuple[int, str, bytes]:
        if len(raw) > MAX_HEAD_BYTES:
            self.refused["bad_request"] += 1
            return json_body({"error": "request head too large"}, 431)
        lines = raw.split(b"\n")
        parts = lines[0].decode("latin-1").strip().split()
        if len(parts) != 3 or not parts[2].startswith("HTTP/"):
            self.refused["bad_request"] += 1
            return json_body({"error": "malformed request line"}, 400)
        method, target, _ = parts
        headers = {}
        for line in lines[1:]:
            name, sep, value = line.decode("latin-1").partition(":")
            if sep:
                headers[name.strip().lower()] = value.strip()
        if not host_allowed(headers.get("host"), self.allowed_hosts):
            self.refused["host"] += 1
            return json_body({"error": "Host header not allowed (use an IP address or localhost)"}, 421)
        if method != "GET":
            return json_body({"error": f"method {method} not allowed; GET only"}, 405)
        url = urlsplit(target)
        path = unquote(url.path)
        route = self.routes.get(path)
        if route is None:
            return json_body({"error": f"no such endpoint {path}", "endpoints": sorted(self.routes)}, 404)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        try:
            return route(query)
        except ValueError as exc:  # a query parameter the route cannot use
            return json_body({"error": str(exc)[:500]}, 400)
        except Exception as exc:
            log.exception("http %s failed", path)
            return json_body({"error": type(exc).__name__}, 500)
