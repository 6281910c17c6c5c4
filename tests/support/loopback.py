"""A WSGI app served on 127.0.0.1 (a free port) from a background thread.

The one lifecycle both loopback servers (OpenAI-compatible, GitHub REST) share.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler, make_server


class _QuietHandler(WSGIRequestHandler):
    """No access log: tests and benchmarks send thousands of requests."""

    def log_request(self, *args: Any, **kwargs: Any) -> None:
        pass


class LoopbackHTTP:
    """`ssl_context` (an `ssl.SSLContext` holding a test certificate) serves HTTPS."""

    def __init__(self, app: Callable[..., Any], *, ssl_context: Any = None):
        self._app = app
        self._ssl_context = ssl_context
        self._server: BaseWSGIServer | None = None

    def start(self) -> str:
        """Start serving (threaded, so requests overlap); returns the root URL."""
        self._server = make_server("127.0.0.1", 0, self._app, threaded=True,
                                   request_handler=_QuietHandler, ssl_context=self._ssl_context)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True,
                         kwargs={"poll_interval": 0.05}).start()
        scheme = "https" if self._ssl_context is not None else "http"
        return f"{scheme}://127.0.0.1:{self._server.server_port}"

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
