"""`blosc`: Blosc compression (v3 core spec), via numcodecs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numcodecs
from numcodecs import blosc as _blosc

from aiozarr.codecs.base import (
    UNSIZED_MAX_DECODED_BYTES,
    BytesToBytesCodec,
    ChunkSpec,
    check_decoded_size,
)
from aiozarr.errors import CodecError, MetadataError

SHUFFLES = {"noshuffle": 0, "shuffle": 1, "bitshuffle": 2}
_NAMES = {number: name for name, number in SHUFFLES.items()}
#: GDAL's spelling of the shuffle names (its BLOSC_SHUFFLE creation option's values).
GDAL_SHUFFLES = {"NONE": "noshuffle", "BYTE": "shuffle", "BIT": "bitshuffle"}
CNAMES = ("lz4", "lz4hc", "blosclz", "zstd", "snappy", "zlib")
_HEADER = 16


def check_frame(data: Any, size: int, exact: bool = True) -> memoryview:
    """The Blosc frame in `data`, its header checked against its length and the
    decoded size, exactly (`exact`) or at most `size`.

    Blosc trusts its header: a truncated frame would be read past its end, and a
    forged one would make it allocate what the header claims. Both are refused here.
    Zero bytes after the frame's end are left out (z5py up to 2.0 stored 16 after
    every frame); others are refused: a value longer than its frame with data after
    it had bytes put into it, and a frame stored uncompressed would read them, its
    values shifted.
    """
    view = memoryview(data).cast("B")
    if view.nbytes < _HEADER:
        raise CodecError(f"codec 'blosc': data is {view.nbytes} bytes, shorter than its header")
    nbytes = int.from_bytes(view[4:8], "little")
    cbytes = int.from_bytes(view[12:16], "little")
    if not _HEADER <= cbytes <= view.nbytes:
        raise CodecError(
            f"codec 'blosc': corrupt or truncated data ({view.nbytes} bytes, header says {cbytes})"
        )
    if bytes(view[cbytes:]).strip(b"\0"):
        raise CodecError(
            f"codec 'blosc': corrupt data ({view.nbytes} bytes, header says {cbytes}, "
            "and the bytes after the frame are not zero)"
        )
    check_decoded_size("blosc", nbytes, size, exact)
    return view[:cbytes]


class BloscCodec(BytesToBytesCodec):
    """Blosc with compressor `cname`, `clevel`, `shuffle`, `typesize` and `blocksize`."""

    name = "blosc"

    def __init__(
        self,
        cname: str = "zstd",
        clevel: int = 5,
        shuffle: str = "noshuffle",
        typesize: int | None = None,
        blocksize: int = 0,
    ) -> None:
        if cname not in CNAMES:
            raise MetadataError(f"field 'cname' must be one of {', '.join(CNAMES)}, got {cname!r}")
        if not isinstance(clevel, int) or isinstance(clevel, bool) or not 0 <= clevel <= 9:
            raise MetadataError(f"field 'clevel' must be an integer 0..9, got {clevel!r}")
        if shuffle not in SHUFFLES:
            raise MetadataError(
                f"field 'shuffle' must be one of {', '.join(SHUFFLES)}, got {shuffle!r}"
            )
        for field, value in (("typesize", typesize), ("blocksize", blocksize)):
            if value is not None and (not isinstance(value, int) or value < 0):
                raise MetadataError(
                    f"field {field!r} must be a non-negative integer, got {value!r}"
                )
        self.cname, self.clevel, self.shuffle = cname, clevel, shuffle
        self.typesize, self.blocksize = typesize, blocksize

    @classmethod
    def lenient_config(cls, config: Mapping[str, Any]) -> tuple[Mapping[str, Any], list[str]]:
        """Undo a writer quirk: `shuffle` as numcodecs' integer (0, 1, 2) or GDAL's
        upper-case name ("NONE", "BYTE", "BIT") instead of its name."""
        shuffle = config.get("shuffle")
        if isinstance(shuffle, int) and not isinstance(shuffle, bool) and shuffle in _NAMES:
            name = _NAMES[shuffle]
            return {**config, "shuffle": name}, [
                f"field 'shuffle' is the integer {shuffle}, read as {name!r}"
            ]
        if isinstance(shuffle, str) and shuffle in GDAL_SHUFFLES:
            name = GDAL_SHUFFLES[shuffle]
            return {**config, "shuffle": name}, [
                f"field 'shuffle' is GDAL's {shuffle!r}, read as {name!r}"
            ]
        return config, []

    @classmethod
    def completed_config(cls, config: Mapping[str, Any], dtype: Any) -> dict[str, Any]:
        """`config` for a new array of `dtype` with `typesize` and `shuffle` chosen as
        zarr-python chooses them when left out (TensorStore refuses blosc without a
        typesize). Its variable-length types have no item size: shuffled as bytes."""
        size = 1 if dtype.kind in "OT" else dtype.itemsize
        config = dict(config)
        if config.get("typesize") is None:
            config["typesize"] = size
        if config.get("shuffle") is None:
            config["shuffle"] = "bitshuffle" if size == 1 else "shuffle"
        return config

    def configuration(self) -> dict[str, Any]:
        config: dict[str, Any] = {
            "cname": self.cname,
            "clevel": self.clevel,
            "shuffle": self.shuffle,
        }
        if self.typesize is not None:
            config["typesize"] = self.typesize
        config["blocksize"] = self.blocksize
        return config

    def encode(self, data: Any, spec: ChunkSpec) -> bytes:
        # Without a typesize in metadata, shuffle by the element size of the chunk.
        typesize = self.typesize or max(spec.dtype.itemsize, 1)
        return _blosc.compress(
            memoryview(data).cast("B"),
            self.cname.encode(),
            self.clevel,
            SHUFFLES[self.shuffle],
            self.blocksize,
            typesize,
        )

    def decode(self, data: Any, spec: ChunkSpec) -> bytes | memoryview:
        return self.decode_sized(data, spec, UNSIZED_MAX_DECODED_BYTES, exact=False)

    def decode_sized(
        self, data: Any, spec: ChunkSpec, size: int, exact: bool = True
    ) -> bytes | memoryview:
        return decode_frame(check_frame(data, size, exact))

    decodes_into_buffer = True

    def decode_into_buffer(self, data: Any, out: Any) -> bytes | memoryview:
        """Decompress into `out` (a writable buffer of the decoded size) or a new buffer."""
        if out is None:
            return decode_frame(check_frame(data, UNSIZED_MAX_DECODED_BYTES, exact=False))
        return decode_frame(check_frame(data, memoryview(out).nbytes), out)


# Decoding needs no settings: everything is in the frame's header.
_DECODER = numcodecs.Blosc()
_ZSTD = 4  # the compressor code (flags >> 5) of zstd
_MEMCPYED = 0x2
# zstd frame magic numbers before zstd 1.0 (v0.1 ... v0.7), little-endian.
_LEGACY_ZSTD_MAGIC = range(0xFD2FB51E, 0xFD2FB528)


def decode_frame(frame: memoryview, out: Any = None) -> bytes | memoryview:
    """Decompress a frame that `check_frame` returned, into `out` or a new buffer.

    c-blosc before 1.11 (zarr 1.x, bcolz and PyTables of 2016) compressed with zstd
    0.7, whose frames today's zstd inside numcodecs no longer reads; imagecodecs' blosc
    does (its zstd keeps legacy support), so those frames go through it.
    """
    try:
        return _DECODER.decode(frame, out=out)
    except (RuntimeError, ValueError) as error:
        if not is_legacy_zstd(frame):
            raise CodecError(f"codec 'blosc': corrupt data: {error}") from error
    return _decode_legacy(frame, out)


def is_legacy_zstd(data: Any) -> bool:
    """Whether `data` is a blosc frame compressed with zstd 0.7 or older (c-blosc < 1.11)."""
    frame = memoryview(data).cast("B")
    if frame.nbytes < 24 or frame[2] >> 5 != _ZSTD or frame[2] & _MEMCPYED:
        return False
    start = int.from_bytes(frame[16:20], "little")  # the first block; its first stream
    magic = frame[start + 4 : start + 8]
    return len(magic) == 4 and int.from_bytes(magic, "little") in _LEGACY_ZSTD_MAGIC


def _decode_legacy(frame: memoryview, out: Any) -> bytes | memoryview:
    try:
        import imagecodecs
    except ImportError:
        raise CodecError(
            "codec 'blosc': the frame is compressed with zstd 0.7 or older (c-blosc before "
            "1.11, e.g. zarr 1.x), which numcodecs cannot decompress: install imagecodecs "
            "(pip install 'aiozarr[legacy]') to read it"
        ) from None
    try:
        decoded = imagecodecs.blosc_decode(bytes(frame))
    except Exception as error:  # imagecodecs' own error type: corrupt data
        raise CodecError(f"codec 'blosc': corrupt data: {error}") from error
    if len(decoded) != int.from_bytes(frame[4:8], "little"):
        raise CodecError("codec 'blosc': data does not decompress to the size its header says")
    if out is None:
        return decoded
    target = memoryview(out).cast("B")
    target[:] = decoded
    return target
