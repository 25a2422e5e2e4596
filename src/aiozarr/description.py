"""`ArrayDescription`: what an array is, as one value that every view of it renders.

`AsyncArray.info` (text), the notebook's HTML table (`display.py`) and `aiozarr info`
(its table and `--json`) show the facts built here by `describe_array`, so they cannot
drift apart. Codecs are kept in their JSON form (v3 codec documents; v2 filters, then
the compressor) and rendered for people by `codecs_text` alone. No I/O: stored sizes,
which need a listing, are the CLI's to add.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from aiozarr.chunk_grid import RectilinearGrid

if TYPE_CHECKING:
    from aiozarr.array import AsyncArray

__all__ = ["ArrayDescription", "codecs_text", "describe_array"]


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

    def grid_text(self) -> tuple[str, str]:
        """The chunk shape and the shard shape for people ("None": not sharded); on a
        rectilinear grid, its edges (`rectilinear ((4, 4), (1, 2, 3))`, shortened)."""
        grid = self.rectilinear_grid
        if grid is None:
            return str(self.chunks), str(self.shards)
        if self.shards is None:
            return grid.describe(), "None"
        return str(self.chunks), grid.describe()

    def text(self) -> str:
        """The description as aligned `label : value` lines (`AsyncArray.info`)."""
        chunks, shards = self.grid_text()
        rows = [
            ("Type", f"Array (Zarr v{self.zarr_format})"),
            ("Name", self.name),
            ("Shape", str(self.shape)),
            ("Data type", self.dtype),
            ("Chunk shape", chunks),
            ("Shard shape", shards),
            ("Fill value", repr(self.fill_value)),
            ("Codecs", codecs_text(self.codecs)),
            ("Dimension names", str(self.dimension_names)),
            ("Store", self.store),
            ("Bytes (decoded)", str(self.decoded_bytes)),
        ]
        return "\n".join(f"{label:<19}: {value}" for label, value in rows)

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
            "fill_value": _json_value(self.fill_value),
            "dimension_names": None if self.dimension_names is None else list(self.dimension_names),
            "decoded_bytes": self.decoded_bytes,
        }


def describe_array(array: AsyncArray) -> ArrayDescription:
    """The description of `array`, from its metadata alone."""
    meta = array.metadata
    if meta.chunk_grid is None:
        grid = tuple(math.ceil(s / c) for s, c in zip(array.shape, meta.chunk_shape, strict=True))
    else:
        grid = tuple(meta.chunk_grid.counts_within(array.shape))
    chunks, shards = _grid_shapes(array)
    return ArrayDescription(
        name=array.name,
        store=repr(array.store),
        zarr_format=meta.zarr_format,
        shape=array.shape,
        dtype=str(array.dtype),
        chunks=chunks,
        shards=shards,
        chunk_grid="regular" if meta.chunk_grid is None else "rectilinear",
        rectilinear_grid=array.rectilinear_grid,
        grid=grid,
        codecs=_codecs(array),
        fill_value=meta.fill_value,
        dimension_names=meta.dimension_names,
        attributes=dict(meta.attributes),
        decoded_bytes=array.nbytes,
    )


def codecs_text(codecs: Sequence[Mapping[str, Any]]) -> str:
    """Codecs in their JSON form for people: `bytes(endian=little) -> zstd(level=0)`,
    `sharding_indexed[...]` around the inner codecs, "none" for no codec."""
    parts = []
    for codec in codecs:
        name = codec.get("name") or codec.get("id")
        conf = codec.get("configuration") or {k: v for k, v in codec.items() if k != "id"}
        if name == "sharding_indexed":
            inner = codecs_text(list(conf.get("codecs", [])))
            parts.append(f"sharding_indexed[{inner}]")
        elif conf:
            short = ",".join(f"{k}={v}" for k, v in conf.items() if not isinstance(v, dict | list))
            parts.append(f"{name}({short})")
        else:
            parts.append(str(name))
    return " -> ".join(parts) or "none"


def _codecs(array: AsyncArray) -> tuple[dict[str, Any], ...]:
    """The codecs as JSON: v3 codec documents; v2 filters, then the compressor."""
    meta = array.metadata
    if meta.zarr_format == 3:
        return tuple(c.to_json() for c in meta.codecs)
    found = [dict(f) for f in meta.filters or ()]
    if meta.compressor is not None:
        found.append(dict(meta.compressor))
    return tuple(found)


def _grid_shapes(array: AsyncArray) -> tuple[tuple[Any, ...], tuple[Any, ...] | None]:
    """The chunk and shard shapes (shards None when unsharded); on a rectilinear grid the
    irregular one is per axis the lengths of its objects inside the array."""
    if array.rectilinear_grid is None:
        return array.chunks, array.shards
    edges = array.write_chunk_sizes
    if not array.is_sharded:
        return edges, None
    return array.chunks, edges


def _lists(shape: tuple[Any, ...]) -> list[Any]:
    return [list(axis) if isinstance(axis, tuple) else axis for axis in shape]


def _json_value(value: Any) -> Any:
    """A fill value JSON can carry: NaN and infinities as Zarr spells them, complex
    numbers as [real, imag], bytes as latin-1 text."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value).replace("inf", "Infinity").replace("nan", "NaN")
    if isinstance(value, complex):
        return [value.real, value.imag]
    if isinstance(value, bytes):
        return value.decode("latin-1")
    return value
