"""The icechunk on-disk format, read: repo info and refs, snapshots, manifests (pure).

Every metadata file of an icechunk repository (spec versions 1 and 2) is a 39-byte
header (the magic `ICE🧊CHUNK`, a 24-byte writer name, the spec version, the file type,
the compression: 0 none, 1 zstd) and a flatbuffers payload. The tables are read with the
`flatbuffers` runtime through the field slots of icechunk's published schemas
(`icechunk-format/flatbuffers/*.fbs`: a field's slot is its position in its table, a
union taking two, its type and its value). Object ids are named in paths in Crockford
base 32. Nothing here does I/O: each function takes the bytes of one file.
"""

from __future__ import annotations

import base64
import bisect
import functools
import json
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import flatbuffers
import numpy as np
import zstandard
from flatbuffers import flexbuffers
from flatbuffers import number_types as N
from flatbuffers.table import Table

from aiozarr import config
from aiozarr.errors import MetadataError, ReferenceTargetError, UnsupportedError

__all__ = [
    "MANIFEST",
    "REPO_INFO",
    "SNAPSHOT",
    "ArrayManifestRef",
    "ChunkRef",
    "Manifest",
    "Node",
    "RepoInfo",
    "Snapshot",
    "absolute_location",
    "object_id",
    "parse_manifest",
    "parse_ref_json",
    "parse_repo_info",
    "parse_snapshot",
    "virtual_chunk_containers",
]

MAGIC = "ICE🧊CHUNK".encode()
HEADER_SIZE = len(MAGIC) + 24 + 3
SNAPSHOT, MANIFEST, REPO_INFO = 1, 2, 6
_FILE_TYPES = {SNAPSHOT: "snapshot", MANIFEST: "manifest", 4: "transaction log", REPO_INFO: "repo"}

_U32, _I32, _U16 = struct.Struct("<I"), struct.Struct("<i"), struct.Struct("<H")
_CROCKFORD = bytes.maketrans(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", b"0123456789ABCDEFGHJKMNPQRSTVWXYZ"
)


def object_id(raw: bytes) -> str:
    """An object id as icechunk names it in paths: Crockford base 32, upper case, no
    padding (12 bytes -> 20 characters, 8 -> 13)."""
    return base64.b32encode(raw).translate(_CROCKFORD).rstrip(b"=").decode()


def payload(data: bytes, file_type: int, where: str) -> tuple[int, bytes]:
    """(spec version, flatbuffers bytes) of one metadata file, its header checked."""
    data = bytes(data)
    if len(data) < HEADER_SIZE or not data.startswith(MAGIC):
        raise MetadataError(f"{where}: not an icechunk file (no ICE🧊CHUNK header)")
    version, kind, compression = data[HEADER_SIZE - 3 : HEADER_SIZE]
    if version not in (1, 2):
        raise UnsupportedError(f"{where}: icechunk spec version {version} (1 and 2 are read)")
    if kind != file_type:
        found = _FILE_TYPES.get(kind, str(kind))
        raise MetadataError(f"{where}: a {found} file, expected a {_FILE_TYPES[file_type]}")
    body = data[HEADER_SIZE:]
    limit = config.get().icechunk_max_payload_bytes  # a bound against a hostile zstd frame
    if compression == 1:
        try:
            reader = zstandard.ZstdDecompressor().stream_reader(body)
            body = reader.read(limit + 1)
        except zstandard.ZstdError as error:
            raise MetadataError(f"{where}: corrupt zstd payload ({error})") from None
        if len(body) > limit:
            raise MetadataError(
                f"{where}: the payload inflates past {limit} bytes "
                "(aiozarr.config icechunk_max_payload_bytes)"
            )
    elif compression != 0:
        raise UnsupportedError(f"{where}: compression {compression} (0 and 1, zstd, are read)")
    return version, body


# -- flatbuffers tables by slot -----------------------------------------------------------


class _T:
    """One flatbuffers table, its fields read by slot number."""

    __slots__ = ("t",)

    def __init__(self, t: Table) -> None:
        self.t = t

    @classmethod
    def root(cls, buf: bytes) -> _T:
        start = flatbuffers.encode.Get(N.UOffsetTFlags.packer_type, buf, 0)
        return cls(Table(bytearray(buf), start))

    def _off(self, slot: int) -> int:
        return self.t.Offset(4 + 2 * slot)

    def scalar(self, slot: int, flags: Any, default: int = 0) -> int:
        o = self._off(slot)
        return self.t.Get(flags, o + self.t.Pos) if o else default

    def _vector(self, o: int, size: int) -> tuple[int, int]:
        """(start, count) of the vector at field offset `o`, its `count * size` bytes
        checked to lie in the buffer: a declared length is never trusted."""
        start, count = self.t.Vector(o), self.t.VectorLen(o)
        if start < 0 or start + count * size > len(self.t.Bytes):
            raise MetadataError(
                f"a vector of {count} {size}-byte items at byte {start} runs past the "
                f"end of the {len(self.t.Bytes)}-byte payload"
            )
        return start, count

    def string(self, slot: int) -> str | None:
        raw = self.raw(slot)
        return None if raw is None else raw.decode()

    def raw(self, slot: int) -> bytes | None:
        """A `[uint8]` vector's bytes (a string's, too)."""
        o = self._off(slot)
        if not o:
            return None
        start, count = self._vector(o, 1)
        return bytes(self.t.Bytes[start : start + count])

    def struct(self, slot: int, size: int) -> bytes | None:
        """An inline struct's bytes (an object id)."""
        o = self._off(slot)
        return bytes(self.t.Bytes[self.t.Pos + o : self.t.Pos + o + size]) if o else None

    def length(self, slot: int) -> int:
        o = self._off(slot)
        return self.t.VectorLen(o) if o else 0

    def tables(self, slot: int) -> list[_T]:
        o = self._off(slot)
        if not o:
            return []
        start, count = self._vector(o, 4)
        return [_T(Table(self.t.Bytes, self.t.Indirect(start + 4 * i))) for i in range(count)]

    def structs(self, slot: int, size: int) -> list[bytes]:
        o = self._off(slot)
        if not o:
            return []
        start, count = self._vector(o, size)
        buf = self.t.Bytes
        return [bytes(buf[start + size * i : start + size * (i + 1)]) for i in range(count)]

    def uint32s(self, slot: int) -> tuple[int, ...]:
        o = self._off(slot)
        if not o:
            return ()
        start, n = self._vector(o, 4)
        return tuple(int(v) for v in np.frombuffer(self.t.Bytes, "<u4", n, start))

    def union(self, type_slot: int) -> tuple[int, _T | None]:
        kind = self.scalar(type_slot, N.Uint8Flags)
        o = self._off(type_slot + 1)
        if not o:
            return kind, None
        inner = Table(bytearray(), 0)
        self.t.Union(inner, o)
        return kind, _T(inner)


def _parse(what: str, fn: Any, *args: Any) -> Any:
    """Run a table reader, a malformed buffer becoming a `MetadataError`."""
    try:
        return fn(*args)
    except (IndexError, ValueError, TypeError, OverflowError, struct.error) as error:
        raise MetadataError(f"{what}: malformed flatbuffers payload ({error})") from None


# -- repo info (spec 2) and refs (spec 1) -----------------------------------------------


@dataclass(frozen=True)
class RepoInfo:
    """What a repository's entry point says: its branches and tags (name -> snapshot id),
    the ids of its snapshots, and its configuration (FlexBuffers, read on demand:
    `virtual_chunk_containers`)."""

    spec_version: int
    branches: dict[str, str]
    tags: dict[str, str]
    snapshots: frozenset[str] = field(default_factory=frozenset)
    config: bytes | None = None
    #: snapshot id -> (its parent's id or None, when it was committed: microseconds
    #: since 1970, UTC)
    history: dict[str, tuple[str | None, int]] = field(default_factory=dict)

    def as_of(self, snapshot_id: str, when_us: int) -> str | None:
        """The snapshot of `snapshot_id`'s ancestry (itself first) that was the newest
        at `when_us` (microseconds since 1970, UTC): the first committed at or before
        it; None if every one is later."""
        seen: set[str] = set()
        found: str | None = snapshot_id
        while found is not None and found not in seen:
            seen.add(found)  # a cycle in a malformed file ends the walk
            parent, flushed_at = self.history.get(found, (None, 0))
            if flushed_at <= when_us:
                return found
            found = parent
        return None


def parse_repo_info(data: bytes, where: str = "repo") -> RepoInfo:
    """The `repo` file of a spec-2 repository."""
    version, body = payload(data, REPO_INFO, where)
    return _parse(where, _repo_info, version, body)


def _repo_info(version: int, body: bytes) -> RepoInfo:
    repo = _T.root(body)
    # Repo: spec_version 0, tags 1, branches 2, deleted_tags 3, snapshots 4, ...
    # SnapshotInfo: id 0, ...; Ref: name 0, snapshot_index 1.
    infos = repo.tables(4)
    ids = [object_id(info.struct(0, 12) or b"") for info in infos]
    history: dict[str, tuple[str | None, int]] = {}
    for snapshot_id, info in zip(ids, infos, strict=True):
        # SnapshotInfo: parent_offset 1 (its parent's index in the list; -1: none),
        # flushed_at 2
        parent = info.scalar(1, N.Int32Flags)
        flushed_at = info.scalar(2, N.Uint64Flags)
        history[snapshot_id] = (ids[parent] if 0 <= parent < len(ids) else None, flushed_at)

    def refs(slot: int) -> dict[str, str]:
        return {ref.string(0) or "": ids[ref.scalar(1, N.Uint32Flags)] for ref in repo.tables(slot)}

    # ..., config 9 (FlexBuffers)
    return RepoInfo(
        version,
        branches=refs(2),
        tags=refs(1),
        snapshots=frozenset(ids),
        config=repo.raw(9),
        history=history,
    )


def virtual_chunk_containers(info: RepoInfo, where: str) -> dict[str, dict[str, Any]]:
    """The virtual chunk containers a spec-2 repository's configuration declares: url
    prefix -> the settings of its store as written (`{"s3": {"region": ...}}`,
    `{"local_file_system": "/data"}`)."""
    out: dict[str, dict[str, Any]] = {}
    for container in _containers(info.config, where):
        store = container.get("store")
        out[container["url_prefix"]] = store if isinstance(store, dict) else {}
    return out


@functools.lru_cache(maxsize=8)  # read once per repository, not once per chunk
def _named_prefixes(config: bytes | None, where: str) -> dict[str, str]:
    """Name -> url prefix of each named container of the configuration `config`."""
    return {c["name"]: c["url_prefix"] for c in _containers(config, where) if "name" in c}


def _containers(config: bytes | None, where: str) -> list[dict[str, Any]]:
    """The containers of the configuration `config`: each a dict with a `url_prefix`."""
    if config is None:
        return []
    try:
        doc = _flex(flexbuffers.GetRoot(config))
    except (IndexError, ValueError, TypeError, KeyError, RecursionError, struct.error) as error:
        raise MetadataError(f"{where}: malformed configuration ({error!r})") from None
    found = doc.get("virtual_chunk_containers") if isinstance(doc, dict) else None
    return [
        c
        for c in (found.values() if isinstance(found, dict) else ())
        if isinstance(c, dict) and isinstance(c.get("url_prefix"), str)
    ]


def absolute_location(location: str, info: RepoInfo | None, where: str) -> str:
    """A virtual chunk's location as a URL: `vcc://NAME/path` (icechunk 2.x: relative
    to the container named NAME, whose prefix ends in `/`) is that prefix + `path`;
    any other location is already one. The container authorizes nothing."""
    if not location.startswith("vcc://"):
        return location
    name, _, path = location[6:].partition("/")
    prefix = None if info is None else _named_prefixes(info.config, where).get(name)
    if prefix is None:
        raise ReferenceTargetError(
            f"virtual chunk location {location!r} names container {name!r}, which the "
            f"repository's configuration does not declare"
        )
    return prefix + path


def _flex(ref: Any, depth: int = 0) -> Any:
    """A FlexBuffers value as Python, its map keys read as UTF-8: the runtime's `Loads`
    reads keys as ASCII, and icechunk keys its containers by their url prefix, which
    may name a folder `données`."""
    if depth > 64:
        raise ValueError("nested more than 64 deep")
    if ref.IsMap:
        m = ref.AsMap
        return {
            bytes(k.AsKeyBytes).decode(): _flex(v, depth + 1)
            for k, v in zip(m.Keys, m.Values, strict=True)
        }
    if ref.IsKey:
        return bytes(ref.AsKeyBytes).decode()
    for kind, items in (("IsVector", "AsVector"), ("IsTypedVector", "AsTypedVector")):
        if getattr(ref, kind):
            return [_flex(item, depth + 1) for item in getattr(ref, items)]
    return ref.Value


def parse_ref_json(data: bytes, where: str) -> str:
    """The snapshot id a spec-1 `refs/<branch|tag>.<name>/ref.json` points at."""
    try:
        doc = json.loads(bytes(data))
        snapshot = doc["snapshot"]
    except (ValueError, KeyError, TypeError):
        raise MetadataError(f'{where}: expected {{"snapshot": "<id>"}}') from None
    if not isinstance(snapshot, str):
        raise MetadataError(f"{where}: 'snapshot' must be a string")
    return snapshot


# -- snapshots ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ArrayManifestRef:
    """One manifest holding chunk references of an array, and the block of its chunk
    grid they lie in (per dimension, chunk indexes `start <= i < stop`)."""

    manifest_id: str
    extents: tuple[tuple[int, int], ...]

    def covers(self, coords: tuple[int, ...]) -> bool:
        """Whether the chunk at `coords` may be in the manifest, as icechunk's reader
        tells: no extents (its sentinel for "every chunk") cover every chunk."""
        return all(lo <= c < hi for c, (lo, hi) in zip(coords, self.extents, strict=False))


@dataclass(frozen=True)
class Node:
    """One node of a snapshot: its path (`/`, `/a/b`), its Zarr metadata document
    (`zarr.json`), and for an array its id (how manifests name it) and manifests."""

    path: str
    zarr_json: bytes
    node_id: str
    is_array: bool
    manifests: tuple[ArrayManifestRef, ...] = ()


@dataclass(frozen=True)
class Snapshot:
    """One snapshot: its id, its parent's (spec 1 only) and its nodes by path."""

    id: str
    parent_id: str | None
    nodes: dict[str, Node]


def parse_snapshot(data: bytes, where: str) -> Snapshot:
    """A `snapshots/<id>` file."""
    _, body = payload(data, SNAPSHOT, where)
    return _parse(where, _snapshot, body)


def _snapshot(body: bytes) -> Snapshot:
    snap = _T.root(body)
    # Snapshot: id 0, parent_id 1, nodes 2, ...
    parent = snap.struct(1, 12)
    nodes = {}
    for node in snap.tables(2):
        # NodeSnapshot: id 0, path 1, user_data 2, node_data (type 3, value 4), extra 5.
        kind, data = node.union(3)
        manifests: tuple[ArrayManifestRef, ...] = ()
        if kind == 1 and data is not None:  # ArrayNodeData: shape 0, names 1, manifests 2
            manifests = tuple(_manifest_ref(ref) for ref in data.tables(2))
        path = node.string(1) or "/"
        nodes[path] = Node(
            path=path,
            zarr_json=node.raw(2) or b"",
            node_id=object_id(node.struct(0, 8) or b""),
            is_array=kind == 1,
            manifests=manifests,
        )
    return Snapshot(object_id(snap.struct(0, 12) or b""), parent and object_id(parent), nodes)


def _manifest_ref(ref: _T) -> ArrayManifestRef:
    # ManifestRef: object_id 0, extents 1 (ChunkIndexRange structs: from, to: uint32)
    extents = tuple(
        (int.from_bytes(raw[:4], "little"), int.from_bytes(raw[4:], "little"))
        for raw in ref.structs(1, 8)
    )
    return ArrayManifestRef(object_id(ref.struct(0, 12) or b""), extents)


# -- manifests ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ChunkRef:
    """Where one chunk's bytes are: inline, a range of `chunks/<chunk_id>` (native), or
    a range of `location` (virtual), with the checksum the source had when referenced
    (its ETag, or a time in seconds it was last modified at or before)."""

    inline: bytes | None = None
    chunk_id: str | None = None
    location: str | None = None
    offset: int = 0
    length: int = 0
    etag: str | None = None
    last_modified: int | None = None


class Manifest:
    """One manifest: each array node's chunk references, found by binary search.

    The spec keeps each array's references sorted by their coordinates, so a reference
    is found in O(log n) reads of the flatbuffers vector and nothing is parsed ahead: a
    manifest of a million chunks is usable as soon as it is decompressed. Many lookups
    at once (more than a binary search each would cost) read every array's coordinates
    once into a table, kept.
    """

    def __init__(self, body: bytes, where: str) -> None:
        root = _T.root(body)
        # Manifest: id 0, arrays 1, location_dictionary 2, compression_algorithm 3.
        self._where = where
        self.nbytes = len(body)  # what the cache of manifests counts
        self._expand = _location_expander(root.raw(2), where)
        self._arrays = {  # ArrayManifest: node_id 0, refs 1
            object_id(array.struct(0, 8) or b""): _Refs(array, 1) for array in root.tables(1)
        }

    def get(self, node_id: str, coords: tuple[int, ...]) -> ChunkRef | None:
        """The reference of the chunk at `coords` of array `node_id`; None if absent."""
        return self.get_many(node_id, [coords])[0]

    def get_many(self, node_id: str, coords: Sequence[tuple[int, ...]]) -> list[ChunkRef | None]:
        """The references of the chunks at `coords` of array `node_id` (None: absent)."""
        refs = self._arrays.get(node_id)
        if refs is None:
            return [None] * len(coords)
        return _parse(self._where, refs.find_many, coords, self._expand)

    def coords(self, node_id: str) -> list[tuple[int, ...]]:
        """The coordinates of every chunk of array `node_id` the manifest holds."""
        refs = self._arrays.get(node_id)
        return [] if refs is None else _parse(self._where, lambda: list(refs.table()))


class _Refs:
    """An array's `refs` vector, read as a sorted sequence of chunk coordinates (the
    offsets a flatbuffers table and vector are found at, read straight from the buffer:
    a lookup reads ~17 of them for a million chunks)."""

    def __init__(self, array: _T, slot: int) -> None:
        o = array._off(slot)
        self._buf = array.t.Bytes
        self._start, self._n = array._vector(o, 4) if o else (0, 0)
        self._table: dict[tuple[int, ...], int] | None = None

    def __len__(self) -> int:
        return self._n

    def _position(self, i: int) -> int:
        pos = self._start + 4 * i
        return pos + _U32.unpack_from(self._buf, pos)[0]

    def __getitem__(self, i: int) -> tuple[int, ...]:
        """The coordinates of reference `i` (ChunkRef.index, slot 0: a `[uint32]`)."""
        buf, table = self._buf, self._position(i)
        vtable = table - _I32.unpack_from(buf, table)[0]
        if _U16.unpack_from(buf, vtable)[0] <= 4:
            return ()
        field = _U16.unpack_from(buf, vtable + 4)[0]
        if not field:
            return ()
        vector = table + field + _U32.unpack_from(buf, table + field)[0]
        n = _U32.unpack_from(buf, vector)[0]
        return struct.unpack_from(f"<{n}I", buf, vector + 4)

    def table(self) -> dict[tuple[int, ...], int]:
        """Coordinates -> position of every reference, read once."""
        if self._table is None:
            self._table = {self[i]: i for i in range(self._n)}
        return self._table

    def find_many(self, coords: Sequence[tuple[int, ...]], expand: Any) -> list[ChunkRef | None]:
        if self._table is None and len(coords) * max(self._n, 2).bit_length() > self._n:
            self.table()
        found: list[int | None]
        if self._table is not None:
            found = [self._table.get(c) for c in coords]
        else:
            found = []
            for c in coords:
                i = bisect.bisect_left(self, c)
                found.append(i if i < self._n and self[i] == c else None)
        return [
            None if i is None else _chunk_ref(_T(Table(self._buf, self._position(i))), expand)
            for i in found
        ]


def parse_manifest(data: bytes, where: str) -> Manifest:
    """A `manifests/<id>` file: array node id -> chunk coordinates -> reference."""
    _, body = payload(data, MANIFEST, where)
    return _parse(where, Manifest, body, where)


def _chunk_ref(ref: _T, expand: Any) -> ChunkRef:
    # ChunkRef: index 0, inline 1, offset 2, length 3, chunk_id 4, location 5,
    # checksum_etag 6, checksum_last_modified 7, compressed_location 8, extra 9.
    inline = ref.raw(1)
    if inline is not None:
        return ChunkRef(inline=inline)
    offset, length = ref.scalar(2, N.Uint64Flags), ref.scalar(3, N.Uint64Flags)
    chunk_id = ref.struct(4, 12)
    if chunk_id is not None:
        return ChunkRef(chunk_id=object_id(chunk_id), offset=offset, length=length)
    location = ref.string(5)
    if location is None:
        compressed = ref.raw(8)
        location = expand(compressed) if compressed is not None else None
    if location is None:
        raise MetadataError(f"chunk {ref.uint32s(0)}: neither inline, native nor virtual")
    modified = ref.scalar(7, N.Uint32Flags)
    return ChunkRef(
        location=location,
        offset=offset,
        length=length,
        etag=ref.string(6),
        last_modified=modified or None,
    )


def _location_expander(dictionary: bytes | None, where: str) -> Any:
    """Decompresses a `compressed_location` with the manifest's zstd dictionary."""
    state: dict[str, Any] = {}

    def expand(compressed: bytes) -> str:
        if "d" not in state:
            if dictionary is None:
                raise MetadataError(f"{where}: a compressed location but no dictionary")
            zdict = zstandard.ZstdCompressionDict(dictionary)
            state["d"] = zstandard.ZstdDecompressor(dict_data=zdict)
        try:
            return state["d"].decompress(compressed, max_output_size=1 << 16).decode()
        except zstandard.ZstdError as error:
            raise MetadataError(f"{where}: corrupt compressed location ({error})") from None

    return expand
