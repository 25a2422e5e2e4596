"""An encoding's codecs for a Zarr v2 array written by `to_zarr`.

xarray's zarr engine reports a v3 array's codecs in its variables' encoding as
zarr-python codec objects (`serializer=VLenUTF8Codec()`, `compressors=(ZstdCodec(),)`),
and aiozarr's engine reports them the same way; a dataset read from v3 and written with
`zarr_format=2` carries them. They become their v2 twins, as `migrate` converts a v3
array to v2 (`metadata/conversions.py`): zstd and gzip their numcodecs twins, a
compressor without one the v2 default; the serializer and v3 filters (array-to-array
codecs: the layout of the values, never the values) are left out, a v2 array's dtype
(and an object dtype's `vlen-utf8` / `vlen-bytes` filter) saying how they are stored.
xarray's own engine refuses the write ("Zarr format 2 arrays do not support
`serializer`"). numcodecs codecs, v2 `{"id": ...}` configurations and None are kept.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aiozarr.metadata import conversions

__all__ = ["v2_codecs"]


def v2_codecs(options: Mapping[str, Any]) -> dict[str, Any]:
    """`create_array` options (`filters`, `serializer`, `compressors`, ...) with their v3
    codecs as a v2 array takes them."""
    out = dict(options)
    out.pop("serializer", None)  # v2 has none: the dtype says how values are stored
    if _v3_documents(out.get("filters")) is not None:
        del out["filters"]
    compressors = _v3_documents(out.get("compressors"))
    if compressors is not None:
        twins = conversions.v2_compressors(compressors)
        out["compressors"] = "auto" if twins is None else twins
    return out


def _v3_documents(codecs: Any) -> list[dict[str, Any]] | None:
    """`codecs` (one or a sequence) as v3 codec documents when each is a v3 codec (a
    zarr-python codec object, or a `{"name": ...}` document); else None."""
    if codecs is None or isinstance(codecs, str):
        return None
    many = isinstance(codecs, Sequence) and not isinstance(codecs, Mapping)
    docs = [_v3_document(codec) for codec in (codecs if many else [codecs])]
    if not docs or any(doc is None for doc in docs):
        return None
    return docs  # type: ignore[return-value]


def _v3_document(codec: Any) -> dict[str, Any] | None:
    if isinstance(codec, Mapping):
        return dict(codec) if "name" in codec and "id" not in codec else None
    to_dict = getattr(codec, "to_dict", None)
    if callable(to_dict) and not callable(getattr(codec, "get_config", None)):
        doc = to_dict()
        return dict(doc) if isinstance(doc, Mapping) and "name" in doc else None
    return None
