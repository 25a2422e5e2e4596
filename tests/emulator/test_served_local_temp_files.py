"""A folder that aiozarr's `LocalStore` writes into while the emulator serves it: the
local store's temporary files (a body on its way in, `.<name>.<host>-<pid>-<hex>.aiozarr-tmp`,
left behind by a writer killed mid-write; a folder a delete has set aside under such a
name) are neither listed nor served, as the local store itself never lists them. They
were: a served listing held half-written bodies and every chunk of a deleted array, so
a reader over S3 counted objects and bytes the folder does not hold."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from xml.etree import ElementTree

import numpy as np
import pytest

import aiozarr
from aiozarr.emulator import Emulator
from aiozarr.storage.backends.local import TEMP_SUFFIX, LocalStore
from aiozarr.storage.opening.url import from_url
from aiozarr.storage.protocol import Store
from aiozarr.sync import run

KILLED = f".0.host-4242-0a1b2c{TEMP_SUFFIX}"  # a chunk's body, its writer killed
SET_ASIDE = f".gone.host-4242-3d4e5f{TEMP_SUFFIX}"  # a deleted array, being removed


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """An array written by a `LocalStore`, with a killed writer's half-written chunk beside
    one of its chunks and a deleted array's folder set aside beside it."""
    arr = aiozarr.create_array(tmp_path / "a", shape=(6,), chunks=(3,), dtype="i4")
    arr[:] = np.arange(6)
    (tmp_path / "a" / "c" / KILLED).write_bytes(b"half")
    gone = aiozarr.create_array(tmp_path / "gone", shape=(3,), chunks=(3,), dtype="i4")
    gone[:] = 1
    (tmp_path / "gone").rename(tmp_path / SET_ASIDE)
    return tmp_path


@pytest.fixture
def emu(folder: Path) -> Iterator[Emulator]:
    with Emulator(folder, read_only=False).running_in_thread() as emu:
        yield emu


async def keys_of(store: Store) -> list[str]:
    return sorted([key async for key in store.list_prefix("")])


def send(method: str, url: str, body: bytes | None = None) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, body, method=method)) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_a_served_listing_is_the_local_stores(emu: Emulator, folder: Path) -> None:
    served = from_url(emu.s3_url(), storage_options=emu.storage_options())
    local = run(keys_of, LocalStore(folder))
    assert local == ["a/c/0", "a/c/1", "a/zarr.json"]
    assert run(keys_of, served) == local


def test_an_array_read_over_s3_counts_what_is_stored(emu: Emulator, folder: Path) -> None:
    local = aiozarr.open_array(folder / "a")
    served = aiozarr.open_array(emu.s3_url("a"), storage_options=emu.storage_options())
    assert served.nbytes_stored() == local.nbytes_stored()
    np.testing.assert_array_equal(served[:], np.arange(6))


@pytest.mark.parametrize("key", [f"a/c/{KILLED}", f"{SET_ASIDE}/zarr.json"])
def test_a_temporary_file_is_not_served(emu: Emulator, key: str) -> None:
    assert send("HEAD", emu.http_url(key))[0] == 400
    status, body = send("GET", emu.http_url(key))
    assert status == 400
    assert ElementTree.fromstring(body).findtext("Code") == "InvalidArgument"
    assert TEMP_SUFFIX in (ElementTree.fromstring(body).findtext("Message") or "")


def test_a_key_named_as_a_temporary_file_is_not_written(emu: Emulator, folder: Path) -> None:
    # The local store's sweep would remove it, and no listing would show it.
    key = f"a/c/.1.host-1-ab{TEMP_SUFFIX}"
    assert send("PUT", emu.http_url(key), b"x")[0] == 400
    assert not (folder / key).exists()
