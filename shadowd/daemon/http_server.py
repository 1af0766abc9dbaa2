"""The daemon's loopback HTTP endpoint: /metrics, /gate, /healthz, /report.

DuckDB allows one writing process per file, so while the daemon runs, the
CLI's ``report`` and ``gate`` ask it here instead of opening the file.
Binds to loopback unless configured otherwise; read-only; no request can
touch the database beyond the fixed reports.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.registry import CollectorRegistry

log = logging.getLogger("shadowd.http")
Route = Callable[[dict[str, str]], tuple[int, str, bytes]]


def json_body(obj: Any, status: int = 200) -> tuple[int, str, bytes]:
    return status, "application/json", json.dumps(obj, default=str, indent=1).encode()


class ApiServer:
    """A tiny threaded HTTP server with fixed routes."""

    def __init__(
        self, address: str, routes: dict[str, Route], registry: CollectorRegistry | None = None
    ) -> None:
        host, _, port = address.rpartition(":")
        self.routes = dict(routes)
        if registry is not None:
            self.routes["/metrics"] = lambda q: (200, CONTENT_TYPE_LATEST, generate_latest(registry))
        handler = _make_handler(self.routes)
        self.server = ThreadingHTTPServer((host.strip("[]") or "127.0.0.1", int(port)), handler)
        self.server.daemon_threads = True
        self._thread = threading.Thread(target=self.server.serve_forever, name="shadowd-http", daemon=True)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _make_handler(routes: dict[str, Route]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            url = urlsplit(self.path)
            route = routes.get(url.path)
            if route is None:
                status, ctype, body = json_body(
                    {"error": f"no such endpoint {url.path}", "endpoints": sorted(routes)}, 404
                )
            else:
                query = {k: v[-1] for k, v in parse_qs(url.query).items()}
                try:
                    status, ctype, body = route(query)
                except Exception as exc:
                    log.exception("http %s failed", url.path)
                    status, ctype, body = json_body({"error": f"{type(exc).__name__}: {exc}"}, 500)
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, fmt: str, *args: Any) -> None:
            log.debug("http: " + fmt, *args)

    return Handler
