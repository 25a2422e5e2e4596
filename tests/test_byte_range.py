"""`ByteRange`: the three kinds, validation, resolving against a size."""

from __future__ import annotations

import pytest

from aiozarr.byte_range import ByteRange


def test_constructors() -> None:
    assert ByteRange.of(3, 4) == ByteRange(3, 4)
    assert ByteRange.of(3, 4).end == 7
    assert ByteRange.from_offset(5).end is None and ByteRange.from_offset(5).offset == 5
    assert ByteRange.last(8).is_suffix and ByteRange.last(8).end is None
    assert not ByteRange.of(0, 1).is_suffix


@pytest.mark.parametrize(
    "make",
    [
        lambda: ByteRange.of(-1, 3),
        lambda: ByteRange.of(0, -1),
        lambda: ByteRange.from_offset(-2),
        lambda: ByteRange.last(-1),
        lambda: ByteRange(offset=2, suffix=3),
        lambda: ByteRange(length=2, suffix=3),
    ],
)
def test_invalid_ranges_are_refused(make) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match="invalid"):
        make()


@pytest.mark.parametrize(
    ("byte_range", "size", "expected"),
    [
        (ByteRange.of(2, 3), 10, (2, 5)),
        (ByteRange.of(8, 5), 10, (8, 10)),  # clipped at the end
        (ByteRange.of(20, 5), 10, (10, 10)),  # starts past the end: empty
        (ByteRange.of(4, 0), 10, (4, 4)),
        (ByteRange.from_offset(3), 10, (3, 10)),
        (ByteRange.from_offset(30), 10, (10, 10)),
        (ByteRange.last(4), 10, (6, 10)),
        (ByteRange.last(40), 10, (0, 10)),
        (ByteRange.last(0), 10, (10, 10)),
        (ByteRange.of(0, 5), 0, (0, 0)),
    ],
)
def test_resolve(byte_range: ByteRange, size: int, expected: tuple[int, int]) -> None:
    assert byte_range.resolve(size) == expected
    start, stop = expected
    assert bytes(range(size))[slice(*byte_range.resolve(size))] == bytes(range(start, stop))


def test_str_is_the_http_range_header() -> None:
    assert str(ByteRange.of(10, 5)) == "bytes=10-14"
    assert str(ByteRange.from_offset(7)) == "bytes=7-"
    assert str(ByteRange.last(9)) == "bytes=-9"


def test_hashable_and_frozen() -> None:
    assert len({ByteRange.of(1, 2), ByteRange.of(1, 2), ByteRange.last(2)}) == 2
    with pytest.raises(AttributeError):
        ByteRange.of(1, 2).offset = 3  # type: ignore[misc]
