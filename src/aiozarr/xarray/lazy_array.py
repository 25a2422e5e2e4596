"""`AiozarrBackendArray`: the lazy values of one xarray variable, read through aiozarr's
engine on the caller's event loop."""

from __future__ import annotations

import math
from typing import Any

import anyio
import anyio.lowlevel
import numpy as np
from xarray.backends import BackendArray
from xarray.core import indexing

from aiozarr.errors import (
    unwrap_group,
)
from aiozarr.nodes.array import AsyncArray
from aiozarr.sync import run
from aiozarr.xarray.read_together import read_together


class AiozarrBackendArray(BackendArray):
    """A lazy xarray variable over an `AsyncArray`.

    Basic and outer (orthogonal) keys go straight to aiozarr's engine, and so does a
    vectorized key, as the points it picks (`_points`): only the chunks holding them are
    read, where reading the key's outer bounding selection (xarray's split for a backend
    of `OUTER` support) took 10**8 values for 10**4 points of a 2-d array.

    Reads of the same basic selection that overlap in time on one event loop are made
    once (a coordinate shared by several variables loaded together); the others get a
    copy of its values. The first and last element of a CF datetime variable, which
    xarray's decoder asks for one after the other, are read while the dataset opens and
    served to it without a request; after the opening (`forget_ends`) every read asks
    the store, so a write since then is seen.
    """

    # `_array`, as xarray's own wrappers name it: xarray's checks of a variable's array
    # type walk through public `.array` attributes, and must stop here.
    __slots__ = ("_array", "_inflight", "_known", "dtype", "shape")

    def __init__(self, array: AsyncArray) -> None:
        self._array = array
        self.shape = array.shape
        self.dtype = array.dtype
        self._known: dict[tuple[Any, ...], Any] = {}
        self._inflight: dict[tuple[Any, ...], _SharedRead] = {}

    @property
    def async_array(self) -> AsyncArray:
        """The aiozarr array these values are read from."""
        return self._array

    def __getstate__(self) -> tuple[AsyncArray, dict[tuple[Any, ...], Any]]:
        return self._array, self._known  # reads in flight stay with this process

    def __setstate__(self, state: tuple[AsyncArray, dict[tuple[Any, ...], Any]]) -> None:
        self.__init__(state[0])  # type: ignore[misc]
        self._known = state[1]

    def __getitem__(self, key: indexing.ExplicitIndexer) -> Any:
        method = self._read_points if isinstance(key, indexing.VectorizedIndexer) else self._read
        return indexing.explicit_indexing_adapter(
            key, self.shape, indexing.IndexingSupport.VECTORIZED, lambda k: run(method, k)
        )

    async def async_getitem(self, key: indexing.ExplicitIndexer) -> Any:
        """The values at `key`, read on the caller's event loop (no thread hop)."""
        method = self._read_points if isinstance(key, indexing.VectorizedIndexer) else self._read
        return await indexing.async_explicit_indexing_adapter(
            key, self.shape, indexing.IndexingSupport.VECTORIZED, method
        )

    async def _read_points(self, key: tuple[Any, ...]) -> Any:
        """The values at a vectorized key: its arrays broadcast together, its slices'
        axes after theirs (xarray's `VectorizedIndexer`)."""
        with unwrap_group():
            return await self._array.get_coordinate_selection(_points(key, self.shape))

    async def _read(self, key: tuple[Any, ...]) -> Any:
        with unwrap_group():
            basic = _basic_key(key, self.shape)
            if basic is None:
                return await self._read_unwrapped(key)
            if basic in self._known:
                return _copy(self._known[basic])
            return await self._read_shared(basic, key)

    async def _read_shared(self, basic: tuple[Any, ...], key: tuple[Any, ...]) -> Any:
        slot = (anyio.lowlevel.current_token(), basic)
        shared = self._inflight.get(slot)
        if shared is not None:  # the same read is under way on this loop: wait for it
            await shared.done.wait()
            if shared.error is not None:
                raise shared.error
            if shared.finished:
                return _copy(shared.value)
            return await self._read_unwrapped(key)  # its reader was cancelled
        shared = self._inflight[slot] = _SharedRead()
        try:
            shared.value = await self._read_unwrapped(key)
            shared.finished = True
            return shared.value
        except Exception as error:
            shared.error = error
            raise
        finally:
            del self._inflight[slot]
            shared.done.set()

    async def _read_unwrapped(self, key: tuple[Any, ...]) -> Any:
        if all(isinstance(k, int | np.integer | slice) for k in key):
            value = await read_together(self._array, key)  # with other variables
        else:
            value = await self._array.get_orthogonal_selection(key)
        if isinstance(value, str) and self.dtype.kind == "T":  # one element of a string array
            return np.asarray(value, dtype=self.dtype)
        return value

    async def read_ends(self) -> None:
        """Read the selections xarray's CF datetime decoder asks for when a dataset opens,
        `first_n_items(data, 1)` and `last_item(data)`, as one coordinate selection of
        the first and the last element, to serve them to it without a request (until
        `forget_ends`)."""
        if 0 in self.shape:
            return
        ndim = len(self.shape)
        last = (slice(-1, None),) * ndim
        if math.prod(self.shape) == 1:  # a single element: both read the whole array
            self._known[_basic_key(last, self.shape)] = await self._read_unwrapped(last)  # type: ignore[index]
            return
        first = (0,) * (ndim - 1) + (slice(None, 1),)
        points = tuple(np.array([0, n - 1]) for n in self.shape)
        ends = np.asarray(await self._array.get_coordinate_selection(points))
        for key, value in zip((first, last), ends, strict=True):
            basic = _basic_key(key, self.shape)
            shape = tuple(len(range(*k)) for k in basic if isinstance(k, tuple))  # type: ignore[union-attr]
            self._known[basic] = np.full(shape, value, dtype=ends.dtype)  # type: ignore[index]

    def forget_ends(self) -> None:
        """Drop the elements `read_ends` read, once xarray's decoder has had them: they
        are as of the opening, and a later read must see what was written since."""
        self._known.clear()


class _SharedRead:
    """One read that concurrent readers of the same selection wait for."""

    __slots__ = ("done", "error", "finished", "value")

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.finished = False
        self.error: Exception | None = None
        self.value: Any = None


def _points(key: tuple[Any, ...], shape: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    """The coordinates, one array per axis, of the points a vectorized key picks, in the
    shape of its result: the arrays' broadcast shape, then each slice's length."""
    arrays = [np.asarray(k) for k in key if not isinstance(k, slice)]
    picked = np.broadcast_shapes(*(a.shape for a in arrays)) if arrays else ()
    ranges = [np.arange(n)[k] for k, n in zip(key, shape, strict=True) if isinstance(k, slice)]
    tail = len(ranges)
    out_shape = (*picked, *(len(r) for r in ranges))
    coords: list[np.ndarray] = []
    sliced = 0
    for k in key:
        if isinstance(k, slice):
            axis = [1] * len(out_shape)
            axis[len(picked) + sliced] = -1
            coords.append(ranges[sliced].reshape(axis))
            sliced += 1
        else:
            coords.append(np.asarray(k).reshape(np.asarray(k).shape + (1,) * tail))
    return tuple(np.broadcast_to(c, out_shape) for c in coords)


def _basic_key(key: tuple[Any, ...], shape: tuple[int, ...]) -> tuple[Any, ...] | None:
    """`key` with every entry made absolute (`None` unless it is integers and slices), so
    that equal selections compare equal however they were written."""
    if len(key) != len(shape):
        return None
    out: list[Any] = []
    for k, n in zip(key, shape, strict=True):
        if isinstance(k, slice):
            out.append(k.indices(n))
        elif isinstance(k, int | np.integer):
            out.append(int(k) + n if k < 0 else int(k))
        else:
            return None
    return tuple(out)


def _copy(value: Any) -> Any:
    return value.copy() if isinstance(value, np.ndarray) else value
