"""S3 multipart uploads on the emulator: each part a file in the temp directory until the
upload completes (its parts, in number order, renamed into place as one object) or is
aborted. Keys pass the server's key check when the upload is created and again when it
completes; parts stream in under the same cap as a PUT (the server's)."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Callable
from pathlib import Path
from xml.sax.saxutils import escape

from aiohttp import web

from aiozarr.emulator.files import TMP_DIR, etag_of, write_atomic
from aiozarr.emulator.s3 import S3Error, parse_xml, xml_response

__all__ = ["MAX_PARTS", "MultipartUploads"]

MAX_PARTS = 10_000  # S3's part numbers: 1 to 10,000


class MultipartUploads:
    """The uploads in progress in the bucket at `root`; `path_of(key)` is where a key's
    object lives (and refuses an invalid key)."""

    def __init__(self, root: Path, path_of: Callable[[str], Path]) -> None:
        self.root = root
        self._path_of = path_of
        self._uploads: dict[str, tuple[str, dict[int, Path]]] = {}

    def create(self, key: str, bucket: str) -> web.Response:
        """CreateMultipartUpload: a new upload id."""
        self._path_of(key)  # refuses a key that may not be written
        upload_id = uuid.uuid4().hex
        self._uploads[upload_id] = (key, {})
        return xml_response(
            f"<InitiateMultipartUploadResult><Bucket>{escape(bucket)}</Bucket>"
            f"<Key>{escape(key)}</Key><UploadId>{upload_id}</UploadId>"
            "</InitiateMultipartUploadResult>"
        )

    def abort(self, upload_id: str) -> None:
        """AbortMultipartUpload (an unknown id is no error)."""
        upload = self._uploads.pop(upload_id, None)
        for part in upload[1].values() if upload else ():
            part.unlink(missing_ok=True)

    def check_part(self, key: str, upload_id: str, number: str | None) -> int:
        """The part number of an UploadPart request, checked before its body is read."""
        upload = self._uploads.get(upload_id)
        if upload is None or upload[0] != key:
            raise S3Error(404, f"no upload {upload_id} of {key!r}", key=key, code="NoSuchUpload")
        if number is None or not number.isdigit() or not 1 <= int(number) <= MAX_PARTS:
            raise S3Error(400, f"partNumber must be 1 to {MAX_PARTS}, not {number!r}", key=key)
        return int(number)

    async def upload_part(
        self, key: str, upload_id: str, number: int, body: bytes | Path
    ) -> web.Response:
        """UploadPart: the part (bytes, or a temp file holding them) is kept as a file
        until the upload completes."""
        upload = self._uploads.get(upload_id)
        if upload is None:  # aborted while its body came in
            if isinstance(body, Path):
                body.unlink(missing_ok=True)
            raise S3Error(404, f"no upload {upload_id}", key=key, code="NoSuchUpload")
        part = self.root / TMP_DIR / f"{upload_id}.{number}"
        await asyncio.to_thread(_store_part, part, body)
        upload[1][number] = part
        return web.Response(headers={"ETag": f'"{upload_id}-{number}"'})

    async def complete(self, key: str, upload_id: str, body: bytes, bucket: str) -> web.Response:
        """CompleteMultipartUpload: the parts the body names, in number order, become the
        object at `key` in one rename; every part file is removed."""
        upload = self._uploads.get(upload_id)
        if upload is None or upload[0] != key:
            raise S3Error(404, f"no upload {upload_id} of {key!r}", key=key, code="NoSuchUpload")
        texts = [
            (e.text or "").strip()
            for e in parse_xml(body)
            if e.tag.rpartition("}")[2] == "PartNumber"
        ]
        if not all(t.isdigit() and int(t) in upload[1] for t in texts):
            raise S3Error(400, f"parts {texts} were not all uploaded", key=key, code="InvalidPart")
        path = self._path_of(key)
        self._uploads.pop(upload_id, None)
        parts = [upload[1][n] for n in sorted({int(t) for t in texts})]
        try:
            written = await asyncio.to_thread(write_atomic, path, self.root / TMP_DIR, parts)
        finally:
            for part in upload[1].values():
                part.unlink(missing_ok=True)
        etag = etag_of(written)  # this upload's version, not what a racing request left
        return xml_response(
            f"<CompleteMultipartUploadResult><Bucket>{escape(bucket)}</Bucket>"
            f"<Key>{escape(key)}</Key><ETag>{escape(etag)}</ETag>"
            "</CompleteMultipartUploadResult>"
        )


def _store_part(part: Path, body: bytes | Path) -> None:
    part.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(body, Path):
        os.replace(body, part)
    else:
        part.write_bytes(body)
