"""A sync call made on the thread of a running event loop (a Jupyter cell) never joins a
whole read that a task of that loop has in flight. Against a server that ignores
`Range` (Python's `http.server`), overlapping whole reads of a key share one GET
(`storage/policy/whole_reads.py`); a sync read that joined the GET of a task of the
loop it blocks waited for an answer that loop could not take until the call returned:
a hang (here bounded by `sync_timeout_s`). It now sends its own GET.

The server holds the task's whole GET until the sync read has returned (or given up),
so the interleaving is forced."""

from __future__ import annotations

import asyncio
import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import aiozarr
from aiozarr import config
from aiozarr.storage.backends.local import LocalStore

pytestmark = pytest.mark.timeout(60)


class _Held(http.server.SimpleHTTPRequestHandler):
    """Python's file server (it answers a range with the whole file), holding the first
    whole GET of a chunk once armed."""

    armed = False
    held = threading.Event()  # that GET has arrived
    release = threading.Event()

    def do_GET(self) -> None:
        cls = type(self)
        if cls.armed and "/c/" in self.path and "Range" not in self.headers:
            cls.armed = False
            cls.held.set()
            cls.release.wait(30)
        super().do_GET()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, type[_Held]]]:
    """The URL of an array served by a `_Held` server, and the server's handler class."""
    arr = aiozarr.create_array(
        LocalStore(tmp_path / "a.zarr"), shape=(8, 8), dtype="i4", chunks=(2, 8), shards=(8, 8)
    )
    arr[...] = np.arange(64, dtype="i4").reshape(8, 8)
    handler = type("Held", (_Held,), {"held": threading.Event(), "release": threading.Event()})
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(handler, directory=str(tmp_path))
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/a.zarr", handler
    finally:
        handler.release.set()
        server.shutdown()
        server.server_close()


def test_a_sync_read_does_not_join_a_whole_read_of_its_own_loop(
    served: tuple[str, type[_Held]],
) -> None:
    url, server = served
    arr = aiozarr.open_array(url, storage_options={"allow_http": True})
    np.testing.assert_array_equal(arr[0], np.arange(8))  # learns the server ignores ranges

    async def cell() -> None:
        server.armed = True
        task = asyncio.create_task(arr.async_array.getitem((slice(0, 2), slice(None))))
        try:
            await asyncio.to_thread(server.held.wait, 10)  # its whole GET is in flight
            assert server.held.is_set()
            with config.set(sync_timeout_s=10):
                np.testing.assert_array_equal(arr[1], np.arange(8, 16))
        finally:
            server.release.set()
        np.testing.assert_array_equal(await task, np.arange(16).reshape(2, 8))

    asyncio.run(cell())
