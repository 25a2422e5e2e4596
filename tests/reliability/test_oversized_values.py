"""Values larger than their reader allows are refused before their bytes are read.

- A server announcing `Content-Length: 10**12` (a whole read, a range read, `http://` and
  `s3://`): obstore's `bytes_async` allocates the announced size up front, which aborted
  the process (SIGABRT) or hung it; now a `ValueTooLargeError` names the key, the size
  and the bound, and the process lives.
- A 2 GiB `zarr.json`, chunk or shard (sparse files, no disk) in a LocalStore and on the
  emulator's `s3://`: refused from the file's size or the response's headers, with the
  reading process's peak memory under 512 MiB (it peaked at 4-6 GB).

The dangerous parts run in a child process, so a regression kills the child, not pytest.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import aiozarr
from aiozarr.byte_range import ByteRange
from aiozarr.emulator import Emulator
from aiozarr.errors import ValueTooLargeError
from aiozarr.storage import LocalStore, MemoryStore, RangeRequest

HUGE = 10**12
TWO_GIB = 2 << 30
PEAK_LIMIT = 512 << 20
SRC = str(Path(aiozarr.__file__).resolve().parents[1])

# Fail fast instead of retrying for minutes when the bound is not there.
CHILD_ENV = {
    **os.environ,
    "PYTHONPATH": SRC,
    "AIOZARR_RETRY_ATTEMPTS": "1",
    "AIOZARR_REQUEST_TIMEOUT_S": "5",
}

LYING_SERVER = r"""
import asyncio, sys, threading, time
import aiozarr
from aiozarr.byte_range import ByteRange
from aiozarr.storage import from_url

HUGE = 10**12


async def handle(reader, writer):
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        writer.close()
        return
    ranged = b"\r\nrange:" in head.lower()
    status = b"206 Partial Content" if ranged else b"200 OK"
    extra = b"Content-Range: bytes 0-%d/%d\r\n" % (HUGE - 1, HUGE) if ranged else b""
    writer.write(
        b"HTTP/1.1 " + status + b"\r\nContent-Length: %d\r\n" % HUGE + extra
        + b'ETag: "e"\r\nLast-Modified: Wed, 21 Oct 2015 07:28:00 GMT\r\n'
        + b"Connection: close\r\n\r\n"
    )
    if not head.startswith(b"HEAD"):
        writer.write(b"{}")
    try:
        await writer.drain()
    finally:
        writer.close()


def serve(ready):
    async def main():
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        ready.append(server.sockets[0].getsockname()[1])
        await asyncio.Event().wait()
    asyncio.run(main())


ready = []
threading.Thread(target=serve, args=(ready,), daemon=True).start()
while not ready:
    time.sleep(0.01)
base = f"http://127.0.0.1:{ready[0]}"
s3 = {"endpoint": base, "region": "us-east-1", "skip_signature": True,
      "virtual_hosted_style_request": False, "client_options": {"allow_http": True}}
http = from_url(f"{base}/data")
cases = {
    "open-http": lambda: aiozarr.open(f"{base}/a.zarr", mode="r"),
    "open-s3": lambda: aiozarr.open("s3://bucket/a.zarr", mode="r", storage_options=s3),
    "get-whole": lambda: asyncio.run(http.get("k")),
    "get-range": lambda: asyncio.run(http.get("k", ByteRange.of(0, 10))),
}
for name, case in cases.items():
    try:
        case()
        print(f"{name}: no error", flush=True)
    except Exception as exc:
        print(f"{name}: {type(exc).__name__}: {exc}", flush=True)
"""


def test_a_huge_content_length_raises_a_named_error_and_the_process_lives() -> None:
    done = subprocess.run(
        [sys.executable, "-c", LYING_SERVER],
        capture_output=True,
        text=True,
        timeout=120,
        env=CHILD_ENV,
    )
    assert done.returncode == 0, (done.returncode, done.stdout, done.stderr[-3000:])
    lines = dict(line.split(": ", 1) for line in done.stdout.splitlines())
    assert set(lines) == {"open-http", "open-s3", "get-whole", "get-range"}, done.stdout
    for name, line in lines.items():
        assert str(HUGE) in line, (name, line)
        if name != "get-range":
            assert line.startswith("ValueTooLargeError: "), (name, line)
    # obstore itself refuses a range answered with other bytes than asked for.
    assert lines["get-range"].startswith(("ValueTooLargeError: ", "StoreError: "))
    assert "'zarr.json'" in lines["open-http"] and "max_metadata_bytes" in lines["open-http"]
    assert str(64 << 20) in lines["open-http"]  # the bound
    assert "'zarr.json'" in lines["open-s3"]
    assert "'k'" in lines["get-whole"] and "memory" in lines["get-whole"]
    assert "'k'" in lines["get-range"]


OPEN_OVERSIZED = r"""
import json, sys
import aiozarr

args = json.loads(sys.argv[1])
result = {}
try:
    node = aiozarr.open(args["url"], mode="r", storage_options=args["options"])
    if args["read"]:
        node[...]
    result["error"] = None
except Exception as exc:
    result["error"] = type(exc).__name__
    result["message"] = str(exc)
with open("/proc/self/status") as f:  # VmHWM: this process's peak resident memory
    line = next(line for line in f if line.startswith("VmHWM:"))
result["peak"] = int(line.split()[1]) * 1024
print(json.dumps(result))
"""


def _open_in_child(url: str, options: dict[str, Any] | None, read: bool) -> dict[str, Any]:
    args = json.dumps({"url": url, "options": options, "read": read})
    done = subprocess.run(
        [sys.executable, "-c", OPEN_OVERSIZED, args],
        capture_output=True,
        text=True,
        timeout=300,
        env=CHILD_ENV,
    )
    assert done.returncode == 0, (done.returncode, done.stdout, done.stderr[-3000:])
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


def _write_array(url: str, options: dict[str, Any] | None, sharded: bool) -> None:
    shards = {"shards": (50,)} if sharded else {}
    chunks = (10,) if sharded else (50,)  # a 400-byte chunk; a 400-byte inner chunk
    arr = aiozarr.create_array(
        url, shape=(100,), chunks=chunks, dtype="f8", storage_options=options, **shards
    )
    arr[:] = np.arange(100.0)


def _make_oversized(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        f.truncate(TWO_GIB)  # sparse: no disk, no memory


CASES = ["metadata", "chunk", "shard"]


def _prepare(kind: str, url: str, options: dict[str, Any] | None, root: Path) -> Path:
    if kind == "metadata":
        path = root / "zarr.json"
    else:
        _write_array(url, options, sharded=kind == "shard")
        path = root / "c" / "0"
        assert path.is_file()
    _make_oversized(path)
    return path


def _check(result: dict[str, Any], kind: str) -> None:
    key = "zarr.json" if kind == "metadata" else "c/0"
    if kind == "shard":
        # refused whole, the shard is read by its index (it may hold bytes no entry
        # points to): the sparse file's index, all zeros, fails its checksum, unread past it
        assert result["error"] == "ChecksumError", result
        assert f"'{key}'" in result["message"], result
    else:
        assert result["error"] == "ValueTooLargeError", result
        assert f"'{key}'" in result["message"] and str(TWO_GIB) in result["message"], result
    assert result["peak"] < PEAK_LIMIT, f"peak {result['peak'] / 2**20:.0f} MiB: {result}"


@pytest.mark.parametrize("kind", CASES)
def test_an_oversized_value_in_a_local_store_is_refused_unread(tmp_path: Path, kind: str) -> None:
    root = tmp_path / "data.zarr"
    path = _prepare(kind, str(root), None, root)
    try:
        _check(_open_in_child(str(root), None, kind != "metadata"), kind)
    finally:
        path.unlink()


@pytest.mark.parametrize("kind", CASES)
def test_an_oversized_value_on_s3_is_refused_unread(emulator: Emulator, kind: str) -> None:
    name = f"oversized-{kind}.zarr"
    url, options = emulator.s3_url(name), emulator.storage_options()
    path = _prepare(kind, url, options, emulator.root / name)
    try:
        _check(_open_in_child(url, options, kind != "metadata"), kind)
    finally:
        path.unlink()


def test_the_metadata_bound_is_a_setting(tmp_path: Path) -> None:
    arr = aiozarr.create_array(str(tmp_path / "a.zarr"), shape=(4,), dtype="i4")
    size = (tmp_path / "a.zarr" / "zarr.json").stat().st_size
    with (
        aiozarr.config.set(max_metadata_bytes=size - 1),
        pytest.raises(
            ValueTooLargeError, match=rf"'zarr.json'.*{size}.*{size - 1}.*max_metadata_bytes"
        ),
    ):
        aiozarr.open(str(tmp_path / "a.zarr"), mode="r")
    with aiozarr.config.set(max_metadata_bytes=size):
        assert aiozarr.open_array(str(tmp_path / "a.zarr"), mode="r").shape == arr.shape


def test_the_metadata_bound_comes_from_the_environment() -> None:
    code = "import aiozarr; print(aiozarr.config.get().max_metadata_bytes)"
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env={**CHILD_ENV, "AIOZARR_MAX_METADATA_BYTES": "12345"},
    )
    assert done.stdout.strip() == "12345", done.stderr


def test_a_shard_index_claiming_an_oversized_inner_chunk_is_refused_unread() -> None:
    """A forged index says inner chunk 0 is 2**40 bytes: refused before it is asked for,
    also where no version tells the shard's size (which refuses it as pointing past the
    shard): a store over a copy of the dict, that wrote none of it (stores over one dict
    share its versions)."""
    store = MemoryStore()
    arr = aiozarr.create_array(store, shape=(100,), chunks=(10,), shards=(50,), dtype="f8")
    arr[:] = np.arange(100.0)
    layout = arr.async_array._stored.layout
    shard = bytes(asyncio.run(store.get("c/0")))
    table = np.array(layout.decode_index(shard[-layout.index_size :]).offsets_and_lengths)
    table[1:] = 2**64 - 1  # the others not stored: no entry it overlaps
    table[0] = (0, 2**40)
    forged = shard[: -layout.index_size] + bytes(layout.index_chain.encode(table))
    asyncio.run(store.set("c/0", forged))
    with pytest.raises(ValueTooLargeError, match=r"'c/0'.*\(0,\).*1099511627776"):
        aiozarr.open_array(MemoryStore(dict(store.data)), mode="r")[0:5]


def test_bounded_store_reads_refuse_only_what_is_too_large(tmp_path: Path) -> None:
    """`Store.get(max_bytes=)` on every local kind of store: at the bound is fine, one
    byte over raises before reading; ranged reads are not bounded by it."""

    async def check(store: Any) -> None:
        await store.set("k", b"x" * 100)
        assert bytes(await store.get("k", max_bytes=100)) == b"x" * 100
        with pytest.raises(ValueTooLargeError, match=r"'k'.*100 bytes.*99"):
            await store.get("k", max_bytes=99)
        assert bytes(await store.get("k", ByteRange.of(0, 10), max_bytes=5)) == b"x" * 10
        answers = await store.get_partial_values([RangeRequest("k", None, 100)])
        assert bytes(answers[0]) == b"x" * 100
        with pytest.raises(ValueTooLargeError):
            await store.get_partial_values([RangeRequest("k", None, 50)])

    asyncio.run(check(MemoryStore()))
    asyncio.run(check(LocalStore(tmp_path)))


@pytest.mark.parametrize("sharded", [True, False])
def test_a_partial_write_into_an_oversized_stored_unit_is_refused_unread(
    tmp_path: Path, sharded: bool
) -> None:
    """A partial write reads the stored chunk (or shard) to merge into it: that read
    took any size. It is refused as a read refuses it: a chunk past what its codecs can
    make from its size, unread; a shard past its bound is read by its index (it may
    hold bytes no entry points to), and 4 MiB of zeros fail there, at the index's
    checksum. Nothing is written."""
    from aiozarr.storage.backends.counting import CountingStore

    store = CountingStore(LocalStore(tmp_path))
    layout = {"chunks": (2,), "shards": (8,)} if sharded else {"chunks": (8,)}
    arr = aiozarr.create_array(store, shape=(8,), dtype="i4", compressors=None, **layout)
    arr[...] = np.arange(8, dtype="i4")
    unit = tmp_path / "c" / "0"
    oversized = unit.read_bytes() + bytes(4 << 20)
    unit.write_bytes(oversized)
    before = store.bytes_read
    refusal = (
        (aiozarr.errors.ChecksumError, "'c/0'")
        if sharded
        else (ValueTooLargeError, r"'c/0'.*4194\d{3} bytes, more than the 32")
    )
    with pytest.raises(refusal[0], match=refusal[1]):
        arr[0:1] = 5
    assert store.bytes_read - before <= 68  # at most the shard's index
    assert unit.read_bytes() == oversized
