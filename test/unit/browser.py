"""Headless Chromium for the dashboard tests, driven over the DevTools protocol.

    with Chromium.launch(tmp) as browser:
        page = browser.open("file:///.../index.html#/f0/summary")
        page.wait("document.querySelector('main').dataset.ready === '1'")
        page.eval("document.title"); page.screenshot(path); page.errors

One browser per test session; each `open` is a fresh tab with its own event stream
(console errors, uncaught exceptions, failed loads are collected in `page.errors`). The
DevTools websocket is spoken with `websocket-client`; Chromium is Debian's `chromium`
(`find_chromium`), started with the flags a container without a GPU or sandbox needs.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--hide-scrollbars", "--mute-audio",
         "--window-size=1400,1000")


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


class Page:
    """One tab: evaluate JavaScript, wait for conditions, take screenshots."""

    def __init__(self, ws: Any, target_id: str) -> None:
        self.ws, self.target_id = ws, target_id
        self.errors: list[str] = []
        self._next = 0
        self.loaded = False

    def _event(self, msg: dict[str, Any]) -> None:
        method, params = msg.get("method"), msg.get("params", {})
        if method == "Runtime.exceptionThrown":
            d = params.get("exceptionDetails", {})
            self.errors.append("exception: " + str(d.get("exception", {}).get("description")
                                                   or d.get("text")))
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error",
                                                                              "assert"):
            self.errors.append("console.error: " + " ".join(
                str(a.get("value", a.get("description", ""))) for a in params.get("args", [])))
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            self.errors.append("log: " + params["entry"].get("text", "") + " " +
                               params["entry"].get("url", ""))
        elif method == "Page.loadEventFired":
            self.loaded = True

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        self._next += 1
        ident = self._next
        self.ws.send(json.dumps({"id": ident, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == ident:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            self._event(msg)

    def pump(self, seconds: float) -> None:
        """Read events for `seconds` (console errors arrive asynchronously)."""
        end = time.monotonic() + seconds
        self.ws.settimeout(0.05)
        try:
            while time.monotonic() < end:
                try:
                    self._event(json.loads(self.ws.recv()))
                except Exception:  # noqa: BLE001 - websocket timeout: nothing pending
                    continue
        finally:
            self.ws.settimeout(30)

    def eval(self, expression: str) -> Any:
        result = self.send("Runtime.evaluate", expression=expression, returnByValue=True,
                           awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"JS error in {expression!r}: {result['exceptionDetails']}")
        return result.get("result", {}).get("value")

    def wait(self, condition: str, timeout: float = 20.0) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                if self.eval(f"!!({condition})"):
                    return
            except RuntimeError:  # the page is not there yet (about:blank, loading)
                pass
            self.pump(0.05)
        raise TimeoutError(f"timed out waiting for {condition}; errors: {self.errors}; "
                           f"main: {self.eval('document.body.innerText.slice(0, 500)')!r}")

    def goto(self, url: str) -> None:
        self.loaded = False
        self.send("Page.navigate", url=url)

    def screenshot(self, path: Path) -> Path:
        data = self.send("Page.captureScreenshot", format="png", captureBeyondViewport=False)
        path.write_bytes(base64.b64decode(data["data"]))
        return path

    def close(self) -> None:
        try:
            self.ws.close()
        except Exception:  # noqa: BLE001 - closing twice, or the browser already gone
            pass


class Chromium:
    """A headless Chromium process with a DevTools port."""

    def __init__(self, proc: subprocess.Popen[bytes], port: int, profile: Path) -> None:
        self.proc, self.port, self.profile = proc, port, profile
        self.pages: list[Page] = []

    @classmethod
    def launch(cls, tmp: Path, exe: str | None = None) -> Chromium:
        exe = exe or find_chromium()
        if exe is None:
            raise FileNotFoundError("chromium not found")
        profile = tmp / "chromium-profile"
        profile.mkdir(parents=True, exist_ok=True)
        proc = subprocess.Popen([exe, *FLAGS, "--remote-debugging-port=0",
                                 f"--user-data-dir={profile}", "about:blank"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file = profile / "DevToolsActivePort"
        end = time.monotonic() + 30
        while time.monotonic() < end:
            if port_file.is_file():
                text = port_file.read_text().split()
                if text:
                    return cls(proc, int(text[0]), profile)
            if proc.poll() is not None:
                raise RuntimeError(f"chromium exited with status {proc.returncode}")
            time.sleep(0.05)
        proc.kill()
        raise RuntimeError("chromium did not open its DevTools port in 30 s")

    def open(self, url: str, init_script: str | None = None) -> Page:
        import websocket

        req = urllib.request.Request(f"http://127.0.0.1:{self.port}/json/new?about:blank",
                                     method="PUT")
        with urllib.request.urlopen(req, timeout=10) as resp:
            target = json.loads(resp.read())
        ws = websocket.create_connection(target["webSocketDebuggerUrl"], timeout=30,
                                         suppress_origin=True)
        page = Page(ws, target["id"])
        for domain in ("Runtime", "Log", "Page"):
            page.send(f"{domain}.enable")
        if init_script:
            page.send("Page.addScriptToEvaluateOnNewDocument", source=init_script)
        page.send("Emulation.setDeviceMetricsOverride", width=1400, height=1000,
                  deviceScaleFactor=1, mobile=False)
        page.goto(url)
        self.pages.append(page)
        return page

    def close(self) -> None:
        for page in self.pages:
            page.close()
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

