"""A copy stopped part way: the arrays it finished read as the source's, the one it was
writing is a placeholder no reader opens (its missing units would read as fill values),
and `resume` finishes it."""

from __future__ import annotations

import warnings
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tensorstore as ts
import zarr

import aiozarr
from aiozarr.errors import MetadataError, NodeExistsError, UnfinishedNodeError
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
