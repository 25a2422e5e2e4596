"""A zarr-python array's metadata as aiozarr reads it, for the codec pipeline.

The pipeline reads an array through aiozarr only when aiozarr reads its metadata document
(as zarr-python writes it) and every one of its codecs; `aiozarr_array` says so once per
pipeline, and why not where it does not. `default_pipeline` is the pipeline zarr-python
would have built, the one every batch aiozarr cannot run falls back to.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from zarr.codecs._v2 import V2Codec
from zarr.core.buffer import default_buffer_prototype
from zarr.core.codec_pipeline import BatchedCodecPipeline
from zarr.core.metadata import ArrayV3Metadata

from aiozarr.codecs import CodecChain, layout_of
from aiozarr.codecs.sharding import WRITE_ORDERS
from aiozarr.metadata import v2, v3
from aiozarr.metadata.dtypes import object_items
from aiozarr.metadata.model import ArrayMetadata

__all__ = [
    "AiozarrArray",
    "aiozarr_array",
    "default_pipeline",
    "holds",
    "same_fill",
    "subchunk_write_order",
]


@dataclass(frozen=True, slots=True)
class AiozarrArray:
    """aiozarr's metadata of a zarr-python array and its bound codec chain."""

    meta: ArrayMetadata
    chain: CodecChain


def default_pipeline(metadata: Any) -> BatchedCodecPipeline:
    """The pipeline zarr-python builds for an array of `metadata`."""
    if isinstance(metadata, ArrayV3Metadata):
        return BatchedCodecPipeline.from_codecs(metadata.codecs)
    return BatchedCodecPipeline.from_codecs(
        [V2Codec(filters=metadata.filters, compressor=metadata.compressor)]
    )


def aiozarr_array(metadata: Any, order: str = "morton") -> AiozarrArray | str:
    """The array of zarr-python `metadata` as aiozarr reads it, or why it cannot; a
    sharded one writes its shards' inner chunks in `order` (one of `WRITE_ORDERS`)."""
    try:
        documents = metadata.to_buffer_dict(default_buffer_prototype())
        if isinstance(metadata, ArrayV3Metadata):
            meta = v3.parse_array(documents["zarr.json"].to_bytes(), "zarr.json")
        else:
            meta = v2.parse_zarray(documents[".zarray"].to_bytes(), ".zarray")
        chain = CodecChain.from_metadata(meta)
        if hasattr(chain.array_to_bytes, "write_order"):  # it lays out inner chunks
            if order not in WRITE_ORDERS:
                return f"inner chunks written in {order!r} order"
            chain.array_to_bytes.write_order = order
        layout_of(chain)  # a sharding codec the engine cannot lay out fails here
    except Exception as error:  # anything aiozarr refuses stays with zarr-python
        return f"{type(error).__name__}: {error}"
    return AiozarrArray(meta, chain)


def holds(buffer: np.dtype[Any], meta: ArrayMetadata) -> bool:
    """Whether a zarr-python buffer of dtype `buffer` holds the array's values as
    aiozarr reads them: the same dtype, a number in another byte order (zarr-python
    keeps a big-endian array's order in its buffers; values are converted as they are
    placed, never copied as bytes into a buffer of another order), or numpy's
    `StringDType` (zarr-python's strings) for a v2 object array of `vlen-utf8` strings,
    which aiozarr reads as str objects. Records of another byte order stay with
    zarr-python: 3.1 stores big-endian fields of a v3 record as they lie in memory."""
    numbers = buffer.kind in "biufcmM" and meta.dtype.kind == buffer.kind
    if buffer == meta.dtype or (
        numbers and buffer.newbyteorder("=") == meta.dtype.newbyteorder("=")
    ):
        return True
    return buffer == np.dtypes.StringDType() and object_items(meta) is str


def same_fill(a: Any, b: Any, dtype: np.dtype[Any]) -> bool:
    """Whether fill values `a` and `b` are the same bits of `dtype` (None: zero, as
    both libraries read a v2 array without one); variable-length values (strings,
    bytes) compare by value."""
    if dtype.kind in "OT":  # str (or numpy's str) against str, bytes against bytes
        return isinstance(a, str) is isinstance(b, str) and bool(a == b)

    def bits(value: Any) -> bytes:
        if value is None:
            return np.zeros((), dtype).tobytes()
        return np.asarray(value, dtype=dtype).tobytes()

    try:
        return bits(a) == bits(b)
    except (TypeError, ValueError, OverflowError):
        return False


def subchunk_write_order(default: BatchedCodecPipeline) -> str:
    """The order zarr-python 3.4's sharding codec among `default`'s codecs was asked to
    write inner chunks in (`subchunk_write_order`, not stored in the metadata; "morton"
    where none was, as on zarr-python 3.1)."""
    for codec in default:
        order = getattr(codec, "subchunk_write_order", None)
        if isinstance(order, str):
            return order
    return "morton"
