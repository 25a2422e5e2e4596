"""Coalesce, split and slice back byte ranges of one key (pure; no I/O).

`plan(wanted)` decides which requests to send for a list of wanted ranges; its
`slice_back(fetched)` cuts the answers back into one buffer per wanted range,
as zero-copy memoryviews where a wanted range lies inside one fetched range.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, overload

from aiozarr.byte_range import ByteRange
from aiozarr.errors import CodecError


@dataclass(frozen=True, slots=True)
class _Piece:
    """Where a wanted range comes from: fetched requests `first..last` (inclusive)."""

    first: int
    last: int
    start: int  # offset of the wanted bytes within request `first`
    length: int | None  # None: to the end of the request (suffix / open / whole)


@dataclass(frozen=True)
class RangePlan:
    """The requests to send for some wanted ranges of one key, and how to answer each."""

    wanted: tuple[ByteRange | None, ...]
    fetch: Sequence[ByteRange | None]  # `Requests`: each part made when asked for
    _pieces: tuple[_Piece, ...]

    def slice_back(self, fetched: Sequence[Any]) -> list[memoryview]:
        """One buffer per wanted range, cut from the answers to `fetch` (same order).

        An answer shorter than its request means the value ends there, so the wanted
        ranges in it are clipped, as `Store.get` clips a range past the end. An answer
        longer than its request (a server that ignored the range), or a short part
        followed by more bytes, cannot be placed and raises `CodecError`.

        `fetched` may stop before the last request where one of its answers is short:
        the value ends there, so the requests after them lie past its end and would
        answer nothing (a reader need not send them; `read_parts_until_end`).
        """
        views = [memoryview(b).cast("B") for b in fetched]
        if len(views) > len(self.fetch) or (
            len(views) < len(self.fetch) and not _any_short(self.fetch, views)
        ):
            raise ValueError(f"expected {len(self.fetch)} answers, got {len(fetched)}")
        for asked, view in zip(self.fetch, views, strict=False):
            refuse_long(asked, view)
        out: list[memoryview] = []
        for wanted, piece in zip(self.wanted, self._pieces, strict=True):
            if piece.first >= len(views):  # past the value's end
                view = memoryview(b"")
            elif piece.first == piece.last:
                view = views[piece.first]
            else:  # a range split into parts: join them (the only copy we make)
                parts = views[piece.first : piece.last + 1]
                for k in range(len(parts) - 1):
                    asked = self.fetch[piece.first + k]
                    if (
                        asked is not None
                        and len(parts[k]) != asked.length
                        and any(len(later) for later in parts[k + 1 :])
                    ):
                        raise CodecError(
                            f"short read: asked for {asked}, got {len(parts[k])} bytes "
                            f"while reading {wanted}"
                        )
                view = memoryview(b"".join(parts))
            stop = None if piece.length is None else piece.start + piece.length
            out.append(view[piece.start : stop])
        return out


@dataclass(frozen=True, slots=True)
class Run:
    """Bounded ranges of one key read as one request (`fetch`, from the first byte any
    of them wants to the last): `cut` gives each range its part of the answer.

    What `plan` makes of ranges that coalesce into one request no larger than a part,
    without its general machinery: a batch's runs of small ranges are most of its
    requests, each planned and cut on the event loop."""

    fetch: ByteRange
    #: where each wanted range lies in the answer: (offset in it, length)
    spans: tuple[tuple[int, int], ...]

    @classmethod
    def of(cls, wanted: Sequence[ByteRange | None], max_bytes: int) -> Run | None:
        """The run that reads every one of `wanted` in one request of at most
        `max_bytes`; None where one is not bounded or they span more."""
        bounded: list[tuple[int, int]] = []
        for byte_range in wanted:
            if byte_range is None or byte_range.suffix is not None or byte_range.length is None:
                return None
            bounded.append((byte_range.offset, byte_range.length))
        start = min(offset for offset, _ in bounded)
        stop = max(offset + length for offset, length in bounded)
        if stop - start > max_bytes:
            return None
        spans = tuple((offset - start, length) for offset, length in bounded)
        return cls(ByteRange.of(start, stop - start), spans)

    def cut(self, answer: Any) -> list[memoryview]:
        """Each wanted range's bytes in `answer`, as views; clipped where the answer is
        short (the value ends inside the run). A longer answer raises `CodecError`."""
        view = memoryview(answer).cast("B")
        refuse_long(self.fetch, view)
        return [view[offset : offset + length] for offset, length in self.spans]


def is_short(asked: ByteRange | None, answer: Any) -> bool:
    """Whether `answer` holds fewer bytes than the bounded range `asked` (the value
    ends inside it or before it)."""
    return (
        asked is not None and asked.length is not None and memoryview(answer).nbytes < asked.length
    )


def _any_short(fetch: Sequence[ByteRange | None], views: Sequence[memoryview]) -> bool:
    return any(is_short(asked, view) for asked, view in zip(fetch, views, strict=False))


def requested_bytes(byte_range: ByteRange | None) -> int | None:
    """How many bytes a range asks for, when that is known without the value's size."""
    if byte_range is None:
        return None
    if byte_range.suffix is not None:
        return byte_range.suffix
    return byte_range.length


def refuse_long(asked: ByteRange | None, answer: Any) -> None:
    """Raise `CodecError` if `answer` is longer than the range `asked` (a server that
    ignored the range answered with more): its bytes cannot be placed."""
    wanted = requested_bytes(asked)
    got = memoryview(answer).nbytes
    if wanted is not None and got > wanted:
        raise CodecError(f"long read: asked for {asked}, got {got} bytes")


def coalesce(bounded: Sequence[tuple[int, int]], gap_bytes: int) -> list[tuple[int, int]]:
    """Merge `(start, stop)` ranges whose gap is at most `gap_bytes`; sorted output."""
    merged: list[tuple[int, int]] = []
    for start, stop in sorted(bounded):
        if merged and start - merged[-1][1] <= gap_bytes:
            if stop > merged[-1][1]:
                merged[-1] = (merged[-1][0], stop)
        else:
            merged.append((start, stop))
    return merged


def split(start: int, stop: int, max_request_bytes: int) -> Parts:
    """`(start, stop)` cut into consecutive parts of at most `max_request_bytes`, as a
    sequence that makes each part when it is asked for: a range's length is a claim
    (a reference's, an index's) that may be far beyond the value's end, and nothing is
    built in proportion to it."""
    if max_request_bytes <= 0 or stop - start <= max_request_bytes:
        return Parts(start, stop, max(stop - start, 1))
    return Parts(start, stop, max_request_bytes)


@dataclass(frozen=True, slots=True)
class Parts(Sequence[ByteRange]):
    """The parts of `(start, stop)`, `step` bytes each (the last one shorter), made on
    demand: `len` and indexing cost the same for two parts as for 2**40."""

    start: int
    stop: int
    step: int

    def __len__(self) -> int:
        return max(1, -(-(self.stop - self.start) // self.step))

    @overload
    def __getitem__(self, i: int) -> ByteRange: ...
    @overload
    def __getitem__(self, i: slice) -> list[ByteRange]: ...
    def __getitem__(self, i: int | slice) -> ByteRange | list[ByteRange]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        s = self.start + i * self.step
        return ByteRange.of(s, min(s + self.step, self.stop) - s)


class Requests(Sequence["ByteRange | None"]):
    """A plan's requests, in order: runs of parts (`Parts`) and single requests, each
    part made when it is asked for (iterate, index: never a list of them all)."""

    def __init__(self) -> None:
        self._runs: list[Parts | ByteRange | None] = []
        self._firsts: list[int] = []  # the index of each run's first request
        self._count = 0

    def append(self, request: ByteRange | None) -> None:
        self._add(request, 1)

    def extend_parts(self, parts: Parts) -> None:
        self._add(parts, len(parts))

    def _add(self, run: Parts | ByteRange | None, count: int) -> None:
        self._runs.append(run)
        self._firsts.append(self._count)
        self._count += count

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, i: int) -> ByteRange | None: ...
    @overload
    def __getitem__(self, i: slice) -> list[ByteRange | None]: ...
    def __getitem__(self, i: int | slice) -> ByteRange | list[ByteRange | None] | None:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += self._count
        if not 0 <= i < self._count:
            raise IndexError(i)
        n = bisect.bisect_right(self._firsts, i) - 1
        run = self._runs[n]
        return run[i - self._firsts[n]] if isinstance(run, Parts) else run

    def __iter__(self) -> Iterator[ByteRange | None]:
        for run in self._runs:
            if isinstance(run, Parts):
                yield from (run[k] for k in range(len(run)))
            else:
                yield run


def plan(
    wanted: Sequence[ByteRange | None],
    *,
    gap_bytes: int,
    max_request_bytes: int,
) -> RangePlan:
    """Requests that serve every wanted range of one key.

    Bounded ranges within `gap_bytes` of each other become one request; requests over
    `max_request_bytes` are split. Suffix, open-ended and whole-value reads cannot be
    merged without knowing the size, so each is its own request (identical ones shared).
    """
    fetch = Requests()
    pieces: list[_Piece | None] = [None] * len(wanted)

    unbounded: dict[ByteRange | None, int] = {}
    bounded: list[tuple[int, int, int]] = []  # (start, stop, wanted index)
    for i, byte_range in enumerate(wanted):
        if byte_range is None or byte_range.end is None:
            if byte_range not in unbounded:
                unbounded[byte_range] = len(fetch)
                fetch.append(byte_range)
            pieces[i] = _Piece(unbounded[byte_range], unbounded[byte_range], 0, None)
        else:
            bounded.append((byte_range.offset, byte_range.end, i))

    bounded.sort()
    j = 0
    for start, stop in coalesce([(s, e) for s, e, _ in bounded], gap_bytes):
        first = len(fetch)
        parts = split(start, stop, max_request_bytes)
        fetch.extend_parts(parts)

        def part_of(
            offset: int, start: int = start, count: int = len(parts), step: int = parts.step
        ) -> int:
            return min((offset - start) // step, count - 1)

        # Groups are sorted and disjoint, so the wanted ranges of this group come next.
        while j < len(bounded) and bounded[j][0] <= stop:
            s, e, i = bounded[j]
            lo, hi = part_of(s), part_of(max(e - 1, s))
            pieces[i] = _Piece(first + lo, first + hi, s - parts[lo].offset, e - s)
            j += 1
    return RangePlan(tuple(wanted), fetch, tuple(p for p in pieces if p is not None))


def group(
    wanted: Sequence[ByteRange | None], *, gap_bytes: int, max_request_bytes: int
) -> list[list[int]]:
    """Indices of `wanted` in groups that can each be fetched by one request.

    Bounded ranges closer than `gap_bytes` share a group while the group spans at most
    `max_request_bytes` (a single larger range is a group of its own, split by `plan`).
    Suffix, open-ended and whole-value reads are groups of their own. Fetching groups
    separately lets their answers be used as each one lands.
    """
    groups: list[list[int]] = []
    bounded = sorted(
        (r.offset, r.end, i) for i, r in enumerate(wanted) if r is not None and r.end is not None
    )
    start = stop = -1
    for s, e, i in bounded:
        if (
            groups
            and start >= 0
            and s - stop <= gap_bytes
            and max(stop, e) - start <= max_request_bytes
        ):
            groups[-1].append(i)
            stop = max(stop, e)
        else:
            groups.append([i])
            start, stop = s, e
    groups += [[i] for i, r in enumerate(wanted) if r is None or r.end is None]
    return groups
