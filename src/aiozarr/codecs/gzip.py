"""`gzip`: RFC 1952 compression (v3 core spec), decompressed with a bounded output size."""

from __future__ import annotations

import gzip as _gzip
import warnings
import zlib
from typing import Any

from aiozarr.codecs.base import UNSIZED_MAX_DECODED_BYTES, BytesToBytesCodec, ChunkSpec
from aiozarr.errors import AiozarrWarning, CodecError, MetadataError

_GZIP_WBITS = 16 + zlib.MAX_WBITS


def check_level(level: object, low: int, high: int) -> int:
    """`level` as an int within [low, high], else `MetadataError` naming the field."""
    if not isinstance(level, int) or isinstance(level, bool) or not low <= level <= high:
        raise MetadataError(f"field 'level' must be an integer {low}..{high}, got {level!r}")
    return level


class GzipCodec(BytesToBytesCodec):
    """gzip at `level` 0..9."""

    name = "gzip"

    def __init__(self, level: int = 5) -> None:
        self.level = check_level(level, 0, 9)
        self._warned = False

    def configuration(self) -> dict[str, Any]:
        return {"level": self.level}

    def encode(self, data: Any, spec: ChunkSpec) -> bytes:
        # mtime=0 keeps the output reproducible (and equal to numcodecs' GZip).
        return _gzip.compress(memoryview(data), compresslevel=self.level, mtime=0)

    def decode(self, data: Any, spec: ChunkSpec) -> bytes:
        return self.decode_sized(data, spec, UNSIZED_MAX_DECODED_BYTES, exact=False)

    def decode_sized(self, data: Any, spec: ChunkSpec, size: int, exact: bool = True) -> bytes:
        out, was_zlib = gunzip(data, size, exact)
        if was_zlib and not self._warned:
            self._warned = True  # once per array: every chunk of it was likely written alike
            warn_zlib_in_gzip(spec.key)
        return out


def is_zlib(data: Any) -> bool:
    """Whether `data` starts with a zlib header (RFC 1950) rather than gzip's magic bytes."""
    view = memoryview(data).cast("B")
    if view.nbytes < 2:
        return False
    cmf, flg = view[0], view[1]
    return cmf & 0x0F == 8 and cmf >> 4 <= 7 and (cmf << 8 | flg) % 31 == 0


def gunzip(data: Any, size: int, exact: bool = True) -> tuple[bytes, bool]:
    """Inflate gzip `data` to exactly (`exact`) or at most `size` bytes, and whether it
    was a zlib stream instead (a writer quirk).

    A gzip stream must start with the bytes 1f 8b, which no zlib header has, so the
    two cannot be confused; zlib's own checksum then guards the data.
    """
    if is_zlib(data):
        return inflate(data, size, zlib.MAX_WBITS, "gzip", exact), True
    return inflate(data, size, _GZIP_WBITS, "gzip", exact), False


def warn_zlib_in_gzip(key: str) -> None:
    """Warn that the chunk under `key` was declared gzip but held a zlib stream."""
    where = f"chunk {key!r}" if key else "a chunk"
    warnings.warn(
        f"{where}: declared 'gzip' but holds a zlib stream (a writer quirk); read as zlib "
        "(other chunks of this array may be the same: warned once per array)",
        AiozarrWarning,
        stacklevel=3,
    )


def inflate(data: Any, size: int, wbits: int, name: str, exact: bool = True) -> bytes:
    """Inflate deflate streams (gzip members: `wbits` 16 + 15; zlib: 15) back to back,
    to exactly (`exact`) or at most `size` bytes.

    Never produces more than `size` + 1 bytes: a decompression bomb fails after
    allocating no more than the chunk it claims to be.
    """
    limit = size + 1
    parts: list[bytes] = []
    produced = 0
    pending = memoryview(data).cast("B")
    try:
        # A gzip file may hold several members; each needs a fresh decompressor.
        while pending.nbytes:
            inflater = zlib.decompressobj(wbits)
            chunk: Any = pending
            while not inflater.eof:
                out = inflater.decompress(chunk, max(limit - produced, 1))
                parts.append(out)
                produced += len(out)
                if produced >= limit:
                    raise CodecError(f"codec {name!r}: data decompresses to more than {size} bytes")
                chunk = inflater.unconsumed_tail
                if not out and not chunk:
                    raise CodecError(f"codec {name!r}: data is truncated")
            # Zero bytes after a member are padding (tape blocks, preallocated files),
            # skipped as Python's gzip and gzip(1) do: no gzip or zlib header starts with 0.
            pending = memoryview(inflater.unused_data.lstrip(b"\0"))
    except zlib.error as error:
        raise CodecError(f"codec {name!r}: corrupt data: {error}") from error
    if exact and produced != size:
        raise CodecError(f"codec {name!r}: data decompresses to {produced} bytes, expected {size}")
    return b"".join(parts)
