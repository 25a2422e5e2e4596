"""`ReferenceStore`: a read-only store over kerchunk references (virtual Zarr).

A reference file maps each Zarr key to bytes that live elsewhere:

    {"version": 1,
     "templates": {"u": "s3://bucket/data.h5"},
     "refs": {".zgroup": "{\\"zarr_format\\": 2}",       # inline text
              "x/.zarray": "base64:eyJ6YXJy...",         # inline, base64
              "x/0.0": ["{{u}}", 1024, 4096],           # a byte range of another object
              "x/0.1": ["s3://bucket/whole.bin"]}}      # all of another object

Reads for many keys become byte-range reads of the target objects, grouped by target
store: one `stream_partial_values` per target store, so ranges into one file coalesce
(the target store's `coalesce_gap_bytes`) and different files run concurrently under
the target store's request budget, with its retries. Relative target URLs resolve
against the reference file's directory. Version 0 (a plain `{key: value}` mapping) is
read too; the Parquet form and `gen` ranges are not supported yet.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import posixpath
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio

from aiozarr.byte_range import ByteRange
from aiozarr.errors import MetadataError, StoreError, UnsupportedError, unwrap_group
from aiozarr.storage.base import Buffer, RangeRequest, Store

__all__ = ["ReferenceStore", "is_reference_source", "open_references"]

_TEMPLATE = re.compile(r"\{\{\s*(\w+)\s*\}\}")


def is_reference_source(source: object) -> bool:
    """Whether `source` looks like kerchunk references: a dict with "refs", or a
    path/URL of a `.json` file (or one with a `reference://` prefix)."""
    if isinstance(source, Mapping):
        return "refs" in source
    if isinstance(source, str | os.PathLike):
        text = os.fspath(source)
        return text.startswith("reference://") or text.lower().endswith(".json")
    return False


def open_references(
    source: Mapping[str, Any] | str | os.PathLike[str],
    *,
    storage_options: Mapping[str, Any] | None = None,
    target_options: Mapping[str, Any] | None = None,
) -> ReferenceStore:
    """A `ReferenceStore` over `source`: a references dict, or the path/URL of its JSON.

    `storage_options` open the reference file and, unless `target_options` are given,
    the objects it points into.
    """
    return ReferenceStore(source, storage_options=storage_options, target_options=target_options)


def _split_url(url: str) -> tuple[str, str]:
    """`"s3://b/dir/f.h5"` -> `("s3://b/dir", "f.h5")`; paths likewise."""
    head, _, name = url.rstrip("/").rpartition("/")
    if not name:
        raise StoreError(f"reference target {url!r} names no object")
    return head if head else ".", name


def _is_local(url: str) -> bool:
    scheme = urlsplit(url).scheme
    return scheme in ("", "file") or len(scheme) == 1


class ReferenceStore(Store):
    """A read-only `Store` whose keys are kerchunk references into other objects.

    `source` is a references dict (`{"version": 1, "refs": ...}` or version 0's plain
    mapping) or the path/URL of its JSON file, read on first use.
    """

    def __init__(
        self,
        source: Mapping[str, Any] | str | os.PathLike[str],
        *,
        storage_options: Mapping[str, Any] | None = None,
        target_options: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(read_only=True)
        self._source = source if isinstance(source, Mapping) else os.fspath(source)
        if isinstance(self._source, str):
            self._source = self._source.removeprefix("reference://")
        self._options = dict(storage_options or {})
        self._target_options = (
            dict(target_options) if target_options is not None else dict(self._options)
        )
        self._refs: dict[str, Any] | None = None
        self._base = "" if isinstance(self._source, Mapping) else _split_url(self._source)[0]
        self._targets: dict[str, Store] = {}
        if isinstance(source, Mapping):
            self._refs = self._parse(source)

    # -- loading -----------------------------------------------------------------------

    async def _load(self) -> dict[str, Any]:
        if self._refs is not None:
            return self._refs
        assert isinstance(self._source, str)
        base, name = _split_url(self._source)
        store = self._store_for(base, self._options)
        data = await store.get(name)
        if data is None:
            raise StoreError(f"cannot read references: {self._source!r} not found")
        try:
            doc = json.loads(bytes(memoryview(data)))
        except ValueError as error:
            raise MetadataError(f"{self._source}: not valid JSON ({error})") from None
        self._refs = self._parse(doc)
        return self._refs

    def _parse(self, doc: Mapping[str, Any]) -> dict[str, Any]:
        where = self._source if isinstance(self._source, str) else "references"
        if not isinstance(doc, Mapping):
            raise MetadataError(f"{where}: expected a JSON object")
        if "refs" not in doc:  # version 0: the mapping itself
            return dict(doc)
        if doc.get("version", 1) != 1:
            raise UnsupportedError(f"{where}: reference version {doc.get('version')!r}")
        if doc.get("gen"):
            raise UnsupportedError(f"{where}: 'gen' references are not supported")
        templates = {k: str(v) for k, v in (doc.get("templates") or {}).items()}
        refs = dict(doc["refs"])
        if templates:
            for key, value in refs.items():
                if isinstance(value, list) and value and isinstance(value[0], str):
                    url = _TEMPLATE.sub(lambda m: templates.get(m[1], m[0]), value[0])
                    refs[key] = [url, *value[1:]]
        return refs

    # -- resolving keys ----------------------------------------------------------------

    def _resolve_url(self, url: str) -> str:
        if urlsplit(url).scheme and len(urlsplit(url).scheme) > 1:
            return url
        if os.path.isabs(url) or not self._base:
            return url
        if _is_local(self._base):
            return str(Path(self._base) / url)
        return posixpath.join(self._base, url)

    def _store_for(self, base: str, options: Mapping[str, Any]) -> Store:
        store = self._targets.get(base)
        if store is None:
            from aiozarr.storage.url import from_url

            opts = None if _is_local(base) or base.startswith("memory://") else options
            store = self._targets[base] = from_url(base, storage_options=opts, read_only=True)
        return store

    def _target(self, value: list[Any]) -> tuple[Store, str, int, int | None]:
        """(target store, key in it, offset, length or None for all) of a reference."""
        url = self._resolve_url(str(value[0]))
        base, name = _split_url(url)
        store = self._store_for(base, self._target_options)
        if len(value) == 1:
            return store, name, 0, None
        return store, name, int(value[1]), int(value[2])

    @staticmethod
    def _inline(value: Any) -> bytes:
        if isinstance(value, str):
            if value.startswith("base64:"):
                return base64.b64decode(value[len("base64:") :])
            return value.encode()
        if isinstance(value, bytes):
            return value
        return json.dumps(value).encode()  # version 0 may hold JSON documents as objects

    # -- reads -------------------------------------------------------------------------

    async def _get(self, key: str, byte_range: ByteRange | None) -> Buffer | None:
        return (await self.get_partial_values([RangeRequest(key, byte_range)]))[0]

    async def get(self, key: str, byte_range: ByteRange | None = None) -> Buffer | None:
        """The value at `key` (or a range of it): inline bytes or the target's bytes."""
        return await self._get(key, byte_range)

    @contextlib.asynccontextmanager
    async def stream_partial_values(
        self, requests: Sequence[RangeRequest]
    ) -> AsyncIterator[AsyncIterator[tuple[int, Buffer | None]]]:
        """`(request index, answer)` as answers land; reads of one target store go as
        one batch to it (it coalesces ranges of one object and runs objects concurrently).
        """
        refs = await self._load()
        send, receive = anyio.create_memory_object_stream[tuple[int, Buffer | None]](
            max_buffer_size=max(len(requests), 1)
        )
        ready: list[tuple[int, Buffer | None]] = []
        by_store: dict[int, tuple[Store, list[int], list[RangeRequest]]] = {}
        for i, request in enumerate(requests):
            value = refs.get(request.key)
            if value is None:
                ready.append((i, None))
            elif not isinstance(value, list):
                data = self._inline(value)
                if request.byte_range is not None:
                    start, stop = request.byte_range.resolve(len(data))
                    data = data[start:stop]
                ready.append((i, data))
            else:
                store, name, offset, length = self._target(value)
                _, indices, reads = by_store.setdefault(id(store), (store, [], []))
                indices.append(i)
                reads.append(RangeRequest(name, _compose(offset, length, request.byte_range)))

        async def fetch(store: Store, indices: list[int], reads: list[RangeRequest]) -> None:
            async with store.stream_partial_values(reads) as answers:
                async for j, data in answers:
                    send.send_nowait((indices[j], data))

        async def fetch_all() -> None:
            async with send, anyio.create_task_group() as tg:
                for item in ready:
                    send.send_nowait(item)
                for store, indices, reads in by_store.values():
                    tg.start_soon(fetch, store, indices, reads)

        with unwrap_group():
            async with receive, anyio.create_task_group() as tg:
                tg.start_soon(fetch_all)
                yield receive
                tg.cancel_scope.cancel()

    async def exists(self, key: str) -> bool:
        return key in await self._load()

    async def getsize(self, key: str) -> int | None:
        """Size of the value at `key`, from the reference (a HEAD for whole-object refs)."""
        value = (await self._load()).get(key)
        if value is None:
            return None
        if not isinstance(value, list):
            return len(self._inline(value))
        store, name, _, length = self._target(value)
        return length if length is not None else await store.getsize(name)

    # -- listing -----------------------------------------------------------------------

    async def list_prefix(self, prefix: str) -> AsyncIterator[str]:
        for key in sorted(await self._load()):
            if key.startswith(prefix):
                yield key

    async def list_dir(self, prefix: str) -> AsyncIterator[str]:
        head = prefix.strip("/")
        head = f"{head}/" if head else ""
        names = {
            key[len(head) :].split("/", 1)[0]
            for key in await self._load()
            if key.startswith(head) and len(key) > len(head)
        }
        for name in sorted(names):
            yield name

    def __repr__(self) -> str:
        source = self._source if isinstance(self._source, str) else "<dict>"
        return f"ReferenceStore({source!r})"


def _compose(offset: int, length: int | None, byte_range: ByteRange | None) -> ByteRange | None:
    """The range of the target object that `byte_range` of a reference covers."""
    if length is None:  # the reference is a whole object: ask for the range as is
        return byte_range
    if byte_range is None:
        return ByteRange.of(offset, length)
    start, stop = byte_range.resolve(length)
    return ByteRange.of(offset + start, stop - start)
