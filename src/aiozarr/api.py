"""The top-level functions: open and create arrays and groups.

Each function has an `_async` twin that returns the async object; the plain one
returns the sync facade (`Array` / `Group`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal, TypeVar

import anyio
from obstore.store import AzureStore, GCSStore, HTTPStore, S3Store
from obstore.store import LocalStore as ObstoreLocal
from obstore.store import MemoryStore as ObstoreMemory

from aiozarr.engine import entry as engine
from aiozarr.engine.entry import CacheSettings
from aiozarr.errors import AiozarrError, NodeNotFoundError, unwrap_group
from aiozarr.nodes.array import AsyncArray
from aiozarr.nodes.creation import check_options
from aiozarr.nodes.group import AsyncGroup
from aiozarr.storage.backends.object_store import ObjectStore
from aiozarr.storage.backends.zarr_store import ZarrStore, is_zarr_store
from aiozarr.storage.backends.zip import ZipMode
from aiozarr.storage.opening.url import escapes_noted, from_url, names_zip, open_zip
from aiozarr.storage.protocol import Store
from aiozarr.storage.protocol.wrapper import read_only_view
from aiozarr.storage.references.icechunk import IcechunkStore, is_repository, probe_repository
from aiozarr.storage.references.reference_store import ReferenceStore, is_reference_source
from aiozarr.sync import Array, Group, asyncio_only, run
from aiozarr.sync.facade import local_data

F = TypeVar("F", bound=Callable[..., Any])
Mode = Literal["r", "r+", "a", "w", "w-"]
#: A Store, a URL or local path, kerchunk references (a dict, a .json or a .parq), an
#: obstore store or a zarr-python 3 store.
StoreLike = Store | str | os.PathLike[str] | Mapping[str, Any] | Any

_MODES = ("r", "r+", "a", "w", "w-")
#: obstore's store classes: one passed where a store is taken is wrapped in `ObjectStore`.
_OBSTORES = (S3Store, GCSStore, AzureStore, HTTPStore, ObstoreLocal, ObstoreMemory)


def is_obstore(obj: Any) -> bool:
    """Whether `obj` is an obstore store (`obstore.store.S3Store(...)`, ...)."""
    return isinstance(obj, _OBSTORES)


_ZIP_MODES: dict[str, ZipMode] = {"r": "r", "r+": "a", "a": "a", "w": "w", "w-": "x"}


def resolve_store(
    store: StoreLike, *, mode: Mode = "r", storage_options: Mapping[str, Any] | None = None
) -> Store:
    """A `Store` for `store`: a URL or local path opened in `mode`; a Store as it is
    (mode "r": read-only, `read_only_view`, as zarr-python's); an obstore store
    (`obstore.store.S3Store(...)`) or a zarr-python 3 store (`zarr.storage.LocalStore`,
    icechunk's, ...) wrapped: `ObjectStore`, `ZarrStore` (read-only in mode "r")."""
    if mode not in _MODES:
        raise AiozarrError(f"mode must be one of {', '.join(_MODES)}, got {mode!r}")
    read_only = mode == "r"
    if isinstance(store, Store):
        return read_only_view(store) if read_only else store
    if is_obstore(store):
        return ObjectStore(store, read_only=read_only)
    if is_zarr_store(store):
        return ZarrStore(store, read_only=True if read_only else None)
    if isinstance(store, os.PathLike):
        store = os.fspath(store)
    if is_reference_source(store):  # kerchunk references: a dict, a .json or a .parq
        return ReferenceStore(store, storage_options=storage_options)
    if is_repository(store, storage_options):  # an icechunk repository: read-only
        return IcechunkStore(store, storage_options=storage_options)
    if not isinstance(store, str):
        raise AiozarrError(f"expected a Store, a URL or a path, got {type(store).__name__}")
    if names_zip(store):  # "w" starts a new archive, "w-" one that must not exist yet
        return open_zip(store, mode=_ZIP_MODES[mode], storage_options=storage_options)
    return from_url(store, storage_options=storage_options, read_only=read_only)


# -- async ------------------------------------------------------------------------------------


@asyncio_only
async def open_array_async(
    store: StoreLike,
    path: str = "",
    *,
    mode: Mode = "a",
    zarr_format: Literal[2, 3] | None = None,
    storage_options: Mapping[str, Any] | None = None,
    cache_bytes: int | None = None,
    cache_recheck: bool | Literal["open"] | float | None = None,
) -> AsyncArray:
    """Open an existing array; the blocking twin is `open_array`.

    Reads the array's metadata only (one request for Zarr v3), never its chunks.

    Args:
        store: A URL or local path (`"s3://bucket/data.zarr"`, `"data.zarr"`,
            `"memory://name"`, a path ending in `.zip` for a zip archive), a store of
            `aiozarr.storage`, an obstore store, a zarr-python 3 store, or kerchunk
            references (a dict, a `.json` or a `.parq`), or an icechunk repository
            (read-only; `storage_options` may name its `branch`, `tag` or `snapshot`).
        path: The node's path inside the store ("" for its root).
        mode: "r" opens it read-only; the others ("r+", "a" the default, "w", "w-")
            read-write. Nothing is created here: see `create_array`.
        zarr_format: 2 or 3 to read only that format; None detects it (`zarr.json`
            first, then the v2 documents in one batch, then v1 and the 2020 draft).
        storage_options: Settings of the store a URL opens (region, endpoint,
            credentials, ...): see the storage options reference. A store object
            takes none.
        cache_bytes: Keep decoded chunks in memory, up to this many bytes, in a pool
            shared by the arrays opened with the same bound (0: none; None: the
            `cache_bytes` setting, 0 by default). Repeated and overlapping reads then
            decode each chunk once.
        cache_recheck: When cached chunks are checked against the store again: "open"
            (those cached before this open are revalidated once), True (on every
            read: one conditional request per object, no bytes when unchanged), False
            (never), or a maximum age in seconds. None: the `cache_recheck` setting.

    Returns:
        The array, to read with `await arr.getitem(selection)`.

    Raises:
        NodeNotFoundError: Nothing is at `path`, or a group is (also a `KeyError` and a
            `FileNotFoundError`).
        MetadataError: The metadata is malformed.
        UnsupportedError: A codec or data type aiozarr cannot read (the message names
            the package to install where one would).
        StoreError: The store failed or refused (a missing bucket, no permission).
    """
    resolved = resolve_store(store, mode=mode, storage_options=storage_options)
    cache = CacheSettings.of(cache_bytes, cache_recheck)
    try:
        return await AsyncArray.open(resolved, path, zarr_format=zarr_format, cache=cache)
    except NodeNotFoundError as missing:
        repository = await _repository_instead(store, resolved, storage_options)
        if repository is None:
            raise escapes_noted(missing, store) from None
        return await AsyncArray.open(repository, path, zarr_format=zarr_format, cache=cache)


async def _group_or_repository(
    store: StoreLike,
    resolved: Store,
    path: str,
    zarr_format: Literal[2, 3] | None,
    storage_options: Mapping[str, Any] | None,
    *,
    any_node: bool = False,
    cache: CacheSettings | None = None,
) -> AsyncGroup | AsyncArray:
    """The group at `path`; where there is none, or only an implicit one (a directory:
    an icechunk repository looks like one), the group (`any_node`: the node) at `path`
    in the repository at URL `store` if there is one, so no group is created in it."""
    try:
        group = await AsyncGroup.open(resolved, path, zarr_format=zarr_format, cache=cache)
    except NodeNotFoundError as missing:
        repository = await _repository_instead(store, resolved, storage_options)
        if repository is None:
            raise escapes_noted(missing, store) from None
    else:
        if not group.implicit:
            return group
        repository = await _repository_instead(store, resolved, storage_options)
        if repository is None:
            return group
    if any_node:
        with contextlib.suppress(NodeNotFoundError):
            return await AsyncArray.open(repository, path, zarr_format=zarr_format, cache=cache)
    return await AsyncGroup.open(repository, path, zarr_format=zarr_format, cache=cache)


async def _repository_instead(
    store: StoreLike, resolved: Store, storage_options: Mapping[str, Any] | None
) -> Store | None:
    """The icechunk repository at remote URL `store`, where no Zarr node was found in
    `resolved`: a remote repository is told from a Zarr hierarchy by its layout only
    once the Zarr read finds nothing, so that read costs no request more."""
    if isinstance(resolved, IcechunkStore | ReferenceStore):
        return None
    return await probe_repository(store, storage_options)


@asyncio_only
async def open_group_async(
    store: StoreLike,
    path: str = "",
    *,
    mode: Mode = "a",
    zarr_format: Literal[2, 3] | None = None,
    storage_options: Mapping[str, Any] | None = None,
    attributes: Mapping[str, Any] | None = None,
    cache_bytes: int | None = None,
    cache_recheck: bool | Literal["open"] | float | None = None,
) -> AsyncGroup:
    """Open a group, or create it; the blocking twin is `open_group`.

    Args:
        store: A URL or local path (`"s3://bucket/data.zarr"`, `"data.zarr"`,
            `"memory://name"`, a path ending in `.zip` for a zip archive), a store of
            `aiozarr.storage`, an obstore store, a zarr-python 3 store, or kerchunk
            references (a dict, a `.json` or a `.parq`), or an icechunk repository
            (read-only; `storage_options` may name its `branch`, `tag` or `snapshot`).
        path: The node's path inside the store ("" for its root).
        mode: "r" read-only and "r+" read-write open an existing group; "a" (default)
            opens one or creates it when missing; "w" creates it, replacing whatever
            is at `path`; "w-" creates it only where nothing is.
        zarr_format: 2 or 3 to read only that format; None detects it (`zarr.json`
            and `.zmetadata` in one batch, then the v2 documents, then v1 and the 2020
            draft). A group created without it is v3.
        storage_options: Settings of the store a URL opens (region, endpoint,
            credentials, ...): see the storage options reference. A store object
            takes none.
        attributes: The attributes of a group this call creates.
        cache_bytes: The chunk cache of arrays opened through it (`open_array_async`).
        cache_recheck: As `open_array_async`'s.

    Returns:
        The group: `await group.members()`, `await group.create_array(...)`, ...

    Raises:
        NodeNotFoundError: No group at `path` in modes "r" and "r+".
        NodeExistsError: Mode "w-" and something is at `path` (a key below it).
    """
    resolved = resolve_store(store, mode=mode, storage_options=storage_options)
    cache = CacheSettings.of(cache_bytes, cache_recheck)
    if mode in ("w", "w-"):  # "w-": only where no key lies below `path`, as zarr-python's
        how = {"overwrite": True} if mode == "w" else {"empty_only": True}
        return await AsyncGroup.create(
            resolved, path, attributes=attributes, zarr_format=zarr_format or 3, cache=cache, **how
        )
    try:
        return await _group_or_repository(
            store, resolved, path, zarr_format, storage_options, any_node=True, cache=cache
        )
    except NodeNotFoundError:
        if mode != "a" or not resolved.writable:  # nothing to create it in: say what is missing
            raise
        fmt = zarr_format  # None: v3, or whichever format another writer created it in
        return await AsyncGroup.create(
            resolved, path, attributes=attributes, zarr_format=fmt, exist_ok=True, cache=cache
        )


@asyncio_only
async def open_async(
    store: StoreLike,
    path: str = "",
    *,
    mode: Mode = "a",
    zarr_format: Literal[2, 3] | None = None,
    storage_options: Mapping[str, Any] | None = None,
    cache_bytes: int | None = None,
    cache_recheck: bool | Literal["open"] | float | None = None,
) -> AsyncArray | AsyncGroup:
    """Open whatever node is at `path`, an array or a group; the blocking twin is `open`.

    Args:
        store: A URL or local path (`"s3://bucket/data.zarr"`, `"data.zarr"`,
            `"memory://name"`, a path ending in `.zip` for a zip archive), a store of
            `aiozarr.storage`, an obstore store, a zarr-python 3 store, or kerchunk
            references (a dict, a `.json` or a `.parq`), or an icechunk repository
            (read-only; `storage_options` may name its `branch`, `tag` or `snapshot`).
        path: The node's path inside the store ("" for its root).
        mode: As `open_array_async`'s; nothing is created.
        zarr_format: 2 or 3 to read only that format; None detects it (`zarr.json`
            and `.zmetadata` in one batch, then the v2 documents, then v1 and the 2020
            draft).
        storage_options: Settings of the store a URL opens (region, endpoint,
            credentials, ...): see the storage options reference. A store object
            takes none.
        cache_bytes: As `open_array_async`'s: the chunk cache of an array opened here.
        cache_recheck: As `open_array_async`'s.

    Returns:
        An `AsyncArray` or an `AsyncGroup`.

    Raises:
        NodeNotFoundError: Nothing is at `path`.
    """
    resolved = resolve_store(store, mode=mode, storage_options=storage_options)
    cache = CacheSettings.of(cache_bytes, cache_recheck)
    try:
        return await AsyncArray.open(resolved, path, zarr_format=zarr_format, cache=cache)
    except NodeNotFoundError:
        return await _group_or_repository(
            store, resolved, path, zarr_format, storage_options, any_node=True, cache=cache
        )


@asyncio_only
async def create_array_async(
    store: StoreLike,
    path: str = "",
    *,
    name: str | None = None,
    shape: int | Sequence[int] | None = None,
    dtype: Any = None,
    data: Any = None,
    chunks: int | Sequence[int] | Literal["auto"] | None = None,
    shards: int | Sequence[int] | None = None,
    overwrite: bool = False,
    config: Mapping[str, Any] | None = None,
    storage_options: Mapping[str, Any] | None = None,
    **options: Any,
) -> AsyncArray:
    """Create an array; the blocking twin is `create_array`.

    The arguments are zarr-python 3's `create_array`'s. The default compressor is zstd
    level 0, as zarr-python's, so both write the same bytes by default.

    Args:
        store: A URL or local path (`"s3://bucket/data.zarr"`, `"data.zarr"`,
            `"memory://name"`, a path ending in `.zip` for a zip archive), a store of
            `aiozarr.storage`, an obstore store, a zarr-python 3 store, or kerchunk
            references (a dict, a `.json` or a `.parq`), or an icechunk repository
            (read-only; `storage_options` may name its `branch`, `tag` or `snapshot`).
        path: The node's path inside the store ("" for its root).
        name: zarr-python's name for `path` (give one of the two).
        shape: The array's shape (or give `data`).
        dtype: A numpy dtype or its name; `str` means variable-length strings.
        data: Values to write: they give the shape and, without `dtype`, the data type.
        chunks: The chunk shape (the inner chunk shape when `shards` is given);
            "auto" or None: zarr-python's choice for the shape and dtype; a list of
            edge lengths in place of an int on an axis asks for a rectilinear grid.
        shards: The shard shape: each stored object then holds many chunks
            (`sharding_indexed`); None: unsharded.
        overwrite: Replace whatever is at `path` (everything under it is deleted).
        config: Array settings kept with the array: `{"write_empty_chunks": ...}`.
        storage_options: Settings of the store a URL opens (region, endpoint,
            credentials, ...): see the storage options reference. A store object
            takes none.
        **options: `filters`, `compressors`, `serializer` (dicts such as
            `{"name": "zstd", "configuration": {"level": 3}}`, or zarr-python's or
            numcodecs' codec objects), `fill_value`, `order`, `zarr_format` (3, the
            default, or 2), `attributes`, `dimension_names`, `chunk_key_encoding`.

    Returns:
        The new array.

    Raises:
        NodeExistsError: Something is at `path` and `overwrite` is False.
        MetadataError: The arguments contradict each other or a codec is misconfigured.
        ValueOutOfRangeError: `data` or `fill_value` does not fit the dtype.
    """
    check_options("create_array_async", options)
    path = _path_or_name(path, name)
    resolved = resolve_store(store, mode="a", storage_options=storage_options)
    # named above for the signature and its documentation; passed on as they came
    options.update(shape=shape, dtype=dtype, data=data, chunks=chunks, shards=shards)
    return await AsyncArray.create(resolved, path, overwrite=overwrite, config=config, **options)


def _path_or_name(path: str, name: str | None) -> str:
    """`path`, or zarr-python's `name=` for it."""
    if name is None:
        return path
    if path and path.strip("/") != name.strip("/"):
        raise TypeError(f"create_array(): got path={path!r} and name={name!r}; give one")
    return name


@asyncio_only
async def create_group_async(
    store: StoreLike,
    path: str = "",
    *,
    attributes: Mapping[str, Any] | None = None,
    zarr_format: Literal[2, 3] = 3,
    overwrite: bool = False,
    storage_options: Mapping[str, Any] | None = None,
) -> AsyncGroup:
    """Create a group; the blocking twin is `create_group`.

    Args:
        store: A URL or local path (`"s3://bucket/data.zarr"`, `"data.zarr"`,
            `"memory://name"`, a path ending in `.zip` for a zip archive), a store of
            `aiozarr.storage`, an obstore store, a zarr-python 3 store, or kerchunk
            references (a dict, a `.json` or a `.parq`), or an icechunk repository
            (read-only; `storage_options` may name its `branch`, `tag` or `snapshot`).
        path: The node's path inside the store ("" for its root).
        attributes: The group's attributes.
        zarr_format: 3 (default) or 2.
        overwrite: Replace whatever is at `path` (everything under it is deleted).
        storage_options: Settings of the store a URL opens (region, endpoint,
            credentials, ...): see the storage options reference. A store object
            takes none.

    Returns:
        The new group.

    Raises:
        NodeExistsError: Something is at `path` and `overwrite` is False.
    """
    resolved = resolve_store(store, mode="a", storage_options=storage_options)
    return await AsyncGroup.create(
        resolved, path, attributes=attributes, zarr_format=zarr_format, overwrite=overwrite
    )


def _pair_of(read: Any) -> tuple[AsyncArray, Any]:
    """One `read_many` pair as `(array, selection)`; an `AiozarrError` for anything else
    (an accessor such as `arr.vindex`: its selections are read through it)."""
    if not (isinstance(read, tuple | list) and len(read) == 2):
        raise AiozarrError(f"read_many takes (array, selection) pairs, got {read!r:.100}")
    value, selection = read
    if isinstance(value, Array):
        return value.async_array, selection
    if isinstance(value, AsyncArray):
        return value, selection
    raise AiozarrError(
        f"read_many takes (array, selection) pairs, got {type(value).__name__} where the "
        "array goes (arr.oindex / arr.vindex / arr.blocks selections are read through them)"
    )


@asyncio_only
async def read_many_async(reads: Iterable[tuple[AsyncArray | Array, Any]]) -> list[Any]:
    """The values of many selections, `[(array, selection), ...]`, read as one: the shard
    indexes of every array not cached in one batch per store, then each shard's chunks
    as its index lands, ranges of one shard coalesced across selections. Arrays may be in
    different stores; a selection is anything `getitem` takes. The blocking twin is
    `read_many`.

    Returns:
        The values of each selection, in order, as `getitem` returns them.
    """
    pairs = [_pair_of(read) for read in reads]
    if len(pairs) == 1:  # nothing to plan together: the single read's plan
        return [await pairs[0][0].getitem(pairs[0][1])]
    results: list[Any] = [None] * len(pairs)
    collector = engine.Collector(len(pairs))

    async def one(i: int, array: AsyncArray, selection: Any) -> None:
        try:
            results[i] = await array.getitem(selection)
        except AiozarrError as error:  # say which of the reads it was
            which = f"reads[{i}] of {len(pairs)}, {array!r}[{selection!r:.100}]"
            error.add_note(f"in read_many: {which}")
            raise
        collector.task_ended()  # (a failure cancels the others and the read instead)

    with unwrap_group(), engine.gather(collector):
        async with anyio.create_task_group() as tg:
            for i, (array, selection) in enumerate(pairs):
                tg.start_soon(one, i, array, selection)
            await collector.read()
    return results


class Batch:
    """Reads started inside it, in this task and in tasks it starts, read together: see
    `batch`. Use it as `with` or `async with`."""

    def __init__(self, *, shared: bool = False) -> None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            raise RuntimeError(
                "aiozarr.batch() gathers reads started in async code; blocking code reads "
                "many selections as one with aiozarr.read_many([(array, selection), ...])"
            ) from None
        self._gather = engine.gather(engine.loop_window() if shared else engine.Window())

    def __enter__(self) -> Batch:
        self._gather.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._gather.__exit__(*exc)

    async def __aenter__(self) -> Batch:
        return self.__enter__()

    async def __aexit__(self, *exc: object) -> None:
        self.__exit__(*exc)


def batch(*, shared: bool = False) -> Batch:
    """Read the selections started inside the block together, as `read_many_async` does:
    reads that are under way at the same time (`asyncio.gather`, tasks started inside)
    form one plan (one batch of shard indexes per store, then each shard's coalesced
    chunk ranges as its index lands), each read still returning its own values or
    raising its own error. A read alone is read as without the block.

        async with aiozarr.batch():
            a, b = await asyncio.gather(temp.getitem(sel), wind.getitem(sel))

    With `shared=True` the reads also join those of other tasks on the same event loop
    that are in a shared batch (e.g. the handlers of a web service, or xarray's variables
    in `load_async`). For async code; blocking code uses `read_many`.
    """
    return Batch(shared=shared)


# -- sync -------------------------------------------------------------------------------------


def _twin_of(
    async_fn: Callable[..., Any],
    check_options: Callable[[str, Iterable[str]], None] | None = None,
) -> Callable[[F], F]:
    """Give a sync function its async twin's signature: `help()` shows every argument, and
    a wrong one is refused before any work, naming the function the caller called.
    `check_options(name, keywords)` vets what the twin's `**options` would take."""
    signature = inspect.signature(async_fn)
    var_keyword = next(
        (p.name for p in signature.parameters.values() if p.kind is p.VAR_KEYWORD), None
    )

    def decorate(sync_fn: F) -> F:
        @functools.wraps(sync_fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                bound = signature.bind(*args, **kwargs)
            except TypeError as error:
                raise TypeError(f"{sync_fn.__name__}(): {error}") from None
            if check_options is not None and var_keyword is not None:
                check_options(sync_fn.__name__, bound.arguments.get(var_keyword, {}))
            return sync_fn(*args, **kwargs)

        call.__signature__ = signature.replace(  # type: ignore[attr-defined]
            return_annotation=inspect.signature(sync_fn).return_annotation
        )
        return call  # type: ignore[return-value]

    return decorate


@_twin_of(open_array_async)
def open_array(store: StoreLike, path: str = "", **options: Any) -> Array:
    """Open an existing array, for blocking use (`arr[...]`, `arr[...] = v`).

    Takes the arguments of `open_array_async` (`store`, `path`, `mode`, `zarr_format`,
    `storage_options`, `cache_bytes`, `cache_recheck`), which documents them, and
    returns an `Array` in place of an `AsyncArray`. Works inside a running event loop
    too (Jupyter): the call runs on aiozarr's own loop thread.
    """
    return Array(run(open_array_async, store, path, only_reads=True, **options))


@_twin_of(open_group_async)
def open_group(store: StoreLike, path: str = "", **options: Any) -> Group:
    """Open a group, or create it, for blocking use.

    Takes the arguments of `open_group_async` (`store`, `path`, `mode`, `zarr_format`,
    `storage_options`, `attributes`, `cache_bytes`, `cache_recheck`), which documents
    them, and returns a `Group`.
    """
    # "r" and "r+" open an existing group; the other modes may create one
    reads = options.get("mode", "a") in ("r", "r+")
    return Group(run(open_group_async, store, path, only_reads=reads, **options))


@_twin_of(open_async)
def open(store: StoreLike, path: str = "", **options: Any) -> Array | Group:
    """Open the array or group at `path`, for blocking use.

    Takes the arguments of `open_async`, which documents them, and returns an `Array` or
    a `Group`.
    """
    node = run(open_async, store, path, only_reads=True, **options)
    return Array(node) if isinstance(node, AsyncArray) else Group(node)


@_twin_of(create_array_async, check_options)
def create_array(store: StoreLike, path: str = "", **options: Any) -> Array:
    """Create an array, for blocking use.

    Takes the arguments of `create_array_async` (`shape`, `dtype`, `data`, `chunks`,
    `shards`, `overwrite`, `config`, `storage_options`, and `filters`, `compressors`,
    `serializer`, `fill_value`, `order`, `zarr_format`, `attributes`,
    `dimension_names`, `chunk_key_encoding`), which documents them, and returns an
    `Array`. A wrong argument is refused before anything is written.
    """
    return Array(run(create_array_async, store, path, **local_data(options)))


@_twin_of(create_group_async)
def create_group(store: StoreLike, path: str = "", **options: Any) -> Group:
    """Create a group, for blocking use.

    Takes the arguments of `create_group_async` (`attributes`, `zarr_format`,
    `overwrite`, `storage_options`), which documents them, and returns a `Group`.
    """
    return Group(run(create_group_async, store, path, **options))


def read_many(reads: Iterable[tuple[Array | AsyncArray, Any]]) -> list[Any]:
    """The values of many selections, `[(array, selection), ...]`, read as one, for
    blocking use: see `read_many_async`."""
    return run(read_many_async, list(reads), only_reads=True)  # type: ignore[no-any-return]
