"""Conditional GETs: a value read again only if it is no longer the version held.

A GET with `If-None-Match: <ETag>` answers 304 Not Modified, no body, while the object
is still that version (S3, GCS, Azure and HTTP servers alike; obstore raises
`NotModifiedError`), else the value as a plain GET would. A version without an ETag,
and Azure's suffix ranges (which obstore refuses), fall back to a plain read compared
with the version (`Store.read_if_changed`).
"""

from __future__ import annotations

from typing import Any

from obstore.exceptions import NotModifiedError
from obstore.store import AzureStore

from aiozarr.byte_range import ByteRange
from aiozarr.storage.backends import obstore_errors
from aiozarr.storage.backends.object_ranges import checked_body
from aiozarr.storage.policy.backend import ObjectVersion
from aiozarr.storage.policy.retry import answer_began
from aiozarr.storage.protocol import UNCHANGED, Store, Unchanged, Version, Versioned

__all__ = ["read_if_changed"]


def _range_option(byte_range: ByteRange | None) -> Any:
    """obstore's `range` option for `byte_range` (None: the whole value)."""
    if byte_range is None:
        return None
    if byte_range.suffix is not None:
        return {"suffix": byte_range.suffix}
    if byte_range.length is None:
        return {"offset": byte_range.offset}
    return (byte_range.offset, byte_range.offset + byte_range.length)


async def read_if_changed(
    store: Any, key: str, byte_range: ByteRange | None, version: Version, max_bytes: int | None
) -> Versioned | Unchanged | None:
    """`ObjectStore.read_if_changed`: one GET of `key` with `If-None-Match`."""
    tag = version[0] if isinstance(version, ObjectVersion) else None
    empty = byte_range is not None and 0 in (byte_range.length, byte_range.suffix)
    azure_suffix = isinstance(store.obstore, AzureStore) and (
        byte_range is not None and byte_range.suffix is not None
    )
    if tag is None or empty or azure_suffix:
        return await Store.read_if_changed(store, key, byte_range, version, max_bytes)
    options: dict[str, Any] = {"if_none_match": tag}
    if byte_range is not None:
        options["range"] = _range_option(byte_range)
    try:
        with store._errors("read", key):
            try:
                result = await store._get(key, options)
            except NotModifiedError:
                return UNCHANGED
            answer_began()
            if byte_range is None:
                data = await store._body(key, result, 0, max_bytes)
                return data, store._version_of(result.meta)
            # A body cut short is a `ShortReadError` (retried), as a plain read's is.
            if byte_range.length is None and byte_range.suffix is None:
                data = await store._body(key, result, byte_range.offset, None)
                return checked_body(key, byte_range, result, data), store._version_of(result.meta)
            return store._range_answer(key, byte_range, result, await result.bytes_async())
    except Exception as exc:
        if obstore_errors.is_not_found(exc):
            return None
        if byte_range is None:
            raise
        # A range refused as a plain read would be (a server that ignores `Range` sent
        # the whole value, a range past the end): answered as `read` answers it, then
        # compared with the version held.
        answer = await store._read_failed(key, byte_range, max_bytes, exc)
        if answer is not None and answer[1] is not None and answer[1] == version:
            return UNCHANGED
        return answer
