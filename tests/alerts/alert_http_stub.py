"""A scripted HTTP server on 127.0.0.1 standing in for PagerDuty, Slack and webhook receivers.

Each request takes the next scripted :class:`Reply` (the last one repeats) and
is recorded with its path, headers and JSON body. ``Reply(hang=True)`` never
answers until the server stops: a receiver that accepts the connection and
then hangs, the worst case for a caller that waits on it.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclasses.dataclass(frozen=True)
class Reply:
    status: int = 200
    body: str = "ok"
    headers: dict[str, str] = dataclasses.field(default_factory=dict)
    hang: bool = False


@dataclasses.dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    json: Any


class StubServer:
    """``with StubServer([Reply(429), Reply(202)]) as stub: ... stub.url ... stub.received``."""

    def __init__(self, replies: list[Reply] | None = None):
        self.replies = list(replies or [Reply()])
        self.received: list[Received] = []
        self._released = threading.Event()
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server naming)
                length = int(self.headers.get("Content-Length", 0))
                raw = self.rfile.read(length)
                with stub._lock:
                    stub.received.append(Received(self.path, dict(self.headers), json.loads(raw or b"null")))
                    reply = stub.replies[min(len(stub.received), len(stub.replies)) - 1]
                    stub._arrived.notify_all()
                if reply.hang:
                    stub._released.wait()
                    return
                self.send_response(reply.status)
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                payload = reply.body.encode()
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)

    def wait_for(self, count: int, timeout: float = 5.0) -> list[Received]:
        """Block until ``count`` requests have arrived; return them all."""
        deadline = time.monotonic() + timeout
        with self._arrived:
            while len(self.received) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"expected {count} requests, got {len(self.received)}")
                self._arrived.wait(left)
            return list(self.received)

    def __enter__(self) -> StubServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._released.set()
        self.server.shutdown()
        self.server.server_close()
