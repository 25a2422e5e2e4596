"""Icechunk repositories, read: `IcechunkStore` presents one snapshot as a Zarr store.

`format.py` reads the on-disk format (pure), `keys.py` the chunk keys of an array,
`checksums.py` whether a virtual chunk's source is still the one referenced, and
`store.py` the store. `is_repository` and `probe_repository` are how `aiozarr.open_*`
tells a repository from a Zarr hierarchy: by its layout, never by its name.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from aiozarr.errors import NodeNotFoundError, StoreError
from aiozarr.storage.opening.url import is_local, local_path
from aiozarr.storage.references.icechunk.store import IcechunkStore

__all__ = ["REF_OPTIONS", "IcechunkStore", "is_repository", "probe_repository"]

#: The storage options that name a snapshot of a repository.
REF_OPTIONS = ("branch", "tag", "snapshot", "as_of")
#: The documents of a Zarr node (v3, v2), never in a repository's `snapshots/`.
_ZARR_DOCUMENTS = ("zarr.json", ".zarray", ".zgroup")


def _local_path(url: str) -> Path | None:
    """The directory a local path or `file:` URL names, as `from_url` opens it (the
    URL's path percent-decoded); None for a remote URL."""
    scheme = urlsplit(url).scheme
    if scheme.lower() == "file":
        try:
            return Path(local_path(url))
        except StoreError:  # a host named: refused where the URL is opened
            return Path(urlsplit(url).path)
    return Path(url) if is_local(url) else None


def is_repository(url: object, storage_options: Mapping[str, Any] | None = None) -> bool:
    """Whether `url` is to be opened as an icechunk repository without reading it: the
    options name a branch, tag or snapshot, or a local directory has a repository's
    layout (`snapshots/` beside a spec-2 `repo` file or spec-1 `refs/`, and no Zarr
    node's document in `snapshots/`: a hierarchy's members may be named so)."""
    if not isinstance(url, str | os.PathLike):
        return False
    if any(name in (storage_options or {}) for name in REF_OPTIONS):
        return True
    path = _local_path(os.fspath(url))
    if path is None:
        return False
    with contextlib.suppress(OSError):
        if any((path / "snapshots" / name).is_file() for name in _ZARR_DOCUMENTS):
            return False
        if (path / "snapshots").is_dir():
            return (path / "repo").is_file() or (path / "refs").is_dir()
    return False


async def probe_repository(
    url: object, storage_options: Mapping[str, Any] | None = None
) -> IcechunkStore | None:
    """The repository at remote `url` (its `main` branch), found by reading its entry
    point (one batch: the spec-2 `repo` file and the spec-1 `main` ref); None where
    there is none. Asked only once a Zarr node was not found there, so opening a Zarr
    hierarchy costs no request more."""
    if not isinstance(url, str) or _local_path(url) is not None or url.startswith("memory:"):
        return None
    if urlsplit(url).query or urlsplit(url).fragment:
        return None  # a signed URL's query: a repository's objects could not be named
    store = IcechunkStore(url, storage_options=storage_options)
    try:
        await store.snapshot()
    except NodeNotFoundError:
        return None
    return store
