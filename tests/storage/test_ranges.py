"""`storage.ranges`: coalescing, splitting and slicing answers back (pure)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aiozarr.byte_range import ByteRange
from aiozarr.errors import CodecError
from aiozarr.storage.policy import ranges


def answer(blob: bytes, plan: ranges.RangePlan) -> list[bytes]:
    """What a store holding `blob` returns for each request of `plan` (clipped)."""
    out = []
    for byte_range in plan.fetch:
        out.append(blob if byte_range is None else blob[slice(*byte_range.resolve(len(blob)))])
    return out


def expected(blob: bytes, byte_range: ByteRange | None) -> bytes:
    return blob if byte_range is None else blob[slice(*byte_range.resolve(len(blob)))]


def test_coalesce() -> None:
    assert ranges.coalesce([], 10) == []
    assert ranges.coalesce([(20, 30), (0, 10)], 0) == [(0, 10), (20, 30)]
    assert ranges.coalesce([(0, 10), (10, 20)], 0) == [(0, 20)]  # touching
    assert ranges.coalesce([(0, 10), (15, 20)], 5) == [(0, 20)]  # gap == limit
    assert ranges.coalesce([(0, 10), (16, 20)], 5) == [(0, 10), (16, 20)]
    assert ranges.coalesce([(0, 100), (10, 20), (50, 60)], 0) == [(0, 100)]  # contained


def _bounds(parts: ranges.Parts) -> list[tuple[int, int | None]]:
    return [(p.offset, p.end) for p in parts]


def test_split() -> None:
    assert _bounds(ranges.split(0, 10, 4)) == [(0, 4), (4, 8), (8, 10)]
    assert _bounds(ranges.split(5, 9, 4)) == [(5, 9)]
    assert _bounds(ranges.split(0, 100, 0)) == [(0, 100)]  # 0: never split


def test_plan_adjacent_ranges_with_gap_zero_are_one_request() -> None:
    wanted = [ByteRange.of(0, 10), ByteRange.of(10, 10), ByteRange.of(20, 5)]
    plan = ranges.plan(wanted, gap_bytes=0, max_request_bytes=0)
    assert tuple(plan.fetch) == (ByteRange.of(0, 25),)


def test_plan_separate_ranges_with_gap_zero_stay_apart() -> None:
    wanted = [ByteRange.of(40, 10), ByteRange.of(0, 10), ByteRange.of(20, 5)]
    plan = ranges.plan(wanted, gap_bytes=0, max_request_bytes=0)
    assert sorted(r.offset for r in plan.fetch) == [0, 20, 40]
    blob = bytes(range(100))
    assert [bytes(v) for v in plan.slice_back(answer(blob, plan))] == [
        blob[40:50],
        blob[0:10],
        blob[20:25],
    ]


def test_plan_large_gap_merges_and_max_request_bytes_splits() -> None:
    wanted = [ByteRange.of(0, 10), ByteRange.of(90, 10)]
    assert tuple(ranges.plan(wanted, gap_bytes=100, max_request_bytes=0).fetch) == (
        ByteRange.of(0, 100),
    )
    split = ranges.plan(wanted, gap_bytes=100, max_request_bytes=40)
    assert tuple(split.fetch) == (ByteRange.of(0, 40), ByteRange.of(40, 40), ByteRange.of(80, 20))
    blob = bytes(range(200))
    assert [bytes(v) for v in split.slice_back(answer(blob, split))] == [blob[:10], blob[90:100]]


def test_unbounded_ranges_are_their_own_requests_and_shared() -> None:
    wanted = [ByteRange.last(8), None, ByteRange.last(8), ByteRange.from_offset(3), None]
    plan = ranges.plan(wanted, gap_bytes=1 << 20, max_request_bytes=4)
    assert tuple(plan.fetch) == (ByteRange.last(8), None, ByteRange.from_offset(3))
    blob = bytes(range(30))
    assert [bytes(v) for v in plan.slice_back(answer(blob, plan))] == [
        blob[-8:],
        blob,
        blob[-8:],
        blob[3:],
        blob,
    ]


def test_slice_back_is_zero_copy_inside_one_request() -> None:
    plan = ranges.plan([ByteRange.of(2, 3), ByteRange.of(6, 2)], gap_bytes=10, max_request_bytes=0)
    assert tuple(plan.fetch) == (ByteRange.of(2, 6),)
    fetched = bytearray(b"cdefgh")
    views = plan.slice_back([fetched])
    fetched[0] = ord("X")  # the answers are views of the fetched buffer
    assert [bytes(v) for v in views] == [b"Xde", b"gh"]


def test_slice_back_clips_at_the_end_of_the_value() -> None:
    wanted = [ByteRange.of(0, 4), ByteRange.of(8, 10), ByteRange.of(50, 5)]
    plan = ranges.plan(wanted, gap_bytes=100, max_request_bytes=0)
    blob = b"0123456789"  # shorter than the merged request (0, 55)
    assert [bytes(v) for v in plan.slice_back(answer(blob, plan))] == [b"0123", b"89", b""]


def test_slice_back_refuses_answers_it_cannot_place() -> None:
    plan = ranges.plan([ByteRange.of(0, 10)], gap_bytes=0, max_request_bytes=4)
    with pytest.raises(ValueError, match="expected 3 answers, got 1"):
        plan.slice_back([b"0123"])
    # A short part followed by more bytes: a truncated answer, not the end of the value.
    with pytest.raises(CodecError, match="short read"):
        plan.slice_back([b"012", b"4567", b"89"])
    # A server that ignored the range and sent everything.
    with pytest.raises(CodecError, match="long read"):
        plan.slice_back([b"0123456789", b"", b""])
    assert bytes(plan.slice_back([b"0123", b"45", b""])[0]) == b"012345"


def test_plan_of_nothing() -> None:
    plan = ranges.plan([], gap_bytes=0, max_request_bytes=0)
    assert tuple(plan.fetch) == () and plan.slice_back([]) == []


byte_ranges = st.one_of(
    st.none(),
    st.builds(ByteRange.of, st.integers(0, 600), st.integers(0, 300)),
    st.builds(ByteRange.from_offset, st.integers(0, 600)),
    st.builds(ByteRange.last, st.integers(0, 600)),
)


@settings(max_examples=300, deadline=None)
@given(
    blob_size=st.integers(0, 500),
    wanted=st.lists(byte_ranges, max_size=12),
    gap=st.integers(0, 200),
    most=st.integers(0, 150),
)
def test_plan_then_slice_back_returns_exactly_the_wanted_bytes(
    blob_size: int, wanted: list[ByteRange | None], gap: int, most: int
) -> None:
    blob = bytes(i % 251 for i in range(blob_size))
    plan = ranges.plan(wanted, gap_bytes=gap, max_request_bytes=most)
    got = plan.slice_back(answer(blob, plan))
    assert [bytes(v) for v in got] == [expected(blob, r) for r in wanted]
    # Bounded requests never overlap, and none is larger than max_request_bytes.
    bounded = sorted((r.offset, r.end) for r in plan.fetch if r is not None and r.end is not None)
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(bounded))
    if most:
        assert all(stop - start <= most for start, stop in bounded)
    # Unbounded requests are never repeated.
    unbounded = [r for r in plan.fetch if r is None or r.end is None]
    assert len(unbounded) == len(set(unbounded))
    # Every bounded wanted range is covered by requests (nothing is read twice).
    assert sum(stop - start for start, stop in bounded) <= max(
        [r.end for r in wanted if r is not None and r.end is not None], default=0
    )


@settings(max_examples=300, deadline=None)
@given(
    blob_size=st.integers(0, 500),
    wanted=st.lists(byte_ranges, min_size=1, max_size=12),
    most=st.integers(0, 700),
)
def test_a_run_cuts_each_range_as_the_plan_does(
    blob_size: int, wanted: list[ByteRange | None], most: int
) -> None:
    run = ranges.Run.of(wanted, most)
    bounded = all(r is not None and r.end is not None for r in wanted)
    if not bounded:
        assert run is None
        return
    start = min(r.offset for r in wanted if r is not None)
    stop = max(r.end for r in wanted if r is not None and r.end is not None)
    if stop - start > most:
        assert run is None
        return
    assert run is not None and run.fetch == ByteRange.of(start, stop - start)
    blob = bytes(i % 251 for i in range(blob_size))
    got = run.cut(expected(blob, run.fetch))
    assert [bytes(v) for v in got] == [expected(blob, r) for r in wanted]


def test_a_run_refuses_an_answer_longer_than_it_asked() -> None:
    run = ranges.Run.of([ByteRange.of(10, 4), ByteRange.of(20, 4)], 100)
    assert run is not None
    with pytest.raises(CodecError, match="long read"):
        run.cut(bytes(15))
