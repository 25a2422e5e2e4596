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
from aiozarr.storage.backends.object_ranges import range_options
from aiozarr.storage.policy.backend import ObjectVersion
from aiozarr.storage.policy.retry import answer_began
from aiozarr.storage.protocol import UNCHANGED, Store, Unchanged, Version, Versioned

__all__ = ["read_if_changed"]


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
    options: dict[str, Any] = {"if_none_match": tag, **range_options(byte_range)}
    try:
        with store._errors("read", key):
            try:
                result = await store._get(key, options)
            except NotModifiedError:
                return UNCHANGED
            answer_began()
            return await store._answer(key, byte_range, result, max_bytes)
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
