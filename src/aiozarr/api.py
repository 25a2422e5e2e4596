"""The top-level functions: open and create arrays and groups.

Each function has an `_async` twin that returns the async object; the plain one
returns the sync facade (`Array` / `Group`).
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal, TypeVar

from obstore.store import AzureStore, GCSStore, HTTPStore, S3Store
from obstore.store import LocalStore as ObstoreLocal
from obstore.store import MemoryStore as ObstoreMemory

from aiozarr.array import AsyncArray
from aiozarr.creation import check_options
from aiozarr.errors import AiozarrError, NodeNotFoundError
from aiozarr.group import AsyncGroup
from aiozarr.storage.base import Store
from aiozarr.storage.object_store import ObjectStore
from aiozarr.storage.references import ReferenceStore, is_reference_source
from aiozarr.storage.url import from_url
from aiozarr.storage.zarr_store import ZarrStore, is_zarr_store
from aiozarr.storage.zip import ZipMode, is_zip, open_zip
from aiozarr.sync import Array, Group, run

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
    (its own read-only flag decides whether it can be written); an obstore store
    (`obstore.store.S3Store(...)`) or a zarr-python 3 store (`zarr.storage.LocalStore`,
    icechunk's, ...) wrapped: `ObjectStore`, `ZarrStore` (read-only in mode "r")."""
    if mode not in _MODES:
        raise AiozarrError(f"mode must be one of {', '.join(_MODES)}, got {mode!r}")
    read_only = mode == "r"
    if isinstance(store, Store):
        return store
    if is_obstore(store):
        return ObjectStore(store, read_only=read_only)
    if is_zarr_store(store):
        return ZarrStore(store, read_only=True if read_only else None)
    if isinstance(store, os.PathLike):
        store = os.fspath(store)
    if is_reference_source(store):  # kerchunk references: a dict, a .json or a .parq
        return ReferenceStore(store, storage_options=storage_options)
    if not isinstance(store, str):
        raise AiozarrError(f"expected a Store, a URL or a path, got {type(store).__name__}")
    if is_zip(store):  # "w" starts a new archive, "w-" one that must not exist yet
        return open_zip(store, mode=_ZIP_MODES[mode], storage_options=storage_options)
    return from_url(store, storage_options=storage_options, read_only=read_only)


# -- async ------------------------------------------------------------------------------------


async def open_array_async(
    store: StoreLike,
    path: str = "",
    *,
    mode: Mode = "a",
    zarr_format: Literal[2, 3] | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> AsyncArray:
    """Open an existing array. Sync twin: `open_array`."""
    resolved = resolve_store(store, mode=mode, storage_options=storage_options)
    return await AsyncArray.open(resolved, path, zarr_format=zarr_format)


async def open_group_async(
    store: StoreLike,
    path: str = "",
    *,
    mode: Mode = "a",
    zarr_format: Literal[2, 3] | None = None,
    storage_options: Mapping[str, Any] | None = None,
    attributes: Mapping[str, Any] | None = None,
) -> AsyncGroup:
    """Open a group; modes "a" and "w" create it when missing. Sync twin: `open_group`."""
    resolved = resolve_store(store, mode=mode, storage_options=storage_options)
    if mode in ("w", "w-"):
        return await AsyncGroup.create(
            resolved,
            path,
            attributes=attributes,
            zarr_format=zarr_format or 3,
            overwrite=mode == "w",
        )
    try:
        return await AsyncGroup.open(resolved, path, zarr_format=zarr_format)
    except NodeNotFoundError:
        if mode != "a":
            raise
        return await AsyncGroup.create(
            resolved, path, attributes=attributes, zarr_format=zarr_format or 3
        )


async def open_async(
    store: StoreLike,
    path: str = "",
    *,
    mode: Mode = "a",
    zarr_format: Literal[2, 3] | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> AsyncArray | AsyncGroup:
    """Open whatever node is at `path`: an array or a group. Sync twin: `open`."""
    resolved = resolve_store(store, mode=mode, storage_options=storage_options)
    try:
        return await AsyncArray.open(resolved, path, zarr_format=zarr_format)
    except NodeNotFoundError:
        return await AsyncGroup.open(resolved, path, zarr_format=zarr_format)


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
    """Create an array. Sync twin: `create_array`.

    zarr-python's arguments: `name` (the path in the store, as `path`), `data` (values to
    write: they give the shape and dtype), `chunks` ("auto" or None: zarr-python's
    choice), `config` (`{"write_empty_chunks": ...}`), and as options `filters`,
    `compressors`, `serializer` (dicts, or zarr-python's or numcodecs' codec objects),
    `fill_value`, `order`, `zarr_format` (3 default, or 2), `attributes`,
    `dimension_names`, `chunk_key_encoding`.
    """
    check_options("create_array_async", options)
    path = _path_or_name(path, name)
    resolved = resolve_store(store, mode="a", storage_options=storage_options)
    return await AsyncArray.create(
        resolved,
        path,
        shape=shape,
        dtype=dtype,
        data=data,
        chunks=chunks,
        shards=shards,
        overwrite=overwrite,
        config=config,
        **options,
    )


def _path_or_name(path: str, name: str | None) -> str:
    """`path`, or zarr-python's `name=` for it."""
    if name is None:
        return path
    if path and path.strip("/") != name.strip("/"):
        raise TypeError(f"create_array(): got path={path!r} and name={name!r}; give one")
    return name


async def create_group_async(
    store: StoreLike,
    path: str = "",
    *,
    attributes: Mapping[str, Any] | None = None,
    zarr_format: Literal[2, 3] = 3,
    overwrite: bool = False,
    storage_options: Mapping[str, Any] | None = None,
) -> AsyncGroup:
    """Create a group. Sync twin: `create_group`."""
    resolved = resolve_store(store, mode="a", storage_options=storage_options)
    return await AsyncGroup.create(
        resolved, path, attributes=attributes, zarr_format=zarr_format, overwrite=overwrite
    )


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
    """Open an existing array (`mode`, `zarr_format`, `storage_options` as the async twin)."""
    return Array(run(open_array_async, store, path, **options))


@_twin_of(open_group_async)
def open_group(store: StoreLike, path: str = "", **options: Any) -> Group:
    """Open a group (`mode`, `zarr_format`, `storage_options`, `attributes`)."""
    return Group(run(open_group_async, store, path, **options))


@_twin_of(open_async)
def open(store: StoreLike, path: str = "", **options: Any) -> Array | Group:
    """Open the array or group at `path`."""
    node = run(open_async, store, path, **options)
    return Array(node) if isinstance(node, AsyncArray) else Group(node)


@_twin_of(create_array_async, check_options)
def create_array(store: StoreLike, path: str = "", **options: Any) -> Array:
    """Create an array (`shape`, `dtype`, `chunks`, `shards`, ... as `create_array_async`)."""
    return Array(run(create_array_async, store, path, **options))


@_twin_of(create_group_async)
def create_group(store: StoreLike, path: str = "", **options: Any) -> Group:
    """Create a group (`attributes`, `zarr_format`, `overwrite`, `storage_options`)."""
    return Group(run(create_group_async, store, path, **options))
