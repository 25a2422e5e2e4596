"""The 2020 v3 draft: a hierarchy written by zarr-python 2.18 (data/), and spec examples."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numcodecs
import numpy as np
import pytest

import aiozarr
from aiozarr.errors import MetadataError, UnsupportedError
from aiozarr.metadata import v3draft
from aiozarr.storage.backends.counting import CountingStore
from aiozarr.storage.backends.local import LocalStore

FIXTURE = Path(__file__).parent / "data" / "v3draft.zarr"


@pytest.fixture
def draft(tmp_path: Path) -> Path:
    return Path(shutil.copytree(FIXTURE, tmp_path / "draft.zarr"))


def test_zarr_python_218_hierarchy_opens(draft: Path) -> None:
    root = aiozarr.open_group(draft, mode="r")
    assert root.attrs == {"title": "draft fixture"}
    assert root.member_names() == ["floats", "fortran", "grp"]
    ints = root["grp"]["ints"]
    assert ints.attrs == {"units": "m"}
    np.testing.assert_array_equal(ints[:], np.arange(35, dtype="<i4").reshape(5, 7))


def test_draft_arrays_read_by_path(draft: Path) -> None:
    floats = aiozarr.open_array(draft, "floats", mode="r")
    assert floats.dtype == np.dtype(">f8")
    expected = np.concatenate([np.linspace(0, 1, 8), [np.nan, np.nan]])
    np.testing.assert_array_equal(floats[:], expected)
    fortran = aiozarr.open_array(draft, "fortran", mode="r")
    np.testing.assert_array_equal(fortran[:], np.arange(16, dtype="<u2").reshape(4, 4))
    assert aiozarr.open(draft, "grp/ints", mode="r")[4, 6] == 34


def test_draft_chunks_are_counted_from_their_keys(draft: Path) -> None:
    # the draft writes `c0/0`: no separator after the `c`
    counts = {p: aiozarr.open_array(draft, p, mode="r") for p in ("grp/ints", "floats", "fortran")}
    assert {p: (a.nchunks_initialized, a.nchunks) for p, a in counts.items()} == {
        "grp/ints": (9, 9),
        "floats": (2, 3),
        "fortran": (4, 4),
    }


async def test_draft_root_open_costs_two_round_trips_and_one_listing(draft: Path) -> None:
    counting = CountingStore(LocalStore(draft))
    root = await aiozarr.open_group_async(counting, mode="r")
    ints = await root.getitem("grp/ints")
    assert ints.shape == (5, 7)
    assert counting.requests[0][1] == "zarr.json"
    assert counting.counts["list"] == 1
    # zarr.json with v2's .zmetadata, the root's documents, then every member's
    assert len(counting.batches) == 3


def test_draft_metadata_is_read_only(draft: Path) -> None:
    arr = aiozarr.open_array(draft, "floats", mode="r+")
    with pytest.raises(MetadataError, match="migrate"):
        arr.update_attributes({"x": 1})


def test_a_draft_hierarchy_is_not_consolidated(draft: Path) -> None:
    """Its metadata is read only: no `.zmetadata` is written beside the draft's."""
    with pytest.raises(MetadataError, match=r"cannot consolidate 2020 Zarr v3 draft.*migrate"):
        aiozarr.consolidate_metadata(draft)
    assert not (draft / ".zmetadata").exists()


def _spec_example(root: Path, doc: dict, chunks: dict[str, bytes]) -> None:
    (root / "meta").mkdir(parents=True)
    entry = {
        "zarr_format": v3draft.PROTOCOL,
        "metadata_encoding": v3draft.PROTOCOL,
        "metadata_key_suffix": ".json",
        "extensions": [],
    }
    (root / "zarr.json").write_text(json.dumps(entry))
    (root / "meta" / "root.array.json").write_text(json.dumps(doc))
    for key, value in chunks.items():
        (root / "data" / "root" / key).parent.mkdir(parents=True, exist_ok=True)
        (root / "data" / "root" / key).write_bytes(value)


def test_spec_example_root_array_gzip_dot_separator_hex_fill(tmp_path: Path) -> None:
    doc = {
        "shape": [4, 3],
        "data_type": "<i2",
        "chunk_grid": {"type": "regular", "chunk_shape": [2, 3], "separator": "."},
        "chunk_memory_layout": "C",
        "compressor": {
            "codec": "https://purl.org/zarr/spec/codec/gzip/1.0",
            "configuration": {"level": 1},
        },
        "fill_value": "0xfffe",
        "extensions": [],
        "attributes": {"foo": 42},
    }
    block = np.arange(6, dtype="<i2").reshape(2, 3)
    _spec_example(tmp_path, doc, {"c0.0": numcodecs.GZip(1).encode(block.tobytes())})
    arr = aiozarr.open_array(tmp_path, mode="r")
    assert arr.attrs == {"foo": 42}
    np.testing.assert_array_equal(arr[:2], block)
    np.testing.assert_array_equal(arr[2:], np.full((2, 3), -2))


def test_spec_example_extension_dtype_and_bool(tmp_path: Path) -> None:
    doc = {
        "shape": [2],
        "data_type": {
            "extension": "https://purl.org/zarr/spec/protocol/extensions/datetime-dtypes/1.0",
            "type": "<M8[ns]",
            "fallback": "<i8",
        },
        "chunk_grid": {"type": "regular", "chunk_shape": [2], "separator": "/"},
        "chunk_memory_layout": "C",
        "fill_value": None,
        "extensions": [],
        "attributes": {},
    }
    values = np.array(["2020-10-16", "2021-01-01"], dtype="<M8[ns]")
    _spec_example(tmp_path, doc, {"c0": values.tobytes()})
    np.testing.assert_array_equal(aiozarr.open_array(tmp_path, mode="r")[:], values)
    meta = v3draft.parse_array({**doc, "data_type": "bool", "fill_value": True}, "k")
    assert meta.dtype == np.dtype(bool) and meta.fill_value


def test_must_understand_extension_is_refused() -> None:
    doc = {"metadata_encoding": v3draft.PROTOCOL, "extensions": [{"extension": "x"}]}
    with pytest.raises(UnsupportedError, match="extension"):
        v3draft.parse_entry_point(doc)
