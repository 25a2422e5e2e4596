"""A copy stopped part way: the arrays it finished read as the source's, the one it was
writing is a placeholder no reader opens (its missing units would read as fill values),
and `resume` finishes it."""

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
from aiozarr.errors import (
    MetadataError,
    NodeExistsError,
    NodeNotFoundError,
    UnfinishedNodeError,
)
from aiozarr.tools.copying import CopyProgress, copy


class Stop(Exception):
    """Raised by the progress callback: the copy stops there."""


def _stop_after(units: int) -> Any:
    def progress(state: CopyProgress) -> None:
        if state.chunks_done == units:
            raise Stop

    return progress


def _source(path: Path, zarr_format: int) -> dict[str, np.ndarray]:
    group = aiozarr.create_group(path, zarr_format=zarr_format, attributes={"title": "t"})
    values = {}
    for name in ("a", "b", "c"):
        data = np.arange(40 * 30, dtype="f8").reshape(40, 30) + ord(name)
        arr = group.create_array(name, shape=data.shape, dtype=data.dtype, chunks=(10, 10))
        arr[...] = data
        values[name] = data
    return values


def _opened_by_peers(path: Path, zarr_format: int) -> list[str]:
    """The peers that open the array at `path` (none should)."""
    opened = []
    driver = "zarr3" if zarr_format == 3 else "zarr"
    openers = {
        "zarr": lambda: zarr.open_array(path, mode="r")[...],
        "tensorstore": lambda: ts.open({"driver": driver, "kvstore": f"file://{path}"}).result(),
    }
    for name, open_ in openers.items():
        try:
            open_()
        except (KeyError, ValueError, TypeError):
            continue
        opened.append(name)
    return opened


@pytest.mark.parametrize(
    ("zarr_format", "conversion"),
    [(3, {}), (2, {}), (2, {"zarr_format": 3}), (3, {"shards": (20, 30)})],
)
def test_a_stopped_copy_leaves_no_array_that_reads_fill(
    tmp_path: Path, zarr_format: int, conversion: dict[str, Any]
) -> None:
    src, dst = tmp_path / "src.zarr", tmp_path / "dst.zarr"
    values = _source(src, zarr_format)
    per_array = 12 if "shards" not in conversion else 2
    with pytest.raises(Stop):  # part way through "b"
        # one unit at a time (`max_inflight_bytes`): the stop lands where it is asked
        stop = _stop_after(per_array + per_array // 2)
        copy(src, dst, progress=stop, max_inflight_bytes=1, **conversion)

    np.testing.assert_array_equal(aiozarr.open_array(dst, path="a", mode="r")[...], values["a"])
    with pytest.raises(UnfinishedNodeError, match=r"b/(zarr\.json|\.zarray): the placeholder"):
        aiozarr.open_array(dst, path="b", mode="r")
    with pytest.raises(UnfinishedNodeError, match="--resume"):
        aiozarr.open_group(dst, mode="r").members()
    assert _opened_by_peers(dst / "b", conversion.get("zarr_format", zarr_format)) == []
    with pytest.raises(NodeExistsError):  # neither resumed nor overwritten
        copy(src, dst, **conversion)

    report = copy(src, dst, resume=True, **conversion)
    assert report.chunks_skipped == per_array + per_array // 2
    assert report.chunks_written == 3 * per_array - report.chunks_skipped
    for name, data in values.items():
        np.testing.assert_array_equal(aiozarr.open_array(dst, path=name, mode="r")[...], data)
        np.testing.assert_array_equal(zarr.open_array(dst / name, mode="r")[...], data)
    assert aiozarr.open_group(dst, mode="r").attrs == {"title": "t"}


def test_a_stopped_copy_resumed_in_another_layout_is_refused(tmp_path: Path) -> None:
    src, dst = tmp_path / "src.zarr", tmp_path / "dst.zarr"
    _source(src, 3)
    with pytest.raises(Stop):
        copy(src, dst, codec="gzip:1", progress=_stop_after(5))
    with pytest.raises(MetadataError, match="cannot resume into"):
        copy(src, dst, codec="zstd:3", resume=True)


def test_a_stopped_copy_is_replaced_by_overwrite(tmp_path: Path) -> None:
    src, dst = tmp_path / "src.zarr", tmp_path / "dst.zarr"
    values = _source(src, 3)
    with pytest.raises(Stop):
        copy(src, dst, progress=_stop_after(5))
    copy(src, dst, overwrite=True, chunks=(20, 15))
    copied = aiozarr.open_array(dst, path="a", mode="r")
    assert copied.chunks == (20, 15)
    np.testing.assert_array_equal(copied[...], values["a"])


def test_a_copy_into_a_zip_archive_writes_each_document_once(tmp_path: Path) -> None:
    """An archive only appends: a placeholder would stay in it beside the document."""
    src, dst = tmp_path / "src.zarr", tmp_path / "dst.zip"
    values = _source(src, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # zipfile's "Duplicate name"
        copy(src, dst)
    names = [info.filename for info in zipfile.ZipFile(dst).infolist()]
    assert len(names) == len(set(names))
    np.testing.assert_array_equal(aiozarr.open_array(dst, path="b", mode="r")[...], values["b"])


@pytest.mark.parametrize("zarr_format", [3, 2])
def test_a_copy_into_a_zip_archive_stopped_leaves_no_array_that_reads_fill(
    tmp_path: Path, zarr_format: int
) -> None:
    """The archive gets its directory when the copy stops (its store is closed): the
    array being written is not in it, and resuming finishes it."""
    src, dst = tmp_path / "src.zarr", tmp_path / "dst.zip"
    values = _source(src, zarr_format)
    with pytest.raises(Stop):  # part way through "b"
        copy(src, dst, progress=_stop_after(18), max_inflight_bytes=1)
    gc.collect()
    np.testing.assert_array_equal(aiozarr.open_array(dst, path="a", mode="r")[...], values["a"])
    with pytest.raises(NodeNotFoundError):
        aiozarr.open_array(dst, path="b", mode="r")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # zipfile's "Duplicate name"
        report = copy(src, dst, resume=True)
    assert report.chunks_skipped == 18
    for name, data in values.items():
        np.testing.assert_array_equal(aiozarr.open_array(dst, path=name, mode="r")[...], data)


@pytest.mark.parametrize("zarr_format", [3, 2])
def test_a_copy_below_a_consolidated_group_stopped_is_not_read_through_it(
    tmp_path: Path, zarr_format: int
) -> None:
    """The group's snapshot listed the array replaced as it was: read through it, the
    units not copied yet read as fill values. The copy takes it out of the snapshot
    while it writes, and consolidates the group again once it is done."""
    src, dst = tmp_path / "src.zarr", tmp_path / "dst.zarr"
    values = _source(src, zarr_format)
    copy(src, dst, src_path="a", dst_path="sub/x")
    aiozarr.consolidate_metadata(dst)
    with pytest.raises(Stop):
        copy(src, dst, src_path="b", dst_path="sub/x", overwrite=True, progress=_stop_after(3))
    with pytest.raises(UnfinishedNodeError):
        aiozarr.open_group(dst, mode="r")["sub/x"]
    with pytest.raises((KeyError, ValueError)):  # no snapshot, and the placeholder
        zarr.open_consolidated(dst, mode="r")["sub/x"]

    copy(src, dst, src_path="b", dst_path="sub/x", resume=True)
    root = aiozarr.open_group(dst, mode="r")
    assert root.metadata.consolidated is not None
    np.testing.assert_array_equal(root["sub/x"][...], values["b"])
    np.testing.assert_array_equal(zarr.open_consolidated(dst, mode="r")["sub/x"][...], values["b"])


@pytest.mark.parametrize("zarr_format", [3, 2])
def test_a_copy_into_the_chunks_of_a_stopped_migration_is_refused(
    tmp_path: Path, zarr_format: int
) -> None:
    """A copy leaves out the units of fill values of a sparse source: the chunks left
    there without their documents would have read as its values."""
    old, src, dst = tmp_path / "old.zarr", tmp_path / "src.zarr", tmp_path / "dst.zarr"
    aiozarr.create_array(old, shape=(40,), chunks=(10,), dtype="i4", zarr_format=2)[...] = 5

    def stop(state: Any) -> None:
        raise Stop

    with pytest.raises(Stop):  # after its chunks, before its documents
        aiozarr.migrate(old, dst, zarr_format=zarr_format, progress=stop)
    sparse = aiozarr.create_array(src, shape=(40,), chunks=(10,), dtype="i4", zarr_format=2)
    sparse[:10] = 1
    with pytest.raises(NodeExistsError, match="lies below"):
        copy(src, dst, zarr_format=zarr_format)
    copy(src, dst, zarr_format=zarr_format, resume=True)
    np.testing.assert_array_equal(aiozarr.open_array(dst, mode="r")[...], sparse[...])


def test_a_resume_in_another_format_names_the_formats(tmp_path: Path) -> None:
    """It named shape, dtype and grid, all equal, and not the format, which differed."""
    src, dst = tmp_path / "src.zarr", tmp_path / "dst.zarr"
    _source(src, 2)
    with pytest.raises(Stop):
        copy(src, dst, progress=_stop_after(5))
    with pytest.raises(MetadataError, match=r"zarr_format 2, .* needs zarr_format 3"):
        copy(src, dst, zarr_format=3, resume=True)
