"""Rectilinear chunk grids: the length of every chunk edge, axis by axis (pure numpy).

A regular grid is one chunk shape. A rectilinear grid lists, per axis, the edge length
of each chunk along it (the `rectilinear` chunk grid extension of Zarr v3). Edges are
held as runs of equal lengths, so an axis of a million equal edges is one run; every
lookup is vectorised: `np.searchsorted` over the runs' cumulative offsets finds the run
holding an index, and the run's edge length finds the chunk within it.

The last chunks of an axis may reach past the array's end (overflow), as the edge
chunks of a regular grid do: such a chunk is stored with its full edge lengths.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from aiozarr.errors import MetadataError
from aiozarr.sizes import MAX_EXTENT, ceil_div


def _positive_int(value: Any) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool) and value >= 1


@dataclass(frozen=True)
class AxisEdges:
    """The chunk edges along one axis, as runs `(edge length, count)`; neighbours differ."""

    runs: tuple[tuple[int, int], ...]

    def __post_init__(self) -> None:
        merged: list[tuple[int, int]] = []
        total = 0
        for run in self.runs:
            if len(run) != 2 or not all(_positive_int(v) for v in run):
                raise MetadataError(f"chunk edge runs must be pairs of positive ints, got {run!r}")
            length, count = int(run[0]), int(run[1])
            total += length * count
            if merged and merged[-1][0] == length:
                merged[-1] = (length, merged[-1][1] + count)
            else:
                merged.append((length, count))
        if total > MAX_EXTENT:
            raise MetadataError(f"chunk edges sum to {total}, more than 2**63 - 1")
        object.__setattr__(self, "runs", tuple(merged))

    @classmethod
    def of(cls, edges: Iterable[int]) -> AxisEdges:
        """The axis with these edge lengths, in order."""
        runs: list[tuple[int, int]] = []
        for edge in edges:
            if not _positive_int(edge):
                raise MetadataError(f"chunk edge lengths must be positive ints, got {edge!r}")
            if runs and runs[-1][0] == edge:
                runs[-1] = (runs[-1][0], runs[-1][1] + 1)
            else:
                runs.append((int(edge), 1))
        return cls(tuple(runs))

    @classmethod
    def regular(cls, step: int, extent: int) -> AxisEdges:
        """Edges of `step` covering `extent` (at least one edge, so the step is kept)."""
        return cls(((step, max(ceil_div(extent, step), 1)),))

    @property
    def nchunks(self) -> int:
        return sum(count for _, count in self.runs)

    @property
    def extent(self) -> int:
        """The sum of the edge lengths: how far the chunks reach."""
        return sum(length * count for length, count in self.runs)

    @property
    def edges(self) -> tuple[int, ...]:
        """Every edge length, expanded (one int per chunk)."""
        return tuple(length for length, count in self.runs for _ in range(count))

    def runs_text(self) -> str:
        """The edges by their runs, for people (`(3, 5 x 4)`): never expanded."""
        return "(" + ", ".join(str(n) if c == 1 else f"{n} x {c}" for n, c in self.runs) + ")"

    @property
    def step(self) -> int | None:
        """The edge length when every edge is equal (a regular axis), else None."""
        return self.runs[0][0] if len(self.runs) == 1 else None

    @property
    def max_edge(self) -> int:
        return max((length for length, _ in self.runs), default=1)

    @cached_property
    def _tables(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per run: edge length, first chunk index, first element index (int64)."""
        lengths = np.array([length for length, _ in self.runs], dtype=np.int64)
        counts = np.array([count for _, count in self.runs], dtype=np.int64)
        first_chunk = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
        first_element = np.concatenate(([0], np.cumsum(lengths * counts)[:-1])).astype(np.int64)
        return lengths, first_chunk, first_element

    def chunk_of(self, index: Any) -> Any:
        """The chunk holding element `index` (an int or an int64 array, inside the extent)."""
        lengths, first_chunk, first_element = self._tables
        run = np.searchsorted(first_element, index, side="right") - 1
        return first_chunk[run] + (index - first_element[run]) // lengths[run]

    def start_of(self, chunk: Any) -> Any:
        """The first element of chunk `chunk` (an int or an int64 array)."""
        lengths, first_chunk, first_element = self._tables
        run = np.searchsorted(first_chunk, chunk, side="right") - 1
        return first_element[run] + (chunk - first_chunk[run]) * lengths[run]

    def size_of(self, chunk: Any) -> Any:
        """The edge length of chunk `chunk` (an int or an int64 array)."""
        lengths, first_chunk, _ = self._tables
        return lengths[np.searchsorted(first_chunk, chunk, side="right") - 1]

    def chunks_within(self, extent: int) -> int:
        """How many chunks start before `extent` (those holding any element of the array)."""
        if extent <= 0 or not self.runs:
            return 0
        return int(self.chunk_of(min(extent, self.extent) - 1)) + 1

    def sizes_within(self, extent: int) -> tuple[int, ...]:
        """The edge lengths of the chunks inside `extent`, the last one cut at `extent`."""
        n = self.chunks_within(extent)
        if n == 0:
            return ()
        chunks = np.arange(n, dtype=np.int64)
        starts = self.start_of(chunks)
        return tuple((np.minimum(starts + self.size_of(chunks), extent) - starts).tolist())

    def grown(self, extent: int) -> AxisEdges:
        """These edges, the last one repeated until they cover `extent`."""
        missing = extent - self.extent
        if missing <= 0:
            return self
        if not self.runs:
            raise MetadataError(
                f"an axis with no chunk edges cannot grow to {extent}: there is no edge to repeat"
            )
        last = self.runs[-1][0]
        return AxisEdges((*self.runs, (last, ceil_div(missing, last))))


@dataclass(frozen=True)
class RectilinearGrid:
    """Chunk edge lengths per axis. Build one with `from_edges` or from `AxisEdges`."""

    axes: tuple[AxisEdges, ...]

    @classmethod
    def from_edges(cls, edges: Sequence[Iterable[int]]) -> RectilinearGrid:
        """The grid with `edges[axis]` the edge lengths along each axis."""
        return cls(tuple(AxisEdges.of(e) for e in edges))

    @property
    def ndim(self) -> int:
        return len(self.axes)

    @property
    def edges(self) -> tuple[tuple[int, ...], ...]:
        """Every edge length per axis, expanded."""
        return tuple(a.edges for a in self.axes)

    @property
    def grid_shape(self) -> tuple[int, ...]:
        """How many chunks the grid declares along each axis (overflow ones included)."""
        return tuple(a.nchunks for a in self.axes)

    @property
    def extent(self) -> tuple[int, ...]:
        return tuple(a.extent for a in self.axes)

    @property
    def max_shape(self) -> tuple[int, ...]:
        """The largest edge along each axis: every chunk fits in this shape."""
        return tuple(a.max_edge for a in self.axes)

    @property
    def uniform_shape(self) -> tuple[int, ...] | None:
        """The one chunk shape when every chunk has it (a regular grid at heart), else None."""
        steps = tuple(a.step for a in self.axes)
        return None if None in steps else steps  # type: ignore[return-value]

    def distinct_edges(self, axis: int) -> tuple[int, ...]:
        return tuple(sorted({length for length, _ in self.axes[axis].runs}))

    def covers(self, shape: Sequence[int]) -> bool:
        return len(shape) == self.ndim and all(
            a.extent >= s for a, s in zip(self.axes, shape, strict=True)
        )

    def chunk_shape(self, coords: Sequence[int]) -> tuple[int, ...]:
        """The full shape of chunk `coords` (overflow past the array's end included)."""
        return tuple(int(a.size_of(c)) for a, c in zip(self.axes, coords, strict=True))

    def chunk_region(self, coords: Sequence[int], shape: Sequence[int]) -> tuple[slice, ...]:
        """The part of an array of `shape` that chunk `coords` holds."""
        out = []
        for a, c, s in zip(self.axes, coords, shape, strict=True):
            start = int(a.start_of(c))
            out.append(slice(start, min(start + int(a.size_of(c)), s)))
        return tuple(out)

    def counts_within(self, shape: Sequence[int]) -> tuple[int, ...]:
        """How many chunks along each axis hold elements of an array of `shape`."""
        return tuple(a.chunks_within(s) for a, s in zip(self.axes, shape, strict=True))

    def sizes_within(self, shape: Sequence[int]) -> tuple[tuple[int, ...], ...]:
        """Per axis, the chunk lengths inside `shape` (cut at its end): dask's `chunks`."""
        return tuple(a.sizes_within(s) for a, s in zip(self.axes, shape, strict=True))

    def grown(self, shape: Sequence[int]) -> RectilinearGrid:
        """The grid extended to cover `shape`: each axis repeats its last edge as needed."""
        return RectilinearGrid(tuple(a.grown(s) for a, s in zip(self.axes, shape, strict=True)))

    def scaled_down(self, inner: Sequence[int]) -> RectilinearGrid:
        """The grid in units of `inner` chunks (each edge must be a multiple of them)."""
        return RectilinearGrid(
            tuple(
                AxisEdges(tuple((length // c, count) for length, count in a.runs))
                for a, c in zip(self.axes, inner, strict=True)
            )
        )

    def describe(self, limit: int = 120) -> str:
        """The edges per axis for people (`rectilinear ((4, 4), (1, 2, 3))`), shortened."""
        text = "rectilinear (" + ", ".join(_axis_text(a, limit) for a in self.axes) + ")"
        return text if len(text) <= limit else text[: limit - 3] + "..."

    def __repr__(self) -> str:
        return f"RectilinearGrid({[list(a.runs) for a in self.axes]})"


def _axis_text(axis: AxisEdges, limit: int) -> str:
    if axis.nchunks > limit:  # do not expand a long axis only to cut it short
        return "(" + ", ".join(f"{length} x {count}" for length, count in axis.runs) + ")"
    return str(axis.edges)


def grid_counts(shape: Sequence[int], grid: Sequence[int] | RectilinearGrid) -> tuple[int, ...]:
    """Per axis, how many chunks of `grid` (a chunk shape or a rectilinear grid) hold
    elements of an array of `shape`: integer ceilings, never a list of every chunk."""
    axes = grid.axes if isinstance(grid, RectilinearGrid) else grid
    return tuple(axis_count(a, s) for a, s in zip(axes, shape, strict=True))


def axis_count(axis: int | AxisEdges, extent: int) -> int:
    """How many chunks of one axis (a chunk length or its edges) hold elements of `extent`."""
    return ceil_div(extent, axis) if isinstance(axis, int) else axis.chunks_within(extent)


def axis_start(axis: int | AxisEdges, chunk: int, extent: int) -> int:
    """Where chunk `chunk` of one axis starts, cut at `extent` (also past the last chunk)."""
    if isinstance(axis, int):
        return min(chunk * axis, extent)
    return extent if chunk >= axis.chunks_within(extent) else int(axis.start_of(chunk))


def object_region(
    grid: Sequence[int] | RectilinearGrid, coords: Sequence[int], shape: Sequence[int]
) -> tuple[slice, ...]:
    """The part of an array of `shape` that object `coords` of `grid` (a chunk shape or a
    rectilinear grid) holds."""
    if isinstance(grid, RectilinearGrid):
        return grid.chunk_region(coords, shape)
    return tuple(
        slice(min(i * c, s), min((i + 1) * c, s))
        for i, c, s in zip(coords, grid, shape, strict=True)
    )


def objects_covering(
    grid: Sequence[int] | RectilinearGrid, region: Sequence[slice]
) -> Iterator[tuple[int, ...]]:
    """The coordinates, in C order, of the objects of `grid` holding part of `region`
    (slices of step 1, inside the grid)."""
    axes = grid.axes if isinstance(grid, RectilinearGrid) else grid
    spans = []
    for a, r in zip(axes, region, strict=True):
        if r.stop <= r.start:
            return iter(())
        ends = (r.start, r.stop - 1)
        first, last = (
            (e // a for e in ends)
            if isinstance(a, int)
            else map(int, a.chunk_of(np.array(ends, dtype=np.int64)))
        )
        spans.append(range(first, last + 1))
    return itertools.product(*spans)
