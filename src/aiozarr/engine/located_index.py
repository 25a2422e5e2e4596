"""A shard index and the version of the shard it was read from.

An index is only good for the version of the shard it was read from. Indexes are cached
with that version, and every range read with an index must come from the same version:
an answer from another one (the shard was rewritten, by this process or any other) is
never decoded; `check_version` raises `StaleIndexError`, and the read forgets the index,
reads it again and starts over.
"""

from __future__ import annotations

from dataclasses import dataclass

from aiozarr.codecs import ShardIndex
from aiozarr.engine.stored_array import StoredArray
from aiozarr.storage.base import Version


class StaleIndexError(Exception):
    """A range came from another version of a shard than its index: read again."""

    def __init__(self, key: str) -> None:
        super().__init__(f"shard {key!r} was rewritten while it was read")
        self.key = key


@dataclass(frozen=True, slots=True)
class LocatedIndex:
    """A shard's index and the version of the shard it was read from (None: unknown)."""

    index: ShardIndex
    version: Version | None


def cached_index(array: StoredArray, key: str) -> LocatedIndex | None:
    """The index of shard `key` in the array's cache, with its version."""
    found: LocatedIndex | None = array.index_cache.get(key)
    return found


def remember_index(
    array: StoredArray, key: str, index: ShardIndex, version: Version | None
) -> LocatedIndex:
    """Cache the index of shard `key`, read from `version` of it."""
    located = LocatedIndex(index, version)
    array.index_cache.put(key, located, index.nbytes)
    return located


def check_version(located: LocatedIndex, key: str, version: Version | None) -> None:
    """Raise `StaleIndexError` unless bytes of `version` may be read with `located`."""
    if version != located.version and None not in (version, located.version):
        raise StaleIndexError(key)
