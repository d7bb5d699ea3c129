"""`accel-dashboard serve`: the dashboard from the standard library's HTTP server.

Only GET and HEAD, and only these URLs (accel.dashboard.site has the layout): the app's
own assets (a fixed list read from the package), the data scripts made from the collected
models, and `raw/<fid>/<path>`, which `Folder.resolve` limits to regular files under the
folder (no `..`, no absolute path, no symlink out of it; the path is decoded once, so
`%2e%2e` is `..` and refused the same way). Anything else is 404.

Bound to 127.0.0.1 by default; then requests must name that host (a `Host` header of
127.0.0.1, localhost or [::1] with the port), which keeps other web sites from reading the
folder through DNS rebinding. The app is served with a Content-Security-Policy that allows
only its own scripts; raw files are sandboxed (`Content-Security-Policy: sandbox`) and
never sniffed, so a report's HTML cannot run script in the dashboard's origin.
"""

from __future__ import annotations

import errno
import mimetypes
import sys
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlsplit

from accel.dashboard import site
from accel.dashboard.folder import Folder, safe_relpath
from accel.diagnostics import AccelError

APP_CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: "
           "blob:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; "
           "frame-ancestors 'none'")
RAW_CSP = "sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:"
LOOPBACK = ("127.0.0.1", "localhost", "::1")
_TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8",
          ".html": "text/html; charset=utf-8", ".json": "application/json",
          ".txt": "text/plain; charset=utf-8", ".png": "image/png", ".svg": "image/svg+xml",
          ".md": "text/plain; charset=utf-8"}


class Dashboard:
    """What the server serves: the assets and the data of the collected folders."""

    def __init__(self, folders: list[tuple[str, Folder, dict[str, Any]]],
                 compare: dict[str, Any] | None) -> None:
        self.folders = {fid: (folder, model) for fid, folder, model in folders}
        self.assets = site.assets()
        self.data = {"data/index.js": site.index_script([(fid, m) for fid, _, m in folders],
                                                        compare is not None)}
        if compare is not None:
            self.data["data/compare.js"] = site.js_data("compare", compare)
        for fid, _, model in folders:
            self.data[f"data/{fid}/model.js"] = site.js_data(f"{fid}/model", model)

    def lookup(self, path: str) -> tuple[bytes, str, str] | None:
        """(body, content type, CSP) for a decoded URL path, or None (404)."""
        rel = safe_relpath(path.lstrip("/")) if path not in ("/", "") else "index.html"
        if rel is None:
            return None
        if rel in self.assets:
            return self.assets[rel], _type(rel), APP_CSP
        if rel in self.data:
            return self.data[rel], _TYPES[".js"], APP_CSP
        parts = rel.split("/")
        if len(parts) == 4 and parts[0] == "data" and parts[2] == "files" and \
                parts[1] in self.folders and parts[3].endswith(".js"):
            folder, model = self.folders[parts[1]]
            number = parts[3][:-3]
            if not number.isdigit() or int(number) >= len(model["files"]):
                return None
            file = model["files"][int(number)]
            body = site.file_script(parts[1], folder, file)
            return None if body is None else (body, _TYPES[".js"], APP_CSP)
        if len(parts) >= 3 and parts[0] == "raw" and parts[1] in self.folders:
            folder, _ = self.folders[parts[1]]
            inner = "/".join(parts[2:])
            if folder.resolve(inner) is None:
                return None
            body = folder.read_bytes(inner, 1 << 34)
            return None if body is None else (body, _type(inner, raw=True), RAW_CSP)
        return None


def _type(rel: str, raw: bool = False) -> str:
    suffix = "." + rel.rsplit(".", 1)[-1] if "." in rel else ""
    if suffix in _TYPES:
        return _TYPES[suffix]
    if raw:
        guessed = mimetypes.guess_type(rel)[0]
        return "text/plain; charset=utf-8" if guessed is None or guessed.startswith("text/") \
            else "application/octet-stream"
    return "application/octet-stream"


def make_handler(dashboard: Dashboard, allowed_hosts: set[str] | None,
                 verbose: bool) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "accel-dashboard"
        sys_version = ""

        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            self._answer(head=False)

        def do_HEAD(self) -> None:  # noqa: N802
            self._answer(head=True)

        def _answer(self, head: bool) -> None:
            host = (self.headers.get("Host") or "").lower()
            if allowed_hosts is not None and host not in allowed_hosts:
                self._error(HTTPStatus.FORBIDDEN, "wrong Host header")
                return
            raw_path = urlsplit(self.path).path
            path = unquote(raw_path, errors="strict") if "%" in raw_path else raw_path
            found = None if "\x00" in path or "\\" in path else dashboard.lookup(path)
            if found is None:
                self._error(HTTPStatus.NOT_FOUND, "not found")
                return
            body, ctype, csp = found
            self.send_response(HTTPStatus.OK)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Content-Security-Policy", csp)
            self.send_header("X-Content-Type-Options", "nosniff")
            self.send_header("Referrer-Policy", "no-referrer")
            self.send_header("Cache-Control", "no-cache")
            if ctype == "application/octet-stream":
                self.send_header("Content-Disposition", "attachment")
            self.end_headers()
            if not head:
                self.wfile.write(body)

        def _error(self, status: HTTPStatus, text: str) -> None:
            body = f"{status.value} {text}\n".encode()
            self.send_response(status)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("X-Content-Type-Options", "nosniff")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            if verbose:
                sys.stderr.write("accel-dashboard: " + format % args + "\n")

    return Handler


def make_server(dashboard: Dashboard, host: str, port: int, verbose: bool = False
                ) -> ThreadingHTTPServer:
    """A bound server (port 0: a free one); `AccelError` when the port is taken."""
    server_class = ThreadingHTTPServer
    if ":" in host:
        import socket

        class V6(ThreadingHTTPServer):
            address_family = socket.AF_INET6

        server_class = V6
    try:
        server = server_class((host, port), make_handler(dashboard, None, verbose))
    except OSError as err:
        if err.errno == errno.EADDRINUSE:
            raise AccelError(f"port {port} on {host} is in use: pick another with --port N "
                             "(--port 0 takes a free one)") from None
        if err.errno in (errno.EACCES, errno.EPERM):
            raise AccelError(f"not allowed to listen on {host}:{port}: {err.strerror}"
                             ) from None
        raise AccelError(f"cannot listen on {host}:{port}: {err.strerror or err}") from None
    server.daemon_threads = True
    bound = server.server_address[1]
    if host in LOOPBACK or host.startswith("127."):
        names = {host, "127.0.0.1", "localhost", "[::1]"}
        allowed = {f"{n}:{bound}" for n in names}
        server.RequestHandlerClass = make_handler(dashboard, allowed, verbose)
    return server
