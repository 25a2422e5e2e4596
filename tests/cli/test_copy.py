"""The library-level copy: conversions, progress, resume verification, groups."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.cli.test_cli import aiozarr_cli

import aiozarr
from aiozarr.emulator import Emulator
from aiozarr.errors import InvalidValueError, MetadataError, NodeExistsError
from aiozarr.storage.backends.counting import CountingStore
from aiozarr.storage.backends.memory import MemoryStore
from aiozarr.tools.copying import CopyProgress, copy, copy_async, parse_codec


def _source(path: Path, zarr_format: int = 2) -> tuple[str, np.ndarray]:
    data = np.arange(60 * 50, dtype="i4").reshape(60, 50)
    arr = aiozarr.create_array(
        path,
        shape=data.shape,
        dtype=data.dtype,
        chunks=(10, 10),
        zarr_format=zarr_format,
        compressors=[{"id": "gzip", "level": 1}] if zarr_format == 2 else "auto",
        dimension_names=["y", "x"] if zarr_format == 3 else None,
    )
    arr[...] = data
    return str(path), data


def test_progress_is_monotonic_and_ends_at_total(tmp_path: Path) -> None:
    src, data = _source(tmp_path / "a.zarr")
    events: list[CopyProgress] = []
    copy(src, tmp_path / "b.zarr", zarr_format=3, shards=(20, 50), progress=events.append)
    assert [e.chunks_done for e in events] == [1, 2, 3]  # 3 x 1 shards
    assert all(b.bytes_done > a.bytes_done for a, b in pairwise(events))
    assert events[-1].bytes_done == events[-1].bytes_total == data.nbytes


def test_v2_gzip_converts_to_v3_gzip_and_back(tmp_path: Path) -> None:
    src, data = _source(tmp_path / "a.zarr")
    copy(src, tmp_path / "b.zarr", zarr_format=3)
    v3 = aiozarr.open_array(tmp_path / "b.zarr", mode="r")
    assert [c.name for c in v3.metadata.codecs] == ["bytes", "gzip"]
    copy(tmp_path / "b.zarr", tmp_path / "c.zarr", zarr_format=2, chunks=(30, 25))
    v2 = aiozarr.open_array(tmp_path / "c.zarr", mode="r")
    assert v2.zarr_format == 2 and v2.chunks == (30, 25)
    np.testing.assert_array_equal(v2[...], data)


async def test_resume_rewrites_only_what_differs(tmp_path: Path) -> None:
    src, data = _source(tmp_path / "a.zarr", zarr_format=3)
    dst = CountingStore(MemoryStore())
    await copy_async(src, dst, shards=(20, 50))  # 3 shards
    target = await aiozarr.open_array_async(dst)
    await target.setitem((slice(20, 21), slice(0, 1)), -1)  # corrupt one shard
    dst.reset()
    report = await copy_async(src, dst, shards=(20, 50), resume=True)
    assert (report.chunks_written, report.chunks_skipped) == (1, 2)
    assert dst.counts["set"] == 1  # only the corrupted shard is written again
    np.testing.assert_array_equal(await target.getitem(...), data)


def test_group_copy_keeps_attributes_and_consolidation(tmp_path: Path) -> None:
    group = aiozarr.create_group(tmp_path / "g.zarr", attributes={"title": "t"})
    group.create_group("sub", attributes={"k": 1}).create_array("x", shape=(5,), dtype="u1")
    aiozarr.consolidate_metadata(tmp_path / "g.zarr")
    report = copy(tmp_path / "g.zarr", tmp_path / "h.zarr", zarr_format=2)
    assert (report.arrays, report.groups) == (1, 2)
    copied = aiozarr.open_group(tmp_path / "h.zarr", mode="r")
    assert copied.zarr_format == 2 and copied.attrs == {"title": "t"}
    assert copied.metadata.consolidated is not None
    assert copied["sub"].attrs == {"k": 1}


def test_existing_destination_needs_overwrite_or_resume(tmp_path: Path) -> None:
    src, _ = _source(tmp_path / "a.zarr")
    copy(src, tmp_path / "b.zarr")
    with pytest.raises(NodeExistsError):
        copy(src, tmp_path / "b.zarr")
    copy(src, tmp_path / "b.zarr", overwrite=True)


def test_resume_and_overwrite_together_are_refused(tmp_path: Path) -> None:
    # resumed, overwrite deleted a group where an array goes (and all below it), yet an
    # array stored with other codecs was refused, the message asking for overwrite
    src, _ = _source(tmp_path / "a.zarr", zarr_format=3)
    group = aiozarr.create_group(tmp_path / "b.zarr")
    group.create_group("kept").create_array("x", shape=(2,), dtype="i1")[:] = [5, 6]
    with pytest.raises(InvalidValueError, match="resume and overwrite exclude each other"):
        copy(src, tmp_path / "b.zarr", dst_path="kept", resume=True, overwrite=True)
    assert aiozarr.open_array(tmp_path / "b.zarr", "kept/x")[:].tolist() == [5, 6]
    run = aiozarr_cli("cp", src, str(tmp_path / "c.zarr"), "--resume", "--overwrite", check=False)
    assert run.returncode == 2 and "not allowed with argument" in run.stderr
    assert not (tmp_path / "c.zarr").exists()


def test_bad_conversions_are_clear(tmp_path: Path) -> None:
    src, _ = _source(tmp_path / "a.zarr")
    with pytest.raises(InvalidValueError, match="3 dimensions"):
        copy(src, tmp_path / "b.zarr", zarr_format=3, shards=(20, 20, 20))
    with pytest.raises(InvalidValueError, match="zarr_format 3"):
        copy(src, tmp_path / "b.zarr", shards=(20, 20))
    with pytest.raises(InvalidValueError, match="expected zstd"):
        parse_codec("lzma:3", 3)
    for extra in ("zstd:5:9", "gzip:6:1", "blosc:lz4:5:2", "none:3"):  # not dropped: refused
        with pytest.raises(InvalidValueError, match="expected zstd"):
            parse_codec(extra, 3)
    assert parse_codec("zstd:5", 2) == [{"id": "zstd", "level": 5}]


@pytest.mark.parametrize("source_format", [3, 2])
def test_copy_between_formats_keeps_dimension_names_for_xarray(
    tmp_path: Path, source_format: int
) -> None:
    import xarray as xr

    ds = xr.Dataset(
        {
            "t": (("time", "lat", "lon"), np.arange(24.0).reshape(2, 3, 4), {"units": "K"}),
            "mask": ("lat", np.array([1, -1, 3], dtype="i2")),  # -1: xarray's missing marker
        },
        coords={"lat": [10.0, 20.0, 30.0], "time": [0, 1]},
    )
    encoding = {"mask": {"_FillValue": -1}}
    ds.to_zarr(
        tmp_path / "src.zarr", zarr_format=source_format, consolidated=False, encoding=encoding
    )
    original = xr.open_zarr(tmp_path / "src.zarr", consolidated=False).load()
    assert np.isnan(original["mask"].values[1])
    target = 5 - source_format
    # The library call and the command line (a subprocess) do the same conversion.
    copy(tmp_path / "src.zarr", tmp_path / "lib.zarr", zarr_format=target)
    aiozarr_cli(
        "cp", str(tmp_path / "src.zarr"), str(tmp_path / "cli.zarr"), "--zarr-format", str(target)
    )
    for name in ("lib.zarr", "cli.zarr"):
        arr = aiozarr.open_array(tmp_path / name, "t", mode="r")
        assert arr.zarr_format == target
        if target == 2:
            assert arr.attrs["_ARRAY_DIMENSIONS"] == ["time", "lat", "lon"]
        else:
            assert arr.metadata.dimension_names == ("time", "lat", "lon")
            assert "_ARRAY_DIMENSIONS" not in arr.attrs
        opened = xr.open_zarr(tmp_path / name, zarr_format=target, consolidated=False)
        assert opened["t"].dims == ("time", "lat", "lon")
        assert opened["t"].attrs == {"units": "K"}
        # Same values, missing markers and coordinates (time 0 is not taken for missing).
        xr.testing.assert_identical(opened.load(), original)


def test_resumed_copy_keeps_minus_zero_and_nan_payloads(tmp_path: Path) -> None:
    # Units equal to the fill (or to what is stored) only by value are still written.
    odd_nan = np.array(0x7FF8_0000_0000_0001, dtype="<u8").view("<f8")[()]
    data = np.array([-0.0, -0.0, odd_nan, odd_nan, 0.0, 0.0, 1.0, 1.0])
    src = aiozarr.create_array(tmp_path / "src.zarr", shape=(8,), chunks=(2,), dtype="f8")
    src[...] = data
    dst = aiozarr.create_array(
        tmp_path / "dst.zarr", shape=(8,), chunks=(2,), dtype="f8", fill_value=np.nan
    )
    dst[...] = [0.0, 0.0, np.nan, np.nan, 0.0, 0.0, 1.0, 1.0]  # equal values, other bits
    report = copy(tmp_path / "src.zarr", tmp_path / "dst.zarr", resume=True)
    assert report.chunks_written == 2 and report.chunks_skipped == 2
    copied = aiozarr.open_array(tmp_path / "dst.zarr", mode="r")[...]
    assert copied.view("<u8").tolist() == data.view("<u8").tolist()
    fresh = copy(tmp_path / "src.zarr", tmp_path / "new.zarr", resume=True)
    assert fresh.chunks_written == 3 and fresh.chunks_skipped == 1  # the +0.0 chunk: the fill
    again = aiozarr.open_array(tmp_path / "new.zarr", mode="r")[...]
    assert again.view("<u8").tolist() == data.view("<u8").tolist()


def test_copying_with_overwrite_onto_the_source_is_refused(tmp_path: Path) -> None:
    # overwriting deletes the destination first: here, what is being copied
    src, values = _source(tmp_path / "a.zarr")
    group = aiozarr.open_group(tmp_path / "g.zarr", mode="w")
    group.create_array("sub/x", shape=(2,), dtype="i4")[:] = [1, 2]
    for source, destination, options in [
        (src, src, {}),
        (tmp_path / "g.zarr", tmp_path / "g.zarr", {"src_path": "sub/x"}),  # onto its parent
        (tmp_path / "g.zarr", tmp_path / "g.zarr", {"dst_path": "sub"}),  # into itself
    ]:
        with pytest.raises(InvalidValueError, match="would delete what is being copied"):
            copy(source, destination, overwrite=True, **options)
    np.testing.assert_array_equal(aiozarr.open_array(src)[...], values)
    assert aiozarr.open_array(tmp_path / "g.zarr", "sub/x")[:].tolist() == [1, 2]


@pytest.mark.parametrize("resume", [False, True])
def test_copying_into_the_source_is_refused_without_overwrite(tmp_path: Path, resume: bool) -> None:
    # a resumed copy into the source's own subgroup copied the copy into itself again
    group = aiozarr.create_group(tmp_path / "g.zarr")
    group.create_array("x", shape=(4,), dtype="i4", chunks=(2,))[:] = [1, 2, 3, 4]
    for destination, options in [
        (tmp_path / "g.zarr", {"dst_path": "copy"}),  # into itself
        (tmp_path / "g.zarr" / "copy", {}),  # the same, through a store rooted inside it
        (tmp_path / "g.zarr", {"src_path": "x"}),  # onto its group
    ]:
        with pytest.raises(InvalidValueError, match="would write into what it is reading"):
            copy(tmp_path / "g.zarr", destination, resume=resume, **options)
    assert sorted(p.name for p in (tmp_path / "g.zarr").iterdir()) == ["x", "zarr.json"]
    run = aiozarr_cli("cp", str(tmp_path / "g.zarr"), str(tmp_path / "g.zarr/c"), check=False)
    assert run.returncode == 1 and "onto itself, a node inside it or one" in run.stderr
    copy(tmp_path / "g.zarr", tmp_path / "g.zarr", src_path="x", dst_path="y")  # siblings
    assert aiozarr.open_array(tmp_path / "g.zarr", "y")[:].tolist() == [1, 2, 3, 4]


def test_copying_onto_the_source_through_stores_rooted_apart_is_refused(
    tmp_path: Path, emulator: Emulator
) -> None:
    # the node named through its group's store and through its own: one node
    options = emulator.storage_options()
    group = aiozarr.open_group(emulator.s3_url("apart/g"), mode="w", storage_options=options)
    group.create_array("arr", shape=(4,), dtype="i4", chunks=(2,))[:] = [1, 2, 3, 4]
    local = aiozarr.open_group(tmp_path / "g", mode="w")
    local.create_array("arr", shape=(4,), dtype="i4", chunks=(2,))[:] = [1, 2, 3, 4]
    for source, destination, paths, storage in [
        (emulator.s3_url("apart/g/arr"), emulator.s3_url("apart/g"), {"dst_path": "arr"}, options),
        (tmp_path / "g", tmp_path / "g/arr", {"src_path": "arr"}, None),
        (tmp_path / "g/arr", tmp_path / "g", {}, None),  # its group onto it
    ]:
        with pytest.raises(InvalidValueError, match="would delete what is being copied"):
            copy(source, destination, overwrite=True, storage_options=storage, **paths)
    stored = aiozarr.open_array(emulator.s3_url("apart/g/arr"), storage_options=options)
    assert stored[:].tolist() == [1, 2, 3, 4]
    assert aiozarr.open_array(tmp_path / "g/arr")[:].tolist() == [1, 2, 3, 4]


@pytest.mark.parametrize(("zarr_format", "conversion"), [(3, {}), (2, {}), (2, {"zarr_format": 3})])
def test_resume_ends_with_the_sources_attributes_everywhere(
    tmp_path: Path, zarr_format: int, conversion: dict[str, int]
) -> None:
    src, dst = tmp_path / "g.zarr", tmp_path / "h.zarr"
    group = aiozarr.create_group(src, attributes={"title": "old"}, zarr_format=zarr_format)
    sub = group.create_group("sub", attributes={"k": 1, "gone": True})
    arr = sub.create_array("x", shape=(6,), dtype="i2", chunks=(2,), attributes={"v": 1})
    arr[...] = np.arange(6, dtype="i2")
    copy(src, dst, **conversion)
    # the source's attributes change between the interrupted copy and the resume
    aiozarr.open_group(src).attrs["title"] = "new"
    del aiozarr.open_group(src, path="sub").attrs["gone"]
    aiozarr.open_array(src, path="sub/x").attrs.update({"v": 2, "units": "m"})
    report = copy(src, dst, resume=True, **conversion)
    assert (report.chunks_written, report.chunks_skipped) == (0, 3)  # nothing copied again
    fresh = tmp_path / "fresh.zarr"
    copy(src, fresh, **conversion)
    for path, attributes in (("", {"title": "new"}), ("sub", {"k": 1})):
        assert aiozarr.open_group(dst, path=path, mode="r").attrs == attributes
        assert aiozarr.open_group(fresh, path=path, mode="r").attrs == attributes
    resumed = aiozarr.open_array(dst, path="sub/x", mode="r")
    assert resumed.attrs == {"v": 2, "units": "m"}
    assert resumed.metadata == aiozarr.open_array(fresh, path="sub/x", mode="r").metadata
    np.testing.assert_array_equal(resumed[...], np.arange(6, dtype="i2"))


def test_resume_into_an_array_stored_with_other_codecs_is_refused(tmp_path: Path) -> None:
    src, _ = _source(tmp_path / "a.zarr", zarr_format=3)
    copy(src, tmp_path / "b.zarr", codec="gzip:1")
    with pytest.raises(MetadataError, match="cannot resume into"):
        copy(src, tmp_path / "b.zarr", codec="zstd:3", resume=True)


def test_resume_into_an_array_respelled_by_tensorstore(tmp_path: Path) -> None:
    """TensorStore rewrites a sharded array's document with `index_location` left out at
    its default: the same layout, so the resume goes on rather than refusing it."""
    src, data = _source(tmp_path / "a.zarr", zarr_format=3)
    dst = tmp_path / "b.zarr"
    copy(src, dst, shards=(20, 20))
    document_path = dst / "zarr.json"
    document = json.loads(document_path.read_text())
    assert document["codecs"][0]["configuration"].pop("index_location") == "end"
    document_path.write_text(json.dumps(document))
    report = copy(src, dst, shards=(20, 20), resume=True)
    assert report.chunks_written == 0
    np.testing.assert_array_equal(aiozarr.open_array(dst, mode="r")[...], data)


def _sharded(path: Path) -> tuple[Path, np.ndarray]:
    data = np.arange(64 * 64, dtype="i4").reshape(64, 64)
    aiozarr.create_array(path, data=data, chunks=(8, 8), shards=(32, 32))
    return path, data


def test_new_chunks_keep_the_shards_they_divide(tmp_path: Path) -> None:
    src, data = _sharded(tmp_path / "a.zarr")
    copy(src, tmp_path / "b.zarr", chunks=(16, 16))  # the sharding was dropped
    copied = aiozarr.open_array(tmp_path / "b.zarr", mode="r")
    assert (copied.chunks, copied.shards) == ((16, 16), (32, 32))
    np.testing.assert_array_equal(copied[...], data)
    copy(src, tmp_path / "c.zarr", chunks=(16, 16), shards=False)
    unsharded = aiozarr.open_array(tmp_path / "c.zarr", mode="r")
    assert (unsharded.chunks, unsharded.shards) == ((16, 16), None)
    np.testing.assert_array_equal(unsharded[...], data)


def test_new_chunks_that_do_not_divide_the_shards_are_refused(tmp_path: Path) -> None:
    src, _ = _sharded(tmp_path / "a.zarr")
    with pytest.raises(InvalidValueError, match=r"do not divide the shards .*--shards none"):
        copy(src, tmp_path / "b.zarr", chunks=(12, 12))
    assert not (tmp_path / "b.zarr").exists()


def test_the_command_line_writes_unsharded_with_shards_none(tmp_path: Path) -> None:
    src, data = _sharded(tmp_path / "a.zarr")
    aiozarr_cli("cp", str(src), str(tmp_path / "b.zarr"), "--chunks", "16,16", "--shards", "none")
    copied = aiozarr.open_array(tmp_path / "b.zarr", mode="r")
    assert (copied.chunks, copied.shards) == ((16, 16), None)
    np.testing.assert_array_equal(copied[...], data)


def test_the_command_line_refuses_a_copy_into_its_own_memory(tmp_path: Path) -> None:
    src, _ = _sharded(tmp_path / "a.zarr")
    result = aiozarr_cli("cp", str(src), "memory://copy", check=False)
    assert result.returncode == 2  # it said "copied 1 array" of a copy gone at exit
    assert "would end with the command" in result.stderr


def test_a_cast_before_the_sharding_codec_is_copied_into_the_shards_given(
    tmp_path: Path,
) -> None:
    # `[cast_value, sharding_indexed]`: the sharding codec was taken for the serializer,
    # so shards=False still wrote a sharded array, new shards nested one sharding codec
    # in another, and new chunks were refused (the old inner chunks must divide them)
    src = aiozarr.create_array(
        tmp_path / "a.zarr",
        shape=(12,),
        chunks=(6,),
        dtype="float64",
        fill_value=0.3,
        filters=[{"name": "cast_value", "configuration": {"data_type": "uint8"}}],
        serializer={"name": "sharding_indexed", "configuration": {"chunk_shape": [2]}},
        compressors=None,
    )
    src[:5] = [0.1, 1, 2, 3.4, 4]
    data = src[...]  # 0.0 where a missing inner chunk decodes the cast fill value
    options: list[dict[str, Any]] = [
        {"shards": False},
        {"chunks": (3,)},
        {"shards": (4,)},
        {"codec": "zstd:3"},
    ]
    layouts = [((2,), None), ((3,), (6,)), ((2,), (4,)), ((2,), (6,))]
    for n, (kwargs, layout) in enumerate(zip(options, layouts, strict=True)):
        copy(tmp_path / "a.zarr", tmp_path / f"{n}.zarr", **kwargs)
        copied = aiozarr.open_array(tmp_path / f"{n}.zarr", mode="r")
        assert (copied.chunks, copied.shards) == layout, kwargs
        names = [c.name for c in copied.metadata.codecs]
        assert names.count("sharding_indexed") == (layout[1] is not None), names
        np.testing.assert_array_equal(copied[...], data)


def test_a_shard_compressed_whole_is_copied_compressed(tmp_path: Path) -> None:
    # `[sharding_indexed, zstd]`: the zstd after the sharding codec was dropped by any
    # conversion, and the copy was stored uncompressed (v2 too)
    src = aiozarr.create_array(
        tmp_path / "a.zarr",
        shape=(12,),
        chunks=(6,),
        dtype="float64",
        serializer={"name": "sharding_indexed", "configuration": {"chunk_shape": [2]}},
        compressors=[{"name": "zstd", "configuration": {"level": 1}}],
    )
    src[:] = np.arange(12.0)
    for n, kwargs in enumerate([{"chunks": (3,)}, {"shards": False}, {"zarr_format": 2}]):
        copy(tmp_path / "a.zarr", tmp_path / f"{n}.zarr", **kwargs)
        copied = aiozarr.open_array(tmp_path / f"{n}.zarr", mode="r")
        names = [getattr(c, "name", None) or c.codec_id for c in copied.compressors]
        assert names == ["zstd"], kwargs
        np.testing.assert_array_equal(copied[...], np.arange(12.0))
