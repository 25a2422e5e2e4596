"""The S3 operations on the served folder: GET and HEAD (one `Range`), PUT and DELETE
(plain and conditional), DeleteObjects, ListObjects (v1 and v2), ListBuckets and multipart
uploads, the bucket's own HEAD and PUT. Every key passes the one key check (paths.py);
`read_only` refuses a write before a byte of its body is read. Listings walk the disk
on threads of their own, so they never hold up the reads' threads or the loop.

The server (server.py) has already counted, held back and checked the request for
faults; the bucket answers it, counting the bytes it moves in `conditions`.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from email.utils import formatdate
from pathlib import Path
from typing import Any, TypeVar
from xml.sax.saxutils import escape

from aiohttp import web

from aiozarr.emulator.answers import Pacer, stream_file
from aiozarr.emulator.bodies import read_small, receive
from aiozarr.emulator.files import (
    PUT_CONDITIONS,
    TMP_DIR,
    FileSlice,
    FolderLock,
    claim_temp_folder,
    delete_if_match,
    delete_object,
    move_into_place,
    read_version,
    remove_temp_files,
    share_temp_folder,
    version_headers,
    write_atomic,
    write_error,
)
from aiozarr.emulator.listing import list_objects
from aiozarr.emulator.multipart import MultipartUploads
from aiozarr.emulator.paths import object_path
from aiozarr.emulator.s3 import S3_NS, S3Error, parse_xml, xml_response
from aiozarr.emulator.serving_conditions import Conditions

__all__ = ["MAX_UPLOAD_BYTES", "Bucket"]

MAX_UPLOAD_BYTES = 5 << 30  # S3's limit on one PUT (and on one part of a multipart upload)
_LISTING_THREADS = 2  # listings walk the disk here, apart from the reads' threads
#: GETs read on threads of their own: writes waiting for the bucket's lock (behind a
#: slow rename) would otherwise hold every thread of asyncio's default executor.
_READ_THREADS = 16

T = TypeVar("T")
_MAX_DELETE_KEYS = 1000  # S3's limit on one DeleteObjects
# What each served operation may carry in its query (AWS SDKs add `x-id` to any). Any
# other S3 operation is answered 501 NotImplemented, never served as one it resembles
# (a CopyObject is a PUT with `x-amz-copy-source`; `?tagging` on a PUT is PutObjectTagging).
_LIST_PARAMS = frozenset(
    {"list-type", "prefix", "delimiter", "continuation-token", "start-after", "max-keys"}
    | {"marker"}
    | {"encoding-type", "fetch-owner"}
)
_OBJECT_PARAMS = {"PUT": {"uploadId", "partNumber"}, "DELETE": {"uploadId"}, "POST": {"uploadId"}}
_BUCKET_PARAMS = {"GET": _LIST_PARAMS, "HEAD": frozenset(), "PUT": frozenset(), "POST": {"delete"}}
# GET and HEAD of an object are plain HTTP reads too, which may carry a query of their
# own (a cache buster): only S3's own parameters that would make them another operation
# are refused there.
_SUBRESOURCES = frozenset(
    {"acl", "attributes", "legal-hold", "partNumber", "restore", "retention", "select"}
    | {"tagging", "torrent", "uploadId", "uploads", "versionId", "versions", "versioning"}
)


class Bucket:
    """The bucket `name` over the folder `root`. `open()` before the first request and
    `close()` after the last (they start and stop the listing threads)."""

    def __init__(
        self,
        root: Path,
        name: str,
        conditions: Conditions,
        *,
        read_only: bool,
        max_upload_bytes: int,
    ) -> None:
        self.root, self.name = root, _checked_name(name)
        self.read_only = read_only
        self.max_upload_bytes = max_upload_bytes
        self._conditions = conditions
        # Held by every rename into place and every unlink of an object, so a
        # conditional write's check and rename (or a conditional delete's) are one step
        # that no other write or delete lands in, from this server or another one of
        # the same folder.
        self._put_lock = FolderLock(root)
        self._read_pool: ThreadPoolExecutor | None = None
        self._tmp_claim: int | None = None  # the temp folder's lifelong lock, while held
        self._uploads = MultipartUploads(root, self.path, self._put_lock)
        self._listing_pool: ThreadPoolExecutor | None = None

    def open(self) -> None:
        """Start the listing and read threads; where no other server serves the folder,
        clear the temp folder of what a server before left there."""
        self._tmp_claim, alone = claim_temp_folder(self.root, make=not self.read_only)
        if alone:  # else another server is using it: left alone
            remove_temp_files(self.root / TMP_DIR)
            assert self._tmp_claim is not None
            share_temp_folder(self._tmp_claim)
        self._listing_pool = ThreadPoolExecutor(_LISTING_THREADS, "aiozarr-emulator-listing")
        self._read_pool = ThreadPoolExecutor(_READ_THREADS, "aiozarr-emulator-reads")

    def close(self) -> None:
        """Stop the listing and read threads (a listing under way is dropped) and let
        go of the served folder."""
        if self._listing_pool is not None:
            self._listing_pool.shutdown(wait=False, cancel_futures=True)
            self._listing_pool = None
        if self._read_pool is not None:
            self._read_pool.shutdown(wait=False)
            self._read_pool = None
        if self._tmp_claim is not None:
            os.close(self._tmp_claim)
            self._tmp_claim = None

    async def _reading(self, fn: Callable[..., T], *args: Any) -> T:
        """`fn(*args)` on a read thread."""
        assert self._read_pool is not None
        return await asyncio.get_running_loop().run_in_executor(self._read_pool, fn, *args)

    def path(self, key: str) -> Path:
        """Where `key` lives: the one key check (paths.py) every operation makes."""
        return object_path(self.root, key)

    def _check_writable(self, key: str) -> None:
        if self.read_only:
            raise S3Error(
                403, f"the server is read-only; cannot write {key!r} (--allow-writes)", key=key
            )

    async def handle(self, request: web.Request, method: str, key: str) -> web.StreamResponse:
        """The answer to `method` on `key` ("" for the bucket itself); S3Error when the
        operation fails or is not one the emulator supports."""
        query = request.query
        unserved = _unserved(method, key, set(query) - {"x-id"}, request.headers)
        if unserved:
            raise S3Error(
                501, f"{unserved} is not implemented by the emulator", key=key, close=True
            )
        if method not in ("GET", "HEAD"):
            self._check_writable(key)  # before a byte of the body is read
        if not key:
            if method == "GET":
                return await self._list(query)
            if method in ("HEAD", "PUT"):  # HeadBucket / CreateBucket of this bucket
                return web.Response()
            if method == "POST" and "delete" in query:
                return await self._delete_objects(await self._small_body(request))
        elif method in ("GET", "HEAD"):
            return await self._get(request, key, head=method == "HEAD")
        elif method == "PUT" and "uploadId" in query:
            number = self._uploads.check_part(key, query["uploadId"], query.get("partNumber"))
            body = await self._receive(request)
            return await self._uploads.upload_part(key, query["uploadId"], number, body)
        elif method == "PUT":
            return await self._put(request, key)
        elif method == "DELETE":
            if "uploadId" in query:
                self._uploads.abort(query["uploadId"])
            elif "If-Match" in request.headers:
                await asyncio.to_thread(
                    delete_if_match,
                    self.path(key),
                    self.root,
                    request.headers["If-Match"],
                    self._put_lock,
                )
            else:
                await asyncio.to_thread(self._delete, key)
            return web.Response(status=204)
        elif method == "POST" and "uploads" in query:
            return self._uploads.create(key, self.name)
        elif method == "POST" and "uploadId" in query:
            body = await self._small_body(request)
            # the conditions by their names, as a PUT's (headers are case-insensitive)
            conditions = {n: request.headers[n] for n in PUT_CONDITIONS if n in request.headers}
            return await self._uploads.complete(key, query["uploadId"], body, self.name, conditions)
        raise S3Error(501, f"{method} {request.path} is not implemented by the emulator", key=key)

    # -- bodies ------------------------------------------------------------------------

    async def _receive(self, request: web.Request) -> bytes | Path:
        """An upload's payload, streamed under `max_upload_bytes` (a temp file when large)
        and no faster than the bandwidth cap allows."""
        bps = self._conditions.bandwidth_bps
        return await receive(
            request,
            self.root / TMP_DIR,
            self.max_upload_bytes,
            pace=Pacer(bps).wait if bps else None,
            counted=self._conditions.count_written,
        )

    async def _small_body(self, request: web.Request) -> bytes:
        body = await read_small(request)
        self._conditions.count_written(len(body))
        return body

    # -- objects -----------------------------------------------------------------------

    async def _get(self, request: web.Request, key: str, *, head: bool) -> web.StreamResponse:
        # A HEAD's `Range` too: S3 answers it 206.
        try:
            found = await self._reading(
                lambda: read_version(self.path(key), request.headers, body=not head, root=self.root)
            )
        except S3Error as exc:
            exc.key = key
            raise
        if found is None:
            raise S3Error(404, "The specified key does not exist.", key=key)
        st, bounds, body = found.st, found.bounds, found.body
        headers = {
            **version_headers(st),
            "Last-Modified": formatdate(st.st_mtime, usegmt=True),
        }
        if found.not_modified:
            return web.Response(status=304, headers=headers)
        headers.update({"Accept-Ranges": "bytes", "Content-Type": "application/octet-stream"})
        status = 200
        if bounds is not None:
            start, stop = bounds
            headers["Content-Range"] = f"bytes {start}-{stop - 1}/{st.st_size}"
            status = 206
        if head:
            length = st.st_size if bounds is None else bounds[1] - bounds[0]
            headers["Content-Length"] = str(length)
            return web.Response(status=status, headers=headers)
        if isinstance(body, FileSlice):
            conditions = self._conditions
            return await stream_file(
                request,
                body,
                status,
                headers,
                conditions.bandwidth_bps,
                conditions.count_read,
                self._reading,
            )
        return web.Response(status=status, body=body, headers=headers)

    async def _put(self, request: web.Request, key: str) -> web.Response:
        path = self.path(key)
        body = await self._receive(request)
        headers = {n: request.headers[n] for n in PUT_CONDITIONS if n in request.headers}
        condition = (self._put_lock, headers)
        try:
            if isinstance(body, Path):
                written = await asyncio.to_thread(move_into_place, body, path, condition)
            else:
                tmp_dir = self.root / TMP_DIR
                written = await asyncio.to_thread(write_atomic, path, tmp_dir, body, condition)
        except S3Error as exc:
            exc.key = key
            raise
        # The version this PUT wrote, whatever a racing DELETE or PUT did to it since.
        return web.Response(headers=version_headers(written))

    def _delete(self, key: str) -> None:
        delete_object(self.path(key), self.root, self._put_lock)

    async def _delete_objects(self, body: bytes) -> web.Response:
        keys = [e.text or "" for e in parse_xml(body) if e.tag.rpartition("}")[2] == "Key"]
        if len(keys) > _MAX_DELETE_KEYS:
            raise S3Error(400, f"at most {_MAX_DELETE_KEYS} keys per request", code="MalformedXML")
        return xml_response(await asyncio.to_thread(self._delete_each, keys))

    def _delete_each(self, keys: list[str]) -> str:
        """DeleteObjects' answer, each key deleted in turn (on a thread: each waits for
        the lock renames hold)."""
        out = []
        for key in keys:
            try:
                self._check_writable(key)
                self._delete(key)
                out.append(f"<Deleted><Key>{escape(key)}</Key></Deleted>")
            except (S3Error, OSError) as raised:
                # One key the file system refuses is that key's <Error>, as S3 answers
                # per key: the keys before it are deleted, those after it still tried.
                exc = raised if isinstance(raised, S3Error) else write_error(raised)
                out.append(
                    f"<Error><Key>{escape(key)}</Key><Code>{exc.code}</Code>"
                    f"<Message>{escape(str(exc))}</Message></Error>"
                )
        return f'<DeleteResult xmlns="{S3_NS}">{"".join(out)}</DeleteResult>'

    def list_buckets(self) -> web.Response:
        """ListBuckets: the one bucket this server serves."""
        created = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(self.root.stat().st_ctime))
        return xml_response(
            f'<ListAllMyBucketsResult xmlns="{S3_NS}"><Owner><ID>aiozarr</ID>'
            "<DisplayName>aiozarr</DisplayName></Owner><Buckets><Bucket>"
            f"<Name>{escape(self.name)}</Name><CreationDate>{created}</CreationDate>"
            "</Bucket></Buckets></ListAllMyBucketsResult>"
        )

    async def _list(self, query: Any) -> web.Response:
        """A listing page, walked on the listing threads (never on the loop, nor on the
        threads that serve reads)."""
        assert self._listing_pool is not None
        return await asyncio.get_running_loop().run_in_executor(
            self._listing_pool, list_objects, query, self.name, self.root
        )


def _checked_name(name: str) -> str:
    """`name`, when requests can reach a bucket of that name: the first segment of their
    path (so no `/`, and not `.` or `..`, which clients resolve away) and not the
    control endpoints' (`_emulator`); else a ValueError saying why."""
    if not name or "/" in name or name in (".", "..", "_emulator"):
        raise ValueError(
            f"bucket name {name!r} cannot be reached: it is the first segment of every "
            "request's path, so not empty, '.', '..' or '_emulator', and without '/'"
        )
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in name):
        raise ValueError(f"bucket name {name!r} holds a control character")
    return name


def _unserved(method: str, key: str, params: set[str], headers: Any) -> str:
    """What S3 operation a request asks for that the emulator does not serve, or ""."""
    if "x-amz-copy-source" in headers:
        return "CopyObject / UploadPartCopy (x-amz-copy-source)"
    if not key:
        allowed = _BUCKET_PARAMS.get(method)
        if allowed is None or not params <= allowed:
            return f"{method} on the bucket with {sorted(params) or 'no parameters'}"
        return ""
    if method in ("GET", "HEAD"):
        extra = params & _SUBRESOURCES
    elif method == "POST" and params == {"uploads"}:  # CreateMultipartUpload
        extra = set()
    else:
        extra = params - _OBJECT_PARAMS.get(method, set())
    return f"{method} of an object with ?{'&'.join(sorted(extra))}" if extra else ""
