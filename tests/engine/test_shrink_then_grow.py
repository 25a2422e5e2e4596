"""A shrink fills what it cuts off inside the chunks and shards it keeps, so a later grow
shows the fill value there, never the values from before the shrink (as HDF5 prunes a
shrunk dataset; zarr-python 3.4 and TensorStore 0.1 show the old values again). Compared
with a numpy model of the array, by property, on every layout."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import aiozarr
from aiozarr.storage.backends.counting import CountingStore
from aiozarr.storage.backends.memory import MemoryStore

FILL = -1
LAYOUTS: dict[str, dict[str, Any]] = {
    "chunks": {"chunks": (3, 4)},
    "v2": {"chunks": (3, 4), "zarr_format": 2},
    "shards": {"chunks": (2, 2), "shards": (4, 4)},
    "rectilinear": {"chunks": [[3, 5, 4], [2, 2, 2, 1]]},
}


def _create(layout: str, shape: tuple[int, int] = (12, 7)) -> aiozarr.Array:
    return aiozarr.create_array(
        MemoryStore(), "a", shape=shape, dtype="i4", fill_value=FILL, **LAYOUTS[layout]
    )


def _filled(layout: str) -> tuple[aiozarr.Array, np.ndarray]:
    """A 12 x 7 array of `layout` written whole, and its values."""
    arr = _create(layout)
    data = np.arange(1, 12 * 7 + 1, dtype="i4").reshape(12, 7)
    arr[...] = data
    return arr, data


def _resized(model: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """`model` cut to `shape` and grown to it with the fill value."""
    out = np.full(shape, FILL, dtype=model.dtype)
    kept = tuple(slice(0, min(a, b)) for a, b in zip(model.shape, shape, strict=True))
    out[kept] = model[kept]
    return out


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_grow_after_a_shrink_shows_the_fill_value(layout: str) -> None:
    arr, data = _filled(layout)
    arr.resize((5, 3))
    arr.resize((12, 7))
    np.testing.assert_array_equal(arr[...], _resized(data[:5, :3], (12, 7)))
    again = aiozarr.open_array(arr.store, "a")
    np.testing.assert_array_equal(again[...], _resized(data[:5, :3], (12, 7)))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_growing_one_axis_and_shrinking_another(layout: str) -> None:
    arr, data = _filled(layout)
    arr.resize((14, 5))
    arr.resize((14, 7))
    np.testing.assert_array_equal(arr[...], _resized(_resized(data, (14, 5)), (14, 7)))


def _written(store: CountingStore) -> list[str]:
    return sorted(key for op, key, _ in store.requests if op == "set")


def test_a_shrink_writes_only_the_chunks_it_cuts_into() -> None:
    store = CountingStore(MemoryStore())
    arr = aiozarr.create_array(store, "a", shape=(12, 8), dtype="i4", chunks=(3, 4))
    arr[...] = 1
    store.reset()
    arr.resize((6, 4))  # at chunk edges: nothing is left in a kept chunk
    assert _written(store) == ["a/zarr.json"]
    store.reset()
    arr.resize((5, 4))  # row 5 cut off in the one chunk holding it
    assert _written(store) == ["a/c/1/0", "a/zarr.json"]
    store.reset()
    arr.resize((5, 4))  # the same shape: nothing cut, nothing written
    assert _written(store) == []


sizes = st.integers(0, 9)
steps = st.lists(
    st.one_of(
        st.tuples(st.just("resize"), sizes, sizes),
        st.tuples(st.just("write"), sizes, sizes, st.integers(1, 100)),
    ),
    min_size=1,
    max_size=8,
)


@settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(layout=st.sampled_from(["chunks", "shards"]), steps=steps)
def test_resizes_and_writes_match_a_numpy_model(layout: str, steps: list[tuple[Any, ...]]) -> None:
    arr = _create(layout, (6, 6))
    model = np.full((6, 6), FILL, dtype="i4")
    for step in steps:
        if step[0] == "resize":
            arr.resize(step[1:])
            model = _resized(model, step[1:])
        else:
            _, y, x, value = step
            region = (slice(y // 2, y), slice(x // 3, x))
            arr[region] = value
            model[region] = value
        np.testing.assert_array_equal(arr[...], model)
