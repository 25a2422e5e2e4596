"""`aiozarr.zarr.CodecPipeline` gives zarr-python the values its default pipeline gives:
sharded and unsharded arrays, v2 and v3, every kind of selection, fill values and
missing chunks and shards, reads and writes, on every store it reads through aiozarr;
and what it cannot run (data types, selections) falls back to the default pipeline,
batch by batch, and still reads and writes right."""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from tests.bridge.pipeline_helpers import (
    DEFAULT,
    PIPELINE,
    READ_STORES,
    STORES,
    Fallbacks,
    aiozarr_pipeline,
    zarr,
)
from zarr.abc.codec import ArrayArrayCodec

import aiozarr.errors

SHAPE = (37, 23)
DATA = np.arange(np.prod(SHAPE), dtype="int32").reshape(SHAPE) * 7 - 1000

#: Array layouts: zarr.create_array options.
LAYOUTS: dict[str, dict[str, Any]] = {
    "sharded": {"chunks": (4, 5), "shards": (8, 10), "fill_value": -1},
    "unsharded": {"chunks": (4, 5), "fill_value": -1},
    "v2": {"chunks": (4, 5), "fill_value": -1, "zarr_format": 2},
    "sharded-transposed": {
        "chunks": (4, 5),
        "shards": (8, 10),
        "fill_value": -1,
        "filters": [zarr.codecs.TransposeCodec(order=(1, 0))],
    },
}

#: Selections of every kind zarr-python has: (accessor, selection).
SELECTIONS: list[tuple[str, Any]] = [
    ("basic", np.s_[:]),
    ("basic", np.s_[3:17, 2:9]),
    ("basic", np.s_[5, :]),
    ("basic", np.s_[:, -1]),
    ("basic", np.s_[36, 22]),
    ("basic", np.s_[::3, 1::4]),
    ("basic", np.s_[30:37, 20:23]),
    ("basic", np.s_[8:16, 10:20]),
    ("oindex", np.s_[[30, 1, 5, 5, 17], 3:9]),
    ("oindex", np.s_[[30, 1, 5], [22, 0, 7]]),
    ("oindex", np.s_[[0, 36], 4]),
    ("oindex", np.s_[np.arange(37) % 3 == 0, np.arange(23) % 2 == 1]),
    ("vindex", np.s_[[1, 30, 36, 2, 2], [22, 0, 5, 5, 5]]),
    ("vindex", "mask"),
    ("blocks", np.s_[1:3, 0]),
]


def _write_sparse(arr: Any) -> np.ndarray:
    """Leave whole shards, inner chunks and chunks unwritten; the values expected."""
    expected = np.full(SHAPE, -1, dtype="int32")
    arr[:20, :] = DATA[:20]
    arr[25:30, 3:7] = DATA[25:30, 3:7]
    expected[:20] = DATA[:20]
    expected[25:30, 3:7] = DATA[25:30, 3:7]
    return expected


def _select(arr: Any, accessor: str, selection: Any, like: np.ndarray) -> np.ndarray:
    if selection == "mask":
        selection = (like % 3 == 0) & (like > 0)
    if accessor == "basic":
        return np.asarray(arr[selection])
    return np.asarray(getattr(arr, accessor)[selection])


@pytest.fixture(params=STORES)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.mark.parametrize("kind", READ_STORES)
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_reads_are_the_default_pipelines(
    kind: str, layout: str, make_store: Callable[[str], Any], fallbacks: Fallbacks
) -> None:
    store = make_store(kind)
    arr = zarr.create_array(store=store, name="g/a", shape=SHAPE, dtype="int32", **LAYOUTS[layout])
    expected = _write_sparse(arr)
    fallbacks.clear()
    with aiozarr_pipeline():
        mine = zarr.open_array(store, path="g/a")
        assert type(mine.async_array.codec_pipeline).__name__ == "CodecPipeline"
        for accessor, selection in SELECTIONS:
            got = _select(mine, accessor, selection, expected)
            want = _select(arr, accessor, selection, expected)
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want, err_msg=f"{accessor}[{selection!r}]")
    assert fallbacks.reasons == []


def test_fill_values_and_missing_shards(make_store: Callable[[str], Any]) -> None:
    store = make_store("memory")
    for name, fill in [("nan", np.nan), ("inf", -np.inf), ("zero", 0.0), ("odd", 2.5)]:
        arr = zarr.create_array(
            store=store,
            name=name,
            shape=(20, 20),
            chunks=(5, 5),
            shards=(10, 10),
            dtype="f8",
            fill_value=fill,
        )
        arr[12:14, 3:4] = 7.0  # one inner chunk of one shard; three shards missing
        with aiozarr_pipeline():
            got = zarr.open_array(store, path=name)[:]
        expected = np.full((20, 20), fill)
        expected[12:14, 3:4] = 7.0
        np.testing.assert_array_equal(got, expected)


def test_an_empty_array_reads_as_its_fill_value(make_store: Callable[[str], Any]) -> None:
    store = make_store("local")
    zarr.create_array(
        store=store, shape=(9, 9), chunks=(3, 3), shards=(9, 9), dtype="u2", fill_value=42
    )
    with aiozarr_pipeline():
        arr = zarr.open_array(store)
        np.testing.assert_array_equal(arr[:], np.full((9, 9), 42, dtype="u2"))
        np.testing.assert_array_equal(arr.vindex[[0, 8], [8, 0]], [42, 42])


@pytest.mark.parametrize("shards", [None, (10,)])
def test_missing_chunks_are_reported_to_zarr_python(
    kind: str, shards: Any, make_store: Callable[[str], Any], fallbacks: Fallbacks
) -> None:
    """zarr-python 3.4 asks each read which chunks (shards, not their inner chunks) are
    missing: with `read_missing_chunks` off, reading one is a `ChunkNotFoundError`."""
    missing_error = getattr(zarr.errors, "ChunkNotFoundError", None)
    if missing_error is None:
        pytest.skip(f"zarr {zarr.__version__} has no read_missing_chunks")
    store = make_store(kind)
    with aiozarr_pipeline():
        arr = zarr.create_array(
            store=store,
            shape=(30,),
            chunks=(5,),
            shards=shards,
            dtype="i2",
            fill_value=-1,
            config={"read_missing_chunks": False},
        )
        with pytest.raises(missing_error, match="c/0"):
            arr[:]
        arr[10:15] = 3  # one chunk (of the second shard)
        np.testing.assert_array_equal(arr[10:15], 3)
        if shards is not None:  # an inner chunk missing from a stored shard: the fill
            np.testing.assert_array_equal(arr[15:20], -1)
        with pytest.raises(missing_error, match="c/0") as raised:
            arr.vindex[[12, 1]]
        assert "c/1" not in str(raised.value)
        with pytest.raises(missing_error):
            zarr.open_array(store, mode="r", config={"read_missing_chunks": False})[:]
    assert fallbacks.reasons == []


def test_a_read_only_store_refuses_writes_as_zarr_python_does(
    kind: str, make_store: Callable[[str], Any]
) -> None:
    """A write through a read-only store is zarr-python's `ValueError` (and aiozarr's
    `ReadOnlyError`), naming the key; nothing is written."""
    store = make_store(kind)
    zarr.create_array(store=store, shape=(8,), chunks=(2,), shards=(4,), dtype="i1")
    with aiozarr_pipeline():
        arr = zarr.open_array(store.with_read_only(True), mode="r")
        with pytest.raises(ValueError, match="'c/0': the store was opened in read-only mode"):
            arr[:3] = 1
        with pytest.raises(aiozarr.errors.ReadOnlyError):
            arr.vindex[[7]] = 1
        np.testing.assert_array_equal(arr[:], 0)


def test_a_write_into_a_corrupt_shard_is_a_codec_error(
    kind: str, make_store: Callable[[str], Any]
) -> None:
    """A shard with bytes cut out of it is refused by a partial write as by a read: the
    engine's `CodecError` naming the shard, not a task group's `ExceptionGroup`."""
    store = make_store(kind)
    arr = zarr.create_array(
        store=store, shape=(64,), chunks=(4,), shards=(32,), dtype="int32", compressors=None
    )
    arr[:] = np.arange(64, dtype="int32")
    prototype = zarr.core.buffer.default_buffer_prototype()
    shard = zarr.core.sync.sync(store.get("c/0", prototype)).to_bytes()
    cut = prototype.buffer.from_bytes(shard[:40] + shard[56:])
    zarr.core.sync.sync(store.set("c/0", cut))
    with aiozarr_pipeline():
        arr = zarr.open_array(store)
        with pytest.raises(aiozarr.errors.CodecError, match="'c/0': corrupt shard index"):
            arr[1] = -1
    assert zarr.core.sync.sync(store.get("c/0", prototype)).to_bytes() == shard[:40] + shard[56:]


def _apply_writes(arr: Any, deletes: bool = True) -> None:
    """The same writes, of every kind, to an array of SHAPE (`deletes`: one turns a
    stored shard back to the fill value, which deletes it)."""
    arr[:20, :] = DATA[:20]
    arr[1:3, 1:20] = 99  # a scalar into parts of shards
    arr[8:16, 10:20] = DATA[8:16, 10:20] + 1  # one whole shard
    arr[36, :] = -5  # the edge
    arr.oindex[[0, 36, 17], [0, 22]] = np.array([[1, 2], [3, 4], [5, 6]], dtype="int32")
    arr.vindex[[4, 6, 30], [6, 4, 0]] = np.array([10, 11, 12], dtype="int32")
    if deletes:
        arr[0:8, 0:10] = -1  # a whole shard back to the fill value: deleted
    arr[20:24, 5:10] = -1  # one inner chunk of the fill value, in a missing shard
    arr.blocks[4, 1] = 77


@pytest.mark.parametrize("layout", ["sharded", "unsharded", "v2"])
def test_writes_are_the_default_pipelines(
    kind: str, layout: str, make_store: Callable[[str], Any], fallbacks: Fallbacks
) -> None:
    theirs, mine = make_store(kind), make_store(kind)
    options = LAYOUTS[layout]
    default = zarr.create_array(store=theirs, shape=SHAPE, dtype="int32", **options)
    _apply_writes(default)
    fallbacks.clear()
    with aiozarr_pipeline():
        arr = zarr.create_array(store=mine, shape=SHAPE, dtype="int32", **options)
        _apply_writes(arr)
    assert fallbacks.reasons == []
    np.testing.assert_array_equal(zarr.open_array(mine)[:], default[:])
    assert _chunk_keys(mine) == _chunk_keys(theirs)  # fill-value chunks and shards not stored


@pytest.mark.filterwarnings("ignore:Duplicate name")  # zipfile's, on each rewrite
@pytest.mark.parametrize("layout", ["sharded", "unsharded", "v2"])
def test_writes_to_a_zip_run_on_the_engine(
    layout: str, make_store: Callable[[str], Any], fallbacks: Fallbacks
) -> None:
    # a zip cannot delete a stored entry; a fill-value chunk it never held needs none
    theirs, mine = make_store("zip"), make_store("zip")
    options = LAYOUTS[layout]
    default = zarr.create_array(store=theirs, shape=SHAPE, dtype="int32", **options)
    _apply_writes(default, deletes=False)
    fallbacks.clear()
    with aiozarr_pipeline():
        arr = zarr.create_array(store=mine, shape=SHAPE, dtype="int32", **options)
        _apply_writes(arr, deletes=False)
        np.testing.assert_array_equal(arr[:], default[:])
        # a stored chunk back to the fill value: both pipelines refuse
        with pytest.raises(NotImplementedError):
            default[0:8, 0:10] = -1
        with pytest.raises(aiozarr.errors.StoreError, match="cannot delete what it holds"):
            arr[0:8, 0:10] = -1  # the engine's write error, naming the chunks
    assert fallbacks.reasons == []
    assert _chunk_keys(mine) == _chunk_keys(theirs)


def _chunk_keys(store: Any) -> set[str]:
    documents = {"zarr.json", ".zarray", ".zattrs", ".zgroup"}

    async def keys() -> set[str]:
        return {k async for k in store.list_prefix("") if k.rpartition("/")[2] not in documents}

    return set(zarr.core.sync.sync(keys()))


def test_write_empty_chunks_is_zarr_pythons(make_store: Callable[[str], Any]) -> None:
    store = make_store("memory")
    with aiozarr_pipeline():
        arr = zarr.create_array(
            store=store,
            shape=(10, 10),
            chunks=(5, 5),
            dtype="i1",
            fill_value=0,
            config={"write_empty_chunks": True},
        )
        arr[:] = 0
    assert _chunk_keys(store) == {"c/0/0", "c/0/1", "c/1/0", "c/1/1"}


@pytest.mark.parametrize(("dtype", "zarr_format"), [(">f4", 2), (">u2", 2), (">i8", 3)])
def test_big_endian_buffers_run_on_the_engine(
    dtype: str, zarr_format: int, fallbacks: Fallbacks
) -> None:
    # zarr-python hands buffers in the array's byte order: values are converted as the
    # engine places them, and the stored bytes are zarr-python's own
    data = np.arange(300, dtype=dtype).reshape(15, 20)
    order = "F" if zarr_format == 2 else None
    stores = {}
    for pipeline in (DEFAULT, PIPELINE):
        stores[pipeline] = store = zarr.storage.MemoryStore()
        with zarr.config.set({"codec_pipeline.path": pipeline}):
            arr = zarr.create_array(
                store,
                shape=data.shape,
                chunks=(4, 6),
                dtype=dtype,
                zarr_format=zarr_format,
                order=order,
            )
            arr[:13] = data[:13]
            arr.vindex[[14, 0], [19, 3]] = data[[1, 2], [5, 6]]
            got = (arr[2:15, 1:19], arr.oindex[[14, 0], [19, 3, 3]])
            assert got[0].dtype == np.dtype(dtype)
            if pipeline == DEFAULT:
                want = got
    for mine, theirs in zip(got, want, strict=True):
        np.testing.assert_array_equal(mine, theirs)
    assert stores[DEFAULT]._store_dict.keys() == stores[PIPELINE]._store_dict.keys()
    for key, value in stores[DEFAULT]._store_dict.items():
        assert stores[PIPELINE]._store_dict[key].to_bytes() == value.to_bytes(), key
    assert fallbacks.reasons == []


# -- what falls back --------------------------------------------------------------------------


@pytest.fixture
def logging_store() -> Iterator[Any]:
    yield zarr.storage.LoggingStore(zarr.storage.MemoryStore())


def test_any_zarr_store_is_read_through_its_own_api(
    logging_store: Any, fallbacks: Fallbacks
) -> None:
    # A store aiozarr cannot address itself (a wrapper: it may map keys its own way) runs
    # on the engine too, every read and write a call of the zarr store.
    arr = zarr.create_array(
        store=logging_store,
        shape=SHAPE,
        chunks=(4, 5),
        shards=(8, 10),
        dtype="int32",
        fill_value=-1,
    )
    expected = _write_sparse(arr)
    fallbacks.clear()
    logging_store.counter.clear()
    with aiozarr_pipeline():
        mine = zarr.open_array(logging_store)
        np.testing.assert_array_equal(mine[:], expected)
        np.testing.assert_array_equal(mine.vindex[[1, 36], [2, 22]], expected[[1, 36], [2, 22]])
        mine[30:, :] = 3
    expected[30:] = 3
    np.testing.assert_array_equal(zarr.open_array(logging_store)[:], expected)
    assert fallbacks.reasons == []
    assert logging_store.counter["get"] > 0 and logging_store.counter["set"] > 0


def test_whole_shards_are_written_without_reading_them(
    logging_store: Any, fallbacks: Fallbacks
) -> None:
    # zarr-python's own pipeline reads each shard first (4 gets here)
    with aiozarr_pipeline():
        zarr.create_array(
            logging_store, data=np.zeros(300, "int64"), chunks=(1,), shards=(100,), fill_value=-1
        )
    assert logging_store.counter["get"] == 1  # the metadata's; no shard is read
    assert logging_store.counter["set"] == 4  # the metadata and three shards
    assert fallbacks.reasons == []


@pytest.mark.parametrize("zarr_format", [3, 2])
def test_variable_length_strings_go_through_the_engine(
    kind: str, zarr_format: int, make_store: Callable[[str], Any], fallbacks: Fallbacks
) -> None:
    # zarr-python hands the pipeline numpy `StringDType` buffers (a v2 object array of
    # `vlen-utf8` too); aiozarr decodes str objects into them and encodes them back
    store = make_store(kind)
    words = np.array(["a", "bb", "", "dddd", "é"] * 4, dtype=object).reshape(4, 5)
    shards = (4, 4) if zarr_format == 3 else None
    with aiozarr_pipeline():
        arr = zarr.create_array(
            store, shape=(6, 5), chunks=(2, 2), shards=shards, dtype=str, zarr_format=zarr_format
        )
        arr[:4] = words
        arr[0, 0] = "zz"
        got = zarr.open_array(store)
        read = (got[:], got.oindex[[3, 0], [4, 1]], got.vindex[[5, 1], [0, 3]])
    expected = np.full((6, 5), "", dtype=object)
    expected[:4] = words
    expected[0, 0] = "zz"
    theirs = zarr.open_array(store)  # zarr-python's own pipeline
    for mine, want in zip(
        read, (theirs[:], theirs.oindex[[3, 0], [4, 1]], theirs.vindex[[5, 1], [0, 3]]), strict=True
    ):
        assert mine.dtype == want.dtype
        np.testing.assert_array_equal(mine, want)
    np.testing.assert_array_equal(theirs[:].astype(object), expected)
    assert fallbacks.reasons == []


class _Negate(ArrayArrayCodec):  # type: ignore[misc]
    """A codec aiozarr does not know: zarr-python runs the arrays that use it."""

    is_fixed_size = True

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> _Negate:
        return cls()

    def to_dict(self) -> dict[str, Any]:
        return {"name": "test.negate"}

    async def _decode_single(self, chunk: Any, spec: Any) -> Any:
        return chunk.from_ndarray_like(-chunk.as_ndarray_like())

    async def _encode_single(self, chunk: Any, spec: Any) -> Any:
        return chunk.from_ndarray_like(-chunk.as_ndarray_like())

    def compute_encoded_size(self, size: int, spec: Any) -> int:
        return size


def test_a_codec_it_does_not_know_falls_back(
    make_store: Callable[[str], Any], fallbacks: Fallbacks
) -> None:
    zarr.registry.register_codec("test.negate", _Negate)
    store = make_store("memory")
    with aiozarr_pipeline():
        arr = zarr.create_array(store, shape=(4, 5), chunks=(2, 2), dtype="i2", filters=[_Negate()])
        arr[:] = np.arange(20).reshape(4, 5)
        arr[0, 0] = 7
        got = zarr.open_array(store)[1:3, :]
    np.testing.assert_array_equal(got, np.arange(20).reshape(4, 5)[1:3])
    assert zarr.open_array(store)[0, 0] == 7
    assert all("unknown codec 'test.negate'" in reason for reason in fallbacks.reasons)
    assert fallbacks.reasons


def test_sharding_codecs_inner_pipeline_is_the_default() -> None:
    with aiozarr_pipeline():
        codec = zarr.codecs.ShardingCodec(chunk_shape=(2, 2))
        assert type(codec.codec_pipeline).__name__ == "BatchedCodecPipeline"


def test_the_pipeline_pickles_and_compares(make_store: Callable[[str], Any]) -> None:
    store = make_store("local")
    with aiozarr_pipeline():
        arr = zarr.create_array(store=store, shape=(6, 6), chunks=(3, 3), shards=(6, 6), dtype="u1")
        arr[:] = 5
        again = pickle.loads(pickle.dumps(arr))
        assert type(again.async_array.codec_pipeline).__name__ == "CodecPipeline"
        np.testing.assert_array_equal(again[:], np.full((6, 6), 5, dtype="u1"))
        assert zarr.open_array(store) == arr


@pytest.mark.parametrize("kind", ["memory", "local", "emulator"])
def test_a_shard_rewritten_by_another_array_object_reads_new(
    kind: str, make_store: Callable[[str], Any]
) -> None:
    store = make_store(kind)
    zarr.create_array(store=store, shape=(8, 8), chunks=(2, 2), shards=(8, 8), dtype="i4")
    with aiozarr_pipeline():
        reader = zarr.open_array(store)
        writer = zarr.open_array(store)
        writer[:] = np.arange(64, dtype="i4").reshape(8, 8)
        assert reader[3, 3] == 27  # its index of the shard is cached now
        writer[0:4, :] = -np.arange(32, dtype="i4").reshape(4, 8) * 1000  # other offsets
        np.testing.assert_array_equal(reader[3, :], -np.arange(24, 32) * 1000)
    default = zarr.open_array(store)
    default[4:, :] = 5  # written by zarr-python's own pipeline
    with aiozarr_pipeline():
        np.testing.assert_array_equal(reader[4:, 0], [5, 5, 5, 5])


@pytest.mark.parametrize("shards", [None, ()])
def test_zero_dimensional_arrays(shards: Any, fallbacks: Fallbacks) -> None:
    store = zarr.storage.MemoryStore()
    with aiozarr_pipeline():
        arr = zarr.create_array(store=store, shape=(), dtype="f4", chunks=(), shards=shards)
        assert arr[()] == 0.0
        arr[()] = 42.0
        assert arr[()] == 42.0
        arr[...] = 43.0
        assert arr[...] == 43.0
    assert zarr.open_array(store)[()] == 43.0
    assert fallbacks.reasons == []


@pytest.mark.parametrize("order", ["lexicographic", "colexicographic", "unordered", "morton"])
def test_shards_are_written_in_zarr_pythons_subchunk_write_order(
    order: str, fallbacks: Fallbacks
) -> None:
    import inspect

    if "subchunk_write_order" not in inspect.signature(zarr.codecs.ShardingCodec).parameters:
        pytest.skip("this zarr-python has no subchunk_write_order (zarr-python >= 3.4)")
    stores = {}
    for pipeline in (DEFAULT, PIPELINE):
        stores[pipeline] = store = zarr.storage.MemoryStore()
        codec = zarr.codecs.ShardingCodec(chunk_shape=(2, 2), subchunk_write_order=order)
        with zarr.config.set({"codec_pipeline.path": pipeline}):
            arr = zarr.create_array(
                store=store,
                shape=(4, 6),
                dtype="u1",
                chunks=(4, 6),
                serializer=codec,
                compressors=None,
            )
            arr[:] = np.arange(24, dtype="u1").reshape(4, 6)
            arr[1, 1:5] = 99  # merged into the stored shard
    # the same bytes: inner chunks laid out in that order (the stored index says where)
    prototype = zarr.core.buffer.default_buffer_prototype()
    theirs, mine = (zarr.core.sync.sync(s.get("c/0/0", prototype)) for s in stores.values())
    assert mine.to_bytes() == theirs.to_bytes()
    assert fallbacks.reasons == []


@pytest.mark.filterwarnings("ignore:Combining a `sharding_indexed` codec")  # zarr-python's
def test_shards_compressed_whole_run_on_the_engine_read_whole(
    logging_store: Any, fallbacks: Fallbacks
) -> None:
    # a compressor after sharding_indexed: no range of a stored shard is an inner chunk,
    # so each shard is read, decoded and written whole, one request each
    codec = zarr.codecs.ShardingCodec(chunk_shape=(2, 2))
    data = np.arange(64, dtype="i2").reshape(8, 8)
    with aiozarr_pipeline():
        arr = zarr.create_array(
            store=logging_store,
            shape=(8, 8),
            dtype="i2",
            chunks=(4, 4),
            serializer=codec,
            compressors=zarr.codecs.ZstdCodec(),  # the whole shard compressed
        )
        arr[:6] = data[:6]
        arr.vindex[[7, 0], [7, 1]] = [-1, -2]
        logging_store.counter.clear()
        got = (arr[1:7, 3], arr.oindex[[7, 2], [7, 0, 5]])
        reads = logging_store.counter["get"]
    expected = np.full((8, 8), 0, dtype="i2")
    expected[:6] = data[:6]
    expected[7, 7], expected[0, 1] = -1, -2
    np.testing.assert_array_equal(got[0], expected[1:7, 3])
    np.testing.assert_array_equal(got[1], expected[np.ix_([7, 2], [7, 0, 5])])
    assert reads == 2 + 4  # the two shards of the first read, the four of the second
    np.testing.assert_array_equal(zarr.open_array(logging_store)[:], expected)
    assert fallbacks.reasons == []


@pytest.mark.parametrize("shards", [None, [[6, 9], [4, 4, 3]]])
def test_rectilinear_grids_are_read_and_written_by_the_engine(
    shards: Any, fallbacks: Fallbacks
) -> None:
    """Chunks (or shards) of different shapes: every selection kind, read and written,
    gives zarr-python's values, with no batch left to it."""
    if "rectilinear_chunks" not in zarr.config.get("array"):
        pytest.skip(f"zarr {zarr.__version__} has no rectilinear chunk grids")
    data = np.arange(15 * 11, dtype="i4").reshape(15, 11)
    found = []
    for pipeline in [PIPELINE, DEFAULT]:
        with zarr.config.set({"codec_pipeline.path": pipeline, "array.rectilinear_chunks": True}):
            if shards is None:
                chunks: Any = [[4, 5, 6], [2, 9]]
            else:
                chunks = (3, 1)
            arr = zarr.create_array(
                zarr.storage.MemoryStore(),
                shape=(15, 11),
                chunks=chunks,
                shards=shards,
                dtype="i4",
                fill_value=-1,
            )
            arr[2:13, 1:] = data[2:13, 1:]
            arr.vindex[[14, 0, 7], [10, 0, 3]] = [1, 2, 3]
            arr.oindex[[12, 4], [3, 0, 9]] = 5
            found.append(
                [
                    arr[:],
                    arr.oindex[[14, 3, 2, 9], [10, 1, 0]],
                    arr.vindex[[5, 4, 13], [2, 9, 1]],
                    arr[1:14:3, ::2],
                    arr.blocks[1, 1],
                ]
            )
    for mine, theirs in zip(*found, strict=True):
        np.testing.assert_array_equal(mine, theirs)
    assert fallbacks.reasons == []


def test_a_rectilinear_shard_of_one_inner_chunk_is_read_and_written_in_place(
    fallbacks: Fallbacks,
) -> None:
    """A shard holding one inner chunk (column 2 below: shard column 1 is one chunk wide)
    is not at its outer coordinates in the inner-chunk grid: it was read and written as
    inner chunk (r, 1), i.e. in shard column 0, silently: column 2 read column 1's
    values and a write of it replaced column 1's shard."""
    if "rectilinear_chunks" not in zarr.config.get("array"):
        pytest.skip(f"zarr {zarr.__version__} has no rectilinear chunk grids")
    found = []
    for pipeline in [PIPELINE, DEFAULT]:
        with zarr.config.set({"codec_pipeline.path": pipeline, "array.rectilinear_chunks": True}):
            store = zarr.storage.MemoryStore()
            arr = zarr.create_array(
                store,
                shape=(4, 6),
                chunks=(2, 1),
                shards=[[2, 2], [2, 1, 3]],
                dtype="i4",
                fill_value=0,
            )
            arr[:, 1] = 7
            arr[:, 2] = [1, 2, 3, 4]
            arr.vindex[[0, 3], [2, 2]] = [5, 6]
            again = zarr.open_array(store, mode="r")
            found.append(
                [again[:], again[1:3, 2], again.vindex[[3, 1], [2, 1]], sorted(store._store_dict)]
            )
    for mine, theirs in zip(*found, strict=True):
        np.testing.assert_array_equal(mine, theirs)
    assert fallbacks.reasons == []


def _appended(store: Any) -> np.ndarray:
    """Five appends of ten rows into one shard of 100, through one array object."""
    arr = zarr.create_array(
        store=store, shape=(10,), chunks=(10,), shards=(100,), dtype="i4", fill_value=-1
    )
    for k in range(5):
        arr.append(np.full(10, k, dtype="i4"))
    return np.asarray(zarr.open_array(store=store)[...])


@pytest.mark.parametrize("kind", STORES)
def test_appends_through_one_array_object_all_land(
    kind: str, make_store: Callable[[str], Any]
) -> None:
    """zarr-python grows an array in place (its pipeline keeps the shape it was built
    with): a write covering the inner chunks inside that shape replaced the whole shard,
    losing every row appended before (fifty -1 and ten 4)."""
    expected = np.concatenate([np.full(10, -1), *(np.full(10, k) for k in range(5))])
    with aiozarr_pipeline():
        np.testing.assert_array_equal(_appended(make_store(kind)), expected)
    np.testing.assert_array_equal(_appended(make_store(kind)), expected)  # zarr's own
