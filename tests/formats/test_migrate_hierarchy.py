"""`migrate` of whole hierarchies: 2020-draft and v2 groups (and v1 arrays) to v3 and v2.

Values, attributes, data types and fill values are compared with the source; zarr-python
reads every result; chunk bytes are checked to carry over where the codec allows, and
requests are counted to show that chunks move in batches.
"""

from __future__ import annotations

import importlib
import json
import shutil
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numcodecs
import numpy as np
import pytest
import zarr
from test_v1 import write_v1

import aiozarr
from aiozarr.errors import InvalidValueError, NodeExistsError, NodeNotFoundError, UnsupportedError
from aiozarr.storage.backends.counting import CountingStore
from aiozarr.storage.backends.local import LocalStore
from aiozarr.tools.copying import copy
from aiozarr.tools.migration import MigrateProgress, migrate, migrate_async

DRAFT = Path(__file__).parent / "data" / "v3draft.zarr"
migrate_module = importlib.import_module("aiozarr.tools.migration")
METADATA_NAMES = {".zarray", ".zgroup", ".zattrs", ".zmetadata", "zarr.json"}

#: What make_v3draft_fixture.py wrote: path -> (values, dtype, fill value, attributes).
DRAFT_ARRAYS: dict[str, tuple[np.ndarray, str, Any, dict[str, Any]]] = {
    "floats": (
        np.concatenate([np.linspace(0, 1, 8), [np.nan, np.nan]]),
        ">f8",
        np.nan,
        {},
    ),
    "grp/ints": (np.arange(35).reshape(5, 7), "<i4", -1, {"units": "m"}),
    "fortran": (np.arange(16).reshape(4, 4), "<u2", 0, {}),
}


@pytest.fixture(autouse=True)
def _quiet() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=UserWarning)  # zarr-python's v2/v3 notes
        yield


def _same(a: Any, b: Any) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind in "fc":
        return bool(np.array_equal(a, b, equal_nan=True))
    return bool(np.array_equal(a, b))


def write_zarr_python_v2(root: Path) -> dict[str, np.ndarray]:
    """A v2 hierarchy written by zarr-python 3.1: nested group, four encodings."""
    group = zarr.create_group(root, zarr_format=2, attributes={"title": "v2 source"})
    values = {
        "temps": np.arange(63, dtype=">f4").reshape(9, 7) / 4,
        "sub/counts": np.arange(10, dtype="<u2") * 3,
        "sub/names": np.array(["a", "bb", "ccc", "", "eeeee"], dtype=object),
        "sub/fort": np.arange(20, dtype="<i8").reshape(4, 5),
    }
    temps = group.create_array(
        "temps",
        shape=(9, 7),
        chunks=(4, 3),
        dtype=">f4",
        compressors=numcodecs.Blosc("zstd", 3, 1),
        fill_value=np.nan,
        attributes={"_ARRAY_DIMENSIONS": ["y", "x"], "units": "K"},
    )
    temps[:] = values["temps"]
    temps[8:, 6:] = np.nan  # the fill value: that edge chunk is not stored
    values["temps"][8:, 6:] = np.nan
    sub = group.create_group("sub", attributes={"level": 1})
    counts = sub.create_array(
        "counts",
        shape=(10,),
        chunks=(4,),
        dtype="<u2",
        compressors=numcodecs.Zlib(2),
        filters=[numcodecs.Delta("<u2")],
        fill_value=None,
    )
    counts[:] = values["sub/counts"]
    names = sub.create_array(
        "names", shape=(5,), chunks=(2,), dtype=str, compressors=numcodecs.Zstd(1)
    )
    names[:] = values["sub/names"]
    fort = sub.create_array(
        "fort", shape=(4, 5), chunks=(3, 2), dtype="<i8", order="F", compressors=None, fill_value=7
    )
    fort[:] = values["sub/fort"]
    return values


def _chunk_files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and not p.name.startswith(".") and p.name != "zarr.json"
    }


# -- the 2020 draft -------------------------------------------------------------------------


@pytest.mark.parametrize("zarr_format", [3, 2])
def test_draft_hierarchy_migrates_whole(tmp_path: Path, zarr_format: int) -> None:
    out = migrate(DRAFT, tmp_path / "out", zarr_format=zarr_format)
    assert isinstance(out, aiozarr.Group)
    assert out.attrs == {"title": "draft fixture"}
    assert out.member_names() == ["floats", "fortran", "grp"]
    zroot = zarr.open_group(tmp_path / "out", mode="r", zarr_format=zarr_format)
    assert dict(zroot.attrs) == {"title": "draft fixture"}
    for path, (values, dtype, fill, attrs) in DRAFT_ARRAYS.items():
        ours, theirs = out[path], zroot[path]
        assert _same(ours[...], values) and _same(theirs[...], values), path
        assert ours.attrs == attrs and dict(theirs.attrs) == attrs
        want = np.dtype(dtype) if zarr_format == 2 else np.dtype(dtype).newbyteorder("<")
        assert ours.dtype == want and theirs.dtype == want
        assert _same(ours.fill_value, fill) and _same(theirs.fill_value, fill)
    assert zroot["fortran"].metadata.zarr_format == zarr_format


def test_draft_to_v3_copies_blosc_and_raw_chunks_and_reencodes_zlib(tmp_path: Path) -> None:
    seen: list[MigrateProgress] = []
    migrate(DRAFT, tmp_path / "out", progress=seen.append)
    src = DRAFT / "data" / "root"
    out = tmp_path / "out"
    for c in ("0", "1"):  # blosc: the same frames under the v3 blosc codec
        assert (out / "floats" / "c" / c).read_bytes() == (src / "floats" / f"c{c}").read_bytes()
    assert (out / "fortran" / "c" / "1" / "0").read_bytes() == (
        src / "fortran" / "c1" / "0"
    ).read_bytes()
    ints = json.loads((out / "grp" / "ints" / "zarr.json").read_text())
    assert [c["name"] for c in ints["codecs"]] == ["bytes", "zstd"]  # zlib has no v3 twin
    assert (out / "grp" / "ints" / "c" / "0" / "0").read_bytes() != (
        src / "grp" / "ints" / "c0" / "0"
    ).read_bytes()
    last = seen[-1]
    assert (last.arrays, last.groups) == (3, 2)
    assert (last.chunks_copied, last.chunks_reencoded) == (2 + 4, 9)
    assert last.chunks_done == last.chunks_total == 15


def test_draft_to_v2_copies_every_chunk(tmp_path: Path) -> None:
    migrate(DRAFT, tmp_path / "out", zarr_format=2)
    src, out = DRAFT / "data" / "root", tmp_path / "out"
    assert (out / "grp" / "ints" / "2.1").read_bytes() == (
        src / "grp" / "ints" / "c2" / "1"
    ).read_bytes()
    assert (out / "fortran" / "1.1").read_bytes() == (src / "fortran" / "c1" / "1").read_bytes()
    assert json.loads((out / "fortran" / ".zarray").read_text())["order"] == "F"


def test_draft_subgroup_migrates_to_a_path(tmp_path: Path) -> None:
    out = migrate(DRAFT, tmp_path / "out", src_path="grp", dst_path="deep/grp")
    assert out.name == "/deep/grp"
    zroot = zarr.open_group(tmp_path / "out", mode="r")
    np.testing.assert_array_equal(zroot["deep/grp/ints"][...], np.arange(35).reshape(5, 7))
    assert list(zroot.group_keys()) == ["deep"]


# -- v2 groups written by zarr-python -------------------------------------------------------


@pytest.fixture
def v2_source(tmp_path: Path) -> tuple[Path, dict[str, np.ndarray]]:
    root = tmp_path / "v2.zarr"
    return root, write_zarr_python_v2(root)


def test_v2_hierarchy_to_v3(tmp_path: Path, v2_source: tuple[Path, dict[str, np.ndarray]]) -> None:
    src, values = v2_source
    out = migrate(src, tmp_path / "v3")
    zroot = zarr.open_group(tmp_path / "v3", mode="r", zarr_format=3)
    assert dict(zroot.attrs) == {"title": "v2 source"} == out.attrs
    assert dict(zroot["sub"].attrs) == {"level": 1}
    for path, want in values.items():
        assert _same(zroot[path][...], want), path
        assert _same(out[path][...], want), path
    temps = zroot["temps"]
    assert temps.dtype == np.dtype("<f4") and np.isnan(temps.fill_value)
    assert temps.metadata.dimension_names == ("y", "x")  # from _ARRAY_DIMENSIONS
    # v2's NaN fill value was xarray's missing marker: in v3 that is the _FillValue
    # attribute (a little-endian double in base64).
    assert dict(temps.attrs) == {"units": "K", "_FillValue": "AAAAAAAA+H8="}
    assert zroot["sub/counts"].fill_value == 0  # v2 "no fill value": zero, as read before
    assert zroot["sub/fort"].fill_value == 7
    assert out["sub/names"].dtype.kind == "T" and out["sub/names"].fill_value == ""
    # Chunk bytes carry over for blosc, raw F-order and vlen-utf8 + zstd; delta+zlib does not.
    for src_key, dst_key in [
        ("temps/1.2", "temps/c/1/2"),
        ("sub/fort/1.2", "sub/fort/c/1/2"),
        ("sub/names/2", "sub/names/c/2"),
    ]:
        assert (tmp_path / "v3" / dst_key).read_bytes() == (src / src_key).read_bytes(), src_key
    assert not (tmp_path / "v3" / "temps" / "c" / "2" / "2").exists()  # never stored
    codecs = json.loads((tmp_path / "v3" / "sub" / "counts" / "zarr.json").read_text())["codecs"]
    assert [c["name"] for c in codecs] == ["bytes", "zstd"]


def test_v2_hierarchy_to_v2_copies_every_byte(
    tmp_path: Path, v2_source: tuple[Path, dict[str, np.ndarray]]
) -> None:
    src, values = v2_source
    migrate(src, tmp_path / "copy", zarr_format=2)
    assert _chunk_files(tmp_path / "copy") == _chunk_files(src)
    zroot = zarr.open_group(tmp_path / "copy", mode="r", zarr_format=2)
    for path, want in values.items():
        assert _same(zroot[path][...], want), path
    assert dict(zroot["temps"].attrs) == {"_ARRAY_DIMENSIONS": ["y", "x"], "units": "K"}


def test_consolidated_source_gives_a_consolidated_result(
    tmp_path: Path, v2_source: tuple[Path, dict[str, np.ndarray]]
) -> None:
    src, values = v2_source
    zarr.consolidate_metadata(src)
    migrate(src, tmp_path / "v3")
    root = json.loads((tmp_path / "v3" / "zarr.json").read_text())
    assert sorted(root["consolidated_metadata"]["metadata"]) == [
        "sub",
        "sub/counts",
        "sub/fort",
        "sub/names",
        "temps",
    ]
    zroot = zarr.open_consolidated(tmp_path / "v3", zarr_format=3)
    assert _same(zroot["sub/counts"][...], values["sub/counts"])
    migrate(src, tmp_path / "plain", consolidate=False)
    assert "consolidated_metadata" not in json.loads((tmp_path / "plain" / "zarr.json").read_text())


def test_consolidate_on_request(tmp_path: Path) -> None:
    migrate(DRAFT, tmp_path / "out", consolidate=True)
    root = json.loads((tmp_path / "out" / "zarr.json").read_text())
    assert sorted(root["consolidated_metadata"]["metadata"]) == [
        "floats",
        "fortran",
        "grp",
        "grp/ints",
    ]
    zroot = zarr.open_consolidated(tmp_path / "out", zarr_format=3)
    np.testing.assert_array_equal(zroot["grp/ints"][...], np.arange(35).reshape(5, 7))


# -- v1 ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("zarr_format", [3, 2])
def test_v1_array_migrates_with_attrs_dtype_and_fill(tmp_path: Path, zarr_format: int) -> None:
    data = np.arange(30, dtype=">i2").reshape(5, 6)
    write_v1(
        tmp_path / "v1",
        data,
        (2, 4),
        "blosc",
        {"cname": "lz4", "clevel": 5, "shuffle": 1},
        numcodecs.Blosc("lz4", 5, 1),
        fill_value=-5,
        attrs={"a": [1, 2]},
        skip=((2, 1),),
    )
    out = migrate(tmp_path / "v1", tmp_path / "out", zarr_format=zarr_format)
    assert isinstance(out, aiozarr.Array)
    got = zarr.open_array(tmp_path / "out", mode="r", zarr_format=zarr_format)
    expected = data.copy()
    expected[4:, 4:] = -5  # the skipped chunk reads as the fill value
    np.testing.assert_array_equal(got[...], expected)
    assert dict(got.attrs) == {"a": [1, 2]} and got.fill_value == -5
    assert got.dtype == (np.dtype(">i2") if zarr_format == 2 else np.dtype("<i2"))
    key = "1.1" if zarr_format == 2 else "c/1/1"
    assert (tmp_path / "out" / key).read_bytes() == (tmp_path / "v1" / "1.1").read_bytes()


# -- batching ---------------------------------------------------------------------------------


def _chunk_batches(counting: CountingStore) -> list[list[Any]]:
    """The `get_partial_values` calls that asked for chunks (not metadata documents)."""
    return [
        batch
        for batch in counting.batches
        if any(r.key.rpartition("/")[2] not in METADATA_NAMES for r in batch)
    ]


async def test_chunks_of_every_array_are_fetched_in_one_batch(
    tmp_path: Path, v2_source: tuple[Path, dict[str, np.ndarray]]
) -> None:
    src, _ = v2_source
    counting = CountingStore(LocalStore(src, read_only=True))
    await migrate_async(counting, tmp_path / "v3")
    stored = sorted(k for k in _chunk_files(src))
    chunk_batches = _chunk_batches(counting)
    assert len(chunk_batches) == 1  # 8 + 3 + 3 + 6 chunks of four arrays: one batch
    assert sorted(r.key for r in chunk_batches[0]) == stored  # no request for a missing chunk
    others = {key for op, key, _ in counting.requests if op == "get"} - set(stored)
    assert {key.rpartition("/")[2] for key in others} <= METADATA_NAMES  # the rest: metadata


async def test_big_migrations_go_in_batches_of_many_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(migrate_module, "_BATCH", 16)
    root = zarr.create_group(tmp_path / "src", zarr_format=2)
    arr = root.create_array("a", shape=(100,), chunks=(2,), dtype="i4", compressors=None)
    arr[:] = np.arange(100)
    counting = CountingStore(LocalStore(tmp_path / "src", read_only=True))
    seen: list[MigrateProgress] = []
    await migrate_async(counting, tmp_path / "out", progress=seen.append)
    sizes = sorted(len(b) for b in _chunk_batches(counting))
    assert sizes == [2, 16, 16, 16]  # 50 chunks: 4 rounds, not 50
    assert len(seen) == 5 and seen[-1].chunks_done == seen[-1].chunks_total == 50
    np.testing.assert_array_equal(aiozarr.open_array(tmp_path / "out", "a")[:], np.arange(100))


# -- refusals -------------------------------------------------------------------------------


def test_existing_destination_needs_overwrite(tmp_path: Path) -> None:
    migrate(DRAFT, tmp_path / "out")
    with pytest.raises(NodeExistsError, match="already exists"):
        migrate(DRAFT, tmp_path / "out")
    migrate(DRAFT, tmp_path / "out", src_path="grp", overwrite=True)
    assert aiozarr.open_group(tmp_path / "out", mode="r").member_names() == ["ints"]


def test_migrating_onto_the_source_is_refused(tmp_path: Path) -> None:
    draft = shutil.copytree(DRAFT, tmp_path / "draft")
    with pytest.raises(InvalidValueError, match="onto itself"):
        migrate(draft, draft, overwrite=True)
    with pytest.raises(InvalidValueError, match="onto itself"):
        migrate(draft, draft, dst_path="grp/new")
    assert aiozarr.open_group(draft, mode="r").member_names() == ["floats", "fortran", "grp"]


def test_migrating_onto_the_source_through_stores_rooted_apart_is_refused(
    tmp_path: Path,
) -> None:
    group = aiozarr.open_group(tmp_path / "g", mode="w", zarr_format=2)
    group.create_array("arr", shape=(4,), dtype="i4", chunks=(2,))[:] = [1, 2, 3, 4]
    with pytest.raises(InvalidValueError, match="onto itself"):
        migrate(tmp_path / "g/arr", tmp_path / "g", dst_path="arr", overwrite=True)
    assert aiozarr.open_array(tmp_path / "g/arr")[:].tolist() == [1, 2, 3, 4]


def test_missing_source_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(NodeNotFoundError, match="no Zarr array or group"):
        migrate(tmp_path / "nothing", tmp_path / "out")


def test_object_codec_without_a_v3_twin_is_refused_before_writing(tmp_path: Path) -> None:
    root = aiozarr.create_group(tmp_path / "src", zarr_format=2)
    arr = root.create_array(
        "objs", shape=(2,), chunks=(2,), dtype=object, filters=[numcodecs.JSON()]
    )
    arr[:] = np.array([{"a": 1}, [2]], dtype=object)
    with pytest.raises(UnsupportedError, match="no Zarr v3 equivalent"):
        migrate(tmp_path / "src", tmp_path / "out")
    assert not (tmp_path / "out" / "zarr.json").exists()
    out = migrate(tmp_path / "src", tmp_path / "v2", zarr_format=2)
    assert list(out["objs"][:]) == [{"a": 1}, [2]]


def test_variable_length_bytes_and_a_numeric_string_fill(tmp_path: Path) -> None:
    from zarr.core.dtype import VariableLengthBytes

    root = zarr.create_group(tmp_path / "src", zarr_format=2)
    blobs = root.create_array("b", shape=(3,), chunks=(2,), dtype=VariableLengthBytes())
    blobs[:] = np.array([b"x", b"", b"zz"], dtype=object)
    names = root.create_array("s", shape=(3,), chunks=(2,), dtype=str)
    names[:] = np.array(["a", "b", "c"])
    zarray = tmp_path / "src" / "s" / ".zarray"  # zarr-python 2 wrote 0 for object arrays
    zarray.write_text(json.dumps({**json.loads(zarray.read_text()), "fill_value": 0}))
    migrate(tmp_path / "src", tmp_path / "v3")
    doc = json.loads((tmp_path / "v3" / "b" / "zarr.json").read_text())
    assert doc["data_type"] == "bytes" and doc["codecs"][0]["name"] == "vlen-bytes"
    assert (tmp_path / "v3" / "b" / "c" / "1").read_bytes() == (
        tmp_path / "src" / "b" / "1"
    ).read_bytes()
    # the v2 fill 0 reads "0" where unwritten (as in zarr-python 3): the v3 fill keeps it
    assert json.loads((tmp_path / "v3" / "s" / "zarr.json").read_text())["fill_value"] == "0"
    zroot = zarr.open_group(tmp_path / "v3", mode="r", zarr_format=3)
    assert list(zroot["b"][...]) == [b"x", b"", b"zz"]
    assert list(zroot["s"][...]) == ["a", "b", "c"]


@pytest.mark.parametrize("dtype", ["M8[D]", "m8[s]"])
def test_a_v2_time_without_fill_migrates_to_a_nat_fill(tmp_path: Path, dtype: str) -> None:
    # v2 null read NaT where nothing was written: the v3 fill keeps it (not the epoch)
    src = aiozarr.create_array(
        tmp_path / "src.zarr", shape=(4,), chunks=(2,), dtype=dtype, zarr_format=2
    )
    src[2:] = np.array([5, 5], dtype=dtype)
    migrate(tmp_path / "src.zarr", tmp_path / "dst.zarr")
    migrated = aiozarr.open_array(tmp_path / "dst.zarr")
    assert np.isnat(migrated.fill_value)
    assert np.isnat(migrated[:]).tolist() == [True, True, False, False]


@pytest.mark.parametrize("zarr_format", [None, 2, 3])
def test_a_draft_hierarchy_copies_to_another_format(
    tmp_path: Path, zarr_format: int | None
) -> None:
    # the draft's own metadata cannot be written: every array is converted, as asked or
    # to the format aiozarr reports for it (2); it failed part way, the root written
    copy(DRAFT, tmp_path / "out", zarr_format=zarr_format)
    for name in ("floats", "fortran", "grp/ints"):
        ours = aiozarr.open_array(tmp_path / "out", name)
        assert ours.zarr_format == (zarr_format or 2)
        np.testing.assert_array_equal(ours[...], aiozarr.open_array(DRAFT, name)[...])


def test_a_rerun_into_the_chunks_of_a_killed_migration_is_refused(tmp_path: Path) -> None:
    """A killed migration leaves chunks and no root document; a run without overwrite
    kept them, and a chunk the source no longer stores read as the old values."""
    source = tmp_path / "src.zarr"
    old = zarr.create_array(source, shape=(4,), chunks=(2,), dtype="i4", zarr_format=2)
    old[...] = [1, 2, 3, 4]
    target = tmp_path / "dst.zarr"
    migrate(source, target)
    (target / "zarr.json").unlink()  # as a migration killed before its root document
    old[0:2] = 0  # zarr-python deletes the chunk: all fill value now
    with pytest.raises(NodeExistsError, match="interrupted migration"):
        migrate(source, target)
    migrate(source, target, overwrite=True)
    np.testing.assert_array_equal(aiozarr.open_array(target)[...], [0, 0, 3, 4])


def test_a_migration_below_a_consolidated_group_is_listed_in_its_snapshot(
    tmp_path: Path,
) -> None:
    """The group's snapshot listed the array replaced as it was (`<i4`): read through it,
    the new array's `<f4` bytes read as integers."""
    src, dst = tmp_path / "src.zarr", tmp_path / "dst.zarr"
    old = aiozarr.create_array(src, shape=(20,), chunks=(5,), dtype="i4", zarr_format=2)
    old[...] = np.arange(20)
    aiozarr.create_group(dst, zarr_format=3)
    migrate(src, dst, dst_path="sub/x")
    aiozarr.consolidate_metadata(dst)
    new = aiozarr.create_array(
        src, shape=(20,), chunks=(5,), dtype="f4", zarr_format=2, overwrite=True
    )
    new[...] = np.arange(20) + 0.5
    migrate(src, dst, dst_path="sub/x", overwrite=True)
    root = aiozarr.open_group(dst, mode="r")
    assert root.metadata.consolidated is not None
    np.testing.assert_array_equal(root["sub/x"][...], np.arange(20) + 0.5)
    np.testing.assert_array_equal(zarr.open_consolidated(dst, mode="r")["sub/x"][...], new[...])
