"""`ConditionalReads`: an object store whose reads carry one condition.

A reader that knows which version of an object it must read (icechunk's virtual chunks
carry their source's ETag, or a time it was last modified at or before) sends that with
each GET, `If-Match` / `If-Unmodified-Since`: a source that changed answers 412 and no
byte of it is sent, raised as `SourceChangedError` naming the key and the condition
(final, never retried). One store per condition: chunks of one object referenced under
different checksums are each read under their own (only ranges under the same condition
coalesce). Everything else is the wrapped store's: its client, budgets and retry policy
(they share one runtime).
"""

from __future__ import annotations

import datetime
from collections.abc import Hashable
from typing import Any

from obstore.exceptions import PreconditionError

from aiozarr.errors import SourceChangedError
from aiozarr.storage.backends import obstore_errors
from aiozarr.storage.backends.object_store import ObjectStore
from aiozarr.storage.policy.backend import ObjectVersion

__all__ = ["ConditionalReads"]


def _timed_version(meta: Any) -> ObjectVersion:
    """An answer's version, its Last-Modified kept even where it carries no ETag and no
    version id (a time is all a checksum can be compared with then)."""
    return ObjectVersion(meta.get("e_tag"), meta.get("version"), meta.get("last_modified"))


class ConditionalReads(ObjectStore):
    """`store`'s objects, read only as the version with ETag `etag`, or one last
    modified at or before `modified_by` (seconds since the epoch); an answer's version
    always carries its Last-Modified."""

    _version_of = staticmethod(_timed_version)

    def __init__(
        self, store: ObjectStore, *, etag: str | None = None, modified_by: int | None = None
    ) -> None:
        super().__init__(
            store.obstore,
            read_only=True,
            max_concurrency=store._max_concurrency,
            prefix=store.prefix,
        )
        self._runtime = store.runtime  # its budgets, statistics and hedging history
        condition: dict[str, Any] = {}
        if etag is not None:
            condition["if_match"] = etag
        if modified_by is not None:
            when = datetime.datetime.fromtimestamp(modified_by, datetime.UTC)
            condition["if_unmodified_since"] = when
        self._condition = condition

    def _get_future(self, key: str, options: Any) -> Any:
        condition = self._condition
        return super()._get_future(key, {**(options or {}), **condition} if condition else options)

    def _whole_read_name(self, key: str) -> Hashable:
        # The runtime is the wrapped store's: a whole read of the key without this
        # condition (or under another) may answer another version.
        return (key, *self._condition.items())

    def _get_error(self, key: str, exc: BaseException) -> BaseException:
        condition = self._condition
        failed = (
            condition
            and obstore_errors.is_obstore(exc)
            and (isinstance(exc, PreconditionError) or obstore_errors.classify(exc).status == 412)
        )
        if not failed:
            return exc
        said = ", ".join(f"{name}={value}" for name, value in condition.items())
        error = SourceChangedError(
            f"cannot read {key!r} in {self!r}: it is no longer the version referenced "
            f"({said}: the server answered 412 Precondition Failed)"
        )
        error.__cause__ = exc
        return error
