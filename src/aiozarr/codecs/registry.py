"""Codec names -> codec classes.

Importing `aiozarr.codecs` registers the built-in codecs (the table in `builtin.py`;
codec modules do not import this one). Third parties call `register_codec(MyCodec)`,
or expose the class under the entry-point group `aiozarr.codecs` (entry-point name =
codec name): it is looked up the first time an unknown name is asked for, so
installing a package is enough. Names starting "numcodecs." that nothing registered
go to numcodecs' own registry.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Mapping
from importlib.metadata import entry_points
from typing import Any, TypeVar

from aiozarr.codecs.base import Codec, CodecRole
from aiozarr.codecs.numcodecs_v3 import numcodecs_class
from aiozarr.errors import AiozarrError, AiozarrWarning, MetadataError, UnsupportedError
from aiozarr.metadata.model import CodecMetadata

ENTRY_POINT_GROUP = "aiozarr.codecs"

#: Names under this prefix are numcodecs' codecs, as zarr-python 3 writes them
#: ("numcodecs.zlib"): one adapter over numcodecs' registry (`numcodecs_v3`).
NUMCODECS_PREFIX = "numcodecs."

_codecs: dict[str, type[Codec]] = {}

#: Names from drafts of the v3 spec, read under their final name (with a warning):
#: zarrita up to 0.1.0a18 wrote `endian` for what v3.0 calls `bytes`.
RENAMED = {"endian": "bytes"}

C = TypeVar("C", bound=type[Codec])


def register_codec(cls: C) -> C:
    """Register `cls` under `cls.name` (replacing any codec of that name); usable as decorator."""
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name:
        raise TypeError(f"codec class {cls.__qualname__} needs a non-empty `name` class attribute")
    _codecs[name] = cls
    return cls


def registered_codecs() -> dict[str, type[Codec]]:
    """A copy of the name -> class table (entry points not yet loaded are not in it)."""
    return dict(_codecs)


def _at(key: str) -> str:
    return f"{key}: " if key else ""


def _from_entry_point(name: str) -> type[Codec] | None:
    for ep in entry_points(group=ENTRY_POINT_GROUP, name=name):
        cls = ep.load()
        if isinstance(cls, type) and issubclass(cls, Codec):
            _codecs[name] = cls
            return cls
    return None


def get_codec_class(name: str, key: str = "") -> type[Codec]:
    """The class registered for `name`; `UnsupportedError` naming `key` when there is none."""
    cls = _codecs.get(name) or _from_entry_point(name)
    if cls is None and name.startswith(NUMCODECS_PREFIX) and len(name) > len(NUMCODECS_PREFIX):
        cls = numcodecs_class(name)
    if cls is None:
        known = ", ".join(sorted(_codecs))
        raise UnsupportedError(
            f"{_at(key)}unknown codec {name!r} (known codecs: {known}, and "
            f"{NUMCODECS_PREFIX}<id> for numcodecs' codecs; others can be added with "
            "aiozarr.codecs.register_codec)"
        )
    return cls


def get_codec(
    meta: CodecMetadata | Mapping[str, Any], key: str = "", *, strict: bool = False
) -> Codec:
    """Build the codec `meta` names.

    Raises `UnsupportedError` for an unknown name and `MetadataError` (naming `key`,
    the codec and the problem) for a bad configuration. `strict` is for a codec the
    caller wrote for a new array: no writer quirk is undone and a configuration member
    the codec does not take is a `MetadataError` naming it, since storing it would make
    other readers refuse the array (reading what other writers stored stays lenient).
    """
    if isinstance(meta, Mapping):
        meta = _codec_metadata(meta, key)
    if meta.name in RENAMED and meta.name not in _codecs:
        new = RENAMED[meta.name]
        warnings.warn(
            f"{_at(key)}codec {meta.name!r} is the pre-1.0 name of {new!r}, read as {new!r} "
            "(a writer quirk)",
            AiozarrWarning,
            stacklevel=2,
        )
        meta = CodecMetadata(new, meta.configuration)
    cls = get_codec_class(meta.name, key)
    configuration = meta.configuration or {}
    if not isinstance(configuration, Mapping):
        raise MetadataError(
            f"{_at(key)}codec {meta.name!r}: configuration must be an object, got {configuration!r}"
        )
    if strict:
        _refuse_unknown(cls, meta.name, configuration, key)
    else:
        configuration = _tolerate(cls, meta.name, configuration, key)
    try:
        return cls.from_config(configuration)
    except AiozarrError as error:
        if key and key in str(error):
            raise
        raise type(error)(f"{_at(key)}codec {meta.name!r}: {error}") from error
    except (TypeError, ValueError, KeyError) as error:
        # A missing or unexpected field reaches us as a TypeError from __init__.
        raise MetadataError(
            f"{_at(key)}codec {meta.name!r}: invalid configuration {dict(configuration)!r}: {error}"
        ) from error


def new_codec(doc: Mapping[str, Any], key: str, dtype: Any) -> Codec:
    """The codec a caller wrote as `doc` for a new array of `dtype`: completed
    (`completed`) and built `strict`, so that what is stored is the whole codec, as it
    writes itself: zarr-python and TensorStore refuse a partial one."""
    return get_codec(completed(doc, dtype), key, strict=True)


def completed(doc: Mapping[str, Any], dtype: Any) -> Mapping[str, Any]:
    """`doc` with the members its codec fills from the array's dtype when left out: the
    codec's `completed_config(configuration, dtype)`, where it offers one (zarr-python's
    `evolve_from_array_spec`: blosc's `typesize`, ...)."""
    name, config = doc.get("name"), doc.get("configuration") or {}
    cls = _codecs.get(name) if isinstance(name, str) else None
    complete = getattr(cls, "completed_config", None)
    if complete is None or dtype is None or not isinstance(config, Mapping):
        return doc  # a bad name or configuration is for `get_codec` to refuse
    return {"name": name, "configuration": complete(config, dtype)}


def _codec_metadata(doc: Mapping[str, Any], key: str) -> CodecMetadata:
    name = doc.get("name")
    if not isinstance(name, str):
        raise MetadataError(f"{_at(key)}a codec needs a string 'name', got {dict(doc)!r}")
    return CodecMetadata(name, doc.get("configuration") or {})


def _tolerate(
    cls: type[Codec], name: str, configuration: Mapping[str, Any], key: str
) -> Mapping[str, Any]:
    """`configuration` with known writer quirks undone, each with an `AiozarrWarning`.

    A codec may offer `lenient_config(configuration) -> (configuration, [problem, ...])`.
    Unknown fields are dropped only for bytes->bytes codecs built the default way: their
    encoded data describes itself, so a field they do not know cannot change what is
    decoded. For other codecs an unknown field could change the layout: it stays an error.
    """
    lenient = getattr(cls, "lenient_config", None)
    problems: list[str] = []
    if lenient is not None:
        configuration, problems = lenient(configuration)
    unknown = _unknown_fields(cls, configuration)
    if unknown:
        configuration = {k: v for k, v in configuration.items() if k not in unknown}
        problems.append(f"unknown field(s) {', '.join(map(repr, unknown))} ignored")
    for problem in problems:
        warnings.warn(
            f"{_at(key)}codec {name!r}: {problem} (a writer quirk)", AiozarrWarning, stacklevel=4
        )
    return configuration


def _refuse_unknown(
    cls: type[Codec], name: str, configuration: Mapping[str, Any], key: str
) -> None:
    """`MetadataError` naming the members of `configuration` that `cls` does not take
    (a codec with its own `from_config` reads its configuration itself, and judges it)."""
    default_built = cls.from_config.__func__ is _FROM_CONFIG  # type: ignore[attr-defined]
    params = _init_fields(cls) if default_built else None
    unknown = [] if params is None else sorted(set(configuration) - params)
    if unknown:
        raise MetadataError(
            f"{_at(key)}codec {name!r}: unknown configuration member(s) "
            f"{', '.join(map(repr, unknown))} (it takes {', '.join(sorted(params or ()))})"
        )


def _unknown_fields(cls: type[Codec], configuration: Mapping[str, Any]) -> list[str]:
    """The fields a bytes->bytes codec built by `cls(**configuration)` cannot take."""
    if not configuration:
        return []
    params = _accepted_fields(cls)
    return [] if params is None else sorted(set(configuration) - params)


@functools.cache
def _accepted_fields(cls: type[Codec]) -> frozenset[str] | None:
    """The keyword arguments a default-built bytes->bytes codec takes; None: any (or not
    such a codec). Cached: `inspect.signature` costs ~80 us, paid per array opened."""
    role = getattr(cls, "role", None)
    if role is not CodecRole.BYTES_TO_BYTES or cls.from_config.__func__ is not _FROM_CONFIG:  # type: ignore[attr-defined]
        return None
    return _init_fields(cls)


@functools.cache
def _init_fields(cls: type[Codec]) -> frozenset[str] | None:
    """The keyword arguments `cls(...)` takes; None: any (or its signature is unknown)."""
    try:
        params = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        return None
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return None
    return frozenset(params)


_FROM_CONFIG = Codec.from_config.__func__  # type: ignore[attr-defined]
