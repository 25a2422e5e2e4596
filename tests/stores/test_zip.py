"""Zip archives (`.zarr.zip`): the store contract, interop with zarr-python's ZipStore and
TensorStore, request batching, and zarr-python's semantics for what zip cannot do."""

from __future__ import annotations

import gc
import warnings
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tensorstore as ts
import zarr

import aiozarr
from aiozarr.emulator import Emulator
from aiozarr.errors import StoreError, UnsupportedError
from aiozarr.storage import LocalStore
from aiozarr.storage.backends.counting import CountingStore
from aiozarr.storage.backends.zip import ZipStore
from aiozarr.storage.opening.url import from_url
from aiozarr.storage.protocol import Store
from aiozarr.testing.store_contract import StoreContract


class TestZipStoreWriting(StoreContract):
    has_versions = False  # members carry no version: the directory is read once
    """A local archive being written (mode "w"): entries are appended, never deleted."""

    supports_delete = False
    supports_delete_prefix = False
    supports_read_only = False

    @pytest.fixture
    def store(self, tmp_path: Path) -> Store:
        return ZipStore(tmp_path / "s.zarr.zip", mode="w")

    @pytest.fixture(autouse=True)
    def _duplicates_are_fine(self) -> Any:
        with warnings.catch_warnings():  # the overwrite test writes a name twice
            warnings.filterwarnings("ignore", "Duplicate name", UserWarning)
            yield


class TestZipStoreReading(StoreContract):
    has_versions = False
    """A finished archive, read through the ranges of the file that holds it."""

    writable = False
    supports_read_only = False

    @pytest.fixture
    def store(self, tmp_path: Path) -> Store:
        path = tmp_path / "r.zarr.zip"
        zipfile.ZipFile(path, "w").close()
        return ZipStore(path, mode="r")

    async def set_raw(self, store: Store, key: str, value: bytes) -> None:
        assert isinstance(store, ZipStore) and store.path is not None
        with zipfile.ZipFile(store.path, "a") as zf:
            zf.writestr(key, value)
        store.reload()


def _hierarchy(store: Any) -> dict[str, np.ndarray]:
    """Write a group with a sharded v3 array and a v2-style chunked one; their values."""
    root = aiozarr.create_group(store, attributes={"title": "zip"})
    values = {
        "temps": np.linspace(-5, 30, 24 * 30, dtype="f4").reshape(24, 30),
        "sub/counts": np.arange(50, dtype="i8") ** 2,
    }
    temps = root.create_array(
        "temps", shape=(24, 30), chunks=(4, 5), shards=(8, 10), dtype="f4", fill_value=np.nan
    )
    temps[...] = values["temps"]
    counts = root.create_group("sub").create_array("counts", shape=(50,), chunks=(7,), dtype="i8")
    counts[...] = values["sub/counts"]
    return values


def test_aiozarr_writes_an_archive_zarr_python_and_tensorstore_read(tmp_path: Path) -> None:
    path = tmp_path / "data.zarr.zip"
    with ZipStore(path, mode="w") as store:
        values = _hierarchy(store)
    assert zipfile.ZipFile(path).testzip() is None  # closed: a complete, valid archive
    zroot = zarr.open_group(zarr.storage.ZipStore(path, mode="r"), mode="r")
    assert dict(zroot.attrs) == {"title": "zip"}
    for name, expected in values.items():
        np.testing.assert_array_equal(zroot[name][...], expected)
    spec = {
        "driver": "zarr3",
        "kvstore": {"driver": "zip", "base": f"file://{path}", "path": "temps/"},
    }
    np.testing.assert_array_equal(ts.open(spec).result().read().result(), values["temps"])


@pytest.mark.parametrize(
    "compression", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2]
)
def test_zarr_python_archive_reads_from_its_path(tmp_path: Path, compression: int) -> None:
    path = tmp_path / "zp.zarr.zip"
    data = np.arange(40 * 36, dtype="f8").reshape(40, 36)
    zstore = zarr.storage.ZipStore(path, mode="w", compression=compression)
    zroot = zarr.open_group(zstore, mode="w", attributes={"by": "zarr-python"})
    zroot.create_array("a", shape=data.shape, chunks=(5, 6), shards=(20, 18), dtype="f8")[...] = (
        data
    )
    zroot.create_array("v", shape=(9,), chunks=(4,), dtype="i2")[...] = np.arange(9)
    zstore.close()
    root = aiozarr.open_group(str(path), mode="r")
    assert root.attrs == {"by": "zarr-python"}
    assert isinstance(root["a"].store, ZipStore)
    np.testing.assert_array_equal(root["a"][...], data)
    np.testing.assert_array_equal(root["a"][3:33, 7], data[3:33, 7])
    np.testing.assert_array_equal(root["v"][...], np.arange(9))


def test_a_read_is_one_batch_of_ranges_of_the_archive(tmp_path: Path) -> None:
    path = tmp_path / "b.zarr.zip"
    with ZipStore(path, mode="w") as store:
        values = _hierarchy(store)
    counting = CountingStore(LocalStore(tmp_path, read_only=True))
    arr = aiozarr.open_array(ZipStore.over(counting, path.name), "temps", mode="r")
    np.testing.assert_array_equal(arr[...], values["temps"])  # local headers are known now
    counting.reset()
    arr._async.stored.index_cache.clear()
    # Two inner chunks of each of the 4 shards of rows 0-7: one batch of shard indexes,
    # then one batch of inner chunks: each a single get_partial_values on the archive.
    np.testing.assert_array_equal(arr[0:2, :], values["temps"][0:2, :])
    assert [len(batch) for batch in counting.batches] == [3, 6]
    assert {key for _, key, _ in counting.requests} == {path.name}


def test_writing_appends_and_reads_the_last_entry_as_zarr_python(tmp_path: Path) -> None:
    path = tmp_path / "w.zarr.zip"
    store = ZipStore(path, mode="w")
    arr = aiozarr.create_array(store, shape=(4,), chunks=(4,), dtype="i4")
    arr[...] = [1, 2, 3, 4]
    with pytest.warns(UserWarning, match="Duplicate name: 'c/0'"):  # zipfile's, as in zarr
        arr[...] = [5, 6, 7, 8]
    np.testing.assert_array_equal(arr[...], [5, 6, 7, 8])
    with pytest.raises(StoreError, match="cannot be deleted"):
        arr[...] = 0  # a chunk of the fill value would be deleted (zarr-python: the same)
    with pytest.raises(UnsupportedError, match="cannot be deleted"):
        aiozarr.sync.run(store.delete, "c/0")
    aiozarr.sync.run(store.delete, "c/1")  # a missing key: nothing to do
    store.close()
    assert zipfile.ZipFile(path).namelist().count("c/0") == 2
    np.testing.assert_array_equal(
        zarr.open_array(zarr.storage.ZipStore(path), mode="r")[...], [5, 6, 7, 8]
    )
    # Writing after close() appends to the archive (zarr-python reopens it with "a").
    with pytest.warns(UserWarning, match="Duplicate name"):
        arr[1] = 60
    store.close()
    np.testing.assert_array_equal(aiozarr.open_array(str(path), mode="r")[...], [5, 60, 7, 8])


def test_an_archive_left_open_is_completed_when_collected(tmp_path: Path) -> None:
    path = tmp_path / "open.zarr.zip"
    aiozarr.create_array(str(path), shape=(3,), chunks=(3,), dtype="u1")[...] = [7, 8, 9]
    gc.collect()
    assert zipfile.ZipFile(path).testzip() is None
    np.testing.assert_array_equal(
        zarr.open_array(zarr.storage.ZipStore(path), mode="r")[...], [7, 8, 9]
    )


def test_open_modes_of_a_zip_path(tmp_path: Path) -> None:
    path = tmp_path / "m.zarr.zip"
    root = aiozarr.open_group(str(path), mode="w")
    root.create_array("x", shape=(2,), chunks=(2,), dtype="i1")[...] = [1, 2]
    root.store.close()
    root = aiozarr.open_group(str(path), mode="a")  # appends
    root.create_array("y", shape=(2,), chunks=(2,), dtype="i1")[...] = [3, 4]
    root.store.close()
    assert sorted(aiozarr.open_group(str(path), mode="r").member_names()) == ["x", "y"]
    with pytest.raises(StoreError, match="exists"):  # "w-": the archive must not exist
        aiozarr.open_group(str(path), mode="w-")
    root = aiozarr.open_group(str(path), mode="w")  # "w" starts a new archive
    root.store.close()
    assert aiozarr.open_group(str(path), mode="r").member_names() == []
    with pytest.raises(StoreError, match="not a zip archive"):
        (tmp_path / "bad.zip").write_bytes(b"not a zip at all" * 4)
        aiozarr.open_group(str(tmp_path / "bad.zip"), mode="r")


async def test_an_archive_in_a_bucket_reads_through_range_requests(
    tmp_path: Path, emulator: Emulator
) -> None:
    path = tmp_path / "bucket.zarr.zip"
    with ZipStore(path, mode="w") as store:
        values = _hierarchy(store)
    (emulator.root / "zips").mkdir(exist_ok=True)
    (emulator.root / "zips" / path.name).write_bytes(path.read_bytes())
    url = emulator.s3_url(f"zips/{path.name}")
    options = emulator.storage_options()
    assert isinstance(from_url(url, storage_options=options, read_only=True), ZipStore)
    root = await aiozarr.open_group_async(url, storage_options=options, mode="r")
    temps = await root.getitem("temps")
    np.testing.assert_array_equal(await temps.getitem(...), values["temps"])
    with pytest.raises(StoreError, match="written locally"):
        await aiozarr.open_group_async(url, storage_options=options, mode="w")
    appending = await aiozarr.open_group_async(url, storage_options=options, mode="a")
    assert not appending.store.writable  # "a", the default, reads a remote archive


def test_cp_and_migrate_into_an_archive_finish_it(tmp_path: Path) -> None:
    from tests.cli.test_cli import aiozarr_cli

    values = _hierarchy(str(tmp_path / "src.zarr"))
    aiozarr_cli("cp", str(tmp_path / "src.zarr"), str(tmp_path / "cp.zarr.zip"))
    aiozarr.copy(str(tmp_path / "src.zarr"), str(tmp_path / "v2.zarr"), zarr_format=2)
    aiozarr.migrate(str(tmp_path / "v2.zarr"), str(tmp_path / "mig.zarr.zip"))
    for name, fmt in (("cp.zarr.zip", 3), ("mig.zarr.zip", 3)):
        path = tmp_path / name
        assert zipfile.ZipFile(path).testzip() is None  # the CLI leaves with os._exit
        zroot = zarr.open_group(zarr.storage.ZipStore(path), mode="r", zarr_format=fmt)
        for key, expected in values.items():
            np.testing.assert_array_equal(zroot[key][...], expected)


def test_arrays_in_an_archive_pickle_for_dask(tmp_path: Path) -> None:
    import pickle

    path = tmp_path / "p.zarr.zip"
    with ZipStore(path, mode="w") as store:
        values = _hierarchy(store)
    arr = aiozarr.open_array(str(path), "temps", mode="r")
    again = pickle.loads(pickle.dumps(arr))
    np.testing.assert_array_equal(again[5:9], values["temps"][5:9])
    writer = ZipStore(path, mode="w")  # a copy of a "w" store appends: it must not truncate
    copy = pickle.loads(pickle.dumps(writer))
    writer.close()
    assert copy == writer and "mode='a'" in repr(copy)
