"""Part of an uncompressed chunk read alone: the span its selected values lie in, never
the whole chunk, and the same values as numpy."""

from __future__ import annotations

import json
import struct
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.selection.test_indexing_vs_numpy import basic_selections, grids, orthogonal_selections

import aiozarr
from aiozarr.codecs import CodecChain
from aiozarr.emulator import Emulator
from aiozarr.engine.chunk_parts import part_of
from aiozarr.errors import CodecError
from aiozarr.selection.indexing import basic_indexer
from aiozarr.storage.backends.counting import CountingStore
from aiozarr.storage.backends.memory import MemoryStore

LAYOUTS = {
    "v3": {"compressors": None},
    "v3 big-endian": {
        "compressors": None,
        "serializer": {"name": "bytes", "configuration": {"endian": "big"}},
    },
    "v2": {"compressors": None, "zarr_format": 2},
    "v2 big-endian": {"compressors": None, "zarr_format": 2, "dtype": ">i8"},
    "sharded": {"compressors": None, "shards": "whole"},
}


def _stored(layout: str, data: np.ndarray, chunks: tuple[int, ...]) -> Any:
    options = dict(LAYOUTS[layout])
    dtype = options.pop("dtype", data.dtype)
    if options.get("shards") == "whole":  # two inner chunks per shard along each axis
        options["shards"] = tuple(2 * c for c in chunks)
    arr = aiozarr.create_array(
        MemoryStore(), shape=data.shape, chunks=chunks, dtype=dtype, fill_value=-1, **options
    )
    arr[...] = data
    return arr


@settings(max_examples=120, deadline=None)
@given(st.data(), st.sampled_from(sorted(LAYOUTS)))
def test_parts_read_as_numpy_reads(data: st.DataObject, layout: str) -> None:
    shape, chunks = data.draw(grids())
    chunks = tuple(max(c, 1) for c in chunks)
    values = np.arange(int(np.prod(shape)), dtype="i8").reshape(shape) * 7 - 3
    arr = _stored(layout, values, chunks)
    basic = data.draw(basic_selections(shape))
    np.testing.assert_array_equal(arr[basic], values[basic])
    outer = data.draw(orthogonal_selections(shape))
    np.testing.assert_array_equal(arr.oindex[outer], _outer(values, outer))
    if shape and all(shape):
        points = tuple(
            np.array(data.draw(st.lists(st.integers(0, n - 1), min_size=3, max_size=3)))
            for n in shape
        )
        np.testing.assert_array_equal(arr.vindex[points], values[points])


def _outer(values: np.ndarray, key: tuple[Any, ...]) -> np.ndarray:
    """numpy's reading of an orthogonal selection: each axis picked on its own."""
    picks = [np.arange(n)[k] for k, n in zip(key, values.shape, strict=True)]
    if not picks:
        return values[()]
    outer = values[np.ix_(*[np.atleast_1d(p) for p in picks])]
    return outer.reshape(tuple(np.size(p) for p in picks if np.ndim(p) == 1))


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_one_element_of_a_large_chunk_reads_its_bytes(layout: str) -> None:
    values = np.arange(512 * 512, dtype="i8").reshape(512, 512)
    arr = _stored(layout, values, (256, 256))  # 512 KiB chunks
    counted = CountingStore(arr.store)
    again = aiozarr.open_array(counted, mode="r")
    counted.reset()  # the metadata read at open
    index_bytes = 16 * 4 + 4 if layout == "sharded" else 0  # 2 x 2 inner chunks, crc32c
    assert again[300, 7] == values[300, 7]
    assert counted.bytes_read - index_bytes == 8
    counted.reset()
    np.testing.assert_array_equal(again[3:5, 100:104], values[3:5, 100:104])
    assert counted.bytes_read == (256 + 4) * 8  # row 3 from 100 to row 4 at 103; index kept
    counted.reset()
    np.testing.assert_array_equal(again[10:3:-2, 7], values[10:3:-2, 7])
    assert counted.bytes_read == (6 * 256 + 1) * 8  # a step down: rows 4 to 10 of column 7


def test_a_compressed_chunk_is_read_whole() -> None:
    values = np.arange(256 * 256, dtype="i8").reshape(256, 256)
    arr = aiozarr.create_array(CountingStore(MemoryStore()), data=values, chunks=(256, 256))
    arr.store.reset()
    assert arr[3, 7] == values[3, 7]
    assert arr.store.bytes_read > 1000  # the whole zstd frame


@pytest.mark.parametrize("layout", ["v3", "v2"])
def test_a_chunk_stored_short_is_an_error_naming_it(layout: str) -> None:
    values = np.arange(64 * 64, dtype="i8").reshape(64, 64)
    arr = _stored(layout, values, (64, 64))
    key = "c/0/0" if layout == "v3" else "0.0"
    store = arr.store
    stored = aiozarr.sync.run(store.get, key)
    aiozarr.sync.run(store.set, key, bytes(stored)[: 10 * 64 * 8])  # ten rows of 64
    for selection in ((9, slice(0, 3)), (slice(9, 11), 0)):  # inside what is left; past it
        with pytest.raises(CodecError, match=f"chunk '{key}' is stored as 5120 bytes.* 32768"):
            arr[selection]


def test_a_span_read_short_is_an_error_naming_the_chunk() -> None:
    """Where the store cannot tell the object's size (a reference's target holds more)."""
    chain = CodecChain.from_metadata(_stored("v3", np.zeros((64, 64), "i8"), (64, 64)).metadata)
    projection = next(iter(basic_indexer((slice(9, 11), 0), (64, 64), (64, 64))))
    found = part_of(chain, projection)
    assert found is not None
    part, offset = found
    assert (offset, part.nbytes) == (9 * 64 * 8, 65 * 8)
    with pytest.raises(CodecError, match="chunk 'c/0/0': 512 bytes where a span of 520"):
        part.values(bytes(512), "c/0/0")


def test_one_element_of_a_referenced_raw_file_reads_its_bytes(
    emulator: Emulator, prefix: str
) -> None:
    """A kerchunk reference to an uncompressed variable of 1 MiB stored as one chunk."""
    values = np.arange(256 * 512, dtype="<f8").reshape(256, 512)
    folder = emulator.root / prefix
    folder.mkdir(exist_ok=True)
    (folder / "data.bin").write_bytes(b"header" + values.tobytes())
    zarray = {
        "zarr_format": 2,
        "shape": [256, 512],
        "chunks": [256, 512],
        "dtype": "<f8",
        "compressor": None,
        "fill_value": None,
        "filters": None,
        "order": "C",
    }
    refs = {".zgroup": '{"zarr_format":2}', "v/.zarray": json.dumps(zarray)}
    refs["v/0.0"] = ["data.bin", 6, values.nbytes]
    (folder / "refs.json").write_text(json.dumps({"version": 1, "refs": refs}))
    group = aiozarr.open_group(
        emulator.s3_url(f"{prefix}/refs.json"), mode="r", storage_options=emulator.storage_options()
    )
    arr = group["v"]
    emulator.reset_stats()
    assert arr[200, 300] == values[200, 300]
    np.testing.assert_array_equal(arr[5, 10:20], values[5, 10:20])
    served = emulator.stats()
    assert served["by_method"] == {"GET": 2}
    assert served["bytes_read"] == 8 + 80  # was the whole 1 MiB, twice


def test_an_index_past_the_end_of_a_shard_of_unknown_size_is_an_error() -> None:
    """A store that tells no object size (zarr-python's) leaves the index unchecked
    against the shard: an inner chunk it places past the end is refused, never read as
    a span of the bytes before the end."""
    zarr = pytest.importorskip("zarr")
    numcodecs = pytest.importorskip("numcodecs")
    values = np.arange(64 * 64, dtype="<i8").reshape(64, 64)
    arr = aiozarr.create_array(
        zarr.storage.MemoryStore(), shape=(64, 64), chunks=(32, 32), shards=(64, 64),
        dtype="<i8", compressors=None,
    )  # fmt: skip
    arr[...] = values
    shard = bytearray(aiozarr.sync.run(arr.store.get, "c/0/0"))
    index = len(shard) - 4 * 16 - 4  # at the end: four (offset, length) pairs, crc32c
    struct.pack_into("<Q", shard, index + 3 * 16, len(shard) - 4096)  # chunk (1, 1)
    shard[index:] = bytes(numcodecs.CRC32C().encode(bytes(shard[index : index + 64])))
    aiozarr.sync.run(arr.store.set, "c/0/0", bytes(shard))
    with pytest.raises(CodecError, match="'c/0/0'"):
        arr[32, 32]


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_selections_sharing_a_span_in_one_read_many(layout: str) -> None:
    """Two selections that need the same span of a chunk: each takes its values from it."""
    values = np.arange(64 * 64, dtype="i8").reshape(64, 64)
    arr = _stored(layout, values, (32, 32))
    selections = [(3, 5), (3, 5), (slice(40, 42), 7), (slice(40, 42), 7)]
    got = aiozarr.read_many([(arr, selection) for selection in selections])
    for selection, one in zip(selections, got, strict=True):
        np.testing.assert_array_equal(one, values[selection])
