"""Runtime settings: defaults, `AIOZARR_*` environment variables, and scoped overrides.

    aiozarr.config.get().coalesce_gap_bytes                  # or config.get("coalesce_gap_bytes")
    with aiozarr.config.set(max_inflight_bytes=64 << 20):   # for a block
        ...
    aiozarr.config.set(max_concurrency=64)                   # from now on, everywhere

Each default names the benchmark (in `benchmarks/`) or the reasoning that chose it.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import difflib
import math
import numbers
import os
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields
from typing import Any, overload

from aiozarr import fork_safe
from aiozarr.errors import AiozarrError


@dataclass(frozen=True)
class Config:
    """All aiozarr settings. Units are in the names."""

    # Requests in flight per store. Object stores answer many parallel GETs well, and
    # bytes in flight are bounded by `max_inflight_bytes`, not by this. At 64 opening a
    # 200-array group read its members' metadata in 4 waves; at 256 in one
    # (benchmarks: group workload, 20 ms: 173 ms -> 149 ms). A 503/429 halves it.
    max_concurrency: int = 256
    # Two ranges of one key closer than this are fetched as one request. Requests run in
    # parallel, so merging saves request count more than time, and a gap as large as a
    # compressed inner chunk reads mostly unneeded bytes: at 256 KiB the drill workload
    # read 29 MB for 8 MB of chunks (benchmarks: drill and slab workloads). Once a store's
    # large reads have measured its link, the gap grows to what one answer's body moves
    # in the time one more request costs (at most 1 MiB; `storage/policy/shaping.py`).
    coalesce_gap_bytes: int = 64 << 10
    # The part size: a request larger than this (a coalesced run, a shard needed whole) is
    # read as concurrent ranged parts, each decoded as it lands (a value written goes up
    # in parts of this size, but never under S3's least part, 5 MiB). One S3 connection
    # streams ~90 MB/s, so a part costs its first byte (~20 ms) plus size / 90 MB/s:
    # 2 MiB parts are half first byte, half transfer. Cloud profile, quick mode
    # (benchmarks: median of 5, two rounds): slab 120-121 ms at 2 MiB vs 147-149 at 4 MiB
    # (its runs of chunks were 4 MiB, 65 ms each on one connection); full 166-172 vs
    # 166-170, large-shard 149-188 vs 168-179, big-read 472-505 vs 502-522; 1 MiB was no
    # faster than 2 (slab 126-128). Where bandwidth is free (20 ms profile) the extra
    # requests cost CPU: full 141-145 vs 128-134 ms, large-shard 129-133 vs 125-128.
    # Earlier, 16 MiB 0.28 / 0.26 s and 8 MiB 0.19 / 0.20 s on full / large-shard. Once a
    # store's large reads have measured its link, a part grows to what one answer moves in
    # the time another takes to begin (at most 16 MiB): fewer requests where bandwidth is
    # free, this size where bodies are slow (`storage/policy/shaping.py`).
    max_request_bytes: int = 2 << 20
    # Requests a read aims to keep in flight: a read of fewer objects (shards needed whole,
    # coalesced runs; for shards, counting the store's requests already in flight) than
    # this reads them in parts of max_request_bytes; of as many or more, one request each
    # (`storage/policy/shaping.py::RequestShape.counts`). Full mode (512 MiB, 16 shards of 32 MiB),
    # median of 3 against TensorStore in the same run, at 16 (16 whole GETs) and at 32 (the
    # shards in 2 MiB parts, 145 requests): full read on the cloud profile 0.82x vs 0.60x
    # TensorStore's time, client CPU 1.00x vs 1.69x its CPU; at 20 ms 0.86x vs 0.88x, CPU
    # 1.08x vs 1.22x; first-read peak RSS 665 vs 829 MiB. The single large shard is read
    # in parts either way (cloud 2.0-2.4x TensorStore).
    connection_target: int = 16
    # Parts of one object in flight at once (one read of a large shard or run, one
    # multipart upload). Each part is its own connection's bandwidth on a cloud store;
    # the bound keeps a 1 GiB object from opening 512 connections at once. At 4 MiB
    # parts, 8, 16 and 32 read the large shard (64 MiB, 27 MB stored) alike (0.15 s,
    # cloud profile); at 2 MiB parts 16 take it, and any 32 MiB, in one wave.
    parts_per_object: int = 16
    # A shard needed whole is read in parts from its first byte on; its stored size is
    # known only from its index, one round trip in. The parts up to this fraction of its
    # decoded size (a guess of its stored size: zstd and blosc keep scientific floats at
    # about half) go out beside the index, the rest when it lands; parts the index shows
    # to lie past the shard's end are dropped (a request, no bytes). Cloud profile,
    # large-shard (`python -m benchmarks.timeline`, three runs each): last byte at
    # 90-121 ms, read done at 204-224 ms; without (0: the first part alone) 125-156 and
    # 241-260 ms. At 1.0 the full read sent 35 requests for 19 (16 answered 416).
    read_ahead_fraction: float = 0.5
    # Compressed bytes a read may hold at once before it waits for decoding to catch up.
    # A bound on memory that costs speed only where it is small against latency: bytes
    # held / round trip bounds throughput (benchmarks: big-read, 1/16 of the array,
    # 4 MiB: as fast as the full read at 0 ms, 2x its time at 20 ms, where 4 MiB per
    # ~25 ms round trip is ~160 MB/s). The default holds any read's parts in parallel.
    max_inflight_bytes: int = 512 << 20
    # The largest metadata document read (zarr.json, .zarray, .zmetadata, ...): a larger
    # one raises `ValueTooLargeError` before it is read, instead of taking ~3x its size in
    # memory to parse it. Real documents are kilobytes; consolidated metadata of a
    # 50,000-array hierarchy is ~50 MiB at ~1 KiB per array, so 64 MiB refuses only what
    # cannot be metadata (a 2 GiB `zarr.json` peaked at 6.2 GB RSS before failing).
    max_metadata_bytes: int = 64 << 20
    # Codec thread pool size; 0 means the number of CPUs: decoding is the bound of a full
    # read, and numcodecs releases the GIL (benchmarks: probe-decode, a pool of one thread
    # per core).
    codec_threads: int = 0
    # Shard indexes kept per array (bytes). A 32 MiB shard of 256 KiB chunks has a 2 KiB
    # index, so 16 MiB holds the indexes of about 256 TB of such shards.
    shard_index_cache_bytes: int = 16 << 20
    # Decoded chunks kept in memory across reads (bytes; 0: none), in one pool shared by
    # every array opened with the same bound (`open_array(cache_bytes=...)` sets one
    # array's). Off by default: a read that is not repeated only pays for the copy.
    # Sliding windows and repeated reads decode each chunk once (benchmarks: cache rows).
    cache_bytes: int = 0
    # When cached chunks are checked against the store again, as TensorStore's
    # `recheck_cached_data`: "open" (those cached before the array was opened are
    # revalidated once), True (every read revalidates: one conditional request per
    # object, no bytes when unchanged), False (never), or a maximum age in seconds.
    cache_recheck: bool | str | float = "open"
    # Parsed icechunk snapshots and manifests kept for the process (bytes of their
    # payloads): they are immutable and read before any chunk they list, but a
    # repository may have more of them than fit in memory; the least recently used go
    # first (storage/references/icechunk/kept.py).
    icechunk_manifest_cache_bytes: int = 256 << 20
    # The most an icechunk metadata file (snapshot, manifest, repo) may inflate to: a
    # larger one raises `MetadataError` naming the file, a bound against a hostile zstd
    # frame. A manifest of a million virtual chunks is ~100 MiB.
    icechunk_max_payload_bytes: int = 1 << 30
    # Retries for idempotent store operations (storage/policy/retry.py). `retry_attempts` counts
    # every try, the first included; each wait is uniform in [0, min(max, base * 2**n)]
    # ("full jitter": retrying clients spread out instead of returning in lockstep), and
    # the whole operation gives up once `retry_deadline_s` has passed. Ten tries, as
    # obstore's own default: against a store failing 27 % of requests (503s, resets, cut
    # bodies: tests/reliability/test_flaky_reads.py's mix) a request gives up once in
    # 500,000, where six gave up once in 2,500 and ended 1-2 of 20 whole reads of a
    # 64 MiB array in 2 MiB parts under that mix.
    retry_attempts: int = 10
    retry_base_delay_s: float = 0.05
    retry_max_delay_s: float = 5.0
    retry_deadline_s: float = 120.0
    # Per-request timeout: a floor plus time for the bytes at a pessimistic rate.
    request_timeout_s: float = 30.0
    request_timeout_min_bytes_per_s: float = 1 << 20
    # After a 503 / 429 halves a store's request limit, it grows back by one request per
    # this many successes (additive increase: about one step per round at a limit of 16).
    throttle_recovery_successes: int = 16
    # Hedged reads (object stores only): a second copy of a read is sent, and the first
    # answer wins, when the first copy's answer has not begun after hedge_p95_multiple x
    # the p95 of recent first-byte waits (every size; until 16 waits are known, 2 x their
    # median; at most twice the next limit), or when it has run hedge_p95_multiple x the
    # p95 of recent reads of its size (once 16 of its size are known); never sooner than
    # hedge_min_delay_s, and for at most hedge_max_fraction of requests plus a burst of
    # 10. A duplicate after the p95, as "The Tail at Scale" advises, costs ~5 % more
    # requests. Cloud profile (benchmarks, 2 % of answers +200 ms before their first
    # byte): random (one-element reads) p99 225 ms without, 49 ms with (median 25 ms;
    # 102-105 requests per 100 reads); the drill (35 requests, so half its runs meet the
    # tail) median 274 ms without hedges that can start cold, 126 ms with them.
    hedge_reads: bool = True
    hedge_p95_multiple: float = 1.0
    hedge_min_delay_s: float = 0.02
    hedge_max_fraction: float = 0.05
    # Reads over hedge_large_bytes, and whole values (size unknown), wait at least
    # hedge_large_min_delay_s for a first byte before their duplicate: it moves their
    # bytes twice should the first answer then begin. On a busy machine (0 ms profile,
    # two cores) answers of 2 MiB parts were read 20-100 ms late and, at the 20 ms floor,
    # sent twice (full: 25-29 requests, 45-53 MB instead of 19 and 33); at 0.1 s none
    # were, on any profile. Cloud profile, tails on parts and whole values hedged at it
    # (median of 5, two rounds, against the same rows unhedged): full-unsharded 168-173 ms
    # vs 259-276, full-v2 162-166 vs 262-299, group 193-209 vs 293-361; the repeats of
    # full and large-shard that met a tail 202-211 ms vs 300-305.
    hedge_large_bytes: int = 512 << 10
    hedge_large_min_delay_s: float = 0.1
    # Chunks equal to the fill value are not stored.
    write_empty_chunks: bool = False
    # Whether only this process writes the arrays it writes. False: a read-modify-write
    # (part of a chunk or shard) goes out only on a condition the store's server was
    # found to honour (If-Match / If-None-Match: one probe per store,
    # storage/protocol/write_conditions.py)
    # with the version its read carried, else it raises `ConditionalWriteUnsupportedError`
    # before writing anything: behind a proxy that dropped the conditions, four writer
    # processes lost 30-32 of 48 updates with every call succeeding, and 28-30 of 48
    # where reads carried no ETag. True: no probe, and such writes go out without a
    # condition (the last writer wins): safe only where one process writes. An append
    # whose answer was lost then takes the growth it finds as its own (`node_updates`).
    single_writer: bool = False
    # Whether a v3 directory without `zarr.json` but with keys below it is a group: the
    # implicit groups of the 2020 v3 draft, which Zarr v3.0 dropped. False, as in
    # zarr-python 3: opening it raises `GroupNotFoundError` and listings skip it, so a
    # folder that is not Zarr (`/etc`) is not read as an empty group. The 2020 draft
    # format keeps its implicit groups either way.
    implicit_groups: bool = False
    # How long a sync-facade call may block before it is cancelled and raises
    # `SyncTimeoutError` (None: no limit; a finite number > 0 of seconds, and infinity
    # is taken as None).
    sync_timeout_s: float | None = None
    # Whether the sync API's background event loop is uvloop's (where uvloop is
    # installed: a dependency but on Windows) rather than asyncio's. Each store answer
    # and decoded chunk wakes the loop from another thread, which costs asyncio a Python
    # call and a pipe write: a cold drill (69 requests, 128 chunks) took 87-91 ms of CPU
    # instead of 94-97 at 0 ms, obstore's threads a quarter less (`python -m
    # benchmarks.loop_cpu`). Read when the loop starts: on the first sync call, and
    # again in a forked child.
    sync_uvloop: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "sync_timeout_s", _timeout_setting(self.sync_timeout_s))


def _timeout_setting(value: Any) -> float | None:
    """`sync_timeout_s` checked: None, or a finite number of seconds > 0 (inf: None)."""
    if value is None:
        return None
    number = value if isinstance(value, numbers.Real) and not isinstance(value, bool) else None
    if number == math.inf:
        return None
    if number is None or not math.isfinite(number) or number <= 0:
        raise AiozarrError(
            f"the setting sync_timeout_s must be None or a finite number of seconds > 0, "
            f"got {value!r}"
        )
    return float(number)


_current: contextvars.ContextVar[Config | None] = contextvars.ContextVar(
    "aiozarr_config", default=None
)
_base: Config | None = None
_NAMES = tuple(field.name for field in fields(Config))


def _coerce(name: str, kind: type, text: str) -> Any:
    try:
        if kind is bool:
            lowered = text.strip().lower()
            if lowered in ("1", "true", "yes", "on"):
                return True
            if lowered in ("0", "false", "no", "off"):
                return False
            raise ValueError(text)
        return kind(text)
    except ValueError:
        raise AiozarrError(
            f"environment variable AIOZARR_{name.upper()}={text!r} is not a valid {kind.__name__}"
        ) from None


def _from_environment() -> Config:
    values: dict[str, Any] = {}
    for field in fields(Config):
        text = os.environ.get(f"AIOZARR_{field.name.upper()}")
        if text is not None:
            kind = float if field.name == "sync_timeout_s" else type(field.default)
            values[field.name] = _coerce(field.name, kind, text)
    return Config(**values)


@overload
def get() -> Config: ...


@overload
def get(key: str) -> Any: ...


def get(key: str | None = None) -> Any:
    """The settings in force here: the innermost `set` block, else environment + defaults.
    `get("max_concurrency")`, as zarr-python's `config.get(key)`, is that one setting's
    value; an unknown name is a `KeyError` naming the close ones."""
    global _base
    current = _current.get()
    if current is None:
        if _base is None:
            _base = _from_environment()
        current = _base
    if key is None:
        return current
    if key not in _NAMES:
        close = difflib.get_close_matches(key, _NAMES, n=3)
        hint = f"; did you mean {' or '.join(map(repr, close))}?" if close else ""
        raise KeyError(f"unknown aiozarr setting {key!r}{hint} (all: aiozarr.config.get())")
    return getattr(current, key)


def process_settings() -> Config:
    """The process-wide settings (environment, defaults and plain `set` calls), whatever
    `set` block the caller is in."""
    global _base
    if _base is None:
        _base = _from_environment()
    return _base


class Change(contextlib.AbstractContextManager[Config]):
    """What `set` returns: the change is in force from the call on; as a `with` block it
    is scoped to the block instead (and to tasks started in it)."""

    def __init__(self, changes: dict[str, Any]) -> None:
        unknown = sorted(k for k in changes if k not in {f.name for f in fields(Config)})
        if unknown:
            raise AiozarrError(f"unknown aiozarr setting(s): {', '.join(unknown)}")
        self._changes = changes
        self._previous = get()
        self.config = dataclasses.replace(self._previous, **changes)
        self._token: contextvars.Token[Config | None] | None = None
        self._in_block = _current.get() is not None
        self._published = True  # a plain call: in force at once
        if self._in_block:  # for the rest of the enclosing block
            _current.set(self.config)
        else:  # for the process
            with _base_lock:
                _pending.append((weakref.ref(self), changes))
                _refold()

    def __enter__(self) -> Config:
        if self._published:
            # Entered after all: the change belongs to the block, so take back the plain
            # call's effect on the process, or on the enclosing block.
            self._published = False
            if self._in_block:
                if _current.get() is self.config:
                    _current.set(self._previous)
            else:
                with _base_lock:
                    _pending[:] = [(ref, c) for ref, c in _pending if ref() is not self]
                    _refold()
            self.config = dataclasses.replace(get(), **self._changes)
        self._token = _current.set(self.config)
        return self.config

    def __exit__(self, *exc_info: object) -> None:
        if self._token is not None:
            _current.reset(self._token)
            self._token = None


# The process's settings are the environment's with every plain `set` call applied in
# order. A call whose `Change` still lives may yet be entered as a block, which takes it
# back (`_pending`); the rest are folded into `_settled` for good. Taking one back is
# folding the others again: never restoring a snapshot, which held other threads'
# changes of the moment.
_base_lock = fork_safe.lock()
_settled: Config | None = None
_pending: list[tuple[Callable[[], Change | None], dict[str, Any]]] = []


def _gone() -> None:  # the reference of changes merged once their `Change` was gone
    return None


def _refold() -> None:
    """Recompute the process's settings from `_settled` and `_pending` (lock held); fold
    changes whose `Change` is gone: into `_settled` where none before them lives, else
    merged with the one before them if it is gone too."""
    global _base, _settled
    settled = _settled if _settled is not None else _from_environment()
    kept: list[tuple[Callable[[], Change | None], dict[str, Any]]] = []
    for ref, changes in _pending:
        if ref() is None and not kept:
            settled = dataclasses.replace(settled, **changes)
        elif ref() is None and kept[-1][0]() is None:
            kept[-1] = (_gone, {**kept[-1][1], **changes})
        else:
            kept.append((ref, changes))
    _pending[:] = kept
    _settled = base = settled
    for _, changes in kept:
        base = dataclasses.replace(base, **changes)
    _base = base


def set(**changes: Any) -> Change:
    """Change settings: `config.set(max_concurrency=64)` changes them for the process (or
    for the rest of the enclosing `with config.set(...)` block); `with config.set(...):`
    changes them only inside the block, and in tasks it starts (other threads see it
    only between the call and the block's start)."""
    return Change(changes)


@contextlib.contextmanager
def use(settings: Config) -> Iterator[Config]:
    """Put a whole `Config` in force for a block (the sync facade carries the caller's)."""
    token = _current.set(settings)
    try:
        yield settings
    finally:
        _current.reset(token)
