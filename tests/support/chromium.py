"""A tiny DevTools-protocol client for headless Chromium, over --remote-debugging-pipe.

Chromium reads commands from fd 3 and writes replies and events to fd 4, each
a JSON object ended by a NUL byte: no websocket, no port. The tests use it to
load a page, collect every console message, exception and log entry (a CSP
violation or a blocked request is one), run JavaScript and take screenshots.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

CHROMIUM = next((found for name in ("chromium", "chromium-browser", "google-chrome")
                 if (found := shutil.which(name))), None)


class Browser:
    def __init__(self, *, width: int = 1280, height: int = 900, scripts: bool = True) -> None:
        """`scripts=False`: the page's own scripts never run (DevTools' evaluate still does)."""
        assert CHROMIUM is not None, "Chromium is not installed"
        self._profile = tempfile.TemporaryDirectory(prefix="flipgate-cdp-")
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()
        # The child's fd 3 reads our commands and its fd 4 writes its replies: move our
        # ends out of the way first, so dup2 onto 3 and 4 cannot clobber one of them.
        child_in, child_out = (fcntl.fcntl(fd, fcntl.F_DUPFD, 100) for fd in (to_child_r,
                                                                               from_child_w))
        os.close(to_child_r)
        os.close(from_child_w)

        def wire() -> None:
            os.dup2(child_in, 3)
            os.dup2(child_out, 4)

        self._process = subprocess.Popen(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--hide-scrollbars", "--remote-debugging-pipe", f"--window-size={width},{height}",
             f"--user-data-dir={self._profile.name}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            pass_fds=(3, 4), preexec_fn=wire)
        os.close(child_in)
        os.close(child_out)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []
        self.session = ""
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable")
        self.resize(width, height)
        if not scripts:
            self.call("Emulation.setScriptExecutionDisabled", value=True)

    def resize(self, width: int, height: int = 900) -> None:
        """The window's size from now on (below 600 px, as a phone shows pages)."""
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height,
                  deviceScaleFactor=1, mobile=width < 600)

    # --- the wire ------------------------------------------------------------------

    def _read(self, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise TimeoutError("Chromium did not answer")
            chunk = os.read(self._from_child, 1 << 20)
            if not chunk:
                raise RuntimeError("Chromium closed the pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method: str, timeout: float = 120, **params: Any) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if self.session and not method.startswith("Target."):
            message["sessionId"] = self.session
        os.write(self._to_child, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._read(timeout)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method: str, timeout: float = 120) -> dict[str, Any]:
        for event in self.events:
            if event.get("method") == method:
                self.events.remove(event)
                return event
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            event = self._read(deadline - time.monotonic())
            if event.get("method") == method:
                return event
            self.events.append(event)
        raise TimeoutError(method)

    # --- what the tests use --------------------------------------------------------

    def open(self, path: Path | str, fragment: str = "") -> None:
        """Load `path`, or a URL (`fragment`: e.g. "#case-7", the part after the file)."""
        url = path if isinstance(path, str) else path.resolve().as_uri()
        self.call("Page.navigate", url=url + fragment)
        self.wait_for("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True,
                           awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def problems(self) -> list[str]:
        """Console errors and warnings, uncaught exceptions and error log entries so far."""
        self.evaluate("0")  # flush the events queued before this call
        found = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.exceptionThrown":
                found.append(f"exception: {params['exceptionDetails'].get('text')}")
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "warning",
                                                                                  "assert"):
                found.append(f"console.{params['type']}: {params.get('args')}")
            elif method == "Log.entryAdded" and params["entry"]["level"] in ("error", "warning"):
                found.append(f"log: {params['entry'].get('text')}")
        return found

    def screenshot(self, png: Path, *, full_page: bool = True) -> Path:
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            size = self.call("Page.getLayoutMetrics")["cssContentSize"]
            params.update(captureBeyondViewport=True, clip={
                "x": 0, "y": 0, "width": size["width"], "height": min(size["height"], 16_000),
                "scale": 1})
        png.write_bytes(base64.b64decode(self.call("Page.captureScreenshot", **params)["data"]))
        return png

    def close(self) -> None:
        try:
            self.call("Browser.close", timeout=10)
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        os.close(self._to_child)
        os.close(self._from_child)
        self._profile.cleanup()

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
