"""S3 multipart uploads on the emulator: each part a file in the temp directory until the
upload completes (its parts, in number order, renamed into place as one object) or is
aborted."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from pathlib import Path
from xml.etree import ElementTree
from xml.sax.saxutils import escape

from aiohttp import web

from aiozarr.emulator.files import TMP_DIR, etag_of, write_atomic
from aiozarr.emulator.s3 import S3Error, xml_response

__all__ = ["MultipartUploads"]


class MultipartUploads:
    """The uploads in progress in the bucket at `root`; `path_of(key)` is where a key's
    object lives (and refuses an invalid key)."""

    def __init__(self, root: Path, path_of: Callable[[str], Path]) -> None:
        self.root = root
        self._path_of = path_of
        self._uploads: dict[str, tuple[str, dict[int, Path]]] = {}

    def create(self, key: str, bucket: str) -> web.Response:
        """CreateMultipartUpload: a new upload id."""
        upload_id = uuid.uuid4().hex
        self._uploads[upload_id] = (key, {})
        return xml_response(
            f"<InitiateMultipartUploadResult><Bucket>{bucket}</Bucket>"
            f"<Key>{escape(key)}</Key><UploadId>{upload_id}</UploadId>"
            "</InitiateMultipartUploadResult>"
        )

    def abort(self, upload_id: str) -> None:
        """AbortMultipartUpload (an unknown id is no error)."""
        self._uploads.pop(upload_id, None)

    def upload_part(self, key: str, upload_id: str, number: int, body: bytes) -> web.Response:
        """UploadPart: the part is kept as a file until the upload completes."""
        if upload_id not in self._uploads:
            raise S3Error(404, f"no upload {upload_id}", key=key, code="NoSuchUpload")
        tmp = self.root / TMP_DIR
        tmp.mkdir(parents=True, exist_ok=True)
        part = tmp / f"{upload_id}.{number}"
        part.write_bytes(body)
        self._uploads[upload_id][1][number] = part
        return web.Response(headers={"ETag": f'"{upload_id}-{number}"'})

    async def complete(self, key: str, upload_id: str, body: bytes, bucket: str) -> web.Response:
        """CompleteMultipartUpload: the parts the body names, in number order, become the
        object at `key` in one rename; every part file is removed."""
        upload = self._uploads.pop(upload_id, None)
        if upload is None:
            raise S3Error(404, f"no upload {upload_id}", key=key, code="NoSuchUpload")
        numbers = [
            int(e.text or 0)
            for e in ElementTree.fromstring(body).iter()
            if e.tag.rpartition("}")[2] == "PartNumber"
        ]
        parts = [upload[1][n] for n in sorted(numbers)]
        path = self._path_of(key)
        await asyncio.to_thread(write_atomic, path, self.root / TMP_DIR, parts)
        for part in upload[1].values():
            part.unlink(missing_ok=True)
        etag = etag_of(path.stat())
        return xml_response(
            f"<CompleteMultipartUploadResult><Bucket>{bucket}</Bucket>"
            f"<Key>{escape(key)}</Key><ETag>{escape(etag)}</ETag>"
            "</CompleteMultipartUploadResult>"
        )
