"""Zip archives are untrusted input.

- A malformed central directory raises a `StoreError`, never `UnicodeDecodeError`,
  `RuntimeError` (a short zip64 field) or `struct.error`: a seeded byte-flipper over a
  small valid archive gives correct data or an `aiozarr.errors` exception, every time.
- A member read whole is checked against its CRC-32: a flipped byte is a `ChecksumError`
  naming the key, not wrong values.
- A member larger than the read allows is refused from its directory size, before any of
  it is read or inflated; large members inflate off the event loop, and a large
  directory is parsed off it (the loop keeps ticking meanwhile).
- A remote archive, or a local one that cannot be written, opens for reading with
  `open_*`'s default mode.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import struct
import subprocess
import threading
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest

import aiozarr
from aiozarr.emulator import Emulator
from aiozarr.errors import (
    AiozarrError,
    ChecksumError,
    ReadOnlyError,
    StoreError,
    ValueTooLargeError,
)
from aiozarr.storage import LocalStore
from aiozarr.storage.backends import zip as zip_module
from aiozarr.storage.backends.counting import CountingStore
from aiozarr.storage.backends.zip import ZipStore

MEMBERS = {  # name -> (value, compression)
    "zarr.json": (b'{"zarr_format": 3, "node_type": "group"}', zipfile.ZIP_STORED),
    "a/c/0": (bytes(range(256)) * 3, zipfile.ZIP_STORED),
    "a/c/1": (b"compressible " * 100, zipfile.ZIP_DEFLATED),
    "b/c/0": (b"bzip2 " * 60, zipfile.ZIP_BZIP2),
}


def _valid_archive(path: Path) -> bytes:
    with zipfile.ZipFile(path, "w") as zf:
        for name, (value, compression) in MEMBERS.items():
            zf.writestr(name, value, compress_type=compression)
    return path.read_bytes()


def _directory_offset(archive: bytes) -> int:
    end = archive.rfind(b"PK\x05\x06")
    return struct.unpack_from("<L", archive, end + 16)[0]


async def _read_everything(path: Path) -> list[str]:
    """Read every member and list the archive; the problems found (wrong data, or an
    exception that is not an aiozarr error)."""
    problems: list[str] = []
    store = ZipStore(path, mode="r")
    try:
        names: set[str] | None = {k async for k in store.list_prefix("")}
    except AiozarrError:
        names = None
    except Exception as error:  # what this test is looking for
        return [f"listing: {type(error).__name__}: {error}"]
    for key, (value, _) in MEMBERS.items():
        try:
            got = await store.get(key)
        except AiozarrError:
            continue
        except Exception as error:
            problems.append(f"{key}: {type(error).__name__}: {error}")
            continue
        if got is None:
            if names is not None and key in names:
                problems.append(f"{key}: listed but read as missing")
        elif bytes(got) != value:
            problems.append(f"{key}: wrong data ({bytes(got)[:20]!r}...)")
    return problems


async def test_a_byte_flipped_archive_reads_right_or_raises_an_aiozarr_error(
    tmp_path: Path,
) -> None:
    original = _valid_archive(tmp_path / "valid.zip")
    directory = _directory_offset(original)
    rng = random.Random(20240607)
    path = tmp_path / "flipped.zip"
    found: list[str] = []
    for trial in range(250):
        data = bytearray(original)
        # Mostly the central directory and end record; sometimes headers and data too.
        low = directory if rng.random() < 0.7 else 0
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(low, len(data))
            if rng.random() < 0.15:  # an all-ones field: the zip64 paths
                data[at : at + 4] = b"\xff\xff\xff\xff"
            else:
                data[at] ^= rng.randrange(1, 256)
        path.write_bytes(bytes(data[: len(original)]))
        found += [f"trial {trial}: {p}" for p in await _read_everything(path)]
    assert not found, "\n".join(found[:20])


# -- hand-made malformed directories --------------------------------------------------------


def _archive(
    *,
    name: bytes,
    value: bytes,
    flags: int = 0,
    extra: bytes = b"",
    size: tuple[int, int] | None = None,
) -> bytes:
    """One stored member, with the central directory entry's name, flags, extra field
    and sizes as given (the local header stays plain)."""
    crc = zlib.crc32(value)
    local = struct.pack(
        "<4s5H3L2H", b"PK\x03\x04", 20, 0, 0, 0, 0, crc, len(value), len(value), len(name), 0
    )
    compressed, uncompressed = size if size is not None else (len(value), len(value))
    central = struct.pack(
        "<4s6H3L5HLL",
        b"PK\x01\x02",
        20,
        20,
        flags,
        0,
        0,
        0,
        crc,
        compressed,
        uncompressed,
        len(name),
        len(extra),
        0,
        0,
        0,
        0,
        0,
    )
    body = local + name + value
    directory = central + name + extra
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, 1, 1, len(directory), len(body), 0)
    return body + directory + end


@pytest.mark.parametrize(
    "archive",
    [
        # marked UTF-8 (flag 0x800), but not UTF-8: was UnicodeDecodeError
        _archive(name=b"k\xff\xfe", value=b"v", flags=0x800),
        # both sizes in the zip64 field, which holds one: was RuntimeError (StopIteration)
        _archive(
            name=b"k",
            value=b"v",
            extra=struct.pack("<HHQ", 1, 8, 1),
            size=(0xFFFFFFFF, 0xFFFFFFFF),
        ),
        # an extra field longer than the bytes left: was struct.error
        _archive(name=b"k", value=b"v", extra=struct.pack("<HHQ", 1, 16, 1), size=(1, 0xFFFFFFFF)),
    ],
    ids=["name-not-utf8", "short-zip64-field", "extra-field-past-its-end"],
)
async def test_a_malformed_directory_is_a_store_error(tmp_path: Path, archive: bytes) -> None:
    path = tmp_path / "bad.zip"
    path.write_bytes(archive)
    with pytest.raises(StoreError, match=r"bad\.zip"):
        await ZipStore(path, mode="r").get("k")


# -- checksums ------------------------------------------------------------------------------


def test_a_flipped_byte_in_a_chunk_is_a_checksum_error(tmp_path: Path) -> None:
    path = tmp_path / "c.zarr.zip"
    with ZipStore(path, mode="w") as store:
        arr = aiozarr.create_array(store, "a", shape=(64,), chunks=(64,), dtype="u1")
        arr[...] = np.arange(64, dtype="u1")
    data = bytearray(path.read_bytes())
    at = data.find(bytes(range(64)))  # the chunk, stored as it is
    data[at + 10] ^= 0xFF
    path.write_bytes(bytes(data))
    arr = aiozarr.open_array(str(path), "a", mode="r")
    with pytest.raises(ChecksumError, match=r"'a/c/0'.*CRC-32"):
        arr[...]


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_a_flipped_byte_is_a_checksum_error_for_a_few_values_of_a_raw_chunk(
    tmp_path: Path, zarr_format: int
) -> None:
    """An uncompressed chunk, of which a read could take only the span it needs: the
    member is read whole, so its CRC-32 is checked."""
    path = tmp_path / "c.zarr.zip"
    values = np.arange(4096, dtype="<i4")
    with ZipStore(path, mode="w") as store:
        arr = aiozarr.create_array(
            store, "a", shape=(4096,), chunks=(4096,), dtype="<i4", compressors=None,
            zarr_format=zarr_format,
        )  # fmt: skip
        arr[...] = values
    data = bytearray(path.read_bytes())
    data[data.find(values.tobytes()) + 4 * 100] ^= 0x40  # element 100
    path.write_bytes(bytes(data))
    arr = aiozarr.open_array(str(path), "a", mode="r")
    with pytest.raises(ChecksumError, match="CRC-32"):
        arr[100]


# -- bounds and the event loop --------------------------------------------------------------


def _bomb(path: Path) -> None:
    """A 16-byte array whose chunk member declares (and inflates to) 4 MiB of zeros."""
    meta = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": [16],
        "data_type": "uint8",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [16]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0,
        "codecs": [{"name": "bytes"}],
    }
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("a/zarr.json", json.dumps(meta))
        zf.writestr("a/c/0", bytes(4 << 20), compress_type=zipfile.ZIP_DEFLATED)


async def test_a_member_larger_than_its_chunk_is_refused_unread(tmp_path: Path) -> None:
    _bomb(tmp_path / "bomb.zip")
    inner = CountingStore(LocalStore(tmp_path, read_only=True))
    store = ZipStore.over(inner, "bomb.zip")
    arr = await aiozarr.open_array_async(store, "a", mode="r")
    inner.reset()
    with pytest.raises(ValueTooLargeError, match="a/c/0"):
        await arr.getitem(...)
    with pytest.raises(ValueTooLargeError, match="a/c/0"):
        await store.get_versioned("a/c/0", max_bytes=16)
    assert inner.bytes_read == 0, inner.requests  # not even its compressed bytes


async def test_a_large_member_inflates_off_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _bomb(tmp_path / "bomb.zip")
    threads: list[threading.Thread] = []
    real = zip_module.inflate

    def watched(*args: Any) -> bytes:
        threads.append(threading.current_thread())
        return real(*args)

    monkeypatch.setattr(zip_module, "inflate", watched)
    value = await ZipStore(tmp_path / "bomb.zip", mode="r").get("a/c/0")
    assert bytes(value) == bytes(4 << 20)
    assert threads and threads[0] is not threading.current_thread()


async def test_a_large_directory_is_parsed_while_the_loop_keeps_ticking(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "many.zip"
    with zipfile.ZipFile(path, "w") as zf:
        for i in range(50_000):
            zf.writestr(f"a/c/{i}", b"")
    beats = 0
    during: list[int] = []
    real = zip_module.parse_directory
    parsing, ticked = threading.Event(), threading.Event()

    def watched(*args: Any) -> Any:
        during.append(beats)
        parsing.set()
        # The parse goes on once the loop has ticked since it began: a parse on the loop
        # would hold the loop, no beat would come and the wait would end unticked.
        ticked.wait(10)
        try:
            return real(*args)
        finally:
            during.append(beats)

    monkeypatch.setattr(zip_module, "parse_directory", watched)

    async def heartbeat() -> None:
        nonlocal beats
        while True:
            beats += 1
            if parsing.is_set():
                ticked.set()
            await anyio.sleep(0.001)

    async with anyio.create_task_group() as tg:
        tg.start_soon(heartbeat)
        assert await ZipStore(path, mode="r").exists("a/c/49999")
        tg.cancel_scope.cancel()
    assert len(during) == 2 and during[1] > during[0], during  # beats while it parsed


# -- opening read only ----------------------------------------------------------------------


def _array_archive(path: Path) -> np.ndarray:
    values = np.arange(12, dtype="i2")
    with ZipStore(path, mode="w") as store:
        aiozarr.create_array(store, "x", shape=(12,), chunks=(5,), dtype="i2")[...] = values
    return values


def test_a_remote_archive_opens_for_reading_by_default(emulator: Emulator, tmp_path: Path) -> None:
    values = _array_archive(tmp_path / "r.zarr.zip")
    (emulator.root / "zips").mkdir(exist_ok=True)
    shutil.copy(tmp_path / "r.zarr.zip", emulator.root / "zips" / "r.zarr.zip")
    for url, options in (
        (emulator.http_url("zips/r.zarr.zip"), None),
        (emulator.s3_url("zips/r.zarr.zip"), emulator.storage_options()),
    ):
        arr = aiozarr.open_array(url, "x", storage_options=options)  # mode "a", the default
        np.testing.assert_array_equal(arr[...], values)
        with pytest.raises(ReadOnlyError):
            arr[0] = 1


@pytest.fixture
def unwritable(tmp_path: Path) -> Iterator[Path]:
    """An archive this process cannot open for writing (as root: an immutable file)."""
    path = tmp_path / "ro.zarr.zip"
    _array_archive(path)
    path.chmod(0o444)
    immutable = False
    if os.access(path, os.W_OK):  # root writes whatever the permission bits say
        chattr = shutil.which("chattr")
        done = chattr and subprocess.run([chattr, "+i", str(path)], capture_output=True)
        if not done or done.returncode != 0:
            pytest.skip("cannot make a file this process cannot write (root, no chattr +i)")
        immutable = True
    try:
        yield path
    finally:
        if immutable:
            subprocess.run([shutil.which("chattr") or "chattr", "-i", str(path)], check=True)
        path.chmod(0o644)


def test_a_local_archive_that_cannot_be_written_opens_for_reading(unwritable: Path) -> None:
    arr = aiozarr.open_array(str(unwritable), "x")  # mode "a", the default
    np.testing.assert_array_equal(arr[...], np.arange(12, dtype="i2"))
    assert not arr.store.writable
