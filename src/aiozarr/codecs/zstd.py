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
        view = memoryview(data).cast("B")
        if out is not None:
            check_content_size(view, memoryview(out).nbytes)
        try:
            return self._zstd.decode(view, out=out)
        except (RuntimeError, ValueError) as error:
            raise CodecError(f"codec 'zstd': corrupt or truncated data: {error}") from error


_MAGIC = 0xFD2FB528


def check_content_size(view: memoryview, size: int) -> None:
    """Refuse a frame whose header records a decoded size other than `size`.

    numcodecs decodes a smaller frame into a larger buffer without a word, leaving
    the rest of the chunk as it was: the header (RFC 8878, 3.1.1.1) is checked first.
    """
    if view.nbytes < 6 or int.from_bytes(view[:4], "little") != _MAGIC:
        return  # not a plain frame: numcodecs says what is wrong with it
    descriptor = view[4]
    single_segment = bool(descriptor & 0x20)
    fcs_flag = descriptor >> 6
    start = 5 + (0 if single_segment else 1) + (0, 1, 2, 4)[descriptor & 0x03]
    width = (1 if single_segment else 0, 2, 4, 8)[fcs_flag]
    if width == 0:
        return  # the size is not recorded
    if view.nbytes < start + width:
        raise CodecError(f"codec 'zstd': frame header is truncated ({view.nbytes} bytes)")
    recorded = int.from_bytes(view[start : start + width], "little") + (256 if width == 2 else 0)
    if recorded != size:
        raise CodecError(f"codec 'zstd': data decompresses to {recorded} bytes, expected {size}")
