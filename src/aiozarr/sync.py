"""The sync facade: `Array` and `Group` call the async objects on one background loop.

One background event loop per process (an asyncio loop on a daemon thread), started
on first use, after `fork`, and again if it ever dies; each call is a task of its own.
Each I/O method is one `run` line, so sync and async cannot drift; `run` is public
because every sync twin above this layer (api, copy, migrate, xarray) goes through it. A
`KeyboardInterrupt` (or the `sync_timeout_s` setting running out) while blocked cancels
the task before re-raising.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import functools
import logging
import os
import threading
from collections.abc import Awaitable, Callable, Iterator, Mapping, MutableMapping
from typing import Any, TypeVar

import anyio
import numpy as np

from aiozarr import config, display
from aiozarr.array import ArrayInfo, AsyncArray
from aiozarr.engine.progress import ShowProgress
from aiozarr.errors import SyncInLoopError
from aiozarr.group import AsyncGroup

T = TypeVar("T")

_log = logging.getLogger("aiozarr")

_lock = threading.Lock()


class _Loop:
    """aiozarr's background event loop: an asyncio loop run forever by a daemon thread.

    Each sync call runs as a task of its own, in no task group: a call that breaks
    anyio's bookkeeping (a cancel scope left unbalanced by a RecursionError, say) fails
    alone instead of tearing down a portal's task group that every call shares. Not
    anyio's `start_blocking_portal` either: its generator's cleanup, run when it is
    garbage collected, joins the loop's thread, which a forked child does not have.
    """

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.loop = asyncio.new_event_loop()
        self._done = asyncio.Event()
        self.thread = threading.Thread(target=self._serve, name="aiozarr-loop", daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            # A host task that lives as long as the loop, run by `run_until_complete`, is
            # what anyio takes for the root task: the codec pool's threads belong to it
            # and serve every call, instead of ending with each call's task.
            self.loop.run_until_complete(self.loop.create_task(self._done.wait(), name=_HOST))
        except BaseException as error:  # the loop died: `_get_loop` starts a new one
            _log.warning("aiozarr's event loop stopped: %r; the next call starts anew", error)

    @property
    def running(self) -> bool:
        """Whether this process's loop thread still serves calls."""
        return self.pid == os.getpid() and self.thread.is_alive() and not self.loop.is_closed()

    def submit(self, call: _Call) -> concurrent.futures.Future[Any]:
        """Start `call` as a task of its own on the loop."""
        call.loop = self.loop
        return asyncio.run_coroutine_threadsafe(call.run(), self.loop)

    def stop(self) -> None:
        """Let the calls in progress finish, then end the loop (at interpreter exit)."""
        if self.running:
            with contextlib.suppress(Exception):  # the loop may already be stopping
                asyncio.run_coroutine_threadsafe(_drain(), self.loop).result()
                self.loop.call_soon_threadsafe(self._done.set)
            self.thread.join()


#: The name of the task that holds the loop open (see `_Loop._serve`).
_HOST = "aiozarr-loop-host"


async def _drain() -> None:
    """Wait for every call's task of the loop to finish."""
    others = {
        task
        for task in asyncio.all_tasks()
        if task is not asyncio.current_task() and task.get_name() != _HOST
    }
    await asyncio.gather(*others, return_exceptions=True)


_loop: _Loop | None = None


def _get_loop(stale: _Loop | None = None) -> _Loop:
    """This process's running loop: started on first use, after `fork` (the parent's
    thread does not exist in the child) and when the loop died or is `stale`."""
    loop = _loop
    if loop is not None and loop is not stale and loop.running:
        return loop
    return _start_loop(stale)


def _start_loop(stale: _Loop | None) -> _Loop:
    global _loop
    with _lock:
        if _loop is None or _loop is stale or not _loop.running:
            # The old loop (a parent's, or a dead one) is dropped, never joined.
            _loop = _Loop()
        return _loop


def _in_loop_thread() -> bool:
    loop = _loop
    return loop is not None and threading.current_thread() is loop.thread


def _start(call: _Call) -> concurrent.futures.Future[Any]:
    """Hand `call` to the loop; a loop that stopped since the last call is replaced by a
    new one rather than failing every later call."""
    loop = _get_loop()
    try:
        return loop.submit(call)
    except RuntimeError:  # "Event loop is closed": it died since `_get_loop` looked
        return _get_loop(stale=loop).submit(call)


@atexit.register
def _close_loop() -> None:
    global _loop
    loop, _loop = _loop, None
    if loop is not None:
        loop.stop()


class _Call:
    """One sync call's task on the loop, cancellable from the calling thread at any
    moment: a Ctrl-C can land while `start_task_soon` is still handing the task over,
    before there is a future to cancel."""

    def __init__(self, call: Callable[[], Awaitable[Any]], settings: config.Config) -> None:
        self._call = call
        self._settings = settings
        self._lock = threading.Lock()
        self._scope: anyio.CancelScope | None = None
        self._cancelled = False
        self.loop: asyncio.AbstractEventLoop | None = None  # where it was sent

    async def run(self) -> Any:
        with config.use(self._settings), anyio.CancelScope() as scope:
            with self._lock:
                self._scope = scope
                if self._cancelled:
                    scope.cancel()
            return await self._call()

    def cancel(self) -> None:
        """Cancel the task, now if it runs, else as soon as it starts."""
        with self._lock:
            self._cancelled = True
            scope = self._scope
        if scope is not None and self.loop is not None:
            with contextlib.suppress(Exception):  # the loop may be gone at exit
                self.loop.call_soon_threadsafe(scope.cancel)


def run(
    fn: Callable[..., Awaitable[T]],
    *args: Any,
    inline: Callable[..., tuple[bool, T]] | None = None,
    **kwargs: Any,
) -> T:
    """Run the coroutine function `fn` on aiozarr's background loop and wait for its
    result: the one way a sync function of aiozarr runs async code.

    `inline(*args, **kwargs)` is tried first: `(True, result)` when it could do the work
    on this thread (values in memory), which saves the hop to the loop's thread.
    """
    if _in_loop_thread():
        name = getattr(fn, "__qualname__", repr(fn))
        raise SyncInLoopError(
            f"the sync aiozarr API was called from aiozarr's own event loop; "
            f"use `await {name}(...)` instead"
        )
    if inline is not None:
        done, result = inline(*args, **kwargs)
        if done:
            return result
    settings = config.get()
    call = _Call(functools.partial(fn, *args, **kwargs), settings)
    future: concurrent.futures.Future[T] | None = None
    try:
        future = _start(call)
        return future.result(timeout=settings.sync_timeout_s)
    except BaseException as error:
        if future is not None and future.done():
            raise  # the call's own outcome
        call.cancel()  # Ctrl-C or the timeout: the task must not run on
        if isinstance(error, TimeoutError) and future is not None:
            raise TimeoutError(
                f"{getattr(fn, '__qualname__', fn)} did not finish within "
                f"sync_timeout_s={settings.sync_timeout_s}; it was cancelled"
            ) from None
        raise


class Attributes(MutableMapping[str, Any]):
    """A node's attributes; setting or deleting one stores the change."""

    def __init__(self, node: AsyncArray | AsyncGroup) -> None:
        self._node = node

    def __getitem__(self, key: str) -> Any:
        return self._node.attrs[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._node.attrs)

    def __len__(self) -> int:
        return len(self._node.attrs)

    def __setitem__(self, key: str, value: Any) -> None:
        return run(self._node.update_attributes, {key: value})  # type: ignore[func-returns-value]

    def __delitem__(self, key: str) -> None:
        return run(
            self._node.replace_attributes, {k: v for k, v in self._node.attrs.items() if k != key}
        )  # type: ignore[func-returns-value]

    def update(self, other: Mapping[str, Any] = (), /, **kwargs: Any) -> None:  # type: ignore[override]
        return run(self._node.update_attributes, {**dict(other), **kwargs})  # type: ignore[func-returns-value]

    def asdict(self) -> dict[str, Any]:
        return self._node.attrs

    def __repr__(self) -> str:
        return repr(self._node.attrs)


class _Selector:
    """`arr.oindex[...]`, `arr.vindex[...]`, `arr.blocks[...]`: one kind of selection,
    read with `[]` and written with `[] =`."""

    def __init__(
        self, get: Callable[..., Awaitable[Any]], set: Callable[..., Awaitable[None]]
    ) -> None:
        self._get = get
        self._set = set

    def __getitem__(self, selection: Any) -> Any:
        return run(self._get, selection)

    def __setitem__(self, selection: Any, value: Any) -> None:
        return run(self._set, selection, value)


class Array:
    """A Zarr array with numpy-like blocking access: `arr[...]`, `arr[...] = v`.

    Every method forwards to `AsyncArray` (available as `async_array`).
    """

    def __init__(self, async_array: AsyncArray) -> None:
        self._async = async_array

    @property
    def async_array(self) -> AsyncArray:
        """The `AsyncArray` this array forwards to (awaitable calls, same engine)."""
        return self._async

    # -- description (no I/O) --------------------------------------------------------------

    shape = property(lambda self: self._async.shape, doc="The array's shape.")
    dtype = property(lambda self: self._async.dtype, doc="The numpy data type.")
    chunks = property(lambda self: self._async.chunks, doc="Chunk shape (inner when sharded).")
    shards = property(lambda self: self._async.shards, doc="Shard shape, or None.")
    is_sharded = property(lambda self: self._async.is_sharded, doc="Whether it is sharded.")
    rectilinear_grid = property(
        lambda self: self._async.rectilinear_grid, doc="The grid when objects differ in shape."
    )
    read_chunk_sizes = property(
        lambda self: self._async.read_chunk_sizes, doc="Per axis, each chunk's length."
    )
    write_chunk_sizes = property(
        lambda self: self._async.write_chunk_sizes, doc="Per axis, each shard's length."
    )
    ndim = property(lambda self: self._async.ndim, doc="Number of dimensions.")
    size = property(lambda self: self._async.size, doc="Number of elements.")
    nbytes = property(lambda self: self._async.nbytes, doc="Decoded size in bytes.")
    fill_value = property(lambda self: self._async.fill_value, doc="Value of unwritten elements.")
    metadata = property(lambda self: self._async.metadata, doc="The array's metadata.")
    path = property(lambda self: self._async.path, doc="Path within the store.")
    name = property(lambda self: self._async.name, doc="Absolute name ('/path').")
    store = property(lambda self: self._async.store, doc="The store holding the array.")
    zarr_format = property(lambda self: self._async.zarr_format, doc="2 or 3.")
    read_only = property(lambda self: self._async.read_only, doc="Whether it cannot be written.")
    nchunks = property(lambda self: self._async.nchunks, doc="Chunks in the grid (inner).")
    order = property(lambda self: self._async.order, doc="v2's order; 'C' for v3.")
    filters = property(lambda self: self._async.filters, doc="Array-to-array codecs.")
    serializer = property(lambda self: self._async.serializer, doc="The array-to-bytes codec.")
    compressors = property(lambda self: self._async.compressors, doc="Bytes-to-bytes codecs.")

    def chunk_key(self, chunk_coords: tuple[int, ...]) -> str:
        """The store key of the shard (or chunk) at grid coordinates `chunk_coords`."""
        return self._async.chunk_key(chunk_coords)

    @property
    def attrs(self) -> Attributes:
        """The attributes, as a mutable mapping: `arr.attrs["units"] = "K"` writes the metadata."""
        return Attributes(self._async)

    @property
    def nchunks_initialized(self) -> int:
        """Chunks stored (a property, as zarr-python's; one listing)."""
        return run(self._async.nchunks_initialized)

    @property
    def oindex(self) -> _Selector:
        """Orthogonal selection: the outer product of per-axis ints, slices, arrays, masks."""
        return _Selector(self._async.get_orthogonal_selection, self._async.set_orthogonal_selection)

    @property
    def vindex(self) -> _Selector:
        """Vectorized selection: points (one integer array per axis) or a boolean mask."""
        return _Selector(self._async.get_vectorized_selection, self._async.set_vectorized_selection)

    @property
    def blocks(self) -> _Selector:
        """Block selection: whole shards (or chunks) by their grid indices."""
        return _Selector(self._async.get_block_selection, self._async.set_block_selection)

    description = property(
        lambda self: self._async.description, doc="What the array is, as one value."
    )

    @property
    def info(self) -> ArrayInfo:
        """The description (a `str` with its fields as attributes); no I/O."""
        return self._async.info()

    def info_complete(self) -> ArrayInfo:
        """`info` with the bytes stored and the chunks initialized (one listing)."""
        return run(self._async.info_complete)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d array")
        return self.shape[0]

    def __repr__(self) -> str:
        return f"<Array {self.store!r} {self.name} shape={self.shape} dtype={self.dtype}>"

    def _repr_html_(self) -> str:
        return display.array_html(self._async)

    # -- I/O: one line each ----------------------------------------------------------------

    def __getitem__(self, selection: Any) -> Any:
        return run(self._async.getitem, selection, inline=self._async.getitem_inline)

    def __setitem__(self, selection: Any, value: Any) -> None:
        return run(self._async.setitem, selection, value)

    def getitem(self, selection: Any = ..., *, progress: ShowProgress = None) -> Any:
        """`arr[selection]`, with `progress=True` for a progress bar (or a callback)."""
        return run(self._async.getitem, selection, progress=progress)

    def setitem(self, selection: Any, value: Any, *, progress: ShowProgress = None) -> None:
        """`arr[selection] = value`, with `progress=True` for a progress bar (or a callback)."""
        return run(self._async.setitem, selection, value, progress=progress)

    def get_basic_selection(self, selection: Any = ..., *, progress: ShowProgress = None) -> Any:
        """The values at a numpy basic selection (ints, slices with any step, `...`)."""
        return run(self._async.get_basic_selection, selection, progress=progress)

    def set_basic_selection(
        self, selection: Any, value: Any, *, progress: ShowProgress = None
    ) -> None:
        """Store `value` (broadcast to the selection's shape) at a basic selection."""
        return run(self._async.set_basic_selection, selection, value, progress=progress)

    def get_orthogonal_selection(self, selection: Any, *, progress: ShowProgress = None) -> Any:
        """The outer product of per-axis selections (ints, slices, integer arrays, masks):
        `arr.oindex[...]`."""
        return run(self._async.get_orthogonal_selection, selection, progress=progress)

    def set_orthogonal_selection(
        self, selection: Any, value: Any, *, progress: ShowProgress = None
    ) -> None:
        """Store `value` at the outer product of per-axis selections: `arr.oindex[...] = value`."""
        return run(self._async.set_orthogonal_selection, selection, value, progress=progress)

    def get_coordinate_selection(self, selection: Any, *, progress: ShowProgress = None) -> Any:
        """The points picked by one integer array per axis, broadcast together:
        `arr.vindex[...]`."""
        return run(self._async.get_coordinate_selection, selection, progress=progress)

    def set_coordinate_selection(
        self, selection: Any, value: Any, *, progress: ShowProgress = None
    ) -> None:
        """Store `value` at the points of one integer array per axis (where a point repeats, the
        last value wins)."""
        return run(self._async.set_coordinate_selection, selection, value, progress=progress)

    def get_mask_selection(self, mask: Any, *, progress: ShowProgress = None) -> Any:
        """The elements where `mask` (a boolean array of the array's shape) is true, in C order,
        as a 1-d array."""
        return run(self._async.get_mask_selection, mask, progress=progress)

    def set_mask_selection(self, mask: Any, value: Any, *, progress: ShowProgress = None) -> None:
        """Store `value` where `mask` (a boolean array of the array's shape) is true."""
        return run(self._async.set_mask_selection, mask, value, progress=progress)

    def get_vectorized_selection(self, selection: Any, *, progress: ShowProgress = None) -> Any:
        """`arr.vindex[selection]`: a coordinate or a mask selection."""
        return run(self._async.get_vectorized_selection, selection, progress=progress)

    def set_vectorized_selection(
        self, selection: Any, value: Any, *, progress: ShowProgress = None
    ) -> None:
        """`arr.vindex[selection] = value`: a coordinate or a mask selection."""
        return run(self._async.set_vectorized_selection, selection, value, progress=progress)

    def get_block_selection(self, selection: Any, *, progress: ShowProgress = None) -> Any:
        """The elements of whole blocks (shards when sharded, else chunks) by their grid indices:
        `arr.blocks[...]`."""
        return run(self._async.get_block_selection, selection, progress=progress)

    def set_block_selection(
        self, selection: Any, value: Any, *, progress: ShowProgress = None
    ) -> None:
        """Store `value` in whole blocks (shards when sharded, else chunks): `arr.blocks[...] =
        value`."""
        return run(self._async.set_block_selection, selection, value, progress=progress)

    def resize(self, new_shape: Any) -> None:
        """Change the shape; chunks wholly outside the new shape are deleted, as in zarr-python."""
        return run(self._async.resize, new_shape)

    def append(self, data: Any, axis: int = 0) -> tuple[int, ...]:
        """Grow the array along `axis` by `data` and write it there; the new shape."""
        return run(self._async.append, data, axis)

    def nbytes_stored(self) -> int:
        """Bytes the array takes in its store, metadata included."""
        return run(self._async.nbytes_stored)

    def update_attributes(self, attributes: Mapping[str, Any]) -> dict[str, Any]:
        """Merge `attributes` into the stored ones and write them; returns the new attributes."""
        return run(self._async.update_attributes, attributes)

    def replace_attributes(self, attributes: Mapping[str, Any]) -> dict[str, Any]:
        """Replace the stored attributes with `attributes`; returns them."""
        return run(self._async.replace_attributes, attributes)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        values = np.asarray(self[...])
        return values if dtype is None else values.astype(dtype)


class Group:
    """A Zarr group with blocking access: `group["name"]`, `"name" in group`.

    Every method forwards to `AsyncGroup` (available as `async_group`).
    """

    def __init__(self, async_group: AsyncGroup) -> None:
        self._async = async_group

    @property
    def async_group(self) -> AsyncGroup:
        """The `AsyncGroup` this group forwards to."""
        return self._async

    path = property(lambda self: self._async.path, doc="Path within the store.")
    name = property(lambda self: self._async.name, doc="Absolute name ('/path').")
    store = property(lambda self: self._async.store, doc="The store holding the group.")
    metadata = property(lambda self: self._async.metadata, doc="The group's metadata.")
    zarr_format = property(lambda self: self._async.zarr_format, doc="2 or 3.")

    @property
    def attrs(self) -> Attributes:
        """The attributes, as a mutable mapping: `arr.attrs["units"] = "K"` writes the metadata."""
        return Attributes(self._async)

    def __repr__(self) -> str:
        return f"<Group {self.store!r} {self.name}>"

    def _repr_html_(self) -> str:
        return display.group_html(self._async, self.tree())

    def __getitem__(self, name: str) -> Array | Group:
        return _wrap(run(self._async.getitem, name))

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and run(self._async.contains, name)

    def __iter__(self) -> Iterator[str]:
        return iter(self.member_names())

    def member_names(self) -> list[str]:
        """Names of the members, in listing order (`list(group)`)."""
        return run(self._async.member_names)

    def keys(self) -> list[str]:
        """Names of the members, sorted (zarr-python's `keys()`)."""
        return run(self._async.keys)

    def array_keys(self) -> list[str]:
        """Names of the members that are arrays."""
        return run(self._async.array_keys)

    def group_keys(self) -> list[str]:
        """Names of the members that are groups."""
        return run(self._async.group_keys)

    def __delitem__(self, name: str) -> None:
        return run(self._async.delitem, name)

    def delitem(self, name: str) -> None:
        """`del group[name]`: delete the member and everything below it."""
        return run(self._async.delitem, name)

    def members(self) -> list[tuple[str, Array | Group]]:
        """`(name, member)` for every member: arrays as `Array`, groups as `Group` (one listing
        and one batch of metadata reads, or the consolidated metadata)."""
        return [(n, _wrap(m)) for n, m in run(_collect, self._async.members())]

    def arrays(self) -> list[tuple[str, Array]]:
        """`(name, array)` for the members that are arrays."""
        return [(n, Array(a)) for n, a in run(self._async.arrays)]

    def groups(self) -> list[tuple[str, Group]]:
        """`(name, group)` for the members that are groups."""
        return [(n, Group(g)) for n, g in run(self._async.groups)]

    def create_group(
        self, name: str, *, attributes: Mapping[str, Any] | None = None, overwrite: bool = False
    ) -> Group:
        """Create the member group `name` (`overwrite` replaces whatever is there)."""
        return Group(
            run(self._async.create_group, name, attributes=attributes, overwrite=overwrite)
        )

    def require_group(self, name: str) -> Group:
        """The member group `name`, created when missing."""
        return Group(run(self._async.require_group, name))

    def create_array(
        self,
        name: str,
        *,
        shape: Any = None,
        dtype: Any = None,
        overwrite: bool = False,
        **options: Any,
    ) -> Array:
        """Create the member array `name`; the arguments are those of `aiozarr.create_array`."""
        return Array(
            run(
                self._async.create_array,
                name,
                shape=shape,
                dtype=dtype,
                overwrite=overwrite,
                **options,
            )
        )

    def require_array(
        self, name: str, *, shape: Any, dtype: Any = None, exact: bool = False, **options: Any
    ) -> Array:
        """The member array `name` if its shape and dtype fit, else a new one."""
        return Array(
            run(self._async.require_array, name, shape=shape, dtype=dtype, exact=exact, **options)
        )

    def update_attributes(self, attributes: Mapping[str, Any]) -> dict[str, Any]:
        """Merge `attributes` into the stored ones and write them; returns the new attributes."""
        return run(self._async.update_attributes, attributes)

    def replace_attributes(self, attributes: Mapping[str, Any]) -> dict[str, Any]:
        """Replace the stored attributes with `attributes`; returns them."""
        return run(self._async.replace_attributes, attributes)

    def tree(self, *, max_depth: int | None = None) -> str:
        """The hierarchy below this group as text, one line per node with its shape, dtype,
        chunks and shards."""
        return run(self._async.tree, max_depth=max_depth)


async def _collect(iterator: Any) -> list[Any]:
    return [item async for item in iterator]


def _wrap(node: AsyncArray | AsyncGroup) -> Array | Group:
    return Array(node) if isinstance(node, AsyncArray) else Group(node)
