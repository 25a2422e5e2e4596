"""`ArrayDescription`: what an array is, as one value that every view of it renders.

`AsyncArray.info` (text), the notebook's HTML table (`display.py`) and `aiozarr info`
(its table and `--json`) show the facts built here by `describe_array`, in the words
and spellings of `ArrayDescription.rows` (shapes as tuples, fill values as Zarr spells
them, sizes in KiB / MiB), so they cannot drift apart. Codecs are kept in their JSON
form (v3 codec documents; v2 filters, then the compressor) and rendered for people by
`codecs_text` alone. `describe_metadata` describes an array from its metadata alone,
for one whose codecs cannot be built here (a codec package missing); `array_info`
renders a description as `AsyncArray.info` (`ArrayInfo`). No I/O: stored sizes, which
need a listing, are given by the caller.

A description is built from values (metadata, names, shapes), never from an array
object: the array describes itself through `describe_array`, and this module imports
no node.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Self

import numpy as np

from aiozarr.metadata import formats
from aiozarr.selection.chunk_grid import RectilinearGrid
from aiozarr.sizes import ceil_div, human_bytes

if TYPE_CHECKING:
    from aiozarr.metadata.model import ArrayMetadata

__all__ = [
    "LABEL_WIDTH",
    "ArrayDescription",
    "ArrayInfo",
    "array_info",
    "codecs_text",
    "describe_array",
    "describe_metadata",
    "fill_value_text",
    "render_rows",
]

#: The width of the labels of every text rendering ("Chunks initialized" fits).
LABEL_WIDTH = 19


@dataclass(frozen=True)
class ArrayDescription:
    """The facts shown about an array.

    `chunks` is the chunk shape (inner chunks when sharded) and `shards` the shard shape
    (None when unsharded); on a rectilinear grid whose objects differ in shape, the
    irregular one of the two is, per axis, the lengths of its objects inside the array
    (dask's `chunks`), and `rectilinear_grid` holds the grid's edges.
    """

    name: str
    store: str  # the store's repr
    zarr_format: int
    format_name: str  # "Zarr v3", ... (the 2020 draft's `zarr_format` says 2)
    shape: tuple[int, ...]
    dtype: str
    chunks: tuple[Any, ...]
    shards: tuple[Any, ...] | None
    chunk_grid: Literal["regular", "rectilinear"]  # what the metadata says
    rectilinear_grid: RectilinearGrid | None
    grid: tuple[int, ...]  # stored objects (shards, else chunks) per axis
    codecs: tuple[dict[str, Any], ...]
    fill_value: Any
    dimension_names: tuple[str | None, ...] | None
    attributes: Mapping[str, Any]
    decoded_bytes: int
    #: Why the array cannot be read here (a codec whose package is missing), with the
    #: fix; None for an array that reads.
    problem: str | None = None
    #: The memory order of a v2 / v1 chunk ("C" or "F"); None where codecs say it (v3:
    #: a `transpose` codec).
    order: str | None = None

    def grid_text(self) -> tuple[str, str]:
        """The chunk shape and the shard shape for people ("None": not sharded); on a
        rectilinear grid, its edges (`rectilinear ((4, 4), (1, 2, 3))`, shortened)."""
        grid = self.rectilinear_grid
        if grid is None:
            return str(self.chunks), str(self.shards)
        if self.shards is None:
            return grid.describe(), "None"
        return str(self.chunks), grid.describe()

    def rows(self) -> list[tuple[str, str]]:
        """The facts as `(label, value)` pairs for people, in the one spelling every view
        uses: `arr.info`, the notebook's table and `aiozarr info`."""
        chunks, shards = self.grid_text()
        unit = "shards" if self.shards is not None else "chunks"
        names = self.dimension_names
        rows = [
            ("Type", f"Array ({self.format_name})"),
            ("Name", self.name),
            ("Store", self.store),
            ("Shape", str(self.shape)),
            ("Data type", self.dtype),
            ("Chunk shape", chunks),
            ("Shard shape", shards),
            ("Grid", f"{self.grid} = {math.prod(self.grid)} {unit}"),
            ("Codecs", codecs_text(self.codecs)),
            *([] if self.order is None else [("Order", self.order)]),
            ("Fill value", fill_value_text(self.fill_value)),
            ("Dimension names", "None" if names is None else ", ".join(map(str, names))),
            ("Decoded size", human_bytes(self.decoded_bytes)),
        ]
        if self.problem is not None:
            rows.append(("Cannot read", self.problem))
        return rows

    def text(self) -> str:
        """The description as aligned `label : value` lines (`AsyncArray.info`)."""
        return render_rows(self.rows())

    def __str__(self) -> str:
        return self.text()

    def to_json(self) -> dict[str, Any]:
        """The description as JSON-ready values (what `aiozarr info --json` prints)."""
        return {
            "name": self.name,
            "store": self.store,
            "zarr_format": self.zarr_format,
            "attributes": dict(self.attributes),
            "shape": list(self.shape),
            "dtype": self.dtype,
            "chunks": _lists(self.chunks),
            "shards": None if self.shards is None else _lists(self.shards),
            "chunk_grid": self.chunk_grid,
            "grid": list(self.grid),
            "codecs": [dict(codec) for codec in self.codecs],
            **({} if self.order is None else {"order": self.order}),
            "fill_value": _json_value(self.fill_value),
            "dimension_names": None if self.dimension_names is None else list(self.dimension_names),
            "decoded_bytes": self.decoded_bytes,
            **({} if self.problem is None else {"problem": self.problem}),
        }


def describe_opened(array: Any) -> ArrayDescription:
    """The description of an opened `AsyncArray`: on a rectilinear grid the irregular
    shapes (chunks, or shards when sharded) are per axis the lengths of its objects
    inside the array."""
    if array.rectilinear_grid is None:
        chunks, shards = array.chunks, array.shards
    elif array.is_sharded:
        chunks, shards = array.chunks, array.write_chunk_sizes
    else:
        chunks, shards = array.write_chunk_sizes, None
    return describe_array(
        array.metadata,
        name=array.name,
        store=repr(array.store),
        chunks=chunks,
        shards=shards,
        rectilinear_grid=array.rectilinear_grid,
    )


def describe_array(
    meta: ArrayMetadata,
    *,
    name: str,
    store: str,
    chunks: tuple[Any, ...],
    shards: tuple[Any, ...] | None,
    rectilinear_grid: RectilinearGrid | None,
    problem: str | None = None,
) -> ArrayDescription:
    """The description of an array: its metadata, and the chunk and shard shapes its
    codecs give it, as `ArrayDescription` holds them (`shards` None when unsharded);
    `store` is the store's repr, `problem` why it cannot be opened here (None: it can)."""
    if meta.chunk_grid is None:
        grid = tuple(ceil_div(s, c) for s, c in zip(meta.shape, meta.chunk_shape, strict=True))
    else:
        grid = tuple(meta.chunk_grid.counts_within(meta.shape))
    return ArrayDescription(
        name=name,
        store=store,
        zarr_format=meta.zarr_format,
        format_name=formats.label(meta),
        shape=meta.shape,
        dtype=str(meta.dtype),
        chunks=chunks,
        shards=shards,
        chunk_grid="regular" if meta.chunk_grid is None else "rectilinear",
        rectilinear_grid=rectilinear_grid,
        grid=grid,
        codecs=_codecs(meta),
        fill_value=meta.fill_value,
        dimension_names=meta.dimension_names,
        attributes=dict(meta.attributes),
        decoded_bytes=math.prod(meta.shape) * meta.dtype.itemsize,
        problem=problem,
        order=None if meta.codecs else meta.order,
    )


def describe_metadata(
    meta: ArrayMetadata, *, name: str, store: str, problem: str | None = None
) -> ArrayDescription:
    """The description of an array from its metadata, without building its codecs: for
    an array that cannot be opened here (`problem` says why). Sharded when its codecs
    hold `sharding_indexed`: the shard is then the grid's chunk and the chunk is the
    sharding codec's `chunk_shape`, as the metadata writes them."""
    sharding = next((c for c in meta.codecs if c.name == "sharding_indexed"), None)
    inner = (sharding.configuration or {}).get("chunk_shape") if sharding else None
    if inner is None:
        chunks, shards = meta.chunk_shape, None
    else:
        chunks, shards = tuple(inner), meta.chunk_shape
    return describe_array(
        meta,
        name=name,
        store=store,
        chunks=chunks,
        shards=shards,
        rectilinear_grid=meta.chunk_grid,
        problem=problem,
    )


class NodeInfo(str):
    """A node's description: its text (a `str`), with each field as an attribute."""

    fields: dict[str, Any]

    def __new__(cls, text: str, fields: Mapping[str, Any]) -> Self:
        info = super().__new__(cls, text)
        info.fields = dict(fields)
        return info

    def __getattr__(self, name: str) -> Any:
        try:
            return self.__dict__["fields"][name]
        except KeyError:
            raise AttributeError(name) from None

    def __repr__(self) -> str:
        return str(self)


class ArrayInfo(NodeInfo):
    """`Array.info`: the description text (a `str`, as before), with each field as an
    attribute (`info.shape`, `info.nbytes_stored`, ...), as zarr-python's `ArrayInfo`."""


class GroupInfo(NodeInfo):
    """`Group.info`: the group's name, format, store and whether it is read-only, and from
    `info_complete()` its members counted (`info.count_arrays`, ...), as zarr-python's
    `GroupInfo`."""


def group_info(
    *,
    name: str,
    zarr_format: int,
    format_name: str,
    store: Any,
    read_only: bool,
    members: tuple[int, int] | None = None,
) -> GroupInfo:
    """A group as `Group.info` shows it; `members`: its (arrays, groups), when counted;
    `format_name` as `formats.label` gives it."""
    rows = [("Type", f"Group ({format_name})"), ("Name", name), ("Store", repr(store))]
    fields: dict[str, Any] = {
        "type": "Group",
        "zarr_format": zarr_format,
        "name": name,
        "store": store,
        "read_only": read_only,
        "count_members": None,
        "count_arrays": None,
        "count_groups": None,
    }
    rows.append(("Read-only", str(read_only)))
    if members is not None:
        arrays, groups = members
        fields.update(count_members=arrays + groups, count_arrays=arrays, count_groups=groups)
        counted = f"{arrays} array{'s' * (arrays != 1)}, {groups} group{'s' * (groups != 1)}"
        rows.append(("Members", f"{arrays + groups} ({counted})"))
    return GroupInfo(render_rows(rows), fields)


def array_info(
    described: ArrayDescription,
    *,
    dtype: np.dtype[Any],
    store: Any,
    read_only: bool,
    nchunks: int,
    nbytes_stored: int | None = None,
    nchunks_initialized: int | None = None,
) -> ArrayInfo:
    """`described` as `AsyncArray.info` shows it: its rows as text, then the stored size
    and the chunks initialized where given (as `aiozarr info` words them), with the
    fields of zarr-python's `ArrayInfo` as attributes (`dtype` and `store` the objects,
    `nchunks` the chunks of the grid)."""
    chunks, shards = described.grid_text()
    fields = {
        "type": "Array",
        "zarr_format": described.zarr_format,
        "name": described.name,
        "shape": described.shape,
        "dtype": dtype,
        "chunk_shape": chunks,
        "shard_shape": shards,
        "fill_value": described.fill_value,
        "codecs": codecs_text(described.codecs),
        "dimension_names": described.dimension_names,
        "store": store,
        "read_only": read_only,
        "nbytes": described.decoded_bytes,
        "nbytes_stored": nbytes_stored,
        "nchunks_initialized": nchunks_initialized,
    }
    rows = described.rows()
    if nbytes_stored is not None:
        rows.append(("Stored size", f"{human_bytes(nbytes_stored)} ({nbytes_stored} bytes)"))
    if nchunks_initialized is not None:
        rows.append(("Chunks initialized", f"{nchunks_initialized} of {nchunks}"))
    return ArrayInfo(render_rows(rows), fields)


def render_rows(rows: Sequence[tuple[str, str]]) -> str:
    """`label : value` lines, the labels padded to `LABEL_WIDTH`."""
    return "\n".join(f"{label:<{LABEL_WIDTH}}: {value}" for label, value in rows)


def fill_value_text(value: Any) -> str:
    """A fill value for people: NaN and the infinities as Zarr's JSON spells them
    (`NaN`, `Infinity`, `-Infinity`), other values as Python writes them (`0.0`, `0`,
    `''`, `(1+2j)`), numpy scalars as the Python value they hold, datetimes and
    timedeltas as numpy writes them (`NaT`, `2020-01-01T00:00:00`, `5 microseconds`)."""
    if isinstance(value, np.datetime64 | np.timedelta64):
        return str(value)
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    return repr(value)


def codecs_text(codecs: Sequence[Mapping[str, Any]]) -> str:
    """Codecs in their JSON form for people: `bytes(endian=little) -> zstd(level=0)`,
    `sharding_indexed[...]` around the inner codecs, "none" for no codec."""
    parts = []
    for codec in codecs:
        name = codec.get("name") or codec.get("id")
        conf = codec.get("configuration") or {
            k: v
            for k, v in codec.items()
            if k not in ("id", "name")  # a v2 config is flat
        }
        if name == "sharding_indexed":
            inner = codecs_text(list(conf.get("codecs", [])))
            parts.append(f"sharding_indexed[{inner}]")
        elif conf:
            short = ",".join(f"{k}={_setting(v)}" for k, v in conf.items() if _shown(v))
            parts.append(f"{name}({short})")
        else:
            parts.append(str(name))
    return " -> ".join(parts) or "none"


def _shown(value: Any) -> bool:
    """Whether a codec setting is shown: scalars, and lists of them (a `transpose`
    codec's `order`), not nested documents."""
    if isinstance(value, list | tuple):
        return all(not isinstance(item, dict | list | tuple) for item in value)
    return not isinstance(value, dict)


def _setting(value: Any) -> str:
    return f"[{','.join(map(str, value))}]" if isinstance(value, list | tuple) else str(value)


def _codecs(meta: ArrayMetadata) -> tuple[dict[str, Any], ...]:
    """The codecs as JSON: v3 codec documents; v2 filters, then the compressor."""
    if meta.zarr_format == 3:
        return tuple(c.to_json() for c in meta.codecs)
    found = [dict(f) for f in meta.filters or ()]
    if meta.compressor is not None:
        found.append(dict(meta.compressor))
    return tuple(found)


def _lists(shape: tuple[Any, ...]) -> list[Any]:
    return [list(axis) if isinstance(axis, tuple) else axis for axis in shape]


def _json_value(value: Any) -> Any:
    """A fill value JSON can carry: NaN and infinities as Zarr spells them, complex
    numbers as [real, imag], bytes as latin-1 text, datetimes and timedeltas as the
    integer Zarr stores (NaT too: `.item()` made it None, "no fill value")."""
    if isinstance(value, np.datetime64 | np.timedelta64):
        return int(value.view("i8"))
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value).replace("inf", "Infinity").replace("nan", "NaN")
    if isinstance(value, complex):
        return [value.real, value.imag]
    if isinstance(value, bytes):
        return value.decode("latin-1")
    return value
