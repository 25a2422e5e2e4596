"""S3 multipart uploads on the emulator: each part a file in the temp directory until the
upload completes (the parts it names, in number order, written into place as one object)
or is aborted. Keys pass the server's key check when the upload is created and again when it
completes; parts stream in under the same cap as a PUT (the server's)."""

from __future__ import annotations

import asyncio
import itertools
import os
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from xml.etree import ElementTree
from xml.sax.saxutils import escape

from aiohttp import web

from aiozarr.emulator.files import TMP_DIR, WriteLock, etag_of, write_atomic
from aiozarr.emulator.s3 import S3Error, parse_xml, xml_response

__all__ = ["MAX_PARTS", "MIN_PART_BYTES", "REMEMBERED", "MultipartUploads"]

MAX_PARTS = 10_000  # S3's part numbers: 1 to 10,000
MIN_PART_BYTES = 5 << 20  # S3's least part, but for the last
REMEMBERED = 10_000  # completed uploads whose repeated Complete is answered again


@dataclass
class _Upload:
    key: str
    parts: dict[int, tuple[Path, str]] = field(default_factory=dict)  # number: file, ETag
    completing: asyncio.Lock = field(default_factory=asyncio.Lock)


class MultipartUploads:
    """The uploads in progress in the bucket at `root`; `path_of(key)` is where a key's
    object lives (and refuses an invalid key). The last `REMEMBERED` completed uploads
    are remembered with their ETag, so a repeated Complete (a client whose first answer
    was lost) is answered as the first was, as S3 does."""

    def __init__(self, root: Path, path_of: Callable[[str], Path], lock: WriteLock) -> None:
        self.root = root
        self._path_of = path_of
        self._lock = lock  # the bucket's: held by every rename into place
        self._uploads: dict[str, _Upload] = {}
        self._completed: OrderedDict[str, tuple[str, str]] = OrderedDict()  # id: key, ETag

    def create(self, key: str, bucket: str) -> web.Response:
        """CreateMultipartUpload: a new upload id."""
        self._path_of(key)  # refuses a key that may not be written
        upload_id = uuid.uuid4().hex
        self._uploads[upload_id] = _Upload(key)
        return xml_response(
            f"<InitiateMultipartUploadResult><Bucket>{escape(bucket)}</Bucket>"
            f"<Key>{escape(key)}</Key><UploadId>{upload_id}</UploadId>"
            "</InitiateMultipartUploadResult>"
        )

    def abort(self, upload_id: str) -> None:
        """AbortMultipartUpload (404 NoSuchUpload for an id not in progress)."""
        upload = self._uploads.get(upload_id)
        if upload is None:
            raise S3Error(404, f"no upload {upload_id} in progress", code="NoSuchUpload")
        _check_not_completing(upload)
        del self._uploads[upload_id]
        for part, _ in upload.parts.values():
            part.unlink(missing_ok=True)

    def check_part(self, key: str, upload_id: str, number: str | None) -> int:
        """The part number of an UploadPart request, checked before its body is read."""
        upload = self._uploads.get(upload_id)
        if upload is None or upload.key != key:
            raise S3Error(404, f"no upload {upload_id} of {key!r}", key=key, code="NoSuchUpload")
        if number is None or not number.isdigit() or not 1 <= int(number) <= MAX_PARTS:
            raise S3Error(400, f"partNumber must be 1 to {MAX_PARTS}, not {number!r}", key=key)
        return int(number)

    async def upload_part(
        self, key: str, upload_id: str, number: int, body: bytes | Path
    ) -> web.Response:
        """UploadPart: the part (bytes, or a temp file holding them) is kept as a file
        until the upload completes; each upload of a part has an ETag of its own."""
        upload = self._uploads.get(upload_id)
        if upload is None or upload.completing.locked():  # ended while its body came in
            if isinstance(body, Path):
                body.unlink(missing_ok=True)
            if upload is None:
                raise S3Error(404, f"no upload {upload_id}", key=key, code="NoSuchUpload")
            _check_not_completing(upload)
        etag = f'"{uuid.uuid4().hex}"'
        part = self.root / TMP_DIR / f"{upload_id}.{number}.{etag.strip(chr(34))}"
        await asyncio.to_thread(_store_part, part, body)
        if self._uploads.get(upload_id) is not upload or upload.completing.locked():
            part.unlink(missing_ok=True)  # aborted or being completed while it was stored
            raise S3Error(409, f"upload {upload_id} ended", key=key, code="OperationAborted")
        old = upload.parts.get(number)
        upload.parts[number] = (part, etag)
        if old is not None:
            old[0].unlink(missing_ok=True)
        return web.Response(headers={"ETag": etag})

    async def complete(
        self,
        key: str,
        upload_id: str,
        body: bytes,
        bucket: str,
        headers: Mapping[str, str] | None = None,
    ) -> web.Response:
        """CompleteMultipartUpload: the parts the body names, in number order, become the
        object at `key` in one rename. The upload ends (its part files removed) only
        once the object is in place: a Complete that fails can be retried."""
        upload = self._uploads.get(upload_id)
        if upload is None or upload.key != key:
            return self._completed_again(key, upload_id, bucket)
        async with upload.completing:  # a second Complete at once waits, then is a repeat
            if self._uploads.get(upload_id) is not upload:
                return self._completed_again(key, upload_id, bucket)
            parts = _named_parts(upload, parse_xml(body), key)
            path = self._path_of(key)
            # Its conditions (If-None-Match: *, If-Match) checked as a PUT's are.
            condition = (self._lock, dict(headers or {}))
            written = await asyncio.to_thread(
                write_atomic, path, self.root / TMP_DIR, parts, condition
            )
            self._uploads.pop(upload_id, None)
            for part, _ in upload.parts.values():
                part.unlink(missing_ok=True)
        etag = etag_of(written)  # this upload's version, not what a racing request left
        self._completed[upload_id] = (key, etag)
        while len(self._completed) > REMEMBERED:
            self._completed.popitem(last=False)
        return _completed_answer(bucket, key, etag)

    def _completed_again(self, key: str, upload_id: str, bucket: str) -> web.Response:
        done = self._completed.get(upload_id)
        if done is None or done[0] != key:
            raise S3Error(404, f"no upload {upload_id} of {key!r}", key=key, code="NoSuchUpload")
        return _completed_answer(bucket, key, done[1])


def _check_not_completing(upload: _Upload) -> None:
    """Refuse to change an upload whose Complete is copying its parts."""
    if upload.completing.locked():
        raise S3Error(409, "the upload is being completed", key=upload.key, code="OperationAborted")


def _completed_answer(bucket: str, key: str, etag: str) -> web.Response:
    return xml_response(
        f"<CompleteMultipartUploadResult><Bucket>{escape(bucket)}</Bucket>"
        f"<Key>{escape(key)}</Key><ETag>{escape(etag)}</ETag>"
        "</CompleteMultipartUploadResult>"
    )


def _named_parts(upload: _Upload, elements: list[ElementTree.Element], key: str) -> list[Path]:
    """The part files a Complete's body names, checked as S3 checks them: at least one
    part, in ascending order, each uploaded with the ETag given, each but the last at
    least `MIN_PART_BYTES`."""
    listed = []
    for element in elements:
        if element.tag.rpartition("}")[2] != "Part":
            continue
        fields = {child.tag.rpartition("}")[2]: (child.text or "").strip() for child in element}
        listed.append((fields.get("PartNumber", ""), fields.get("ETag")))
    if not listed:
        raise S3Error(400, "the Complete names no part", key=key, code="MalformedXML")
    numbers = [int(n) if n.isdigit() else -1 for n, _ in listed]
    if any(b <= a for a, b in itertools.pairwise(numbers)):
        raise S3Error(
            400,
            "parts must be listed once each, in ascending order",
            key=key,
            code="InvalidPartOrder",
        )
    files = []
    for (text, etag), number in zip(listed, numbers, strict=True):
        stored = upload.parts.get(number)
        if stored is None or (etag is not None and etag.strip('"') != stored[1].strip('"')):
            raise S3Error(
                400, f"part {text} was not uploaded with ETag {etag}", key=key, code="InvalidPart"
            )
        files.append(stored[0])
    for number, part in zip(numbers[:-1], files[:-1], strict=True):
        if part.stat().st_size < MIN_PART_BYTES:
            raise S3Error(
                400,
                f"part {number} is under {MIN_PART_BYTES} bytes, S3's least but for the last",
                key=key,
                code="EntityTooSmall",
            )
    return files


def _store_part(part: Path, body: bytes | Path) -> None:
    part.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(body, Path):
        os.replace(body, part)
        return
    try:
        part.write_bytes(body)
    except BaseException:  # a full disk: no part file is kept that no upload names
        part.unlink(missing_ok=True)
        raise
