"""The chunk cache: decoded chunks kept in memory, bounded in bytes, served per a recheck policy.

A pool (`ChunkCache`) holds decoded chunks keyed by the store, the object's key, the
chunk's coordinates (inner coordinates' place in the read grid when sharded) and the
version of the object they came from; beside them, per object, the version last seen
and when it was last known current (`checked`: the time the request that showed it was
sent, so never later than the truth). Arrays opened with the same `cache_bytes` share
one pool, so a reopened array finds what an earlier handle cached.

How long a version stays good is the recheck policy, as TensorStore's
`recheck_cached_data`: a read serves an object's cached chunks only when it was checked
at or after its threshold (`ReadSession.threshold`):

- `False`: always (never rechecked);
- `"open"`: at or after the array was opened;
- `True`: at or after this read began (every read revalidates);
- a number of seconds: at most that old.

An object checked earlier is revalidated first (`engine/cached_reads.py`): one
conditional request (`If-None-Match` with its version) that answers "unchanged"
without its bytes. Chunks of a store that tells no version cannot be revalidated:
past their threshold they are dropped and read again (`UNVERSIONED`).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import numbers
import time
import weakref
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

import numpy as np

from aiozarr import config, fork_safe
from aiozarr.byte_cache import LRUByteCache
from aiozarr.codecs import CodecChain
from aiozarr.errors import AiozarrError
from aiozarr.selection.chunk_grid import RectilinearGrid
from aiozarr.selection.indexing import ChunkProjection
from aiozarr.storage.protocol import lasting

#: When a cached chunk must be checked against the store again (see the module's doc).
Recheck: TypeAlias = bool | Literal["open"] | float
#: Where a store's keys are in a pool: the number of the data they name (`key_space`)
#: and the prefix the store puts before them there.
Place: TypeAlias = tuple[int, str]


class _Unversioned:
    """The version of a chunk whose store tells none (see `UNVERSIONED`)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNVERSIONED"


#: The version kept with chunks of a store that tells none (a zarr-python store through
#: `ZarrStore`, an HTTP server without ETags). No request can revalidate them, so they
#: are served only while their policy needs no check (`False`: always; `"open"`: until
#: the array is opened again; seconds: while that young) and read afresh after; under
#: `True` they are not kept.
UNVERSIONED: Hashable = _Unversioned()

#: What an object's record costs in the pool besides its chunks (its key, its version).
_RECORD_BYTES = 256
#: What a held chunk costs besides its elements: the array object (~112 bytes), its key
#: tuple, the LRU's entry and (value, size) pair; tracemalloc measured 380 bytes a chunk
#: (20,000 one-byte chunks put in an `LRUByteCache`; docs/decisions/chunk-cache.md).
_CHUNK_BYTES = 400
#: What a record's entry for one chunk costs (its coordinates, origin and dict slot;
#: measured 197 bytes as above).
_COORDS_BYTES = 200
#: Writes (and deleted prefixes) remembered one by one so that a read that began before
#: one cannot cache what it replaced; older ones are remembered by the newest time among
#: them (`ChunkCache._forgotten`), refusing every read that began before it.
_WRITES_REMEMBERED = 4096


def as_recheck(value: Any, where: str = "cache_recheck") -> Recheck:
    """`value` as a recheck policy (`True`, `False`, `"open"` or seconds >= 0); the
    environment's text forms ("true", "false", "open", "30") too."""
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("open", "true", "false"):
            return "open" if text == "open" else text == "true"
        with contextlib.suppress(ValueError):  # else refused below, as given
            value = float(text)
    if isinstance(value, bool) or value == "open":
        return value  # type: ignore[no-any-return]
    if isinstance(value, numbers.Real) and value >= 0:  # numpy's numbers too
        return float(value)
    raise AiozarrError(
        f"{where}={value!r}: expected True, False, 'open' or a maximum age in seconds (>= 0)"
    )


@dataclass(frozen=True, slots=True)
class CacheSettings:
    """A chunk cache's bound in bytes (0: no cache) and recheck policy."""

    max_bytes: int
    recheck: Recheck

    @classmethod
    def of(cls, cache_bytes: int | None = None, recheck: Any = None) -> CacheSettings:
        """The given settings, the missing ones from `aiozarr.config`."""
        settings = config.get()
        max_bytes = settings.cache_bytes if cache_bytes is None else cache_bytes
        if (
            isinstance(max_bytes, bool)
            or not isinstance(max_bytes, numbers.Integral)  # numpy's integers too
            or max_bytes < 0
        ):
            raise AiozarrError(
                f"cache_bytes={max_bytes!r}: expected a number of bytes >= 0 (0: no cache)"
            )
        recheck = as_recheck(settings.cache_recheck if recheck is None else recheck)
        return cls(int(max_bytes), recheck)


@dataclass(slots=True)
class ObjectRecord:
    """What the pool knows of one object: its version and when it was last known current,
    how its chunks were decoded (`decoding_of`), the coordinates of its chunks held with
    each one's origin in the array, and their mark (`serial`: a number no earlier record
    of any object had, so a chunk left behind by a record gone can never be found
    through a new one)."""

    version: Hashable
    checked: float
    decoding: str
    serial: int
    coords: dict[tuple[int, ...], tuple[int, ...]]
    swept: int = 8  # how many `coords` were left by the last sweep (`ChunkCache._sweep`)


#: Each chain's `decoding_of`, computed once per chain.
_decodings: weakref.WeakKeyDictionary[CodecChain, str] = weakref.WeakKeyDictionary()


def decoding_of(chain: CodecChain) -> str:
    """What decides the values a chunk decodes to besides its bytes: the codecs with
    their configuration (endianness, order, filters, the inner codecs of a shard), the
    data type and the fill value. Another writer may change these in the metadata and
    leave the chunks' bytes (and versions) as they were."""
    found = _decodings.get(chain)
    if found is None:
        spec = chain.spec
        described = [chain.to_metadata(), str(spec.dtype), repr(spec.fill_value)]
        found = _decodings[chain] = json.dumps(described, sort_keys=True, default=repr)
    return found


class ChunkCache:
    """A pool of decoded chunks bounded by `max_bytes` (records included)."""

    # Held weakly: a pool lives as long as an array uses it (`ArrayCache.pool`), so a
    # bound no longer used gives its memory back.
    _pools: weakref.WeakValueDictionary[int, ChunkCache] = weakref.WeakValueDictionary()
    _pools_lock = fork_safe.lock()

    def __init__(self, max_bytes: int) -> None:
        self._lru = LRUByteCache(max_bytes)
        self._lock = fork_safe.lock()
        # Keys written and prefixes deleted (full names), by when, oldest first; the
        # newest time of those no longer remembered one by one.
        self._written: dict[tuple[int, str], float] = {}
        self._deleted: dict[tuple[int, str], float] = {}
        self._forgotten = float("-inf")
        # Each space's number; a space that is an object (an in-memory store) is held
        # by a weak reference, so the pool never keeps a store's data alive: the arrays
        # that use it hold it (`ArrayCache.space`), and once collected its number and
        # chunks go (`_prune`, at the next lookup: a collection may come at any time).
        self._spaces: dict[Hashable, int] = {}
        self._weak: dict[int, weakref.ref[Any]] = {}
        self._collected: list[weakref.ref[Any]] = []
        self._numbers = itertools.count()
        self._serials = itertools.count()

    @classmethod
    def shared(cls, max_bytes: int) -> ChunkCache:
        """The process's pool of `max_bytes` (one per bound while an array uses it)."""
        with cls._pools_lock:
            pool = cls._pools.get(max_bytes)
            if pool is None:
                pool = cls._pools[max_bytes] = cls(max_bytes)
            return pool

    def place_of(self, store: Any) -> Place:
        """Where `store`'s keys are: a small number for the data it reads (the same for
        stores over the same data whatever their read-only flag or root: `key_space`),
        which keys carry as hashing a store for every lookup costs more than the lookup,
        and the prefix its keys take there."""
        return self.enter(store)[0]

    def enter(self, store: Any) -> tuple[Place, Any]:
        """`place_of(store)`, and the object that names its space in the pool: whoever
        uses the place holds it, as the pool forgets a space once that is collected."""
        space, prefix = key_space(store)
        with self._lock:
            self._prune()
            number = self._spaces.get(_lookup(space))
            ref = None if number is None else self._weak.get(number)
            held = space if ref is None else ref()
            if number is None or held is None:  # new, or collected but not yet pruned
                number, held = self._register(space), space
            return (number, prefix), held

    def _register(self, space: Hashable) -> int:
        """A new number for `space`, held weakly where it can be."""
        number = next(self._numbers)
        try:
            ref = weakref.ref(space, self._collected.append)
        except TypeError:  # a value (a tuple, a string): nothing to keep alive
            self._spaces[space] = number
        else:
            self._spaces[ref] = number
            self._weak[number] = ref
        return number

    def known_place(self, store: Any) -> Place | None:
        """`place_of(store)` where the pool holds keys of its data, else None (and the
        store is not remembered: it may be one that must be collected to close)."""
        space, prefix = key_space(store)
        with self._lock:
            self._prune()
            number = self._spaces.get(_lookup(space))
        return None if number is None else (number, prefix)

    @property
    def max_bytes(self) -> int:
        return self._lru.max_bytes

    @property
    def nchunks(self) -> int:
        """How many chunks are held now."""
        return sum(1 for k in self._lru.held_keys() if k[0] == "chunk")

    @property
    def nbytes(self) -> int:
        """Bytes held now (decoded chunks and records), never more than `max_bytes`."""
        return self._lru.nbytes

    def record(self, place: Place, key: str) -> ObjectRecord | None:
        """What the pool knows of `key` in the store at `place`, if anything."""
        found: ObjectRecord | None = self._lru.peek(("object", *_named(place, key)))
        return found

    def chunk(
        self,
        place: Place,
        key: str,
        coords: tuple[int, ...],
        record: ObjectRecord,
        decoding: str,
        origin: tuple[int, ...],
    ) -> np.ndarray | None:
        """The chunk at `coords` of `record`'s object, if held, decoded as a reader whose
        chain is described by `decoding` (`decoding_of`) would decode it, and kept from
        `origin` in the array (an array created again on another grid puts a chunk of
        the same key and coordinates elsewhere)."""
        if record.decoding != decoding or record.coords.get(coords) != origin:
            return None
        found: np.ndarray | None = self._lru.peek(
            ("chunk", *_named(place, key), coords, record.serial)
        )
        return found

    def touch(self, place: Place, key: str, coords: tuple[int, ...], record: ObjectRecord) -> None:
        """Mark a chunk served (most recently used), and its record after it: a record
        is never evicted before the chunks it lists (a write finds them through it)."""
        named = _named(place, key)
        self._lru.get(("chunk", *named, coords, record.serial))
        self._lru.get(("object", *named))

    def confirm(self, place: Place, key: str, version: Hashable, checked: float) -> None:
        """`version` of `key` was current at `checked`."""
        with self._lock:
            found = self.record(place, key)
            if found is not None and found.version == version:
                found.checked = max(found.checked, checked)

    def keep(
        self,
        place: Place,
        key: str,
        coords: tuple[int, ...],
        version: Hashable,
        checked: float,
        chunk: np.ndarray,
        decoding: str,
        origin: tuple[int, ...],
    ) -> None:
        """Hold `chunk`, decoded as `decoding` says from `version` of `key` read by a
        request sent at `checked` or later, whose first element is at `origin` in the
        array; not when `key` was written or deleted since (a write through this process
        drops what it replaced) or a newer version is known."""
        space, name = _named(place, key)
        with self._lock:
            if self._replaced_since(space, name, checked):
                return
            found = self.record(place, key)
            if found is None or found.version != version or found.decoding != decoding:
                if found is not None and found.version != version and found.checked > checked:
                    return  # a newer version is known: this one is stale
                self._drop(place, key)
                found = ObjectRecord(version, checked, decoding, next(self._serials), {})
            found.checked = max(found.checked, checked)
            found.coords[coords] = origin
            chunk.flags.writeable = False
            held = chunk.nbytes + _CHUNK_BYTES
            self._lru.put(("chunk", space, name, coords, found.serial), chunk, held)
            if len(found.coords) >= 2 * found.swept:  # each sweep pays for the keeps since
                self._sweep(space, name, found)
            record_bytes = _RECORD_BYTES + _COORDS_BYTES * len(found.coords)
            self._lru.put(("object", space, name), found, record_bytes)  # after its chunk

    def _sweep(self, space: int, name: str, record: ObjectRecord) -> None:
        """Forget the coordinates of `record`'s chunks evicted since: they count toward
        the bound, and a shard read through would fill its record with them."""
        kept = {
            c: o
            for c, o in record.coords.items()
            if ("chunk", space, name, c, record.serial) in self._lru
        }
        record.coords, record.swept = kept, max(len(kept), 8)

    def _replaced_since(self, space: int, name: str, checked: float) -> bool:
        """Whether `name` of `space` was written, or a prefix of it deleted, through this
        process at or after `checked` (or may have been: a forgotten write was)."""
        if checked <= self._forgotten or self._written.get((space, name), -1.0) >= checked:
            return True
        for (where, prefix), when in reversed(self._deleted.items()):  # newest first
            if when < checked:
                return False
            if where == space and name.startswith(prefix):
                return True
        return False

    def forget(self, place: Place, *keys: str, written: bool = False) -> None:
        """Drop everything held of `keys` in the store at `place`; `written`: they were
        just written, and a read that began before now must not cache what it read."""
        with self._lock:
            now = time.monotonic()  # under the lock: marks are in the order of their times
            for key in keys:
                self._drop(place, key)
                if written:
                    self._mark(self._written, _named(place, key), now)

    def forget_under(self, place: Place, *prefixes: str) -> None:
        """Every key under `prefixes` in the store at `place` was just written or deleted:
        drop what is held of them, and let no read that began before now cache any."""
        with self._lock:
            now = time.monotonic()
            for prefix in prefixes:  # marked first: no chunk kept between listing and drop
                self._mark(self._deleted, _named(place, prefix), now)
            for key in self.objects_under(place, *prefixes):
                self._drop(place, key)

    def _mark(
        self, marks: dict[tuple[int, str], float], named: tuple[int, str], now: float
    ) -> None:
        """Remember `named` at `now`, the newest last; the oldest past the bound are
        forgotten into `_forgotten`, so no memory bound lets a stale chunk in."""
        marks.pop(named, None)
        marks[named] = now
        while len(marks) > _WRITES_REMEMBERED:
            oldest = next(iter(marks))
            self._forgotten = max(self._forgotten, marks.pop(oldest))

    def objects_under(self, place: Place, *prefixes: str) -> list[str]:
        """The keys under any of `prefixes` of the store at `place` that chunks are
        held of (one pass over what is held)."""
        unders = tuple(_named(place, prefix)[1] for prefix in prefixes)
        return [
            k[2][len(place[1]) :]
            for k in self._lru.held_keys()
            if k[0] == "object" and k[1] == place[0] and k[2].startswith(unders)
        ]

    def clear(self) -> None:
        """Drop every chunk held."""
        with self._lock:
            self._lru.clear()

    def _drop(self, place: Place, key: str) -> None:
        found = self.record(place, key)
        if found is None:
            return
        space, name = _named(place, key)
        self._lru.invalidate(
            ("object", space, name),
            *(("chunk", space, name, c, found.serial) for c in found.coords),
        )

    def _prune(self) -> None:
        """Forget the spaces collected since the last call, and all held of them."""
        gone = set()
        while self._collected:
            ref = self._collected.pop()
            number = self._spaces.pop(ref, None)
            if number is not None and self._weak.get(number) is ref:
                del self._weak[number]
                gone.add(number)
        if gone:
            self._lru.invalidate(*(k for k in self._lru.held_keys() if k[1] in gone))
            for marks in (self._written, self._deleted):
                for named in [n for n in marks if n[0] in gone]:
                    del marks[named]


def _lookup(space: Hashable) -> Hashable:
    """How `space` is found among the pool's spaces: through a weak reference to it
    where it takes one (equal to the one kept while both are alive)."""
    try:
        return weakref.ref(space)
    except TypeError:
        return space


def _named(place: Place, key: str) -> tuple[int, str]:
    """`key` of the store at `place` by its full name in the pool: (space, prefix + key)."""
    return place[0], place[1] + key


def _live_pools() -> list[ChunkCache]:
    """Every pool an array uses now (a pool nobody uses holds nothing to forget)."""
    with ChunkCache._pools_lock:
        return list(ChunkCache._pools.values())


def forget_written(store: Hashable, keys: tuple[str, ...]) -> None:
    """`keys` of `store` were just written (or deleted) through this process: every pool
    drops what it holds of them, whichever array handle cached it."""
    for pool in _live_pools():
        place = pool.known_place(store)
        if place is not None:
            pool.forget(place, *keys, written=True)


def forget_deleted(store: Hashable, *prefixes: str) -> None:
    """Every key of `store` under any of `prefixes` was just written or deleted through
    this process (a node overwritten or removed; keys written through a store of
    zarr-python's, a prefix being a key there): every pool drops what it holds of them."""
    for pool in _live_pools():
        place = pool.known_place(store)
        if place is not None:
            pool.forget_under(place, *prefixes)


def key_space(store: Any) -> tuple[Hashable, str]:
    """The data `store`'s keys name and the prefix it puts before them
    (`Store.key_space`); a store without that method (not aiozarr's) is a space of its
    own."""
    if hasattr(store, "key_space"):
        return store.key_space()  # type: ignore[no-any-return]
    return store, ""


@dataclass(frozen=True, slots=True)
class ArrayCache:
    """One array's use of a pool: its store, its recheck policy and when it was opened."""

    pool: ChunkCache
    store: Any
    place: Place  # where the store's keys are in the pool
    recheck: Recheck
    opened_at: float
    space: Any = None  # what names the place's space: held so the pool keeps the place

    @classmethod
    def opened(cls, store: Any, settings: CacheSettings | None = None) -> ArrayCache | None:
        """The cache of an array in `store` opened now, per `settings` (None: those of
        `aiozarr.config`); None when off."""
        settings = CacheSettings.of() if settings is None else settings
        if settings.max_bytes == 0:
            return None
        pool = ChunkCache.shared(settings.max_bytes)
        place, space = pool.enter(store)
        return cls(pool, store, place, settings.recheck, time.monotonic(), space)

    def session(self, grid: tuple[int, ...] | RectilinearGrid) -> ReadSession:
        """The cache as one read, beginning now, of chunks on `grid` sees it."""
        began = time.monotonic()
        recheck = self.recheck
        if recheck is False:
            threshold = float("-inf")
        elif recheck == "open":
            threshold = self.opened_at
        elif recheck is True:
            threshold = began
        else:
            threshold = began - float(recheck)
        return ReadSession(self, began, threshold, grid)

    def forget(self, *keys: str, written: bool = False) -> None:
        self.pool.forget(self.place, *keys, written=written)


@dataclass(frozen=True, slots=True)
class ReadSession:
    """The cache within one read: objects checked at or after `threshold` are served
    as held; what the read fetches counts as checked at `began`. `grid`: the grid the
    read's chunks lie on (`StoredArray.read_grid`), which places each chunk in the
    array."""

    cache: ArrayCache
    began: float
    threshold: float
    grid: tuple[int, ...] | RectilinearGrid

    def origin(self, coords: tuple[int, ...]) -> tuple[int, ...]:
        """Where chunk `coords` of the read grid begins in the array."""
        grid = self.grid
        if isinstance(grid, RectilinearGrid):
            return tuple(int(a.start_of(c)) for a, c in zip(grid.axes, coords, strict=True))
        return tuple(c * n for c, n in zip(coords, grid, strict=True))

    def count(self, event: str, n: int = 1) -> None:
        """Add to the store's statistics (`store.stats()`: `cache_hits`, ...)."""
        if n:
            self.cache.store.runtime.statistics.count(event, n)

    def decode_kept(
        self,
        key: str,
        chain: CodecChain,
        data: Any,
        projection: ChunkProjection,
        version: Hashable | None,
        out: np.ndarray,
    ) -> None:
        """Decode a chunk whole into a new array, keep it and put its selected values in
        `out`. A chunk without a version is kept as `UNVERSIONED`, except where every
        read checks (`True`): nothing could ever serve it there. A chunk of objects
        (strings, JSON values) is not kept: a copy of it shares its elements, which a
        caller may change, and its bytes do not count what they hold."""
        chunk = np.empty(chain.spec.shape, dtype=chain.spec.dtype)
        chain.decode_into(data, chunk, key)
        out[projection.out_selection] = chunk[projection.chunk_selection]
        if chunk.dtype.hasobject:
            return
        if not lasting(version):  # nothing can revalidate it
            if self.cache.recheck is True:
                return
            version = UNVERSIONED
        place, coords = self.cache.place, projection.chunk_coords
        origin = self.origin(coords)
        pool, decoding = self.cache.pool, decoding_of(chain)
        pool.keep(place, key, coords, version, self.began, chunk, decoding, origin)
