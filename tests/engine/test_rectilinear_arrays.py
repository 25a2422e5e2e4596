"""Arrays on a rectilinear chunk grid: write, read, edge chunks, missing chunks, resize."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import aiozarr
from aiozarr.errors import IrregularGridError, MetadataError, UnsupportedError
from aiozarr.storage.backends.local import LocalStore
from aiozarr.storage.backends.memory import MemoryStore

SHAPE = (10, 7)
EDGES = [[3, 5, 4], [2, 2, 2, 1]]  # axis 0 overflows by 2: the last row of chunks is 4 long
DATA = np.arange(70, dtype="<i4").reshape(SHAPE)


@pytest.fixture(params=["memory", "local"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    return MemoryStore() if request.param == "memory" else LocalStore(tmp_path / "s.zarr")


async def create(store: Any, path: str = "a", **options: Any) -> aiozarr.AsyncArray:
    options.setdefault("chunks", EDGES)
    options.setdefault("fill_value", -1)
    return await aiozarr.create_array_async(store, path, shape=SHAPE, dtype="<i4", **options)


async def stored_keys(store: Any, prefix: str = "a/c/") -> set[str]:
    return {key async for key in store.list_prefix(prefix)}


async def test_metadata_is_written_and_reopened(store: Any) -> None:
    arr = await create(store)
    doc = json.loads(bytes(await store.get("a/zarr.json")))
    assert doc["chunk_grid"] == {
        "name": "rectilinear",
        "configuration": {"kind": "inline", "chunk_shapes": [[3, 5, 4], [[2, 3], 1]]},
    }
    again = await aiozarr.open_array_async(store, "a")
    assert again.metadata.chunk_grid == arr.metadata.chunk_grid
    assert again.metadata.chunk_grid is not None
    assert again.metadata.chunk_grid.edges == ((3, 5, 4), (2, 2, 2, 1))
    assert again.read_chunk_sizes == again.write_chunk_sizes == ((3, 5, 2), (2, 2, 2, 1))
    with pytest.raises(IrregularGridError, match="rectilinear chunk grid"):
        _ = again.chunks
    assert again.shards is None
    assert getattr(again, "chunks", None) is None  # what tools such as dask probe
    with pytest.raises(NotImplementedError):  # what zarr-python raises
        _ = again.chunks


async def test_full_round_trip_and_each_chunk_has_its_own_shape(store: Any) -> None:
    arr = await create(store, compressors=None)  # raw bytes: sizes tell the chunk shapes
    await arr.setitem(..., DATA)
    np.testing.assert_array_equal(await arr.getitem(...), DATA)
    assert len(await stored_keys(store)) == 12
    for (i, j), shape in {(0, 0): (3, 2), (1, 3): (5, 1), (2, 0): (4, 2)}.items():
        raw = bytes(await store.get(f"a/c/{i}/{j}"))
        assert len(raw) == 4 * shape[0] * shape[1]  # overflow chunks keep their full edges
    edge = np.frombuffer(bytes(await store.get("a/c/2/0")), "<i4").reshape(4, 2)
    np.testing.assert_array_equal(edge[:2], DATA[8:10, 0:2])
    reopened = await aiozarr.open_array_async(store, "a")
    np.testing.assert_array_equal(await reopened.getitem(...), DATA)


SELECTIONS = [
    (slice(None), slice(None)),
    (4, 5),
    (slice(2, 9), slice(1, 6)),
    (slice(None, None, 3), slice(None, None, -2)),
    (slice(9, 0, -4), 3),
    (-1, slice(None)),
    ([9, 0, 4, 4], slice(1, 7, 2)),
    (np.array([True, False] * 5), [6, 0]),
]


@pytest.mark.parametrize("selection", SELECTIONS, ids=repr)
async def test_partial_writes_and_reads_match_numpy(store: Any, selection: Any) -> None:
    arr = await create(store)
    await arr.setitem(..., DATA)
    expected = DATA.copy()
    basic = all(isinstance(k, int | slice) for k in selection)
    if basic:
        value = np.full(expected[selection].shape, 1000, dtype="<i4")
        expected[selection] = value
        await arr.setitem(selection, value)
        np.testing.assert_array_equal(await arr.getitem(selection), expected[selection])
    else:
        index = np.ix_(
            *(
                np.arange(n)[k] if isinstance(k, slice) else k
                for k, n in zip(selection, SHAPE, strict=True)
            )
        )
        value = np.full(expected[index].shape, 1000, dtype="<i4")
        expected[index] = value
        await arr.set_orthogonal_selection(selection, value)
        np.testing.assert_array_equal(await arr.get_orthogonal_selection(selection), value)
    np.testing.assert_array_equal(await arr.getitem(...), expected)


async def test_missing_chunks_read_as_fill_value(store: Any) -> None:
    arr = await create(store)
    await arr.setitem((slice(3, 8), slice(2, 4)), 5)  # exactly chunk (1, 1)
    assert await stored_keys(store) == {"a/c/1/1"}
    expected = np.full(SHAPE, -1)
    expected[3:8, 2:4] = 5
    np.testing.assert_array_equal(await arr.getitem(...), expected)
    np.testing.assert_array_equal(await arr.getitem((slice(8, 10), 6)), [-1, -1])


async def test_chunks_of_fill_value_are_deleted(store: Any) -> None:
    arr = await create(store)
    await arr.setitem(..., DATA)
    await arr.setitem((slice(8, 10), slice(0, 2)), -1)  # the inside part of edge chunk (2, 0)
    keys = await stored_keys(store)
    assert "a/c/2/0" not in keys and len(keys) == 11


async def test_sharded_rectilinear_round_trip(store: Any) -> None:
    shape = (14, 9)
    data = np.arange(126, dtype="<f8").reshape(shape)
    arr = await aiozarr.create_array_async(
        store, "s", shape=shape, dtype="<f8", chunks=(2, 3), shards=[[8, 4, 4], [6, 3]]
    )
    assert arr.chunks == (2, 3)
    assert arr.write_chunk_sizes == ((8, 4, 2), (6, 3))
    assert arr.read_chunk_sizes == ((2,) * 7, (3, 3, 3))
    with pytest.raises(IrregularGridError, match="rectilinear shard grid"):
        _ = arr.shards
    await arr.setitem(..., data)
    assert await stored_keys(store, "s/c/") == {f"s/c/{i}/{j}" for i in range(3) for j in range(2)}
    np.testing.assert_array_equal(await arr.getitem(...), data)
    await arr.setitem((slice(7, 13, 2), slice(None, None, -4)), -5.0)
    data[7:13:2, ::-4] = -5.0
    reopened = await aiozarr.open_array_async(store, "s")
    np.testing.assert_array_equal(await reopened.getitem(...), data)
    np.testing.assert_array_equal(await reopened.getitem((slice(9, 14), 4)), data[9:14, 4])


async def test_shard_edges_must_hold_whole_inner_chunks(store: Any) -> None:
    with pytest.raises(MetadataError, match="axis 0 has an edge of 5"):
        await aiozarr.create_array_async(
            store, "s", shape=(9, 4), dtype="i2", chunks=(2, 2), shards=[[4, 5], [4]]
        )
    arr = await aiozarr.create_array_async(
        store, "s", shape=(9, 4), dtype="i2", chunks=(2, 2), shards=[[4, 6], [4]]
    )
    doc = json.loads(bytes(await store.get("s/zarr.json")))
    doc["chunk_grid"]["configuration"]["chunk_shapes"][0] = [4, 5]
    await store.set("s/zarr.json", json.dumps(doc).encode())
    with pytest.raises(UnsupportedError, match=r"s/zarr.json: sharding_indexed inner chunk"):
        await aiozarr.open_array_async(store, "s")
    assert arr.chunks == (2, 2)


async def test_growing_repeats_the_last_edge(store: Any) -> None:
    arr = await create(store)
    await arr.setitem(..., DATA)
    await arr.resize((20, 10))
    assert arr.metadata.chunk_grid is not None
    assert arr.metadata.chunk_grid.edges == ((3, 5, 4, 4, 4), (2, 2, 2, 1, 1, 1, 1))
    doc = json.loads(bytes(await store.get("a/zarr.json")))
    assert doc["chunk_grid"]["configuration"]["chunk_shapes"] == [[3, 5, [4, 3]], [[2, 3], [1, 4]]]
    grown = await (await aiozarr.open_array_async(store, "a")).getitem(...)
    np.testing.assert_array_equal(grown[:10, :7], DATA)
    assert (grown[10:] == -1).all() and (grown[:, 7:] == -1).all()
    await arr.setitem((slice(12, 20), 9), 7)
    assert (await arr.getitem((slice(12, 20), 9)) == 7).all()


async def test_shrinking_keeps_the_edges_and_deletes_chunks_outside(store: Any) -> None:
    arr = await create(store)
    await arr.setitem(..., DATA)
    await arr.resize((3, 4))
    assert arr.metadata.chunk_grid is not None
    assert arr.metadata.chunk_grid.edges == tuple(tuple(e) for e in EDGES)
    assert await stored_keys(store) == {"a/c/0/0", "a/c/0/1"}
    np.testing.assert_array_equal(await arr.getitem(...), DATA[:3, :4])
    await arr.resize(SHAPE)
    again = await arr.getitem(...)
    np.testing.assert_array_equal(again[:3, :4], DATA[:3, :4])
    assert (again[3:] == -1).all()


async def test_uniform_edges_read_as_a_regular_grid(store: Any) -> None:
    arr = await create(store, chunks=[[4, 4, 4], 3])
    assert arr.chunks == (4, 3)  # every chunk has one shape
    await arr.setitem(..., DATA)
    np.testing.assert_array_equal(await arr.getitem(...), DATA)
    doc = json.loads(bytes(await store.get("a/zarr.json")))
    assert doc["chunk_grid"]["configuration"]["chunk_shapes"] == [4, 3]  # steps, still rectilinear
    assert doc["chunk_grid"]["name"] == "rectilinear"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"chunks": [[3, 5], [7]]}, "edges of axis 0 sum to 8, less than the array's length 10"),
        ({"chunks": [[3, 0, 7], [7]]}, "chunks: axis 0: chunk edge lengths must be positive"),
        ({"chunks": [[10], "7"]}, "chunks: axis 1: expected a positive chunk length"),
        ({"chunks": [[10], 0]}, "chunks: axis 1: expected a positive chunk length"),
        ({"chunks": [[10]]}, "has 1 entries, the array has 2 dimensions"),
        ({"chunks": [[10], [7]], "shards": (10, 7)}, "edge lists cannot be combined with shards="),
        ({"chunks": [[10], [7]], "zarr_format": 2}, "needs zarr_format=3"),
        ({"chunks": (5, 7), "shards": [[10], [7]], "zarr_format": 2}, "needs zarr_format=3"),
    ],
)
async def test_creation_errors(options: dict[str, Any], message: str) -> None:
    with pytest.raises(MetadataError, match=message):
        await create(MemoryStore(), **options)


def test_sync_facade_and_pickle(tmp_path: Path) -> None:
    import pickle

    arr = aiozarr.create_array(
        tmp_path / "p.zarr", shape=SHAPE, dtype="<i4", chunks=EDGES, fill_value=0
    )
    arr[...] = DATA
    assert arr.read_chunk_sizes == ((3, 5, 2), (2, 2, 2, 1))
    again = pickle.loads(pickle.dumps(arr))
    np.testing.assert_array_equal(again[2:9, ::3], DATA[2:9, ::3])
    assert "rectilinear ((3, 5, 4), (2, 2, 2, 1))" in arr.async_array.info()
