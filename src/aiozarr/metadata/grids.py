"""The v3 `chunk_grid` field <-> the model: the `regular` grid and the `rectilinear` extension.

A rectilinear grid's `chunk_shapes` gives per axis an integer (a regular step repeated to
cover the axis), or a list of edge lengths and `[length, count]` runs. Reading expands
every form into the model's `RectilinearGrid`; writing is compact: an axis of equal edges
that just cover it is written as its step, other axes as runs (`[length, count]` for a
repeated edge, the bare length for a single one).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aiozarr.errors import UnsupportedError
from aiozarr.metadata.json import fail, int_list, is_int, show
from aiozarr.metadata.model import ArrayMetadata
from aiozarr.selection.chunk_grid import AxisEdges, RectilinearGrid
from aiozarr.sizes import MAX_EXTENT, ceil_div

_RECTILINEAR = "chunk_grid.configuration"


def parse_chunk_grid(
    name: str, config: Mapping[str, Any], shape: tuple[int, ...], key: str
) -> tuple[tuple[int, ...], RectilinearGrid | None]:
    """`(chunk_shape, rectilinear grid or None)` of a `chunk_grid` named `name`."""
    if name == "regular":
        return _regular(config, shape, key), None
    if name == "rectilinear":
        grid = _rectilinear(config, shape, key)
        return grid.max_shape, grid
    raise UnsupportedError(
        f'{key}: field "chunk_grid": unsupported chunk grid {show(name)} '
        '(expected "regular" or "rectilinear")'
    )


def _regular(config: Mapping[str, Any], shape: tuple[int, ...], key: str) -> tuple[int, ...]:
    """The chunk shape; an edge of 0 (zarr-python writes one for an axis of length 0, and
    reads it) is taken along such an axis only, as 1."""
    if set(config) != {"chunk_shape"}:
        fail(key, "chunk_grid.configuration", 'exactly the member "chunk_shape"', dict(config))
    field = "chunk_grid.configuration.chunk_shape"
    chunk_shape = int_list(config["chunk_shape"], key, field, 0)
    if len(chunk_shape) != len(shape):
        fail(key, field, f"{len(shape)} chunk lengths (one per dimension)", list(chunk_shape))
    if any(c == 0 < s for c, s in zip(chunk_shape, shape, strict=True)):
        fail(key, field, "positive integers (0 only along an axis of length 0)", list(chunk_shape))
    return tuple(max(c, 1) for c in chunk_shape)


def _rectilinear(config: Mapping[str, Any], shape: tuple[int, ...], key: str) -> RectilinearGrid:
    if set(config) != {"kind", "chunk_shapes"}:
        fail(key, _RECTILINEAR, 'exactly the members "kind" and "chunk_shapes"', dict(config))
    if config["kind"] != "inline":
        fail(key, f"{_RECTILINEAR}.kind", '"inline"', config["kind"])
    shapes = config["chunk_shapes"]
    field = f"{_RECTILINEAR}.chunk_shapes"
    if not isinstance(shapes, list):
        fail(key, field, "a list of chunk edge lengths, one entry per dimension", shapes)
    if len(shapes) != len(shape):
        fail(key, field, f"{len(shape)} entries (one per dimension)", shapes)
    return RectilinearGrid(
        tuple(
            _axis(value, size, key, f"{field}[{axis}]")
            for axis, (value, size) in enumerate(zip(shapes, shape, strict=True))
        )
    )


def _positive(value: Any) -> bool:
    return is_int(value) and 1 <= value <= MAX_EXTENT


def _axis(value: Any, size: int, key: str, field: str) -> AxisEdges:
    """One axis' edges: an integer step, or a list of edge lengths and `[length, count]` runs."""
    if is_int(value):
        if not _positive(value):
            fail(key, field, "a positive integer (a regular step) or a list of edge lengths", value)
        return AxisEdges.regular(value, size)
    if not isinstance(value, list):
        fail(
            key,
            field,
            "a positive integer (a regular step) or a list of edge lengths "
            "and [length, count] runs",
            value,
        )
    runs: list[tuple[int, int]] = []
    for i, item in enumerate(value):
        if _positive(item):
            runs.append((item, 1))
        elif isinstance(item, list) and len(item) == 2 and all(_positive(v) for v in item):
            runs.append((item[0], item[1]))
        else:
            fail(
                key,
                f"{field}[{i}]",
                "a positive edge length or a run [length, count] of two positive integers",
                item,
            )
    total = sum(length * count for length, count in runs)
    if total > MAX_EXTENT:
        fail(key, field, "edge lengths summing to less than 2**63", value)
    if total < size:
        fail(
            key,
            field,
            f"edge lengths summing to at least the axis length {size} (they sum to {total})",
            value,
        )
    return AxisEdges(tuple(runs))


def chunk_grid_json(meta: ArrayMetadata) -> dict[str, Any]:
    """The `chunk_grid` object of `meta` (regular grids exactly as zarr-python writes them)."""
    grid = meta.chunk_grid
    if grid is None:
        return {"name": "regular", "configuration": {"chunk_shape": list(meta.chunk_shape)}}
    return {
        "name": "rectilinear",
        "configuration": {
            "kind": "inline",
            "chunk_shapes": [
                _axis_json(axis, size) for axis, size in zip(grid.axes, meta.shape, strict=True)
            ],
        },
    }


def _axis_json(axis: AxisEdges, size: int) -> int | list[Any]:
    step = axis.step
    if step is not None and axis.nchunks == max(ceil_div(size, step), 1):
        return step  # reads back as exactly these edges
    return [length if count == 1 else [length, count] for length, count in axis.runs]
