"""`zstd`: Zstandard compression (v3 codec extension), via numcodecs."""

from __future__ import annotations

from typing import Any

import numcodecs

from aiozarr.codecs.base import BytesToBytesCodec, ChunkSpec
from aiozarr.codecs.gzip import check_level
from aiozarr.codecs.registry import register_codec
from aiozarr.errors import CodecError, MetadataError


@register_codec
class ZstdCodec(BytesToBytesCodec):
    """Zstandard at `level` (-131072..22), with an optional content `checksum`."""

    name = "zstd"

    def __init__(self, level: int = 0, checksum: bool = False) -> None:
        self.level = check_level(level, -131072, 22)
        if not isinstance(checksum, bool):
            raise MetadataError(f"field 'checksum' must be true or false, got {checksum!r}")
        self.checksum = checksum
        self._zstd = numcodecs.Zstd(level=self.level, checksum=checksum)

    def configuration(self) -> dict[str, Any]:
        return {"level": self.level, "checksum": self.checksum}

    def encode(self, data: Any, spec: ChunkSpec) -> bytes:
        return self._zstd.encode(memoryview(data).cast("B"))

    def decode(self, data: Any, spec: ChunkSpec) -> bytes | memoryview:
        return self.decode_sized(data, spec, None)

    def decode_sized(self, data: Any, spec: ChunkSpec, size: int | None) -> bytes | memoryview:
        # With a destination of the expected size, numcodecs refuses a frame that
        # claims to be larger instead of allocating for it.
        out = None if size is None else bytearray(size)
        return self.decode_into_buffer(data, out)

    def decode_into_buffer(self, data: Any, out: Any) -> bytes | memoryview:
        """Decompress into `out` (a writable buffer of the decoded size) or a new buffer."""
        try:
            return self._zstd.decode(memoryview(data).cast("B"), out=out)
        except (RuntimeError, ValueError) as error:
            raise CodecError(f"codec 'zstd': corrupt or truncated data: {error}") from error
