"""`crc32c`: a CRC-32C checksum appended as 4 little-endian bytes (v3 core spec)."""

from __future__ import annotations

from typing import Any

import google_crc32c
import numpy as np

from aiozarr.codecs.base import BytesToBytesCodec, ChunkSpec
from aiozarr.errors import ChecksumError, CodecError


def _checksum(view: memoryview) -> int:
    # google_crc32c takes only buffers without a release hook: a numpy view of the bytes
    # is one, and costs no copy.
    return int(google_crc32c.value(np.frombuffer(view, dtype=np.uint8)))


class Crc32cCodec(BytesToBytesCodec):
    """Append a checksum on encode; verify and strip it on decode."""

    name = "crc32c"

    def configuration(self) -> dict[str, Any]:
        return {}

    def encode(self, data: Any, spec: ChunkSpec) -> bytes:
        view = memoryview(data).cast("B")
        return b"".join((view, _checksum(view).to_bytes(4, "little")))

    def decode(self, data: Any, spec: ChunkSpec) -> memoryview:
        view = memoryview(data).cast("B")
        if view.nbytes < 4:
            raise CodecError(
                f"codec 'crc32c': data is {view.nbytes} bytes, too short for a checksum"
            )
        payload = view[:-4]
        stored = int.from_bytes(view[-4:], "little")
        actual = _checksum(payload)
        if stored != actual:
            raise ChecksumError(
                f"codec 'crc32c': checksum mismatch "
                f"(stored {stored:#010x}, computed {actual:#010x})"
            )
        return payload

    def encoded_size(self, size: int) -> int:
        return size + 4
