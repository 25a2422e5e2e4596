"""The zip format, as `ZipStore` reads it: the end records, the central directory, each
member's entry, and inflating and checking a member's bytes. Pure: no I/O.

An archive is untrusted input. Every malformed directory raises `StoreError` naming the
byte or the member (offsets or sizes past the archive or into the directory, names that
are not UTF-8 though marked so, short or overlong extra fields), never `struct.error`,
`UnicodeDecodeError` or a `RuntimeError` from a short zip64 field.
"""

from __future__ import annotations

import bz2
import struct
import zipfile
import zlib
from dataclasses import dataclass
from typing import Any

from aiozarr.errors import ChecksumError, StoreError, UnsupportedError

__all__ = [
    "BZIP2",
    "CENTRAL",
    "DEFLATED",
    "END64",
    "END64_SIZE",
    "LOCAL",
    "LOCAL_SIZE",
    "LOCATOR64",
    "LOCATOR64_SIZE",
    "STORED",
    "TAIL",
    "ZIPFILE_ERRORS",
    "Member",
    "check_crc",
    "check_member",
    "find_end_record",
    "inflate",
    "member_of",
    "parse_directory",
    "table_of",
]

END = b"PK\x05\x06"
END64 = b"PK\x06\x06"
LOCATOR64 = b"PK\x06\x07"
CENTRAL = b"PK\x01\x02"
LOCAL = b"PK\x03\x04"
END_SIZE = 22
LOCATOR64_SIZE = 20
END64_SIZE = 56
CENTRAL_SIZE = 46
LOCAL_SIZE = 30
# The end record, the longest comment, the zip64 locator and end record.
TAIL = END_SIZE + 0xFFFF + LOCATOR64_SIZE + END64_SIZE
STORED, DEFLATED, BZIP2 = 0, 8, 12


@dataclass(frozen=True, slots=True)
class Member:
    """One entry of the archive, as its central directory describes it."""

    header_offset: int
    size: int  # uncompressed
    compressed_size: int
    method: int
    flags: int
    crc: int


def find_end_record(tail: bytes) -> int | None:
    """Where the end-of-central-directory record starts in `tail` (the archive's end):
    the last signature whose comment length reaches exactly to the end."""
    at = len(tail)
    while (at := tail.rfind(END, 0, at)) >= 0:
        if len(tail) - at >= END_SIZE:
            (comment_length,) = struct.unpack_from("<H", tail, at + 20)
            if at + END_SIZE + comment_length == len(tail):
                return at
    return None


def parse_directory(directory: bytes, where: str, end: int) -> dict[str, Member]:
    """Every member of a central directory; `end`: where the directory starts in the
    archive (every member's header and data lie before it). A malformed entry raises
    `StoreError` naming its byte in the directory."""
    members: dict[str, Member] = {}
    pos = 0
    while pos < len(directory):
        if pos + CENTRAL_SIZE > len(directory) or directory[pos : pos + 4] != CENTRAL:
            raise StoreError(f"{where}: corrupt central directory at byte {pos}")
        fields = struct.unpack_from("<4s6H3L5HLL", directory, pos)
        flags, method, crc = fields[3], fields[4], fields[7]
        compressed, size = fields[8], fields[9]
        name_length, extra_length, comment_length = fields[10], fields[11], fields[12]
        offset = fields[16]
        start = pos + CENTRAL_SIZE
        stop = start + name_length + extra_length + comment_length
        if stop > len(directory):
            raise StoreError(f"{where}: the directory entry at byte {pos} runs past its end")
        raw_name = directory[start : start + name_length]
        extra = directory[start + name_length : start + name_length + extra_length]
        try:
            name = raw_name.decode("utf-8" if flags & 0x800 else "cp437")
        except UnicodeDecodeError:
            raise StoreError(
                f"{where}: the name {raw_name!r} (directory byte {pos}) is marked UTF-8 but is not"
            ) from None
        size, compressed, offset = _zip64_sizes(extra, size, compressed, offset, where, name)
        if offset + LOCAL_SIZE + compressed > end:
            raise StoreError(
                f"{where}: member {name!r} ({compressed} bytes at {offset}) runs into the "
                f"central directory at {end} (a corrupt archive)"
            )
        if not name.endswith("/"):  # directory entries (zip -r) hold no value
            members[name] = Member(offset, size, compressed, method, flags, crc)
        pos = stop
    return members


def _zip64_sizes(
    extra: bytes, size: int, compressed: int, offset: int, where: str, name: str
) -> tuple[int, int, int]:
    """Sizes and offset from the zip64 extra field, for those the fixed fields cannot hold
    (in this order, each 8 bytes, only those whose fixed field is 0xFFFFFFFF)."""
    pos = 0
    while pos + 4 <= len(extra):
        tag, length = struct.unpack_from("<HH", extra, pos)
        body = extra[pos + 4 : pos + 4 + length]
        if len(body) != length:
            raise StoreError(f"{where}: the extra field of {name!r} runs past its end")
        if tag == 1:
            values = list(struct.unpack_from(f"<{length // 8}Q", body))
            wanted = [v == 0xFFFFFFFF for v in (size, compressed, offset)]
            if sum(wanted) > len(values):
                raise StoreError(f"{where}: the zip64 extra field of {name!r} is too short")
            found = iter(values)
            size, compressed, offset = (
                next(found) if want else v
                for want, v in zip(wanted, (size, compressed, offset), strict=True)
            )
            break
        pos += 4 + length
    return size, compressed, offset


def member_of(info: zipfile.ZipInfo) -> Member:
    return Member(
        info.header_offset,
        info.file_size,
        info.compress_size,
        info.compress_type,
        info.flag_bits,
        info.CRC,
    )


def table_of(infos: list[zipfile.ZipInfo]) -> dict[str, Member]:
    return {info.filename: member_of(info) for info in infos if not info.filename.endswith("/")}


#: What `zipfile` raises on a malformed archive, besides its own BadZipFile.
ZIPFILE_ERRORS = (
    OSError,
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    EOFError,
    ValueError,  # UnicodeDecodeError too
    struct.error,
    RuntimeError,
    NotImplementedError,
    KeyError,
)


def _most_compressed(size: int) -> int:
    """The most bytes deflate or bzip2 make of `size` bytes (incompressible data grows
    by well under 1 % plus a header); a member claiming more is corrupt."""
    return size + size // 64 + 1024


def check_member(member: Member, key: str, store: object) -> None:
    """Refuse a member whose directory entry cannot be true before reading it."""
    if member.method == STORED and member.compressed_size != member.size:
        raise StoreError(
            f"cannot read {key!r} in {store!r}: stored without compression, yet its directory "
            f"entry says {member.compressed_size} bytes for {member.size} (a corrupt archive)"
        )
    if member.method != STORED and member.compressed_size > _most_compressed(member.size):
        raise StoreError(
            f"cannot read {key!r} in {store!r}: {member.compressed_size} compressed bytes for "
            f"{member.size} (no compressor makes that; a corrupt archive)"
        )


def check_crc(member: Member, value: Any, key: str, store: object) -> None:
    crc = zlib.crc32(value) & 0xFFFFFFFF
    if crc != member.crc:
        raise ChecksumError(
            f"{key!r} in {store!r} is corrupt: its CRC-32 is {crc:08x}, the archive "
            f"recorded {member.crc:08x}"
        )


def inflate(member: Member, data: Any, key: str, store: object) -> bytes:
    """The uncompressed value of a compressed member (checked against its size and CRC;
    never more than its directory size + 1 bytes are inflated)."""
    raw = memoryview(data).cast("B")
    if member.flags & 0x1:
        raise UnsupportedError(f"{key!r} in {store!r} is encrypted")
    try:
        if member.method == DEFLATED:
            inflater = zlib.decompressobj(-zlib.MAX_WBITS)
            value = inflater.decompress(raw, member.size + 1)
        elif member.method == BZIP2:
            value = bz2.BZ2Decompressor().decompress(raw, member.size + 1)
        else:
            raise UnsupportedError(
                f"{key!r} in {store!r} uses zip compression method {member.method}; "
                "stored, deflate and bzip2 members are read"
            )
    except (zlib.error, OSError, EOFError, ValueError) as error:
        raise StoreError(f"cannot inflate {key!r} in {store!r}: {error}") from error
    if len(value) != member.size:
        raise StoreError(f"{key!r} in {store!r} inflates to {len(value)} bytes, not {member.size}")
    check_crc(member, value, key, store)
    return value
