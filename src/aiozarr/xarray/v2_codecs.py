"""An encoding's codecs for an array of the other Zarr format written by `to_zarr`.

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
The other way (`v3_codecs`), a v2 string variable's object codec is left out of its
filters: a v3 array's data type and serializer say how its strings are stored.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aiozarr.metadata import conversions

__all__ = ["v2_codecs", "v3_codecs"]

# v2's object codecs: the filter that says how an object array's values are stored, which
# a v3 array says with its data type and serializer (`vlen-utf8` / `vlen-bytes`)
_OBJECT_CODECS = frozenset({"vlen-utf8", "vlen-bytes"})


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


def v3_codecs(options: Mapping[str, Any]) -> dict[str, Any]:
    """`create_array` options with the v2 object codec (`vlen-utf8`, `vlen-bytes`) left out
    of their `filters`: a string variable read from v2 carries it, and a v3 array stores
    its values with the serializer its data type takes (aiozarr refused the filter as a
    numcodecs codec with no v3 twin, naming no variable). Other filters are kept."""
    filters = options.get("filters")
    if filters is None or isinstance(filters, str):
        return dict(options)
    many = isinstance(filters, Sequence) and not isinstance(filters, Mapping)
    kept = [f for f in (filters if many else [filters]) if _v2_id(f) not in _OBJECT_CODECS]
    return {**options, "filters": tuple(kept)}


def _v2_id(codec: Any) -> Any:
    """The numcodecs `id` of `codec` (an object or its `{"id": ...}` configuration)."""
    if isinstance(codec, Mapping):
        return codec.get("id")
    get_config = getattr(codec, "get_config", None)
    return get_config().get("id") if callable(get_config) and not isinstance(codec, type) else None


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
