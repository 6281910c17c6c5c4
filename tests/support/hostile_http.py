"""A raw HTTP/1.1 server on loopback whose replies a test scripts byte by byte: a body that
drips one byte a second, a 250 MB body, a header and nothing else. The real clients
(httpx, the openai SDK) talk to it; wsgiref cannot misbehave this way.

    with HostileHTTP(lambda request, send: send(reply(200, b"{}"))) as server:
        ... server.url ...

`request` is the parsed request (method, path, headers, body); `send` writes bytes and
returns False once the client has gone away, so a handler can stop early.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


Send = Callable[[bytes], bool]
Handler = Callable[[Request, Send], None]


def head(status: int, *, length: int | None = None, content_type: str = "application/json",
         extra: dict[str, str] | None = None) -> bytes:
    lines = [f"HTTP/1.1 {status} X", f"content-type: {content_type}", "connection: close"]
    if length is not None:
        lines.append(f"content-length: {length}")
    lines += [f"{k}: {v}" for k, v in (extra or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def reply(status: int, body: bytes, **kwargs: Any) -> bytes:
    return head(status, length=len(body), **kwargs) + body


def drip(send: Send, data: bytes, *, every: float) -> None:
    """Send `data` one byte at a time, `every` seconds apart, until the client leaves."""
    for index in range(len(data)):
        if not send(data[index:index + 1]):
            return
        time.sleep(every)


def flood(send: Send, total: int, *, chunk: bytes = b"x" * 65536) -> int:
    """Send `total` bytes of filler; returns how many the client took before leaving."""
    sent = 0
    while sent < total:
        piece = chunk[: total - sent]
        if not send(piece):
            break
        sent += len(piece)
    return sent


@dataclass
class HostileHTTP:
    handler: Handler
    requests: list[Request] = field(default_factory=list)
    sent_bytes: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._socket = socket.socket()
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind(("127.0.0.1", 0))
        self._socket.listen(64)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._socket.getsockname()[1]}"

    def __enter__(self) -> HostileHTTP:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        try:  # wakes the accept() below: closing alone does not, and the join would wait 5 s
            self._socket.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._socket.close()
        self._thread.join(timeout=5)

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._socket.accept()
            except OSError:
                return
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        sent = [0]

        def send(data: bytes) -> bool:
            if self._stop.is_set():
                return False
            try:
                conn.sendall(data)
            except OSError:
                return False
            sent[0] += len(data)
            return True

        with conn:
            request = _read_request(conn)
            if request is None:
                return
            self.requests.append(request)
            try:
                self.handler(request, send)
            finally:
                self.sent_bytes.append(sent[0])


def _read_request(conn: socket.socket) -> Request | None:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return None
        data += chunk
    top, _, rest = data.partition(b"\r\n\r\n")
    first, *lines = top.decode("latin-1").split("\r\n")
    method, path, _ = first.split(" ", 2)
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
    length = int(headers.get("content-length", "0"))
    while len(rest) < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        rest += chunk
    return Request(method=method, path=path, headers=headers, body=rest[:length])

