"""Listing an obstore store page by page, each page one request under the request policy.

    async for page in pages(store, "arr", run):      # run = ObjectStore._request
        for meta in page: ...

A listing of 25,000 keys is 25 requests. Each page has its own timeout and retries
(`storage/policy/retry.py::run_request`): a page that times out or fails transiently is asked
for again *after the last key already received* (`obstore.list(..., offset=last)`, S3's
and GCS's `start-after`), never from the first page, so a large directory lists however
long it takes in all. obstore's list APIs expose no continuation token and
`list_with_delimiter` has no paging, so the immediate children of a directory are derived
from the flat listing (`children`): once a page ends inside a child directory, the
listing jumps past that directory (a new stream with an offset after it) rather than
reading every key below it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

import obstore
from obstore.store import GCSStore, S3Store

from aiozarr.storage.backends.cloud_hosts import cannot_list

__all__ = ["PAGE_BYTES", "PAGE_KEYS", "ObjectListing", "children", "pages"]

#: Keys per page: S3's and GCS's page size, so one page of the stream is one request.
PAGE_KEYS = 1000
#: Bytes a page of 1000 keys takes to answer (about 300 bytes of XML per key): sizes the
#: page's timeout (`request_timeout_s` + bytes / `request_timeout_min_bytes_per_s`).
PAGE_BYTES = PAGE_KEYS * 300
#: Sorts after every key below `dir/` that does not itself start with this character: the
#: offset that skips a directory (U+10FFFF, the last code point).
_PAST = "\U0010ffff"

Runner = Callable[..., Awaitable[Any]]


class _Pager:
    """One page at a time of `obstore.list(store, prefix, offset=...)`.

    The stream is kept between pages (one request per page, as a plain listing), and
    dropped when a page fails or is cancelled (a timeout): the next try opens a new
    stream after the last key received.
    """

    def __init__(self, store: Any, prefix: str | None, offset: str | None) -> None:
        self._store, self._prefix = store, prefix
        self.offset = offset
        self._stream: Any = None
        self.done = False

    def jump(self, offset: str) -> None:
        """Go on after `offset` (beyond the keys read so far): a new stream."""
        self.offset, self._stream = offset, None

    async def next_page(self) -> Sequence[Any] | None:
        """The next page of object metadata; None at the end."""
        if self._stream is None:
            self._stream = obstore.list(
                self._store, self._prefix, offset=self.offset, chunk_size=PAGE_KEYS
            )
        try:
            page = await self._stream.__anext__()
        except StopAsyncIteration:
            return None
        except BaseException:
            self._stream = None  # half-read or cancelled: start again after `offset`
            raise
        return page  # type: ignore[no-any-return]


async def pages(
    store: Any,
    prefix: str,
    run: Runner,
    guard: Callable[[], Any],
    *,
    skip: Callable[[Sequence[Any]], str | None] | None = None,
    named: str | None = None,
) -> AsyncIterator[Sequence[Any]]:
    """The object metadata below directory `prefix` ("" for all), page by page.

    `run(action, key, operation, nbytes=...)` runs one request under the store's policy,
    `named` (default: `prefix`) the key its errors name; `guard()` is a context manager
    that turns backend errors into the store's. `skip`, given a page, may name an offset
    to go on after instead of its last key.
    """
    pager = _Pager(store, prefix or None, None)

    async def one_page() -> Sequence[Any] | None:
        with guard():
            return await pager.next_page()

    while True:
        page = await run("list", prefix if named is None else named, one_page, nbytes=PAGE_BYTES)
        if not page:
            return
        yield page
        if len(page) < PAGE_KEYS:  # the stream ended inside this page: no more requests
            return
        jump = skip(page) if skip is not None else None
        if jump is not None:
            pager.jump(jump)
        else:
            pager.offset = page[-1]["path"]


async def children(
    store: Any, prefix: str, run: Runner, guard: Callable[[], Any], named: str | None = None
) -> AsyncIterator[tuple[str, bool]]:
    """`(name, is_directory)` of each key and directory directly under `prefix`, once each
    (a name may be both: a key `a` beside keys `a/...`); `named`: as for `pages`."""
    head = f"{prefix}/" if prefix else ""
    dirs: set[str] = set()  # a directory spans pages; a key is listed once

    def skip(page: Sequence[Any]) -> str | None:
        rest = page[-1]["path"][len(head) :]
        if "/" not in rest:
            return None
        return head + rest.partition("/")[0] + "/" + _PAST  # past this child directory

    async for page in pages(store, prefix, run, guard, skip=skip, named=named):
        for meta in page:
            rest = meta["path"][len(head) :]
            name, slash, _ = rest.partition("/")
            if not name or (slash and name in dirs):
                continue
            if slash:
                dirs.add(name)
            yield name, bool(slash)


class ObjectListing:
    """`ObjectStore`'s listings: its keys below a prefix, a directory's entries."""

    _store: Any
    _prefix: str
    _where: str
    listable: bool
    runtime: Any
    _errors: Callable[[str, str], Any]
    _request: Runner

    def _path(self, key: str) -> str:
        """`key` as the obstore store names it."""
        return self._prefix + key

    def _check_listable(self) -> None:
        if not self.listable:  # obstore would try WebDAV's PROPFIND, which servers refuse
            raise cannot_list(self._where, self._where)

    @property
    def _pages_resume(self) -> bool:
        """Whether listings go page by page, each page resumable after its last key.

        S3 and GCS list in key order and take a start-after key (obstore's `offset`).
        Azure takes none through obstore (an offset is filtered client-side, after
        listing from the start), and obstore's local store lists unsorted: those list
        in one call.
        """
        return isinstance(self._store, S3Store | GCSStore)

    async def list_prefix(self, prefix: str) -> AsyncIterator[str]:
        """Every key starting with `prefix` (a plain string prefix), page by page: each
        page of 1000 keys is one request with its own timeout and retries."""
        async for key, _ in self.list_sizes(prefix):
            yield key

    async def list_sizes(self, prefix: str) -> AsyncIterator[tuple[str, int]]:
        """`(key, size in bytes)` of every key starting with `prefix`, as `list_prefix`
        lists them (the listing says the sizes)."""
        self._check_listable()
        # obstore lists whole path segments, so list the parent "directory" and filter.
        full, cut = self._path(prefix), len(self._prefix)
        parent = full.rpartition("/")[0]
        if not self._pages_resume:
            listed = self._list_at_once(parent, prefix)
        else:
            guard = lambda: self._errors("list", prefix)  # noqa: E731
            listed = pages(self._store, parent, self._request, guard, named=prefix)
        async for page in listed:
            for meta in page:
                if meta["path"].startswith(full):
                    yield meta["path"][cut:], int(meta["size"])

    async def _list_at_once(self, parent: str, prefix: str) -> AsyncIterator[Sequence[Any]]:
        answered = 0
        try:
            with self._errors("list", prefix):
                async for page in obstore.list(self._store, parent or None, chunk_size=1000):
                    answered += 1
                    yield page
        finally:
            self.runtime.statistics.count("lists", max(answered, 1))

    async def list_dir(self, prefix: str) -> AsyncIterator[str]:
        """Names of the keys and "directories" directly under `prefix`."""
        async for name, _ in self.list_dir_entries(prefix):
            yield name

    async def list_dir_entries(self, prefix: str) -> AsyncIterator[tuple[str, bool | None]]:
        """`(name, is_directory)` directly under `prefix`: S3 and GCS page by page (each
        page its own request, resumed after its last key), others in one request."""
        self._check_listable()
        parent = self._path(prefix.strip("/")).strip("/")
        if self._pages_resume:
            guard = lambda: self._errors("list", prefix)  # noqa: E731
            async for entry in children(self._store, parent, self._request, guard, prefix):
                yield entry
            return

        async def list_once() -> Any:
            with self._errors("list", prefix):
                return await obstore.list_with_delimiter_async(self._store, parent or None)

        result = await self._request("list", prefix, list_once)
        cut = len(parent) + 1 if parent else 0
        for meta in result["objects"]:
            yield meta["path"][cut:], False
        for common in result["common_prefixes"]:
            yield common.rstrip("/")[cut:], True
