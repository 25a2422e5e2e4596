"""What a metadata format is: where its documents lie, how it is told apart, how it reads
and writes them (`Format`). The formats themselves are `v3.py`, `v2.py`, `v1.py` and
`v3draft.py`; `formats.py` lists them.

A format reads a node without doing I/O: `Format.read` is a generator that yields what it
needs (`Fetch` documents, `ListKeys` under a prefix) and is sent the answers; the caller
that holds the store (`hierarchy.read_node`) drives it. That keeps this layer free of
storage, and lets the caller put the first requests of every format that probes at the
same stage (and of every child of a group) into one batch.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Generator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from aiozarr.errors import MetadataError
from aiozarr.metadata.json import load
from aiozarr.metadata.model import ArrayMetadata, GroupMetadata, Node

#: Detection stages, cheapest first: the documents of every format probing at one stage
#: are asked for in one batch, and a stage runs only when the stages before it found no
#: node. v3 and the draft's root probe at `FIRST`, with a v2 group's consolidated
#: metadata; v2's node documents at `SECOND`; v1 and the draft below its root at `LAST`.
FIRST, SECOND, LAST = 0, 1, 2


def join(path: str, name: str) -> str:
    """`path/name`, where either may be empty."""
    return f"{path}/{name}" if path else name


@dataclass(frozen=True, slots=True)
class Fetch:
    """Read the documents at `keys`; the answer is a list of `Stored` (None: missing).

    A read's first step goes out with every other first step of its format's stage, in
    one batch. A later step with a `stage` waits for that stage and joins its batch
    (the draft probes below a root with v1's keys); one without is read at once.
    """

    keys: tuple[str, ...]
    stage: int | None = None


@dataclass(frozen=True, slots=True)
class ListKeys:
    """List every key below `prefix`; the answer is a list of keys."""

    prefix: str


Step = Fetch | ListKeys
#: A read under way: yields steps, is sent their answers, returns the node (None: not this
#: format's node, or no node).
Reading = Generator[Step, Any, Node | None]


class Absent(Exception):
    """Raised by a read that found where its node should be and no node there, so no other
    format may have it: the caller raises `NodeNotFoundError` with this message followed
    by the store's name."""


class Stored:
    """One document as read from the store: its key and bytes, decoded once however many
    formats look at it (v3 and the draft both read `zarr.json`)."""

    __slots__ = ("_doc", "data", "key")

    def __init__(self, key: str, data: object) -> None:
        self.key = key
        self.data = data
        self._doc: dict[str, Any] | None = None

    def json(self) -> dict[str, Any]:
        """The JSON object it holds; `MetadataError` naming the key when it holds none."""
        if self._doc is None:
            self._doc = load(bytes(memoryview(self.data)), self.key)  # type: ignore[arg-type]
        return self._doc


@dataclass(frozen=True, slots=True)
class ReadOptions:
    """What a read asks for: `zarr_format` (None: any format), whether consolidated
    metadata is read and kept, whether only an array is wanted (an array open), and
    whether the node is the one being opened (not a member read beside others): a
    format may then ask for its consolidated metadata first."""

    zarr_format: Literal[1, 2, 3] | None = None
    use_consolidated: bool = True
    array_only: bool = False
    opening: bool = False


class Format(ABC):
    """One metadata format: its documents' keys, how to tell it, read it and write it.

    `read` is the only way in from a store; the other methods work on a node's metadata,
    whose format `owns` says (`formats.format_of`).
    """

    #: A name for messages ("Zarr v2").
    name: ClassVar[str]
    #: The `zarr_format=` that names it (None: found by detection only).
    zarr_format: ClassVar[int | None] = None
    #: The `zarr_format=` values whose reads it takes part in (None: detection).
    asked_by: ClassVar[frozenset[int | None]] = frozenset({None})
    #: The detection stage its read starts at (`FIRST`, `SECOND`, `LAST`, or later).
    stage: ClassVar[int] = LAST
    #: Whether `documents` writes this format (False: read only, migrate it).
    writable: ClassVar[bool] = False

    @abstractmethod
    def read(self, path: str, options: ReadOptions) -> Reading:
        """Detect and parse the node at `path`: yield steps, return the node or None.
        Only called when `options.zarr_format` is in `asked_by`."""

    @abstractmethod
    def owns(self, meta: Node) -> bool:
        """Whether `meta` is a node of this format (formats are asked in their order)."""

    @abstractmethod
    def node_keys(self, path: str) -> tuple[str, ...]:
        """The keys whose presence says a node of this format is at `path`."""

    @abstractmethod
    def metadata_key(self, path: str, meta: ArrayMetadata) -> str:
        """The key of the document an array was read from (named in errors)."""

    def chunk_prefix(self, path: str, meta: ArrayMetadata) -> str:
        """The key prefix of the array's chunks."""
        return f"{path}/" if path else ""

    def group_key(self, path: str) -> str:
        """The key whose presence says a group of this format is at `path`."""
        raise self._read_only()

    def documents(self, path: str, meta: Node) -> dict[str, bytes]:
        """The keys and documents that store `meta` at `path`."""
        raise self._read_only()

    def consolidated_documents(
        self, path: str, group: GroupMetadata, members: Mapping[str, Node]
    ) -> dict[str, bytes]:
        """The keys and documents that store `members` (every node below the group at
        `path`, by relative path) as the group's consolidated metadata."""
        raise MetadataError(
            f"cannot consolidate {self.name} metadata (read only); "
            "aiozarr.migrate it to Zarr v2 or v3"
        )

    def stale_keys(self, path: str, meta: Node) -> tuple[str, ...]:
        """Keys an earlier version of the node may have left that `documents` does not
        rewrite, to delete when `meta` is written."""
        return ()

    @abstractmethod
    def to_dict(self, meta: Node) -> dict[str, Any]:
        """The node's document as a dict, as zarr-python's `to_dict()` gives it."""

    def not_found(self, path: str) -> str | None:
        """What is missing when a node asked for in this format is not found (None: the
        general message)."""
        return None

    def _read_only(self) -> MetadataError:
        return MetadataError(
            f"cannot write {self.name} metadata (read only); aiozarr.migrate it to Zarr v2 or v3"
        )
