"""Metadata documents as JSON: loading, dumping, and naming what is wrong in them.

Reading accepts the `NaN` / `Infinity` tokens Python's json module writes into
attributes, and a leading byte order mark, as zarr-python and TensorStore do;
writing is byte-for-byte what zarr-python writes (indent 2, ASCII).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, NoReturn

import numpy as np

from aiozarr.errors import MetadataError, UnfinishedNodeError
from aiozarr.sizes import MAX_EXTENT

#: zarr-python's `json_indent` default: documents written by both libraries are identical.
JSON_INDENT = 2


def show(value: Any) -> str:
    """A value as it would appear in the document (JSON where possible)."""
    try:
        text = json.dumps(value, allow_nan=True)
    except (TypeError, ValueError, RecursionError):
        text = f"<{type(value).__name__}>"  # repr of a deeply nested value recurses too
    return text if len(text) <= 200 else text[:197] + "..."


def fail(key: str, field: str, expected: str, got: Any) -> NoReturn:
    """Raise the `MetadataError` every reader uses: key, field, expectation, value."""
    raise MetadataError(f'{key}: field "{field}": expected {expected}, got {show(got)}')


#: The field of the placeholder a copy claims an array's path with before writing its
#: chunks (`placeholder`). Every reader refuses the placeholder (no `shape`; in v3 the
#: field `must_understand`), so a copy stopped part way never reads as fill values.
UNFINISHED = "aiozarr.unfinished_copy"


def placeholder(doc: bytes, key: str) -> bytes:
    """A document that stands for the node document `doc` (at `key`) until its writer
    finishes."""
    stands_for = load(doc, key)
    head = {name: stands_for[name] for name in ("zarr_format", "node_type") if name in stands_for}
    return dump(head | {UNFINISHED: {"must_understand": True, "metadata": stands_for}})


def load(doc: bytes | bytearray | memoryview | str | Mapping[str, Any], key: str) -> dict[str, Any]:
    """The JSON object in `doc` (bytes, text or an already decoded mapping);
    `UnfinishedNodeError` for a `placeholder`."""
    if isinstance(doc, Mapping):
        return _finished(dict(doc), key)
    try:
        # bytes as json.loads reads them (zarr-python's reading): a UTF-8 byte order
        # mark, which editors on Windows write and RFC 8259 lets a parser ignore, is skipped
        value = json.loads(doc if isinstance(doc, str) else bytes(doc))
    except (UnicodeDecodeError, ValueError, TypeError) as error:
        raise MetadataError(f"{key}: not valid JSON ({error})") from None
    except RecursionError:  # json's C scanner recurses once per level of nesting
        raise MetadataError(f"{key}: JSON nested too deeply to read") from None
    if not isinstance(value, dict):
        raise MetadataError(f"{key}: expected a JSON object, got {type(value).__name__}")
    return _finished(value, key)


def _finished(doc: dict[str, Any], key: str) -> dict[str, Any]:
    if UNFINISHED not in doc:
        return doc
    field = doc[UNFINISHED]
    stands_for = field.get("metadata") if isinstance(field, dict) else None
    raise UnfinishedNodeError(
        f"{key}: the placeholder of an array whose copy stopped before all its chunks "
        "were written (what is missing would read as fill values); finish the copy "
        "with `aiozarr cp --resume` (`copy(..., resume=True)`), or replace it with "
        "--overwrite",
        stands_for if isinstance(stands_for, dict) else None,
    )


def _plain(value: Any) -> Any:
    # numpy values users put into attributes: write them as the JSON they stand for
    if isinstance(value, np.generic | np.ndarray):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} {value!r} is not JSON serializable")


def dump(obj: Mapping[str, Any], key: str = "metadata") -> bytes:
    """`obj` as the UTF-8 bytes of an indented JSON document."""
    try:
        text = json.dumps(obj, indent=JSON_INDENT, allow_nan=True, default=_plain)
    except (TypeError, ValueError, RecursionError) as error:
        raise MetadataError(f"{key}: cannot write as JSON: {error}") from None
    return text.encode()


def is_int(value: Any) -> bool:
    """A JSON integer (Python's bool is an int, JSON's true is not)."""
    return isinstance(value, int) and not isinstance(value, bool)


def require(doc: Mapping[str, Any], name: str, key: str) -> Any:
    """The value of a required field."""
    if name not in doc:
        raise MetadataError(f'{key}: missing required field "{name}"')
    return doc[name]


def int_list(value: Any, key: str, field: str, minimum: int) -> tuple[int, ...]:
    """A list of integers >= `minimum` (a shape or chunk shape) as a tuple."""
    what = "non-negative" if minimum == 0 else "positive"
    if not isinstance(value, list) or not all(is_int(v) and v >= minimum for v in value):
        fail(key, field, f"a list of {what} integers", value)
    if any(v > MAX_EXTENT for v in value):  # numpy indexes with int64
        fail(key, field, "extents below 2**63", value)
    return tuple(value)
