"""A read-modify-write goes out only on a condition the server is known to honour.

Behind a server or proxy that drops `If-Match` / `If-None-Match`, or whose reads carry
no ETag, a conditional PUT is an unconditional one, and writers in other processes
lose each other's updates with every call succeeding. The store's server is probed
once (storage/protocol/write_conditions.py); where conditions cannot be trusted a partial
write raises
`ConditionalWriteUnsupportedError` and writes nothing, unless `single_writer` is set.
The proxy (proxies.py) sits on 127.0.0.1 before the emulator and breaks one rule.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from obstore.store import S3Store
from tests.reliability.proxies import Proxy
from tests.servers import unique_prefix

import aiozarr
from aiozarr import config
from aiozarr.emulator import Emulator
from aiozarr.errors import ConditionalWriteUnsupportedError
from aiozarr.storage.backends.counting import CountingStore
from aiozarr.storage.backends.object_store import ObjectStore
from aiozarr.storage.opening.url import from_url
from aiozarr.storage.protocol.write_conditions import PROBE_NAME

pytestmark = pytest.mark.timeout(180)

WRITERS = 4
ROUNDS = 12


def _store(emulator: Emulator, endpoint: str, prefix: str) -> ObjectStore:
    """The emulator's bucket under `prefix`, reached at `endpoint` (a proxy's, or its own)."""
    options = {**emulator.storage_options(), "endpoint": endpoint}
    return ObjectStore(S3Store(emulator.bucket, prefix=prefix, **options))


def _stored(emulator: Emulator, prefix: str) -> dict[str, bytes]:
    """Every object under `prefix`, read from the emulator's directory."""
    root = emulator.root / prefix
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def _create(store: ObjectStore, sharded: bool) -> aiozarr.Array:
    shards = {"shards": (4, 8)} if sharded else {}
    arr = aiozarr.create_array(store, shape=(4, 8), dtype="i4", chunks=(2, 4), **shards)
    arr[...] = np.arange(32, dtype="i4").reshape(4, 8)
    return arr


def _probes(proxy: Proxy, method: str = "PUT") -> set[str]:
    return {path for m, path, _ in proxy.sent if m == method and PROBE_NAME in path}


@pytest.mark.parametrize("sharded", [False, True], ids=["chunks", "shards"])
@pytest.mark.parametrize("rule", ["drop_conditions", "drop_etags"])
def test_a_partial_write_where_conditions_are_dropped_raises_and_writes_nothing(
    emulator: Emulator, rule: str, sharded: bool
) -> None:
    prefix = unique_prefix()
    _create(_store(emulator, emulator.endpoint, prefix), sharded)
    before = _stored(emulator, prefix)
    with Proxy(emulator.endpoint, **{rule: True}).running() as proxy:
        arr = aiozarr.open_array(_store(emulator, proxy.endpoint, prefix), mode="r+")
        with pytest.raises(ConditionalWriteUnsupportedError, match=r"'c/0/0'.*single_writer"):
            arr[1, 2] = -1
        assert len(_probes(proxy)) == 1  # the probe wrote its own key, never the chunk
        sent = len(proxy.sent)
        with pytest.raises(ConditionalWriteUnsupportedError):  # the verdict is kept
            arr[3, 7] = -1
        assert len(proxy.sent) == sent
        assert arr[...].tolist() == np.arange(32).reshape(4, 8).tolist()
    assert _stored(emulator, prefix) == before  # not a chunk changed; no probe left behind


def test_a_read_without_a_version_is_not_written_over(emulator: Emulator) -> None:
    """The probe found conditions honoured; then reads lose their ETags (a proxy put in
    front): a chunk read without one is refused, a missing chunk needs none."""
    prefix = unique_prefix()
    with Proxy(emulator.endpoint).running() as proxy:
        arr = aiozarr.create_array(
            _store(emulator, proxy.endpoint, prefix), shape=(8,), dtype="i4", chunks=(4,)
        )
        arr[1] = 5  # probed: honoured
        proxy.drop_etags = True
        with pytest.raises(ConditionalWriteUnsupportedError, match=r"'c/0'.*no ETag"):
            arr[2] = 6
        arr[5] = 7  # c/1 is missing: written If-None-Match, which the server honours
        assert arr[...].tolist() == [0, 5, 0, 0, 0, 7, 0, 0]


@pytest.mark.parametrize("rule", ["drop_conditions", "drop_etags"])
def test_single_writer_writes_without_conditions(emulator: Emulator, rule: str) -> None:
    prefix = unique_prefix()
    _create(_store(emulator, emulator.endpoint, prefix), sharded=True)
    with Proxy(emulator.endpoint, **{rule: True}).running() as proxy:
        arr = aiozarr.open_array(_store(emulator, proxy.endpoint, prefix), mode="r+")
        with config.set(single_writer=True):
            arr[1, 2] = -1
        assert not _probes(proxy)  # no probe either
    expected = np.arange(32).reshape(4, 8)
    expected[1, 2] = -1
    direct = aiozarr.open_array(_store(emulator, emulator.endpoint, prefix), mode="r")
    assert direct[...].tolist() == expected.tolist()


def test_single_writer_comes_from_the_environment() -> None:
    code = "import aiozarr; print(aiozarr.config.get().single_writer)"
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "AIOZARR_SINGLE_WRITER": "1"},
    )
    assert done.stdout.strip() == "True", done.stderr


def test_a_direct_connection_costs_one_probe_per_store(emulator: Emulator) -> None:
    prefix = unique_prefix()
    store = CountingStore(_store(emulator, emulator.endpoint, prefix))
    arr = aiozarr.create_array(store, shape=(8,), dtype="i4", chunks=(4,))
    store.reset()
    arr[0:4] = 1  # a whole chunk: nothing read, so no condition and no probe
    assert [(op, key) for op, key, _ in store.requests] == [("set", "c/0")]

    store.reset()
    arr[5] = 2  # the first read-modify-write: the probe, then the read and the write
    sent = [(op, key) for op, key, _ in store.requests]
    probe = sent[0][1]
    assert probe.startswith(PROBE_NAME)
    assert sent == [
        ("set", probe),
        ("get", probe),
        ("set", probe),  # If-Match its version: written
        ("set", probe),  # If-Match the replaced version: 412
        ("set", probe),  # If-None-Match: *: 412
        ("delete", probe),
        ("get", "c/1"),
        ("set", "c/1"),
    ]
    assert not asyncio.run(store.exists(probe))

    store.reset()
    arr[6] = 3  # known now: a read and a conditional write
    assert [(op, key) for op, key, _ in store.requests] == [("get", "c/1"), ("set", "c/1")]

    # Another array object over an equal store shares the verdict.
    other = CountingStore(_store(emulator, emulator.endpoint, prefix))
    again = aiozarr.open_array(other, mode="r+")
    other.reset()
    again[2] = 4
    assert [(op, key) for op, key, _ in other.requests] == [("get", "c/0"), ("set", "c/0")]
    assert again[...].tolist() == [1, 1, 4, 1, 0, 2, 3, 0]


def _writer(url: str, options: dict[str, Any], row: int, start: Any) -> None:
    store = from_url(url, storage_options=options)
    start.wait(60)  # every process writes at once

    async def write() -> None:
        arr = await aiozarr.open_array_async(store, mode="r+")
        for r in range(ROUNDS):
            await arr.setitem((row, r), r + 1)

    asyncio.run(write())
    # obstore's runtime can abort a process at interpreter exit (after the work is
    # done): leave without finalizers. A failed write raised above.
    os._exit(0)


@pytest.mark.parametrize("sharded", [False, True], ids=["chunks", "shards"])
def test_writer_processes_through_an_honest_server_lose_nothing(
    emulator: Emulator, tmp_path: Path, sharded: bool
) -> None:
    """Four processes write one chunk (or shard) through a proxy that passes everything:
    each probes once, and not one of their 48 updates is lost."""
    prefix = unique_prefix()
    url = emulator.s3_url(prefix)
    with Proxy(emulator.endpoint).running() as proxy:
        options = {**emulator.storage_options(), "endpoint": proxy.endpoint}
        shards = {"shards": (WRITERS, ROUNDS)} if sharded else {}
        chunks = (1, 4) if sharded else (WRITERS, ROUNDS)
        store = from_url(url, storage_options=options)
        aiozarr.create_array(store, shape=(WRITERS, ROUNDS), dtype="i4", chunks=chunks, **shards)
        context = multiprocessing.get_context("spawn")
        start = context.Barrier(WRITERS)
        workers = [
            context.Process(target=_writer, args=(url, options, row, start))
            for row in range(WRITERS)
        ]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(120)
            assert worker.exitcode == 0
        assert len(_probes(proxy)) == WRITERS  # one probe per process's store
        got = aiozarr.open_array(store, mode="r")[...]
    expected = np.tile(np.arange(1, ROUNDS + 1, dtype="i4"), (WRITERS, 1))
    assert int(np.sum(got != expected)) == 0
