"""Names the tests share about the servers they start: retry settings for obstore
clients, the moto bucket, azurite's account, fresh key prefixes, and `serving`, a
one-handler HTTP server on 127.0.0.1 (with `in_background`, served from a thread of its
own for sync code). The shared servers themselves are fixtures (tests/conftest.py;
azurite in tests/storage/conftest.py)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AbstractAsyncContextManager
from datetime import timedelta
from typing import Any, TypeVar

from aiohttp import web

T = TypeVar("T")

# Tests retry fast and give up fast: a dead endpoint fails in well under a second.
FAST_RETRY: dict[str, Any] = {
    "max_retries": 2,
    "retry_timeout": timedelta(seconds=5),
    "backoff": {
        "init_backoff": timedelta(milliseconds=10),
        "max_backoff": timedelta(milliseconds=50),
        "base": 2,
    },
}
MOTO_BUCKET = "aiozarr-test"

#: azurite's built-in account and its well-known key (public, documented by Microsoft).
AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)
AZURE_CONTAINER = "aiozarr-test"


def unique_prefix() -> str:
    """A fresh key prefix, so tests sharing one server do not see each other's keys."""
    return f"t-{uuid.uuid4().hex[:12]}"


def emulator_object_store(emulator: Any) -> Any:
    """An `ObjectStore` over the emulator's bucket under a prefix of its own, obstore's
    retries fast (aiozarr switches them off anyway)."""
    from obstore.store import S3Store

    from aiozarr.storage.backends.object_store import ObjectStore

    return ObjectStore(
        S3Store(
            emulator.bucket,
            prefix=unique_prefix(),
            retry_config=FAST_RETRY,
            **emulator.storage_options(),
        )
    )


@contextlib.asynccontextmanager
async def serving(
    handler: Callable[[web.Request], Awaitable[web.StreamResponse]],
    path: str = "/{tail:.*}",
    *,
    method: str = "*",
    client_max_size: int = 1024**2,
) -> AsyncIterator[str]:
    """Serve `handler` for `method` requests to `path` on 127.0.0.1 (a free port) for the
    `async with` block, which gets the base URL (`http://127.0.0.1:PORT`); the server
    is closed when the block ends. `client_max_size` bounds a request's body, as in
    `web.Application`."""
    app = web.Application(client_max_size=client_max_size)
    app.router.add_route(method, path, handler)
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


@contextlib.contextmanager
def in_background(manager: AbstractAsyncContextManager[T], timeout: float = 30) -> Iterator[T]:
    """Enter the async context manager `manager` (`serving(...)`) on an event loop of its
    own, run by a daemon thread, for the `with` block: sync tests, and tests whose code
    runs on aiozarr's loop, reach a server that answers while they wait."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="test-server", daemon=True)
    thread.start()
    try:
        entered = asyncio.run_coroutine_threadsafe(manager.__aenter__(), loop).result(timeout)
        try:
            yield entered
        finally:
            done = manager.__aexit__(None, None, None)
            asyncio.run_coroutine_threadsafe(done, loop).result(timeout)
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout)
        loop.close()
