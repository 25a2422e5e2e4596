"""An array's codecs by role, as zarr-python reports them (`filters`, `serializer`,
`compressors`), from its metadata alone (pure).

v3 codecs are sorted by the role their class declares (array-to-array, array-to-bytes,
bytes-to-bytes); a sharded array reports its inner codecs. v2 filters and compressor
are numcodecs codecs."""

from __future__ import annotations

from typing import Any

import numcodecs

from aiozarr.codecs.base import CodecRole
from aiozarr.codecs.registry import get_codec_class
from aiozarr.metadata.model import ArrayMetadata, CodecMetadata


def filters(meta: ArrayMetadata) -> tuple[Any, ...]:
    """Array-to-array codecs (v3: `CodecMetadata`), or v2's filters (numcodecs codecs)."""
    if meta.zarr_format != 3:
        return tuple(numcodecs.get_codec(dict(f)) for f in meta.filters or ())
    return _of_role(meta, CodecRole.ARRAY_TO_ARRAY)


def serializer(meta: ArrayMetadata) -> CodecMetadata | None:
    """The array-to-bytes codec (v3), None for v2."""
    if meta.zarr_format != 3:
        return None
    found = _of_role(meta, CodecRole.ARRAY_TO_BYTES)
    return found[0] if found else None


def compressors(meta: ArrayMetadata) -> tuple[Any, ...]:
    """Bytes-to-bytes codecs (v3: `CodecMetadata`), or v2's compressor (a numcodecs
    codec) in a tuple."""
    if meta.zarr_format != 3:
        compressor = meta.compressor
        return () if compressor is None else (numcodecs.get_codec(dict(compressor)),)
    return _of_role(meta, CodecRole.BYTES_TO_BYTES)


def _of_role(meta: ArrayMetadata, role: CodecRole) -> tuple[CodecMetadata, ...]:
    return tuple(
        c for c in _chunk_codecs(meta) if getattr(get_codec_class(c.name), "role", None) is role
    )


def _chunk_codecs(meta: ArrayMetadata) -> list[CodecMetadata]:
    """The v3 codecs that encode one chunk: the inner codecs when sharded."""
    codecs = list(meta.codecs)
    if len(codecs) == 1 and codecs[0].name == "sharding_indexed":
        inner = codecs[0].configuration.get("codecs", [])
        return [CodecMetadata(c["name"], dict(c.get("configuration", {}))) for c in inner]
    return codecs
