"""The chunk keys of one array node of a snapshot: key <-> chunk coordinates (pure).

The Zarr key space a snapshot presents is the one its arrays' `zarr.json` documents
describe: their `chunk_key_encoding` (`default`: `c/0/1`, `v2`: `0.1`, either with its
separator). Only the encoding is read here; the rest of the document is the metadata
layer's (the storage layer does not import it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["ChunkKeys"]

_DEFAULT_SEPARATOR = {"default": "/", "v2": "."}


@dataclass(frozen=True)
class ChunkKeys:
    """How an array names its chunks, relative to the array: `default` keys start
    with `c`; a 0-d array's one chunk is `c` (default) or `0` (v2)."""

    encoding: str = "default"
    separator: str = "/"
    ndim: int = 0

    @classmethod
    def of(cls, document: Mapping[str, Any]) -> ChunkKeys:
        """The encoding of an array's `zarr.json`, as an object or its name alone (`"v2"`,
        which the metadata layer reads as `{"name": "v2"}`); unknown ones read as
        `default` with `/` (the metadata layer refuses them when the array is opened)."""
        shape = document.get("shape")
        ndim = len(shape) if isinstance(shape, list) else 0
        value = document.get("chunk_key_encoding")
        if isinstance(value, str):
            value = {"name": value}
        if isinstance(value, Mapping) and value.get("name") in _DEFAULT_SEPARATOR:
            name = str(value["name"])
            config = value.get("configuration")
            separator = config.get("separator") if isinstance(config, Mapping) else None
            if separator not in ("/", "."):
                separator = _DEFAULT_SEPARATOR[name]
            return cls(name, separator, ndim)
        return cls(ndim=ndim)

    def parse(self, key: str) -> tuple[int, ...] | None:
        """The coordinates chunk key `key` names, None when it names no chunk."""
        if self.ndim == 0:
            return () if key == self.key(()) else None
        if self.encoding == "default":
            if not key.startswith(f"c{self.separator}"):
                return None
            key = key[2:]
        parts = key.split(self.separator)
        if len(parts) != self.ndim or not all(p.isdigit() and p.isascii() for p in parts):
            return None
        return tuple(int(p) for p in parts)

    def key(self, coords: tuple[int, ...]) -> str:
        """The key of the chunk at `coords`."""
        if not coords:
            return "c" if self.encoding == "default" else "0"
        joined = self.separator.join(str(c) for c in coords)
        return f"c{self.separator}{joined}" if self.encoding == "default" else joined
