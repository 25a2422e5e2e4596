"""A plain HTTP server over a folder, on 127.0.0.1 in a thread, whose answers a test
bends: extra or replaced headers (`headers`), a whole answer of its own (`answer`).

    with FolderServer(tmp_path) as server:
        server.headers = lambda path, body: {"ETag": '"same"'}
        aiozarr.open_array(f"{server.url}/a.zarr")

It serves GET and HEAD, `Range: bytes=a-b` / `bytes=-n` as a 206, and records every
request (`requests`: method, path with its query, headers).
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote

#: `(handler, path)` -> True when it answered the request itself.
Answer = Callable[[BaseHTTPRequestHandler, str], bool]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, *args: Any) -> None:
        pass

    def do_HEAD(self) -> None:
        self.do_GET()

    def do_GET(self) -> None:
        owner = self.server.owner
        owner.requests.append((self.command, self.path, dict(self.headers)))
        path = unquote(self.path.partition("?")[0])
        if owner.answer is not None and owner.answer(self, path):
            return
        file = owner.root / path.lstrip("/")
        if not file.is_file():
            self.send(404, b"", {})
            return
        body = file.read_bytes()
        headers = {"Content-Type": "application/octet-stream"}
        headers.update(owner.headers(path, body))
        status = 200
        asked = re.fullmatch(r"bytes=(\d*)-(\d*)", self.headers.get("Range", ""))
        if asked is not None:
            size = len(body)
            first, last = asked.groups()
            start = max(size - int(last), 0) if first == "" else int(first)
            stop = size if first == "" or last == "" else min(int(last) + 1, size)
            headers["Content-Range"] = f"bytes {start}-{stop - 1}/{size}"
            body, status = body[start:stop], 206
        self.send(status, body, headers)

    def send(self, status: int, body: bytes, headers: dict[str, str]) -> None:
        """An answer with `headers` and a `Content-Length` (unless they say otherwise)."""
        self.send_response(status)
        if "Transfer-Encoding" not in headers:
            headers = {"Content-Length": str(len(body)), **headers}
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: FolderServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hangs up is part of the tests


class FolderServer:
    """Serves the files under `root`; `headers(path, body)` adds to (or replaces) each
    file answer's headers; `answer(handler, path)` may answer a request itself."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self.headers: Callable[[str, bytes], dict[str, str]] = lambda path, body: {}
        self.answer: Answer | None = None
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.owner = self
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def gets(self, path: str) -> int:
        """How many GETs asked for `path` (without its query)."""
        return sum(1 for m, p, _ in self.requests if m == "GET" and p.partition("?")[0] == path)

    def __enter__(self) -> FolderServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
