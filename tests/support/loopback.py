"""A WSGI app served on 127.0.0.1 (a free port) from a background thread.

The one lifecycle every loopback server (OpenAI-compatible, GitHub REST, Entra ID,
retrieval) shares. Two servers sit behind it:

- werkzeug's (the default): it closes the connection after every response, so each
  request of a test opens a fresh one;
- waitress's (`keep_alive=True`): HTTP/1.1 keep-alive as providers serve it, so a client
  reuses its pooled connections. The benchmarks use it: a server that closes every
  connection makes the client pay a TCP set-up a request that no provider charges.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler, make_server

# Requests a keep-alive server answers at once: one thread each (a handler may sleep a
# scripted latency), above the highest concurrency a benchmark asks for.
KEEP_ALIVE_THREADS = 160


class _QuietHandler(WSGIRequestHandler):
    """No access log: tests and benchmarks send thousands of requests."""

    def log_request(self, *args: Any, **kwargs: Any) -> None:
        pass


class LoopbackHTTP:
    """`ssl_context` (an `ssl.SSLContext` holding a test certificate) serves HTTPS (werkzeug
    only); `keep_alive` serves HTTP/1.1 with persistent connections (waitress)."""

    def __init__(self, app: Callable[..., Any], *, ssl_context: Any = None, keep_alive: bool = False):
        if keep_alive and ssl_context is not None:
            raise ValueError("the keep-alive server speaks plain HTTP only")
        self._app = app
        self._ssl_context = ssl_context
        self._keep_alive = keep_alive
        self._server: BaseWSGIServer | None = None
        self._waitress: Any = None
        self.connections = 0  # connections accepted (keep-alive server only)

    def start(self) -> str:
        """Start serving (threaded, so requests overlap); returns the root URL."""
        if self._keep_alive:
            return self._start_waitress()
        self._server = make_server("127.0.0.1", 0, self._app, threaded=True,
                                   request_handler=_QuietHandler, ssl_context=self._ssl_context)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True,
                         kwargs={"poll_interval": 0.05}).start()
        scheme = "https" if self._ssl_context is not None else "http"
        return f"{scheme}://127.0.0.1:{self._server.server_port}"

    def _start_waitress(self) -> str:
        from waitress.server import TcpWSGIServer

        loopback = self

        class Counting(TcpWSGIServer):  # type: ignore[misc]
            def handle_accept(self) -> None:
                loopback.connections += 1
                super().handle_accept()

        self._waitress = Counting(self._app, host="127.0.0.1", port=0, threads=KEEP_ALIVE_THREADS,
                                  connection_limit=4 * KEEP_ALIVE_THREADS, channel_timeout=300,
                                  ident="loopback")
        threading.Thread(target=self._waitress.run, daemon=True).start()
        return f"http://127.0.0.1:{self._waitress.effective_port}"

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._waitress is not None:
            self._waitress.close()
            self._waitress.task_dispatcher.shutdown(timeout=1)
            self._waitress = None
