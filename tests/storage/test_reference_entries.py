"""Kerchunk reference entries that cannot be read as written: a malformed entry is a
`MetadataError`, a missing target a `StoreError`, each naming the key (never a builtin
error, nor fill values in place of the data)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import aiozarr
from aiozarr.emulator import Emulator
from aiozarr.errors import MetadataError, ReferenceTargetError, StoreError, UnsupportedError
from aiozarr.storage.references.reference_store import ReferenceStore

ZARRAY = {
    "shape": [20],
    "chunks": [5],
    "dtype": "<i4",
    "fill_value": None,
    "order": "C",
    "filters": None,
    "compressor": None,
    "zarr_format": 2,
}
VALUES = np.arange(20, dtype="<i4")


def _refs(x1: Any, blob: str = "blob.bin") -> dict[str, Any]:
    """References to chunks 0-3 of `x` in `blob`, chunk 1's entry being `x1`."""
    refs: dict[str, Any] = {".zgroup": '{"zarr_format":2}', "x/.zarray": json.dumps(ZARRAY)}
    for i in range(4):
        refs[f"x/{i}"] = [blob, i * 20, 20]
    refs["x/1"] = x1
    return {"version": 1, "refs": refs}


def _write(directory: Path, x1: Any) -> Path:
    (directory / "blob.bin").write_bytes(VALUES.tobytes())
    path = directory / "refs.json"
    path.write_text(json.dumps(_refs(x1)))
    return path


MALFORMED = [
    (["blob.bin", 20], "2 items"),
    ([], "0 items"),
    (["blob.bin", -4, 20], "the offset is negative"),
    (["blob.bin", 20, -1], "the length is negative"),
    (["blob.bin", True, 20], "the offset is not an integer"),  # not offset 1
    (["blob.bin", 20, False], "the length is not an integer"),
    (["blob.bin", 20.0, 20], "the offset is not an integer"),
    (["blob.bin", "20", 20], "the offset is not an integer"),
    ([None, 20, 20], "its target is not a URL"),  # not a file named 'None'
    (["", 20, 20], "its target is not a URL"),
    ([7], "its target is not a URL"),
]


@pytest.mark.parametrize(("entry", "problem"), MALFORMED)
def test_a_malformed_entry_names_the_file_key_and_entry(
    tmp_path: Path, entry: list[Any], problem: str
) -> None:
    path = _write(tmp_path, entry)
    array = aiozarr.open_group(str(path), mode="r")["x"]
    np.testing.assert_array_equal(array[:5], VALUES[:5])  # the other entries still read
    with pytest.raises(MetadataError) as caught:
        array[:]
    message = str(caught.value)
    assert str(path) in message and "'x/1'" in message and problem in message
    assert repr(entry) in message


@pytest.mark.parametrize(("entry", "problem"), MALFORMED[:3])
async def test_a_malformed_entry_in_a_dict(tmp_path: Path, entry: list[Any], problem: str) -> None:
    blob = str(_write(tmp_path, entry).parent / "blob.bin")
    entry = [blob if item == "blob.bin" else item for item in entry]
    store = ReferenceStore(_refs(entry, blob), allowed_targets=[str(tmp_path)])
    assert bytes(await store.get("x/0")) == VALUES[:5].tobytes()
    with pytest.raises(MetadataError, match=rf"references: the reference of 'x/1'.*{problem}"):
        await store.get("x/1")
    with pytest.raises(MetadataError, match="'x/1'"):
        await store.getsize("x/1")


@pytest.mark.parametrize("entry", [["moved.bin", 20, 20], ["moved.bin"]])
async def test_a_missing_local_target_is_an_error(tmp_path: Path, entry: list[Any]) -> None:
    path = _write(tmp_path, entry)
    array = aiozarr.open_group(str(path), mode="r")["x"]
    with pytest.raises(StoreError, match=r"'x/1'.*'moved\.bin'.*does not exist"):
        array[:]  # not fill values
    store = ReferenceStore(str(path))
    assert bytes(await store.get("x/0")) == VALUES[:5].tobytes()
    with pytest.raises(StoreError, match=r"'x/1'.*'moved\.bin'.*does not exist"):
        await store.get("x/1")
    if len(entry) == 1:  # its size is the target's: asked, and missing
        with pytest.raises(StoreError, match="does not exist"):
            await store.getsize("x/1")


@pytest.mark.parametrize("scheme", ["s3", "http"])
async def test_a_missing_remote_target_is_an_error(
    emulator: Emulator, prefix: str, scheme: str
) -> None:
    directory = emulator.root / prefix
    directory.mkdir()
    _write(directory, ["moved.bin", 20, 20])
    if scheme == "s3":
        url, options = emulator.s3_url(f"{prefix}/refs.json"), emulator.storage_options()
    else:
        url, options = emulator.http_url(f"{prefix}/refs.json"), None
    store = ReferenceStore(url, storage_options=options)
    assert bytes(await store.get("x/0")) == VALUES[:5].tobytes()
    with pytest.raises(StoreError, match=r"'x/1'.*'moved\.bin'.*does not exist"):
        await store.get("x/1")
    group = aiozarr.open_group(url, mode="r", storage_options=options)
    with pytest.raises(StoreError, match="does not exist"):
        group["x"][:]


@pytest.mark.parametrize("entry", [["blob.bin", 70, 20], ["blob.bin", 80, 20]])
async def test_a_target_ending_before_its_reference_is_an_error(
    tmp_path: Path, entry: list[Any]
) -> None:
    # blob.bin holds 80 bytes: the range runs past its end (clipped to 10 bytes, or none)
    path = _write(tmp_path, entry)
    array = aiozarr.open_group(str(path), mode="r")["x"]
    with pytest.raises(StoreError, match=r"'x/1'.*'blob\.bin'.*of the 20 bytes at offset"):
        array[:]  # not a codec's complaint about the chunk's size
    np.testing.assert_array_equal(array[10:20], VALUES[10:20])


async def test_a_null_entry_is_malformed_not_fill_values(tmp_path: Path) -> None:
    path = _write(tmp_path, None)
    array = aiozarr.open_group(str(path), mode="r")["x"]
    np.testing.assert_array_equal(array[:5], VALUES[:5])
    with pytest.raises(MetadataError, match=r"'x/1' is malformed: null"):
        array[:]
    store = ReferenceStore(str(path))
    assert await store.exists("x/1")  # listed, and so present
    with pytest.raises(MetadataError, match="'x/1'"):
        await store.getsize("x/1")


async def test_invalid_base64_names_the_key(tmp_path: Path) -> None:
    path = _write(tmp_path, "base64:AAA")
    with pytest.raises(MetadataError, match=r"'x/1' is not valid base64"):
        aiozarr.open_group(str(path), mode="r")["x"][:]


async def test_a_template_name_is_any_text_without_braces(tmp_path: Path) -> None:
    path = _write(tmp_path, ["{{ blob-1.v }}", 20, 20])
    doc = json.loads(path.read_text())
    doc["templates"] = {"blob-1.v": "blob.bin"}
    path.write_text(json.dumps(doc))
    array = aiozarr.open_group(str(path), mode="r")["x"]
    np.testing.assert_array_equal(array[:], VALUES)


def test_fsspecs_spelling_is_named(tmp_path: Path) -> None:
    path = _write(tmp_path, ["blob.bin", 20, 20])
    with pytest.raises(UnsupportedError, match=r"fsspec.s reference spelling"):
        aiozarr.open_group("reference://", mode="r", storage_options={"fo": str(path)})
    signed = "https://host/refs.json?X-Amz-Signature=s3cr3t"
    with pytest.raises(UnsupportedError) as refused:  # a presigned URL's signature not shown
        aiozarr.open_group("reference://", mode="r", storage_options={"fo": signed})
    assert "s3cr3t" not in str(refused.value) and "https://host/refs.json" in str(refused.value)


async def test_a_target_failing_for_good_names_the_keys(emulator: Emulator, prefix: str) -> None:
    directory = emulator.root / prefix
    directory.mkdir()
    _write(directory, ["blob.bin", 20, 20])
    url, options = emulator.s3_url(f"{prefix}/refs.json"), emulator.storage_options()
    group = aiozarr.open_group(url, mode="r", storage_options=options)
    emulator.inject("status", status=403, key_glob=f"{prefix}/blob.bin")
    with pytest.raises(StoreError, match=r"'x/0'.*refs\.json.*blob\.bin"):
        group["x"][:]


def test_a_relative_file_name_with_a_colon_is_a_file(tmp_path: Path) -> None:
    """fsspec reads a target as a URL only with '://': "ab:c.bin" is a file here."""
    path = _write(tmp_path, ["ab:c.bin", 20, 20])
    (tmp_path / "ab:c.bin").write_bytes(VALUES.tobytes())
    np.testing.assert_array_equal(aiozarr.open_group(str(path), mode="r")["x"][:], VALUES)


@pytest.mark.parametrize("target", ["simplecache::s3://b/x.nc", "zip://in.bin::s3://b/a.zip"])
def test_a_chained_url_is_named_as_such(target: str) -> None:
    with pytest.raises(ReferenceTargetError, match="a chained URL"):
        ReferenceStore({"version": 1, "refs": {"k": [target, 0, 4]}}, allowed_targets=["s3://"])


@pytest.mark.parametrize("version", [0, 1])
def test_virtualizarrs_empty_chunk_key_of_a_0d_array_is_its_chunk(
    tmp_path: Path, version: int
) -> None:
    """VirtualiZarr 2 writes the one chunk of a 0-d array as `"s/"` in its Zarr v2
    references; Zarr reads `"s/0"`, so the value read as the fill value (0.0, not 3.5)."""
    (tmp_path / "blob.bin").write_bytes(b"\0" * 16 + np.float64(3.5).tobytes())
    zarray = {**ZARRAY, "shape": [], "chunks": [], "dtype": "<f8", "fill_value": 0.0}
    refs = {
        ".zgroup": '{"zarr_format":2}',
        "s/.zarray": json.dumps(zarray),
        "s/": ["blob.bin", 16, 8],
    }
    path = tmp_path / "refs.json"
    path.write_text(json.dumps({"version": 1, "refs": refs} if version else refs))
    assert aiozarr.open_array(str(path), "s", mode="r")[()] == 3.5
