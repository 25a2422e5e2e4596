"""Errors that say what to do: each message names the fix, not only the failure."""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import aiozarr
from aiozarr import config
from aiozarr.errors import (
    InvalidValueError,
    SelectionError,
    SelectionTooLargeError,
    StoreError,
)
from aiozarr.storage.backends.memory import MemoryStore


def test_a_refused_connection_says_nothing_listens_at_the_endpoint() -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    options = {
        "endpoint": f"http://127.0.0.1:{port}/",
        "skip_signature": True,
        "client_options": {"allow_http": True},
    }
    with (
        config.set(retry_attempts=2, retry_base_delay_s=0.001),
        pytest.raises(StoreError) as caught,
    ):
        aiozarr.open_array("s3://bucket/data.zarr", mode="r", storage_options=options)
    message = str(caught.value)
    assert f"connection refused: nothing listens at http://127.0.0.1:{port}/" in message
    assert "error sending request" not in message  # obstore's words stay in the cause
    assert "gave up after 2 attempts" in message


def test_config_get_takes_a_setting_name() -> None:
    assert config.get("max_concurrency") == config.get().max_concurrency
    with config.set(max_concurrency=7):
        assert config.get("max_concurrency") == 7
    assert isinstance(config.get(), config.Config)
    with pytest.raises(KeyError, match=r"did you mean 'max_concurrency'"):
        config.get("max_concurency")


async def test_subscripting_an_async_array_points_to_getitem_and_setitem() -> None:
    arr = await aiozarr.create_array_async(MemoryStore(), shape=(4,), dtype="i2", chunks=(2,))
    with pytest.raises(TypeError, match=r"await arr\.getitem\(sel\)") as caught:
        arr[0]
    assert "aiozarr.open_array" in str(caught.value)
    with pytest.raises(TypeError, match=r"await arr\.setitem\(sel, value\)"):
        arr[0] = 1
    assert (await arr.getitem(...)).shape == (4,)


def test_a_value_of_the_wrong_shape_and_dtype_is_blamed_on_its_shape() -> None:
    arr = aiozarr.create_array(MemoryStore(), shape=(4,), dtype="i4", chunks=(2,))
    misshapen = r"shape \(3,\).*cannot be broadcast to the selection's shape \(4,\)"
    with pytest.raises(InvalidValueError, match=misshapen) as caught:
        arr[0:4] = np.full(3, 0.5)
    assert "give a value of that shape" in str(caught.value)  # what to do
    assert "cannot cast" not in str(caught.value)
    with pytest.raises(InvalidValueError, match="cannot cast float64 to int32"):
        arr[0:4] = np.full(4, 0.5)  # the right shape: now the dtype is what is wrong


@pytest.mark.parametrize("chunks", [(2**62, 2**62), (2**40, 2**40), (1000, 1000)])
def test_a_selection_numpy_cannot_address_is_too_large(chunks: tuple[int, int]) -> None:
    arr = aiozarr.create_array(MemoryStore(), shape=(2**62, 2**62), dtype="f8", chunks=chunks)
    with pytest.raises(SelectionTooLargeError, match="read or write it in parts"):
        arr[...] = 1.0
    with pytest.raises(SelectionTooLargeError, match="read or write it in parts"):
        arr[0] = 1.0
    with pytest.raises(SelectionTooLargeError, match="read or write it in parts"):
        arr[...]
    with pytest.raises(SelectionTooLargeError, match="read or write it in parts"):
        arr.oindex[:, :]


def test_a_selection_of_more_chunks_than_numpy_can_list_is_too_large() -> None:
    # 2**62 chunks of one int8 each: the block is addressable (2**62 bytes), the list of
    # its chunks (int64) is not: numpy's bare "array is too big" ValueError came out.
    arr = aiozarr.create_array(MemoryStore(), shape=(2**62,), dtype="i1", chunks=(1,))
    for select in (lambda: arr[:], lambda: arr.oindex[1::2], lambda: arr.get_basic_selection()):
        with pytest.raises(SelectionTooLargeError, match=r"array / in .*read or write it in parts"):
            select()
    with pytest.raises(SelectionTooLargeError, match="read or write it in parts"):
        arr[:] = 1


def test_an_empty_selection_numpy_cannot_address_says_so() -> None:
    # numpy refuses shape (2**62, 0) of int16 ("array is too big"): the message said "0 B,
    # more than the memory", and a write blamed its value (InvalidValueError).
    arr = aiozarr.create_array(MemoryStore(), shape=(2**62, 2), dtype="i2", chunks=(2**40, 1))
    said = r"numpy cannot make an array of shape \(4611686018427387904, 0\) \(int16\), empty"
    with pytest.raises(SelectionTooLargeError, match=said):
        arr[:, 2:]
    with pytest.raises(SelectionTooLargeError, match=said):
        arr.oindex[:, []] = 1
    assert arr[2**61 :, 2:].shape == (2**61, 0)  # 2**62 bytes: numpy makes that one


def test_shape_and_axis_errors_are_value_errors_as_in_zarr_python() -> None:
    # zarr-python raises ValueError for both (numpy's broadcasting, its append checks):
    # code written for it catches them
    arr = aiozarr.create_array(MemoryStore(), shape=(3, 4), chunks=(2, 2), dtype="i4")
    with pytest.raises(ValueError, match="every other dimension must match"):
        arr.append(np.zeros((2, 5), "i4"), axis=0)
    with pytest.raises(ValueError, match="axis 2 is out of bounds"):
        arr.append(np.zeros((2, 4), "i4"), axis=2)
    with pytest.raises(ValueError, match="cannot be broadcast"):
        arr[0:2, 0:2] = np.zeros((3,), "i4")
    with pytest.raises(InvalidValueError):  # and still the kinds they were
        arr[0:2, 0:2] = np.zeros((3,), "i4")
    assert arr.shape == (3, 4)


@pytest.mark.parametrize(
    ("select", "builtin"),
    [
        (lambda a: a[::0], ValueError),
        (lambda a: a.oindex[0, ::0], ValueError),
        (lambda a: a.__setitem__((slice(None), slice(None, None, 0)), 1), ValueError),
        (lambda a: a[1.0:], TypeError),
        (lambda a: a[:, : np.float64(2)], TypeError),
        (lambda a: a.blocks[0.0:1], TypeError),
    ],
)
def test_a_slice_numpy_refuses_is_the_error_zarr_python_raises(
    select: Callable[[Any], object], builtin: type[Exception]
) -> None:
    # numpy and zarr-python: ValueError for a step of 0, TypeError for a float member;
    # aiozarr's SelectionError (an IndexError) was neither, so their except missed it.
    arr = aiozarr.create_array(MemoryStore(), shape=(3, 4), chunks=(2, 2), dtype="i4")
    with pytest.raises(builtin, match=r"invalid slice .* for axis \d") as caught:
        select(arr)
    assert isinstance(caught.value, SelectionError)
