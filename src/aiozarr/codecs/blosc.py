"""`blosc`: Blosc compression (v3 core spec), via numcodecs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numcodecs
from numcodecs import blosc as _blosc

from aiozarr.codecs.base import BytesToBytesCodec, ChunkSpec
from aiozarr.codecs.registry import register_codec
from aiozarr.errors import CodecError, MetadataError

SHUFFLES = {"noshuffle": 0, "shuffle": 1, "bitshuffle": 2}
_NAMES = {number: name for name, number in SHUFFLES.items()}
#: GDAL's spelling of the shuffle names (its BLOSC_SHUFFLE creation option's values).
GDAL_SHUFFLES = {"NONE": "noshuffle", "BYTE": "shuffle", "BIT": "bitshuffle"}
CNAMES = ("lz4", "lz4hc", "blosclz", "zstd", "snappy", "zlib")
_HEADER = 16


def check_frame(data: Any, size: int | None) -> memoryview:
    """The Blosc frame in `data`, its header checked against its length (and the
    expected decoded size).

    Blosc trusts its header: a truncated frame would be read past its end, and a
    forged one would make it allocate what the header claims. Both are refused here.
    Bytes after the frame's end are left out, as numcodecs ignores them (z5py up to
    2.0 stored 16 zero bytes after every frame).
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
    if size is not None and nbytes != size:
        raise CodecError(f"codec 'blosc': data decompresses to {nbytes} bytes, expected {size}")
    return view[:cbytes]


@register_codec
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
        return self.decode_sized(data, spec, None)

    def decode_sized(self, data: Any, spec: ChunkSpec, size: int | None) -> bytes | memoryview:
        return self.decode_into_buffer(check_frame(data, size), None)

    def decode_into_buffer(self, data: Any, out: Any) -> bytes | memoryview:
        """Decompress into `out` (a writable buffer of the decoded size) or a new buffer."""
        view = check_frame(data, None if out is None else memoryview(out).nbytes)
        try:
            return _DECODER.decode(view, out=out)
        except (RuntimeError, ValueError) as error:
            raise CodecError(f"codec 'blosc': corrupt data: {error}") from error


# Decoding needs no settings: everything is in the frame's header.
_DECODER = numcodecs.Blosc()
