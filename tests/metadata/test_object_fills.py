"""Object and variable-length fill values: which chunks are all fill, how a fill value
fills an output (each element the value itself), and fill values out of a float's range."""

from __future__ import annotations

import numpy as np
import pytest

from aiozarr.errors import MetadataError
from aiozarr.metadata import fill_value as fv


def objects(*items: object) -> np.ndarray:
    out = np.empty(len(items), dtype=object)
    for i, item in enumerate(items):
        out[i] = item
    return out


@pytest.mark.parametrize(
    ("items", "fill"),
    [
        ((False, 0.0), 0),  # equal to the fill, not the fill: they read back as written
        ((0, 0), 0),
        ((np.array([0]), np.array([0])), 0),
        ((np.array([1, 2]), np.array([3])), 0),  # `==` answers with an array
        (([1, 2], [1, 2]), [1, 2]),
        ((b"a", "a"), "a"),
        (("a", "a"), b"a"),
    ],
)
def test_object_items_equal_to_the_fill_are_not_fill(
    items: tuple[object, ...], fill: object
) -> None:
    assert not fv.is_fill(objects(*items), fill)


@pytest.mark.parametrize(("items", "fill"), [(("a", "a"), "a"), ((b"q\x00", b"q\x00"), b"q\x00")])
def test_strings_and_bytes_equal_to_the_fill_are_fill(
    items: tuple[object, ...], fill: object
) -> None:
    assert fv.is_fill(objects(*items), fill)
    assert not fv.is_fill(objects(*items[:-1], items[-1] * 2), fill)  # type: ignore[operator]


def test_variable_length_strings_equal_to_the_fill_are_fill() -> None:
    chunk = np.array(["a\x00", "a\x00"], dtype=np.dtypes.StringDType())
    assert fv.is_fill(chunk, "a\x00")
    assert not fv.is_fill(chunk, "a")


@pytest.mark.parametrize(
    "selection", [slice(0, 1), slice(0, 3), slice(1, 3), (), 1, np.array([0, 2])]
)
def test_a_list_fill_is_each_elements_value(selection: object) -> None:
    out = np.empty(3, dtype=object)
    fv.fill_at(out, selection, [1, 2])
    places = np.atleast_1d(np.arange(3)[selection])  # type: ignore[index]
    assert all(out[i] == [1, 2] for i in places)
    assert all(out[i] is None for i in set(range(3)) - set(places.tolist()))


def test_a_list_fill_in_a_zero_dimensional_output() -> None:
    out = np.empty((), dtype=object)
    fv.fill_at(out, (), [1, 2])
    assert out[()] == [1, 2]


@pytest.mark.parametrize(
    ("dtype", "fill"),
    [
        (np.dtype(object), b"q\x00"),
        (np.dtype(object), "a\x00"),
        (np.dtype(object), [1, 2]),
        (np.dtypes.StringDType(), "a\x00"),
        (np.dtype("<f8"), 1.5),
    ],
)
def test_filled_keeps_the_value(dtype: np.dtype, fill: object) -> None:
    out = fv.filled((2, 2), dtype, fill)
    assert out.shape == (2, 2)
    assert out.dtype == dtype
    assert all(item == fill for item in out.flat)


@pytest.mark.parametrize("value", [10**400, -(10**400)])
def test_a_float_fill_past_every_float_is_a_metadata_error(value: int) -> None:
    with pytest.raises(MetadataError, match=r'a/zarr\.json: field "fill_value"'):
        fv.parse_v3(value, np.dtype("<f8"), "float64", "a/zarr.json")
    with pytest.raises(MetadataError, match=r'a/\.zarray: field "fill_value"'):
        fv.parse_v2(value, np.dtype("<f4"), "a/.zarray")


def test_a_large_integer_float_fill_still_rounds() -> None:
    assert fv.parse_v3(10**300, np.dtype("<f8"), "float64", "k") == np.float64(1e300)
    assert np.isinf(fv.parse_v3(10**300, np.dtype("<f4"), "float32", "k"))
