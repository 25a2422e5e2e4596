"""`zstd`: Zstandard compression (v3 codec extension).

Encoding and decoding use contexts kept per thread (`zstandard`): numcodecs builds one
per call, which costs about as much as decompressing a small chunk, and ~100 us of the
~1.3 ms compressing a 256 KiB chunk takes. The frames written are numcodecs' (the bytes
zarr-python writes), byte for byte.
"""

from __future__ import annotations

import threading
from typing import Any

import zstandard

from aiozarr.codecs.base import (
    UNSIZED_MAX_DECODED_BYTES,
    BytesToBytesCodec,
    ChunkSpec,
    check_decoded_size,
)
from aiozarr.codecs.gzip import check_level
from aiozarr.errors import CodecError, MetadataError


class ZstdCodec(BytesToBytesCodec):
    """Zstandard at `level` (-131072..22), with an optional content `checksum`."""

    name = "zstd"

    def __init__(self, level: int = 0, checksum: bool = False) -> None:
        self.level = check_level(level, -131072, 22)
        if not isinstance(checksum, bool):
            raise MetadataError(f"field 'checksum' must be true or false, got {checksum!r}")
        self.checksum = checksum

    def configuration(self) -> dict[str, Any]:
        return {"level": self.level, "checksum": self.checksum}

    def encode(self, data: Any, spec: ChunkSpec) -> bytes:
        return _compressor(self.level, self.checksum).compress(memoryview(data).cast("B"))

    def decode(self, data: Any, spec: ChunkSpec) -> bytes | memoryview:
        return self.decode_sized(data, spec, UNSIZED_MAX_DECODED_BYTES, exact=False)

    def decode_sized(
        self, data: Any, spec: ChunkSpec, size: int, exact: bool = True
    ) -> bytes | memoryview:
        if exact:
            return self.decode_into_buffer(data, bytearray(size))
        return decompress_bounded(data, size, exact)

    decodes_into_buffer = True

    def decode_into_buffer(self, data: Any, out: Any) -> bytes | memoryview:
        """Decompress into `out` (a writable buffer of the decoded size) or a new buffer."""
        view = memoryview(data).cast("B")
        if out is None:
            return decompress_bounded(view, UNSIZED_MAX_DECODED_BYTES, False)
        target = memoryview(out).cast("B")
        check_content_size(view, target.nbytes)
        decompress_into(view, target)
        return target


def decompress_bounded(data: Any, size: int, exact: bool) -> bytes | memoryview:
    """Decompress zstd `data` to exactly (`exact`) or at most `size` bytes.

    A chunk that is one frame recording a decoded size within `size` is decompressed in
    one call (its output allocated at the recorded size). Any other (a frame that records
    no size, or more frames after the first, which the first's header does not count) is
    decompressed as a stream that stops one byte past `size`, never "decompress, then
    check".
    """
    view = memoryview(data).cast("B")
    recorded = content_size(view)
    if recorded is not None:
        check_decoded_size("zstd", recorded, size, False)
        try:  # refuses anything after the first frame before it decompresses past it
            out = _decompressor().decompress(view, allow_extra_data=False)
        except zstandard.ZstdError:
            out = None  # more frames, or corrupt: the streams below bound both and say which
        if out is not None:
            check_decoded_size("zstd", len(out), size, exact)
            return out
    if not exact:
        return _stream_at_most(view, size)
    whole = memoryview(bytearray(size))
    decompress_into(view, whole)
    return whole


_local = threading.local()


def _compressor(level: int, checksum: bool) -> zstandard.ZstdCompressor:
    """This thread's compressor for `level` and `checksum`, writing the content size as
    numcodecs does."""
    compressors: dict[tuple[int, bool], zstandard.ZstdCompressor] | None = getattr(
        _local, "cctx", None
    )
    if compressors is None:
        compressors = _local.cctx = {}
    cctx = compressors.get((level, checksum))
    if cctx is None:
        cctx = compressors[level, checksum] = zstandard.ZstdCompressor(
            level=level, write_checksum=checksum, write_content_size=True
        )
    return cctx


def _decompressor() -> zstandard.ZstdDecompressor:
    """This thread's decompressor (a context is not safe to share between threads)."""
    dctx = getattr(_local, "dctx", None)
    if dctx is None:
        dctx = _local.dctx = zstandard.ZstdDecompressor()
    return dctx


def decompress_into(data: memoryview, out: memoryview) -> None:
    """Decompress the frames in `data` into `out`, which they must fill exactly."""
    filled = 0
    try:
        with _decompressor().stream_reader(data, read_across_frames=True) as reader:
            while filled < out.nbytes:
                got = reader.readinto(out[filled:])
                if not got:
                    break
                filled += got
            extra = reader.read(1) if filled == out.nbytes else b""
    except zstandard.ZstdError as error:
        raise _corrupt(error) from error
    if filled != out.nbytes or extra:
        raise CodecError(
            f"codec 'zstd': data decompresses to "
            f"{'more than ' if extra else ''}{filled} bytes, expected {out.nbytes}"
        )
    check_frames_end(data)


def check_frames_end(data: memoryview) -> None:
    """Refuse `data` when its last zstd frame ends past it: zstandard's stream reader
    ends a frame cut inside its content checksum without a word, once every byte of
    content is out (RFC 8878, 3.1.1: header, blocks, then the optional checksum).

    Walks the frames' block headers only; stops, saying nothing, at anything it does
    not know (a legacy frame): the decoder has read those already.
    """
    start = 0
    while start < data.nbytes:
        magic = int.from_bytes(data[start : start + 4], "little")
        if magic & 0xFFFFFFF0 == _SKIPPABLE_MAGIC:
            start += 8 + int.from_bytes(data[start + 4 : start + 8], "little")
            continue
        if magic != _MAGIC:
            return
        try:
            descriptor, start = data[start + 4], start + zstandard.frame_header_size(data[start:])
        except (IndexError, zstandard.ZstdError) as error:
            raise _corrupt(error) from error
        last = False
        while not last and start + 3 <= data.nbytes:
            header = int.from_bytes(data[start : start + 3], "little")
            last, kind = bool(header & 1), (header >> 1) & 3
            start += 3 + (1 if kind == 1 else header >> 3)
        start += 4 if descriptor & 0x04 else 0
        if not last or start > data.nbytes:
            raise CodecError("codec 'zstd': data is truncated (its last frame ends past it)")


def _stream_at_most(data: memoryview, size: int) -> bytearray:
    """Decompress the frames in `data`, refusing more than `size` bytes.

    Two passes: zstandard's stream reader counts the output in a small buffer, stopping
    one byte past `size`, but ends a truncated frame without a word; a decoder per frame
    then decompresses what is now known to fit, and says whether each frame ended.
    """
    scratch = memoryview(bytearray(min(size + 1, _STEP)))
    produced = 0
    out = bytearray()
    start = 0
    try:
        with _decompressor().stream_reader(data, read_across_frames=True) as reader:
            while got := reader.readinto(scratch):
                produced += got
                if produced > size:
                    raise CodecError(f"codec 'zstd': data decompresses to more than {size} bytes")
        while start < data.nbytes:  # frames back to back, each with its own decoder
            frame = _decompressor().decompressobj()
            out += frame.decompress(data[start:])
            if not frame.eof:
                raise CodecError("codec 'zstd': data is truncated")
            start = data.nbytes - len(frame.unused_data)
    except zstandard.ZstdError as error:
        raise _corrupt(error) from error
    return out


def _corrupt(error: Exception) -> CodecError:
    return CodecError(f"codec 'zstd': corrupt or truncated data: {error}")


_MAGIC = 0xFD2FB528
_SKIPPABLE_MAGIC = 0x184D2A50
#: Decompressed bytes counted at a time in a frame that does not record its size.
_STEP = 1 << 20


def content_size(view: memoryview) -> int | None:
    """The decoded size a zstd frame's header records (RFC 8878, 3.1.1.1); None where it
    records none or `view` is not a plain frame (a skippable or legacy frame)."""
    if view.nbytes < 6 or int.from_bytes(view[:4], "little") != _MAGIC:
        return None
    descriptor = view[4]
    single_segment = bool(descriptor & 0x20)
    fcs_flag = descriptor >> 6
    start = 5 + (0 if single_segment else 1) + (0, 1, 2, 4)[descriptor & 0x03]
    width = (1 if single_segment else 0, 2, 4, 8)[fcs_flag]
    if width == 0:
        return None
    if view.nbytes < start + width:
        raise CodecError(f"codec 'zstd': frame header is truncated ({view.nbytes} bytes)")
    return int.from_bytes(view[start : start + width], "little") + (256 if width == 2 else 0)


def check_content_size(view: memoryview, size: int) -> None:
    """Refuse a first frame whose header records more than `size` decoded bytes, before
    anything is decompressed.

    Only more: the header counts the first frame alone, and a chunk may hold several
    frames (pzstd, concatenated files), each recording its own part. A total short of
    `size` (which numcodecs would leave unnoticed) is refused by `decompress_into`.
    """
    recorded = content_size(view)
    if recorded is not None and recorded > size:
        raise CodecError(
            f"codec 'zstd': data decompresses to at least {recorded} bytes, expected {size}"
        )
