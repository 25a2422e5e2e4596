"""The Zarr v2 (and v1) encoding as one array->bytes codec: order, filters, compressor.

Filters and the compressor are built by `numcodecs.get_codec`, so every codec
numcodecs knows works. A chunk is the array in `order` (C or F) memory layout,
passed through each filter, then compressed, as zarr-python v2 writes it.
"""

from __future__ import annotations

import bz2
import importlib.util
import inspect
import lzma
import math
import warnings
import zlib
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numcodecs
import numpy as np
from numcodecs.abc import Codec as Numcodec
from numcodecs.compat import ensure_bytes, ensure_contiguous_ndarray, ensure_ndarray_like
from numcodecs.registry import codec_registry

from aiozarr.codecs.base import (
    ENCODED_SLACK_BYTES,
    UNSIZED_MAX_DECODED_BYTES,
    ArrayToBytesCodec,
    ChunkSpec,
    check_decoded_size,
    expanded,
)
from aiozarr.codecs.blosc import GDAL_SHUFFLES, SHUFFLES, check_frame, decode_frame
from aiozarr.codecs.gzip import gunzip, inflate, warn_zlib_in_gzip
from aiozarr.codecs.vlen import check_item_count
from aiozarr.codecs.zstd import decompress_bounded
from aiozarr.errors import AiozarrWarning, CodecError, MetadataError, UnsupportedError

#: Object codecs whose header records the chunk's item count.
VLEN_CODECS = frozenset({"vlen-utf8", "vlen-bytes", "vlen-array"})
# Filters that turn an object array into something numcodecs can compress.
OBJECT_CODECS = frozenset(
    {"vlen-utf8", "vlen-bytes", "vlen-array", "json2", "msgpack2", "categorize"}
)


#: numcodecs codecs that numcodecs registers only when another package is installed:
#: id -> (module, what to pip install).
NEEDS_PACKAGE = {
    "zfpy": ("zfpy", "zfpy"),
    "pcodec": ("pcodec", "pcodec"),
    "crc32c": ("google_crc32c", "google-crc32c"),
    "msgpack2": ("msgpack", "msgpack"),
}


def check_new_filters(filters: Sequence[Mapping[str, Any]], dtype: np.dtype[Any]) -> None:
    """`MetadataError` for v2 filters a new array of `dtype` must not take: an object
    codec for a dtype that is not object (its chunks would decode to objects:
    unreadable), or `packbits` handed values that are not bool (it stores each value's
    truthiness: 7 reads back as 1). Checked when an array is created only: an array
    stored so reads as zarr-python reads it."""
    if vlen := [f["id"] for f in filters if f.get("id") in VLEN_CODECS and dtype.kind != "O"]:
        raise MetadataError(
            f"filters: {vlen[0]!r} encodes objects (dtype=object or str), not {dtype}"
        )
    handed = dtype  # what each filter is handed: an earlier one may have cast it
    for config in filters:
        if config.get("id") == "packbits" and handed != np.dtype(bool):
            raise MetadataError(
                f"filters: 'packbits' encodes bool values, not {handed}: it would store "
                "each value as 0 or 1 (its truthiness), losing the rest"
            )
        cast = config.get("encode_dtype") or config.get("astype")
        handed = np.dtype(cast) if cast else handed


def unavailable(codec_id: str) -> str:
    """Why numcodecs cannot build `codec_id`, and what to install or call to fix it: the
    one wording for v2 filters and compressors and v3's `numcodecs.*` codecs."""
    if codec_id in NEEDS_PACKAGE:
        module, package = NEEDS_PACKAGE[codec_id]
        if importlib.util.find_spec(module) is not None:
            return (
                f"codec {codec_id!r}: the {package} package is installed but numcodecs "
                f"cannot use this version of it (numcodecs.{codec_id} says why on import)"
            )
        return f"codec {codec_id!r} needs the {package} package: pip install {package}"
    if codec_id.startswith("imagecodecs_"):
        return (
            f"codec {codec_id!r} is one of imagecodecs' numcodecs codecs: pip install "
            "imagecodecs, then call imagecodecs.numcodecs.register_codecs() before opening"
        )
    return f"numcodecs has no codec {codec_id!r}"


def build_numcodec(config: Mapping[str, Any]) -> Numcodec:
    """`numcodecs.get_codec(config)` (`config` has a string "id"); `UnsupportedError` for
    pickle and for a codec numcodecs cannot build (`unavailable`), `MetadataError` for a
    bad configuration. Messages are bare: callers say where."""
    codec_id = config["id"]
    if codec_id == "pickle":
        raise UnsupportedError(
            "codec 'pickle' is refused for safety (unpickling stored data can run arbitrary code)"
        )
    scale = config.get("scale") if codec_id == "fixedscaleoffset" else 1
    if isinstance(scale, int | float) and not (math.isfinite(scale) and scale != 0):
        raise MetadataError(
            f"bad codec {dict(config)!r}: field 'scale' must be a finite number other than 0 "
            "(every value would be stored as 0 or NaN and read back as NaN)"
        )
    try:
        return numcodecs.get_codec(dict(config))
    except (KeyError, ValueError) as error:
        if "not available" in str(error) or isinstance(error, KeyError):
            raise UnsupportedError(unavailable(codec_id)) from error
        raise MetadataError(f"bad codec {dict(config)!r}: {error}") from error
    except TypeError as error:
        raise MetadataError(f"bad codec {dict(config)!r}: {error}") from error


def _numcodec(config: Mapping[str, Any], field: str, where: str) -> Numcodec:
    if not isinstance(config, Mapping) or not isinstance(config.get("id"), str):
        raise MetadataError(f"{where}: field {field!r}: a codec needs an 'id', got {config!r}")
    try:
        return build_numcodec(config)
    except (UnsupportedError, MetadataError) as error:
        raise type(error)(f"{where}: field {field!r}: {error}") from error


def _tolerate(config: Mapping[str, Any], where: str) -> dict[str, Any]:
    """`config` with the writer quirks numcodecs refuses undone, each with a warning.

    A compressor's output describes itself (its frame or stream header says how to
    decode it), so a field numcodecs does not know cannot change what is decoded.
    """
    if not isinstance(config, Mapping) or not isinstance(config.get("id"), str):
        return config  # type: ignore[return-value]  # _numcodec reports it
    config = dict(config)
    name = config["id"]
    cls = codec_registry.get(name)
    if cls is None:
        return config
    if name == "blosc" and isinstance(config.get("shuffle"), str):
        quirk = config["shuffle"]
        name = GDAL_SHUFFLES.get(quirk, quirk)
        if name not in SHUFFLES:
            raise MetadataError(
                f"{where}: field 'compressor': codec 'blosc': field 'shuffle' must be one of "
                f"-1, 0, 1, 2 (or {', '.join(SHUFFLES)}), got {quirk!r}"
            )
        config["shuffle"] = SHUFFLES[name]
        _warn(
            where,
            f"codec 'blosc': field 'shuffle' is the string {quirk!r}, read as {config['shuffle']}",
        )
    try:
        params = inspect.signature(cls.__init__).parameters
    except (TypeError, ValueError):
        return config
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return config
    unknown = sorted(set(config) - set(params) - {"id"})
    if unknown:
        for field in unknown:
            del config[field]
        _warn(where, f"codec {name!r}: unknown field(s) {', '.join(map(repr, unknown))} ignored")
    return config


def _warn(where: str, problem: str) -> None:
    warnings.warn(
        f"{where}: field 'compressor': {problem} (a writer quirk)", AiozarrWarning, stacklevel=4
    )


#: numcodecs codecs whose output is never larger than their input (plus a constant):
#: shuffles and checksums keep or shed bytes, base64 shrinks them. Decoding them, then
#: checking the size, is bounded.
NO_LARGER = frozenset(
    {"shuffle", "crc32", "crc32c", "adler32", "fletcher32", "jenkins_lookup3", "base64"}
)
#: What the highest lzma preset (9: a 64 MiB dictionary) needs to decode, with room:
#: a stream declaring a larger dictionary than this plus its decoded size is refused.
LZMA_WORKING_BYTES = 128 << 20


def decompress(
    compressor: Numcodec,
    data: memoryview,
    size: int,
    exact: bool = True,
    on_zlib: Any = None,
    key: str = "",
    dtype: np.dtype[Any] | None = None,
) -> Any:
    """Decode `data` to exactly (`exact`) or at most `size` bytes, allocating no more.

    numcodecs' zlib, bz2 and lzma inflate everything before they look at `out`, and its
    zstd does so for a frame that does not record its size: those run through bounded
    streams. blosc and lz4 record the decoded size in their header, checked first.
    Other codecs are decoded, then checked: bounded for those `NO_LARGER` lists; a
    codec from another package is trusted to bound itself. `on_zlib(key)` is called
    when a gzip chunk turns out to be a zlib stream; `dtype` is the data type pcodec
    data is expected to hold, where known.
    """
    codec_id = compressor.codec_id
    if codec_id == "blosc":
        # Blosc reads past the end of a truncated frame: check its header first.
        return decode_frame(check_frame(data, size, exact))
    if codec_id == "gzip":
        out, was_zlib = gunzip(data, size, exact)
        if was_zlib and on_zlib is not None:
            on_zlib(key)
        return out
    if codec_id == "zlib":
        return inflate(data, size, zlib.MAX_WBITS, codec_id, exact)
    if codec_id in ("bz2", "lzma"):
        return _bz2_or_lzma(compressor, data, size, exact)
    if codec_id == "zstd":
        return decompress_bounded(data, size, exact)
    if codec_id == "pcodec":
        return decode_pcodec(data, size, exact, dtype)
    if codec_id == "lz4" and data.nbytes >= 4:  # numcodecs' header: the decoded size
        check_decoded_size(codec_id, int.from_bytes(data[:4], "little"), size, exact)
    out = compressor.decode(data)
    decoded = ensure_ndarray_like(out)
    if not decoded.dtype.hasobject:
        check_decoded_size(codec_id, decoded.nbytes, size, exact)
    return out


#: The data types pcodec compresses; a stream records which one it holds.
PCODEC_DTYPES = tuple(
    np.dtype(t) for t in ("<u2", "<u4", "<u8", "<i2", "<i4", "<i8", "<f2", "<f4", "<f8")
)


def decode_pcodec(
    data: memoryview, size: int, exact: bool, dtype: np.dtype[Any] | None = None
) -> np.ndarray:
    """Decode pcodec `data` to exactly (`exact`) or at most `size` bytes, into an array
    allocated first: pcodec cannot write past it, and says whether values were left.

    The stream's data type is `dtype` where it is one pcodec writes, else each in turn
    (pcodec refuses the wrong one at the stream's header, before decoding).
    """
    src = bytes(data)
    tried = [dtype] if dtype in PCODEC_DTYPES else []
    first: Exception | None = None
    for candidate in (*tried, *PCODEC_DTYPES):
        out = np.empty(size // candidate.itemsize + (0 if exact else 1), dtype=candidate)
        try:
            progress = standalone_pcodec().simple_decompress_into(src, out)
        except (RuntimeError, TypeError, ValueError) as error:
            first = first or error
            continue
        produced = progress.n_processed * candidate.itemsize
        check_decoded_size("pcodec", produced if progress.finished else size + 1, size, exact)
        return out[: progress.n_processed]
    raise CodecError(f"codec 'pcodec': corrupt data: {first}")


def standalone_pcodec() -> Any:
    """pcodec's standalone module (an optional dependency, imported when first used)."""
    from pcodec import standalone

    return standalone


def _bz2_or_lzma(compressor: Numcodec, data: memoryview, size: int, exact: bool) -> bytes:
    """Decode every stream in `data`, one after another (pbzip2, `cat a.xz b.xz`), as
    `bz2.decompress` and `lzma.decompress` (numcodecs) do; data after the last that is
    no stream (or null bytes) is left out, as they leave it."""
    codec_id = compressor.codec_id
    parts: list[bytes] = []
    produced = 0
    rest: Any = data
    while True:
        streaming: Any = (
            bz2.BZ2Decompressor() if codec_id == "bz2" else _lzma_decompressor(compressor, size)
        )
        try:
            parts.append(streaming.decompress(rest, size + 1 - produced))
        except (OSError, EOFError, ValueError, lzma.LZMAError) as error:
            if parts:
                break  # not another stream
            raise CodecError(f"codec {codec_id!r}: corrupt data: {error}") from error
        produced += len(parts[-1])
        check_decoded_size(codec_id, produced, size, exact=False)
        if not streaming.eof:
            raise CodecError(f"codec {codec_id!r}: data is truncated")
        rest = streaming.unused_data
        if not rest.strip(b"\0"):  # the end, or xz's stream padding (null bytes)
            break
    check_decoded_size(codec_id, produced, size, exact)
    return b"".join(parts)


def _lzma_decompressor(compressor: Numcodec, size: int) -> lzma.LZMADecompressor:
    """A decompressor for `compressor`'s format whose memory (its dictionary, which a
    stream declares) stays under `size` + `LZMA_WORKING_BYTES`."""
    limit = size + LZMA_WORKING_BYTES
    if compressor.format != lzma.FORMAT_RAW:
        return lzma.LZMADecompressor(format=compressor.format, memlimit=limit)
    for spec in compressor.filters or ():  # raw streams take their dictionary from metadata
        if int(spec.get("dict_size", 0)) > limit:
            raise CodecError(f"codec 'lzma': dictionary of {spec['dict_size']} bytes is too large")
    return lzma.LZMADecompressor(format=lzma.FORMAT_RAW, filters=compressor.filters)


def _as_bytes(chunk: Any) -> memoryview:
    """What a stage decoded, as the bytes the next stage decodes."""
    if isinstance(chunk, memoryview):
        return chunk.cast("B") if chunk.format != "B" or chunk.ndim != 1 else chunk
    return memoryview(ensure_contiguous_ndarray(chunk).reshape(-1).view(np.uint8))


class NumcodecsV2Codec(ArrayToBytesCodec):
    """v2 `order` + `filters` + `compressor`, run through numcodecs."""

    name = "numcodecs_v2"

    def __init__(
        self,
        order: Literal["C", "F"] = "C",
        filters: Sequence[Mapping[str, Any]] | None = None,
        compressor: Mapping[str, Any] | None = None,
        key: str = "",
    ) -> None:
        where = key or "metadata"
        if order not in ("C", "F"):
            raise MetadataError(f"{where}: field 'order' must be 'C' or 'F', got {order!r}")
        self.order: Literal["C", "F"] = order
        self.filter_configs = tuple(dict(f) for f in filters or ())
        self.compressor_config = None if compressor is None else _tolerate(compressor, where)
        self.filters = tuple(_numcodec(f, "filters", where) for f in self.filter_configs)
        self.compressor = (
            None if compressor is None else _numcodec(self.compressor_config, "compressor", where)
        )
        self._warned = False

    def _zlib_in_gzip(self, key: str) -> None:
        if not self._warned:
            self._warned = True  # once per array: every chunk of it was likely written alike
            warn_zlib_in_gzip(key)

    @classmethod
    def from_v2(
        cls,
        order: Literal["C", "F"],
        filters: Sequence[Mapping[str, Any]] | None,
        compressor: Mapping[str, Any] | None,
        key: str = "",
    ) -> NumcodecsV2Codec:
        """Build from the fields of v2 metadata; errors name `key`."""
        return cls(order, filters, compressor, key)

    def configuration(self) -> dict[str, Any]:
        return {
            "order": self.order,
            "filters": list(self.filter_configs) or None,
            "compressor": self.compressor_config,
        }

    def validate(self, spec: ChunkSpec) -> None:
        if spec.dtype.hasobject and not any(f["id"] in OBJECT_CODECS for f in self.filter_configs):
            raise MetadataError(
                f"an array of data type {spec.dtype} needs an object codec filter "
                f"(one of {', '.join(sorted(OBJECT_CODECS))}), "
                f"got filters {list(self.filter_configs)}"
            )

    def encoded_size(self, spec: ChunkSpec) -> int | None:
        if self.filters or self.compressor is not None or spec.dtype.hasobject:
            return None
        return spec.nbytes

    def memory_dtype(self, dtype: np.dtype[Any]) -> np.dtype[Any] | None:
        """`dtype` itself for a C-order chunk with no filter and no compressor."""
        plain = self.order == "C" and not self.filters and self.compressor is None
        return dtype if plain and not dtype.hasobject and dtype.kind != "T" else None

    def max_encoded_size(self, spec: ChunkSpec) -> int | None:
        if spec.dtype.hasobject:
            return None  # strings and objects: the data decides
        most = self._decoded_sizes(spec)[-1][0]
        return most if self.compressor is None else expanded(most)

    def _stages(self) -> tuple[Numcodec, ...]:
        """The filters, then the compressor: the codecs a chunk is encoded by, in order."""
        return self.filters if self.compressor is None else (*self.filters, self.compressor)

    def _decoded_sizes(self, spec: ChunkSpec) -> list[tuple[int, bool]]:
        """What each stage decodes to: exactly the chunk's bytes for the first, at most
        what the filters before it can make of them for the others (a filter may widen
        the data type: bool -> complex128 is 16x); for objects, the first stage's output
        is counted in items and the others are at most `UNSIZED_MAX_DECODED_BYTES`."""
        first = math.prod(spec.shape) if spec.dtype.hasobject else spec.nbytes
        sizes = [(first, True)]
        for _ in self.filters:
            most = sizes[-1][0]
            most = UNSIZED_MAX_DECODED_BYTES if spec.dtype.hasobject else 16 * most
            sizes.append((most + ENCODED_SLACK_BYTES, False))
        return sizes

    def encode(self, array: np.ndarray, spec: ChunkSpec) -> bytes:
        chunk: Any = np.asarray(array).astype(spec.dtype, order=self.order, copy=False)
        if chunk.dtype.hasobject and not chunk.flags.writeable:
            chunk = chunk.copy()  # numcodecs' object codecs (VLenBytes) need a writable buffer
        for f in self.filters:
            chunk = f.encode(chunk)
        if ensure_ndarray_like(chunk).dtype.hasobject:
            raise CodecError("cannot encode an object array without an object codec filter")
        if self.compressor is not None:
            chunk = self.compressor.encode(_exported(chunk))
        return ensure_bytes(chunk)

    def decode(self, data: Any, spec: ChunkSpec) -> np.ndarray:
        chunk: Any = memoryview(data).cast("B")
        stages, sizes = self._stages(), self._decoded_sizes(spec)
        for stage in reversed(range(len(stages))):
            codec, (size, exact) = stages[stage], sizes[stage]
            if stage == 0 and spec.dtype.hasobject:
                if codec.codec_id in VLEN_CODECS:
                    check_item_count(codec.codec_id, _as_bytes(chunk), size)
                chunk = codec.decode(chunk)  # numbered in items: checked below
            else:
                dtype = spec.dtype if stage == 0 else None  # what the filters made: unknown
                chunk = decompress(
                    codec, _as_bytes(chunk), size, exact, self._zlib_in_gzip, spec.key, dtype
                )
        chunk = ensure_ndarray_like(chunk)
        # json2 and msgpack2 record the chunk's shape and decode to it, items in their
        # logical places whatever `order` was: not a memory layout to lay out again.
        shaped = chunk.ndim > 1 and chunk.shape == tuple(spec.shape)
        order = "C" if shaped else self.order
        chunk = chunk.reshape(-1, order="C" if shaped else "A")
        if spec.dtype.hasobject:
            if not chunk.dtype.hasobject:
                raise CodecError(f"decoded {chunk.dtype} data, expected objects")
        elif chunk.dtype != spec.dtype:
            if chunk.nbytes != spec.nbytes:
                raise CodecError(
                    f"chunk decodes to {chunk.nbytes} bytes, expected {spec.nbytes} "
                    f"for shape {spec.shape} of {spec.dtype}"
                )
            chunk = chunk.view(np.uint8).view(spec.dtype)
        count = math.prod(spec.shape)
        if chunk.size != count:
            raise CodecError(f"chunk decodes to {chunk.size} items, expected {count}")
        return chunk.reshape(spec.shape, order=order)


def _exported(chunk: Any) -> Any:
    """`chunk` as a buffer a compressor takes: records holding dates or times (which
    Python's buffer protocol cannot describe) as their bytes, in their memory order."""
    if isinstance(chunk, np.ndarray) and chunk.dtype.names is not None:
        try:
            memoryview(chunk)
        except ValueError:
            return chunk.reshape(-1, order="A").view(np.uint8)
    return chunk
