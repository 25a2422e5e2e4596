"""`ByteRange`: which bytes of a stored value to read.

It lives below both `storage` and `codecs`: the sharding codec describes ranges
that the engine then asks the store for.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ByteRange:
    """A range of bytes: `offset` + `length`, `offset` to the end, or the last `suffix` bytes.

    Build one with `ByteRange.of(offset, length)`, `ByteRange.from_offset(offset)` or
    `ByteRange.last(n)`.
    """

    offset: int = 0
    length: int | None = None
    suffix: int | None = None

    def __post_init__(self) -> None:
        if self.suffix is not None:
            if self.suffix < 0 or self.offset != 0 or self.length is not None:
                raise ValueError(f"invalid suffix range {self!r}")
        elif self.offset < 0 or (self.length is not None and self.length < 0):
            raise ValueError(f"invalid byte range {self!r}")

    @classmethod
    def of(cls, offset: int, length: int) -> ByteRange:
        """`length` bytes starting at `offset`."""
        return cls(offset, length)

    @classmethod
    def from_offset(cls, offset: int) -> ByteRange:
        """Everything from `offset` to the end."""
        return cls(offset)

    @classmethod
    def last(cls, n: int) -> ByteRange:
        """The last `n` bytes (a suffix read: the size need not be known)."""
        return cls(suffix=n)

    @property
    def is_suffix(self) -> bool:
        return self.suffix is not None

    @property
    def end(self) -> int | None:
        """Exclusive end offset, or None when it depends on the object's size."""
        if self.suffix is not None or self.length is None:
            return None
        return self.offset + self.length

    def resolve(self, size: int) -> tuple[int, int]:
        """`(start, stop)` within an object of `size` bytes, clipped to it."""
        if self.suffix is not None:
            return max(size - self.suffix, 0), size
        stop = size if self.length is None else min(self.offset + self.length, size)
        return min(self.offset, size), stop

    def __str__(self) -> str:
        if self.suffix is not None:
            return f"bytes=-{self.suffix}"
        if self.length is None:
            return f"bytes={self.offset}-"
        return f"bytes={self.offset}-{self.offset + self.length - 1}"
