"""Hypothesis: `aiozarr.zarr.CodecPipeline` reads and writes what zarr-python's own
`BatchedCodecPipeline` does, for every kind of selection zarr-python has: basic (steps
too), orthogonal (unsorted, repeated, masks), coordinate (unsorted, descending,
repeated), whole-array masks and blocks; on arrays of 1-3 dimensions, sharded and not,
v3 and v2, with chunks down to one element and chunks left unwritten, of numbers,
variable-length strings (zarr-python's `StringDType` buffers) and variable-length bytes.

Each example builds the same array twice, one per pipeline, runs the same reads and
writes on both and on a numpy model, and compares. The model decides where zarr-python's
own pipeline raises (zarr-python 3.1.6 cannot write an orthogonal selection of two index
arrays into a sharded array). Fixed and derandomized: the same examples every run, a few
seconds on two busy cores.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.bridge.pipeline_helpers import DEFAULT, PIPELINE, Fallbacks, zarr
from zarr.core.dtype import VariableLengthBytes, VariableLengthUTF8

# zarr-python: variable-length bytes have no v3 specification yet
pytestmark = [
    pytest.mark.filterwarnings("ignore::zarr.errors.UnstableSpecificationWarning"),
    # zarr-python on a compressor after `sharding_indexed`
    pytest.mark.filterwarnings("ignore:Combining a `sharding_indexed` codec"),
]

FILL = -7
#: The data types drawn: numbers, and variable-length strings and bytes, whose values
#: are the model's numbers written out (`_typed`).
DTYPES = ["int16", "str", "bytes"]
#: `AIOZARR_PIPELINE_EXAMPLES=N`: N random examples instead (a longer search by hand).
EXAMPLES = os.environ.get("AIOZARR_PIPELINE_EXAMPLES")
SETTINGS = settings(
    max_examples=60 if EXAMPLES is None else int(EXAMPLES),
    derandomize=EXAMPLES is None,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
#: Largest axis length by number of dimensions: small grids, many chunks per axis.
MAX_SIZE = {1: 12, 2: 7, 3: 4}
KINDS = ["basic", "oindex", "vindex", "mask", "blocks"]


class Layout:
    """An array's shape, chunks, shards (None: unsharded), data type and format."""

    def __init__(
        self,
        shape: tuple[int, ...],
        chunks: tuple[int, ...],
        shards: Any,
        dtype: str = "int16",
        zarr_format: int = 3,
        whole: bool = False,
    ) -> None:
        self.shape = shape
        self.chunks = chunks
        self.shards = shards
        self.dtype = dtype
        self.zarr_format = zarr_format
        # shards compressed whole (a compressor after `sharding_indexed`): read whole
        self.whole = whole
        # what `blocks` counts in: the stored objects
        self.outer = shards if shards is not None else chunks

    def __repr__(self) -> str:
        return (
            f"Layout(shape={self.shape}, chunks={self.chunks}, shards={self.shards}, "
            f"dtype={self.dtype!r}, zarr_format={self.zarr_format}, whole={self.whole})"
        )


@st.composite
def layouts(draw: Any) -> Layout:
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(1, MAX_SIZE[ndim])) for _ in range(ndim))
    chunks = tuple(draw(st.integers(1, n)) for n in shape)
    shards = None
    if draw(st.booleans()):
        shards = tuple(c * draw(st.integers(1, 3)) for c in chunks)
    zarr_format = 3 if shards is not None else draw(st.sampled_from([3, 2]))
    dtype = draw(st.sampled_from(DTYPES))
    whole = shards is not None and dtype == "int16" and draw(st.booleans())
    return Layout(shape, chunks, shards, dtype, zarr_format, whole)


def _typed(values: Any, dtype: str) -> np.ndarray:
    """The model's numbers as values of `dtype`: strings and bytes are the numbers
    written out (so the fill value -7 is "-7")."""
    values = np.asarray(values, dtype="int16")
    if dtype == "str":
        return values.astype(str).astype(np.dtypes.StringDType())
    if dtype == "bytes":
        return np.vectorize(lambda v: str(v).encode(), otypes=[object])(values)
    return values


def _slice(draw: Any, size: int) -> slice:
    start = draw(st.integers(0, size))
    stop = draw(st.integers(start, size))
    return slice(start, stop, draw(st.integers(1, 3)))


def _indices(draw: Any, size: int, unique: bool) -> np.ndarray:
    """Unsorted integer indices, negative ones too; repeated unless `unique`."""
    values = st.integers(-size, size - 1)
    if unique:
        drawn = draw(st.lists(values, min_size=1, max_size=size, unique_by=lambda i: i % size))
    else:
        drawn = draw(st.lists(values, min_size=1, max_size=2 * size + 1))
    return np.array(drawn, dtype=np.intp)


@st.composite
def selections(draw: Any, layout: Layout, writes: bool) -> tuple[str, Any]:
    """(accessor, selection) of one kind; unique positions when written."""
    kind = draw(st.sampled_from(KINDS))
    shape = layout.shape
    if kind == "basic":
        sel = tuple(
            draw(st.integers(-n, n - 1)) if draw(st.booleans()) else _slice(draw, n) for n in shape
        )
        return "basic", sel
    if kind == "oindex":
        parts: list[Any] = []
        for n in shape:
            form = draw(st.sampled_from(["int", "slice", "array", "mask"]))
            if form == "int":
                parts.append(draw(st.integers(-n, n - 1)))
            elif form == "slice":
                parts.append(_slice(draw, n))
            elif form == "mask":
                parts.append(np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n))))
            else:
                parts.append(_indices(draw, n, writes))
        return "oindex", tuple(parts)
    if kind == "vindex":
        size = int(np.prod(shape))
        flat = _indices(draw, size, writes) % size
        if draw(st.booleans()):  # descending
            flat = np.sort(flat)[::-1].copy()
        return "vindex", np.unravel_index(flat, shape)
    if kind == "mask":
        cells = int(np.prod(shape))
        mask = np.array(draw(st.lists(st.booleans(), min_size=cells, max_size=cells)))
        return "vindex", mask.reshape(shape)
    grid = [-(-n // c) for n, c in zip(shape, layout.outer, strict=True)]
    blocks = []
    for g in grid:
        if draw(st.booleans()):
            blocks.append(draw(st.integers(0, g - 1)))
        else:
            start = draw(st.integers(0, g - 1))
            blocks.append(slice(start, draw(st.integers(start + 1, g))))
    return "blocks", tuple(blocks)


def _model_index(layout: Layout, accessor: str, sel: Any) -> tuple[Any, tuple[int, ...]]:
    """The numpy index of the model for a selection, and the axes that ints drop."""
    if accessor in ("basic", "vindex"):
        return sel, ()
    if accessor == "blocks":
        sel = tuple(
            slice(b * c, (b + 1) * c) if isinstance(b, int) else slice(b.start * c, b.stop * c)
            for b, c in zip(sel, layout.outer, strict=True)
        )
        return sel, ()
    arrays, dropped = [], []
    for axis, (part, n) in enumerate(zip(sel, layout.shape, strict=True)):
        if isinstance(part, int):
            arrays.append(np.array([part]))
            dropped.append(axis)
        elif isinstance(part, slice):
            arrays.append(np.arange(n)[part])
        elif part.dtype == bool:
            arrays.append(np.flatnonzero(part))
        else:
            arrays.append(part)
    return np.ix_(*arrays), tuple(dropped)


def _read(arr: Any, accessor: str, sel: Any) -> np.ndarray:
    target = arr if accessor == "basic" else getattr(arr, accessor)
    return np.asarray(target[sel])


def _write(arr: Any, accessor: str, sel: Any, value: np.ndarray) -> Exception | None:
    target = arr if accessor == "basic" else getattr(arr, accessor)
    try:
        target[sel] = value
    except Exception as error:  # zarr-python's own pipeline: the model decides
        return error
    return None


def _create(layout: Layout, pipeline: str) -> Any:
    dtype = {"int16": "int16", "str": VariableLengthUTF8(), "bytes": VariableLengthBytes()}
    codecs: dict[str, Any] = {"chunks": layout.chunks, "shards": layout.shards}
    if layout.whole:
        codecs = {
            "chunks": layout.shards,
            "serializer": zarr.codecs.ShardingCodec(chunk_shape=layout.chunks),
            "compressors": [zarr.codecs.ZstdCodec(level=1)],
        }
    with zarr.config.set({"codec_pipeline.path": pipeline}):
        return zarr.create_array(
            zarr.storage.MemoryStore(),
            shape=layout.shape,
            dtype=dtype[layout.dtype],
            fill_value=_typed(FILL, layout.dtype)[()],
            zarr_format=layout.zarr_format,
            **codecs,
        )


def _stored(arr: Any) -> np.ndarray:
    """Everything stored under `arr`, read back by zarr-python's own pipeline."""
    with zarr.config.set({"codec_pipeline.path": DEFAULT}):
        return np.asarray(zarr.open_array(arr.store, mode="r")[...])


#: The reads that once came back wrong: each chunk's values placed in the output at
#: positions zarr-python gives as an index array (sorted, descending or permuted).
#: (shape, chunks, shards, stored values, accessor, selection, values read)
PLACED = [
    ((8,), (2,), None, range(1, 9), "vindex", [5, 4, 3, 2, 1, 0], [6, 5, 4, 3, 2, 1]),
    ((4,), (1,), None, [5, 6, 7, 8], "vindex", [3, 1, 0], [8, 6, 5]),
    ((2,), (1,), (2,), [3, 9], "oindex", [1, 0], [9, 3]),
    ((4,), (2,), None, [15, 41, 75, 3], "vindex", [0, 2, 1], [15, 75, 41]),
]


@pytest.mark.parametrize(("shape", "chunks", "shards", "stored", "accessor", "sel", "read"), PLACED)
def test_values_land_where_zarr_python_places_them(
    shape: tuple[int, ...],
    chunks: tuple[int, ...],
    shards: Any,
    stored: Any,
    accessor: str,
    sel: list[int],
    read: list[int],
    fallbacks: Fallbacks,
) -> None:
    arr = _create(Layout(shape, chunks, shards), PIPELINE)
    arr[:] = np.array(list(stored), dtype="int16")
    np.testing.assert_array_equal(_read(arr, accessor, np.array(sel)), read)
    # and written at those positions, read back by zarr-python's own pipeline
    arr = _create(Layout(shape, chunks, shards), PIPELINE)
    _write(arr, accessor, np.array(sel), np.array(read, dtype="int16"))
    np.testing.assert_array_equal(_stored(arr)[sel], read)
    assert fallbacks.reasons == []


@SETTINGS
@given(data=st.data())
def test_the_pipeline_reads_and_writes_as_zarr_pythons(
    data: st.DataObject, fallbacks: Fallbacks
) -> None:
    fallbacks.clear()
    layout = data.draw(layouts(), label="layout")
    ours, theirs = _create(layout, PIPELINE), _create(layout, DEFAULT)
    model = np.full(layout.shape, FILL, dtype="int16")
    # a first write from a corner: the chunks (and shards) before it stay unwritten
    corner = data.draw(st.tuples(*(st.integers(0, n - 1) for n in layout.shape)), label="from")
    first = tuple(slice(c, None) for c in corner)
    model[first] = np.arange(model[first].size, dtype="int16").reshape(model[first].shape) + 1
    ours[first] = _typed(model[first], layout.dtype)
    theirs[first] = _typed(model[first], layout.dtype)
    for step in range(4):
        writes = data.draw(st.booleans(), label=f"write {step}")
        accessor, sel = data.draw(selections(layout, writes), label=f"selection {step}")
        index, dropped = _model_index(layout, accessor, sel)
        if writes:
            shape = model[index].shape
            value = (np.arange(int(np.prod(shape)), dtype="int16") + 100 * (step + 1)).reshape(
                shape
            )
            model[index] = value
            value = _typed(value.squeeze(axis=dropped) if dropped else value, layout.dtype)
            assert _write(ours, accessor, sel, value) is None
            if _write(theirs, accessor, sel, value) is not None:
                theirs = _create_like(layout, theirs, model)
            np.testing.assert_array_equal(_stored(ours), _typed(model, layout.dtype))
            np.testing.assert_array_equal(_stored(theirs), _typed(model, layout.dtype))
        else:
            expected = model[index]
            expected = expected.squeeze(axis=dropped) if dropped else expected
            got = _read(ours, accessor, sel)
            np.testing.assert_array_equal(got, _read(theirs, accessor, sel))
            np.testing.assert_array_equal(got, _typed(expected, layout.dtype))
    assert fallbacks.reasons == []


def _create_like(layout: Layout, failed: Any, model: np.ndarray) -> Any:
    """zarr-python's own array again, holding the model (after a write it refused)."""
    again = _create(layout, DEFAULT)
    again[...] = _typed(model, layout.dtype)
    return again
