"""Coalesce, split and slice back byte ranges of one key (pure; no I/O).

`plan(wanted)` decides which requests to send for a list of wanted ranges; its
`slice_back(fetched)` cuts the answers back into one buffer per wanted range,
as zero-copy memoryviews where a wanted range lies inside one fetched range.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

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
    fetch: tuple[ByteRange | None, ...]
    _pieces: tuple[_Piece, ...]

    def slice_back(self, fetched: Sequence[Any]) -> list[memoryview]:
        """One buffer per wanted range, cut from the answers to `fetch` (same order).

        An answer shorter than its request means the value ends there, so the wanted
        ranges in it are clipped, as `Store.get` clips a range past the end. An answer
        longer than its request (a server that ignored the range), or a short part
        followed by more bytes, cannot be placed and raises `CodecError`.
        """
        if len(fetched) != len(self.fetch):
            raise ValueError(f"expected {len(self.fetch)} answers, got {len(fetched)}")
        views = [memoryview(b).cast("B") for b in fetched]
        for asked, view in zip(self.fetch, views, strict=True):
            refuse_long(asked, view)
        out: list[memoryview] = []
        for wanted, piece in zip(self.wanted, self._pieces, strict=True):
            if piece.first == piece.last:
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


def split(start: int, stop: int, max_request_bytes: int) -> list[tuple[int, int]]:
    """Cut `(start, stop)` into consecutive parts of at most `max_request_bytes`."""
    if max_request_bytes <= 0 or stop - start <= max_request_bytes:
        return [(start, stop)]
    return [(s, min(s + max_request_bytes, stop)) for s in range(start, stop, max_request_bytes)]


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
    fetch: list[ByteRange | None] = []
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
        fetch.extend(ByteRange.of(s, e - s) for s, e in parts)

        def part_of(offset: int, start: int = start, count: int = len(parts)) -> int:
            return min((offset - start) // max(max_request_bytes, 1), count - 1)

        # Groups are sorted and disjoint, so the wanted ranges of this group come next.
        while j < len(bounded) and bounded[j][0] <= stop:
            s, e, i = bounded[j]
            lo, hi = part_of(s), part_of(max(e - 1, s))
            pieces[i] = _Piece(first + lo, first + hi, s - parts[lo][0], e - s)
            j += 1
    return RangePlan(tuple(wanted), tuple(fetch), tuple(p for p in pieces if p is not None))


def request_counts(sizes: Sequence[int], part_bytes: int, target: int, busy: int = 0) -> list[int]:
    """How many requests read each of some objects (or runs of one) of `sizes` bytes.

    Parts only where they pay: while the objects and the `busy` requests the store
    already has in flight are fewer than `target`, each object is cut into parts of
    `part_bytes` (more connections, each decoded as it lands); at `target` or more, the
    objects alone keep that many connections busy, and parts would only add requests
    (and their CPU): one request each.
    """
    if len(sizes) + busy >= target:
        return [1] * len(sizes)
    return [max(1, -(-size // max(part_bytes, 1))) for size in sizes]


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
