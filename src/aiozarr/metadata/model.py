"""The format-independent model of array and group metadata (frozen values).

Readers (`v3.py`, `v2.py`, ...) turn documents into these; writers turn them back.
This module imports none of them: `to_dict` asks the writer `formats.py` installs with
`use_documents` (importing any `aiozarr.metadata` module imports the package, whose
`__init__` imports `formats.py`, so it is installed before any metadata exists).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from aiozarr.selection.chunk_grid import RectilinearGrid


@dataclass(frozen=True)
class CodecMetadata:
    """One codec as named in metadata: `{"name": ..., "configuration": {...}}`."""

    name: str
    configuration: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        # zarr-python refuses a `numcodecs.*` codec without a "configuration", even empty.
        if not self.configuration and not self.name.startswith("numcodecs."):
            return {"name": self.name}
        return {"name": self.name, "configuration": dict(self.configuration)}


@dataclass(frozen=True)
class ChunkKeyEncoding:
    """How chunk grid coordinates become store keys (v3 `default` or `v2` style)."""

    name: Literal["default", "v2"] = "default"
    separator: Literal["/", "."] = "/"

    def encode(self, chunk_coords: tuple[int, ...]) -> str:
        """The key of a chunk, relative to the array's path."""
        if self.name == "default":
            return self.separator.join(("c", *map(str, chunk_coords)))
        return self.separator.join(map(str, chunk_coords)) if chunk_coords else "0"


@dataclass(frozen=True)
class ArrayMetadata:
    """Everything needed to read and write one array, whatever its format.

    `codecs` is the v3 codec chain. For v2/v1 arrays it is empty and `order`,
    `filters` and `compressor` (numcodecs configs) describe the encoding.
    `fill_value` is a numpy scalar of `dtype`, or None (v2 "no fill value").

    `chunk_grid` is None for a regular grid of `chunk_shape`. For a rectilinear grid (v3
    only) it holds every chunk's edge lengths, and `chunk_shape` is the largest edge along
    each axis: a bound on every chunk, never the shape of all of them.
    """

    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    chunk_shape: tuple[int, ...]
    fill_value: Any
    zarr_format: Literal[1, 2, 3] = 3
    codecs: tuple[CodecMetadata, ...] = ()
    chunk_key_encoding: ChunkKeyEncoding = ChunkKeyEncoding()
    attributes: Mapping[str, Any] = field(default_factory=dict)
    dimension_names: tuple[str | None, ...] | None = None
    # v3: the data_type exactly as the document gave it (a name or an extension object)
    data_type: Any = None
    # v2 / v1 encoding
    order: Literal["C", "F"] = "C"
    filters: tuple[Mapping[str, Any], ...] | None = None
    compressor: Mapping[str, Any] | None = None
    chunk_grid: RectilinearGrid | None = None
    # v3: fields the spec lets a reader ignore ("must_understand": false), written back
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def grid(self) -> tuple[int, ...] | RectilinearGrid:
        """The chunk grid as indexing takes it: the chunk shape, or the rectilinear grid."""
        return self.chunk_shape if self.chunk_grid is None else self.chunk_grid

    def chunk_key(self, chunk_coords: tuple[int, ...]) -> str:
        return self.chunk_key_encoding.encode(chunk_coords)

    def to_dict(self) -> dict[str, Any]:
        """The metadata as its JSON document holds it, as zarr-python's `to_dict()`: v3,
        `zarr.json`; v2 (and v1, as v2), `.zarray` with `attributes` and `zarr_format`."""
        return _document(self)


@dataclass(frozen=True)
class GroupMetadata:
    """A group: its attributes, and (when consolidated) its members' metadata by path."""

    zarr_format: Literal[1, 2, 3] = 3
    attributes: Mapping[str, Any] = field(default_factory=dict)
    consolidated: Mapping[str, ArrayMetadata | GroupMetadata] | None = None
    # v3: fields the spec lets a reader ignore ("must_understand": false), written back
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The metadata as its JSON document holds it (`zarr.json`; v2: `.zgroup` with
        `attributes`), as zarr-python's `to_dict()`."""
        return _document(self)


Node = ArrayMetadata | GroupMetadata
_documents: list[Callable[[Node], dict[str, Any]]] = []


def use_documents(writer: Callable[[Node], dict[str, Any]]) -> None:
    """Make `writer` give every node's `to_dict()` (`formats.py` installs its formats')."""
    _documents[:] = [writer]


def _document(meta: Node) -> dict[str, Any]:
    if not _documents:
        raise RuntimeError("no metadata formats installed: import aiozarr.metadata")
    return _documents[0](meta)
