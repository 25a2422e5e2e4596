"""Kerchunk references made by kerchunk itself from an h5py file served by the emulator."""

from __future__ import annotations

import base64
import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import aiozarr
from aiozarr.byte_range import ByteRange
from aiozarr.emulator import Emulator
from aiozarr.errors import UnsupportedError
from aiozarr.storage.references.reference_store import (
    ReferenceStore,
    is_reference_source,
    open_references,
)

h5py = pytest.importorskip("h5py")
kerchunk_hdf = pytest.importorskip("kerchunk.hdf")


def _write_h5(path: Path) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1)
    data = {
        "temperature": rng.normal(size=(100, 40)).astype("f4"),  # 100 chunks of (1, 40)
        "counts": np.arange(1000, dtype="i8").reshape(10, 100),
    }
    with h5py.File(path, "w") as f:
        f.create_dataset("temperature", data=data["temperature"], chunks=(1, 40))
        f.create_dataset("counts", data=data["counts"], chunks=(5, 50), compression="gzip")
        f["temperature"].attrs["units"] = "K"
    return data


def _references(emulator: Emulator, prefix: str) -> tuple[dict, dict[str, np.ndarray]]:
    path = emulator.root / prefix / "data.h5"
    path.parent.mkdir(parents=True)
    data = _write_h5(path)
    url = emulator.s3_url(f"{prefix}/data.h5")
    with path.open("rb") as f:
        refs = kerchunk_hdf.SingleHdf5ToZarr(f, url, inline_threshold=0).translate()
    return refs, data


def test_values_equal_h5py(emulator: Emulator, prefix: str) -> None:
    refs, data = _references(emulator, prefix)
    assert is_reference_source(refs)
    store = open_references(
        refs,
        target_options=emulator.storage_options(),
        allowed_targets=[emulator.s3_url(prefix)],  # a dict allows no target by itself
    )
    group = aiozarr.open_group(store, mode="r")
    for name, expected in data.items():
        arr = group[name]
        np.testing.assert_array_equal(arr[...], expected)
    assert group["temperature"].attrs["units"] == "K"
    np.testing.assert_array_equal(group["counts"][3:7, 40:60], data["counts"][3:7, 40:60])


def test_read_of_100_chunks_in_one_file_coalesces(emulator: Emulator, prefix: str) -> None:
    refs, data = _references(emulator, prefix)
    store = ReferenceStore(
        refs, target_options=emulator.storage_options(), allowed_targets=emulator.s3_url(prefix)
    )
    arr = aiozarr.open_array(store, "temperature", mode="r")
    assert arr.chunks == (1, 40)  # 100 chunks, each its own range of data.h5
    emulator.reset_stats()
    np.testing.assert_array_equal(arr[...], data["temperature"])
    gets = emulator.stats()["by_method"].get("GET", 0)
    # The 100 chunk ranges lie close together in one file: a handful of coalesced GETs.
    assert 1 <= gets <= 3, emulator.stats()


def test_reference_file_by_url_and_relative_targets(emulator: Emulator, prefix: str) -> None:
    refs, data = _references(emulator, prefix)
    # Point targets at "data.h5" relative to the reference file's own directory.
    for value in refs["refs"].values():
        if isinstance(value, list):
            value[0] = "data.h5"
    (emulator.root / prefix / "refs.json").write_text(json.dumps(refs))
    url = emulator.s3_url(f"{prefix}/refs.json")
    assert is_reference_source(url)
    store = ReferenceStore(url, storage_options=emulator.storage_options())
    arr = aiozarr.open_array(store, "counts", mode="r")
    np.testing.assert_array_equal(arr[...], data["counts"])


async def test_inline_and_base64_values_and_listing() -> None:
    meta = {
        "zarr_format": 2,
        "shape": [4],
        "chunks": [4],
        "dtype": "<u1",
        "compressor": None,
        "fill_value": 0,
        "filters": None,
        "order": "C",
    }
    refs = {
        "version": 1,
        "refs": {
            ".zgroup": json.dumps({"zarr_format": 2}),
            "a/.zarray": "base64:" + base64.b64encode(json.dumps(meta).encode()).decode(),
            "a/0": "base64:" + base64.b64encode(bytes([1, 2, 3, 4])).decode(),
        },
    }
    store = ReferenceStore(refs)
    arr = await aiozarr.open_array_async(store, "a", mode="r")
    np.testing.assert_array_equal(await arr.getitem(...), [1, 2, 3, 4])
    assert [k async for k in store.list_dir("")] == [".zgroup", "a"]
    assert bytes(await store.get("a/0", ByteRange.of(1, 2))) == bytes([2, 3])
    assert await store.getsize("a/0") == 4
    assert await store.get("missing") is None


def test_open_group_accepts_references(emulator: Emulator, prefix: str) -> None:
    import inspect

    from aiozarr import api

    if "is_reference_source" not in inspect.getsource(api.resolve_store):
        pytest.skip("api.resolve_store does not take references yet (references_api.patch)")
    refs, data = _references(emulator, prefix)
    options = {**emulator.storage_options(), "allowed_targets": [emulator.s3_url(prefix)]}
    group = aiozarr.open_group(refs, mode="r", storage_options=options)
    np.testing.assert_array_equal(group["counts"][...], data["counts"])


def _parquet_references(
    emulator: Emulator, prefix: str, record_size: int
) -> tuple[str, dict[str, np.ndarray]]:
    """kerchunk's Parquet references to an h5py file, next to it on the emulator:
    (the s3 URL of the references directory, the values written)."""
    pytest.importorskip("pyarrow")
    from fsspec.implementations.reference import LazyReferenceMapper

    path = emulator.root / prefix / "data.h5"
    path.parent.mkdir(parents=True)
    data = _write_h5(path)
    with h5py.File(path, "a") as f:  # 4 bytes: kerchunk inlines it (a "raw" row)
        data["flags"] = np.array([1, 0, 1, 1], dtype="u1")
        f.create_dataset("flags", data=data["flags"])
    url = emulator.s3_url(f"{prefix}/data.h5")
    with path.open("rb") as f:
        refs = kerchunk_hdf.SingleHdf5ToZarr(f, url, inline_threshold=50).translate()
    assert isinstance(refs["refs"]["flags/0"], str)  # inline indeed
    out = emulator.root / prefix / "refs.parq"
    # What kerchunk.df.refs_to_dataframe does, but with the pyarrow engine: it always
    # takes fsspec's default, fastparquet, which is not installed.
    mapper = LazyReferenceMapper.create(str(out), record_size=record_size, engine="pyarrow")
    for key in sorted(refs["refs"]):
        mapper[key] = refs["refs"][key]
    mapper.flush()
    return emulator.s3_url(f"{prefix}/refs.parq"), data


def test_parquet_references_values_equal_h5py(emulator: Emulator, prefix: str) -> None:
    url, data = _parquet_references(emulator, prefix, record_size=30)
    records = emulator.root / prefix / "refs.parq" / "temperature"
    assert len(list(records.glob("refs.*.parq"))) == 4  # 100 chunks, 30 a record
    assert is_reference_source(url)
    store = ReferenceStore(url, storage_options=emulator.storage_options())
    group = aiozarr.open_group(store, mode="r")
    assert sorted(group.member_names()) == ["counts", "flags", "temperature"]
    for name, expected in data.items():
        np.testing.assert_array_equal(group[name][...], expected)
    assert group["temperature"].attrs["units"] == "K"
    np.testing.assert_array_equal(group["temperature"][35:65, 3], data["temperature"][35:65, 3])


async def test_parquet_references_keys_and_sizes(emulator: Emulator, prefix: str) -> None:
    url, _ = _parquet_references(emulator, prefix, record_size=30)
    store = ReferenceStore(url, storage_options=emulator.storage_options())
    assert await store.exists("temperature/99.0")
    assert not await store.exists("temperature/100.0")  # outside the chunk grid
    assert await store.get("nothing/0") is None
    assert await store.getsize("flags/0") == 4
    assert bytes(await store.get("flags/0")) == bytes([1, 0, 1, 1])
    chunks = [k async for k in store.list_prefix("temperature/") if ".z" not in k]
    assert len(chunks) == 100
    assert "temperature" in [k async for k in store.list_dir("")]


def test_local_parquet_directory_is_a_reference_source(
    emulator: Emulator, prefix: str, tmp_path: Path
) -> None:
    _, data = _parquet_references(emulator, prefix, record_size=1000)
    local = emulator.root / prefix / "refs.parq"
    renamed = local.rename(tmp_path / "refs")  # no .parq suffix: found by its .zmetadata
    assert is_reference_source(str(renamed))
    group = aiozarr.open_group(tmp_path / "refs.zarr", mode="w")  # a consolidated Zarr dir
    aiozarr.consolidate_metadata(tmp_path / "refs.zarr")
    assert not is_reference_source(str(tmp_path / "refs.zarr"))
    del group
    store = ReferenceStore(
        renamed,
        target_options=emulator.storage_options(),
        allowed_targets=[emulator.s3_url(prefix)],  # a local file: only its own folder
    )
    arr = aiozarr.open_array(store, "counts", mode="r")
    np.testing.assert_array_equal(arr[...], data["counts"])


def test_parquet_references_without_pyarrow_name_the_extra(
    emulator: Emulator, prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, _ = _parquet_references(emulator, prefix, record_size=30)
    store = ReferenceStore(url, storage_options=emulator.storage_options())
    for name in ("pyarrow", "pyarrow.parquet"):
        monkeypatch.setitem(sys.modules, name, None)  # import fails as if not installed
    with pytest.raises(UnsupportedError, match=re.escape("pip install 'aiozarr[references]'")):
        aiozarr.open_group(store, mode="r")["temperature"][...]
