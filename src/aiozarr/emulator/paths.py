"""Where a key lives in the served folder: the one check every operation makes (GET, HEAD,
PUT, DELETE, DeleteObjects, multipart uploads and listing prefixes) before it touches
the disk.

A key is refused (400) when it could name something other than a file under the folder:
an empty, `.` or `..` segment (so no leading `/` either), a backslash, NUL or another
control character, U+FFFE or U+FFFF (not XML 1.0), more than 1,024 bytes (S3's
limit) or a segment over 255 (a file name's), the emulator's own temp folder, or a
name ending with `.aiozarr-tmp`: a `LocalStore` writing into the folder keeps its
bodies on their way in (and a folder it is deleting) under such names, so they are
neither listed, served nor written. Then symlinks are resolved, and a key whose real
path is outside the folder (or inside its temp folder) is refused (403): a link to
elsewhere is neither read, listed nor written through.
"""

from __future__ import annotations

import os
from pathlib import Path

from aiozarr.emulator.s3 import S3Error

__all__ = [
    "LOCAL_TEMP_SUFFIX",
    "MAX_KEY_BYTES",
    "MAX_SEGMENT_BYTES",
    "TMP_DIR",
    "check_key",
    "is_inside",
    "listing_dir",
    "object_path",
    "valid_name",
]

TMP_DIR = ".aiozarr-emulator-tmp"  # temp files and multipart parts; never listed or served
#: How the names of a `LocalStore`'s temporary files and of the folders it is deleting
#: end (storage/backends/local.py): half-written bodies, never objects.
LOCAL_TEMP_SUFFIX = ".aiozarr-tmp"
MAX_KEY_BYTES = 1024
MAX_SEGMENT_BYTES = 255  # NAME_MAX: a key segment is a file name


def _bad_segment(segment: str) -> bool:
    # U+FFFE and U+FFFF cannot be written in XML 1.0: a listing naming them breaks
    # every S3 client's parser (surrogates are refused as not UTF-8).
    return (
        segment in ("", ".", "..")
        or "\\" in segment
        or any(ord(c) < 0x20 or ord(c) == 0x7F or c in "\ufffe\uffff" for c in segment)
    )


def valid_name(name: str) -> bool:
    """Whether a file name found on disk can be one segment of a key."""
    if _bad_segment(name) or name.endswith(LOCAL_TEMP_SUFFIX):
        return False
    try:
        name.encode()
    except UnicodeEncodeError:  # undecodable bytes in the name: no key names it
        return False
    return True


def check_key(key: str, *, prefix: bool = False) -> list[str]:
    """The segments of `key`; raises a 400 for a key that is not a plain relative path.
    `prefix=True`: a listing prefix, whose last segment may be empty or partial (`.`
    or `..` too: the start of names, not a folder)."""
    try:
        size = len(key.encode())
    except UnicodeEncodeError:
        raise S3Error(400, f"invalid key {key!r}: not UTF-8", code="InvalidArgument") from None
    if size > MAX_KEY_BYTES:
        raise S3Error(400, f"key longer than {MAX_KEY_BYTES} bytes", code="KeyTooLongError")
    segments = key.split("/")
    last = len(segments) - 1
    what = "prefix" if prefix else "key"
    for i, segment in enumerate(segments):
        if prefix and i == last:
            # Partial: names that start with it (".": `.zarray`, `.zattrs`); never a path.
            if segment in ("", ".", ".."):
                continue
        elif not prefix and len(segment.encode()) > MAX_SEGMENT_BYTES:
            raise S3Error(
                400,
                f"key {key!r}: a segment (between slashes) longer than {MAX_SEGMENT_BYTES} "
                "bytes, the most a file name may hold in the emulator's folder",
                code="KeyTooLongError",
            )
        if _bad_segment(segment):
            raise S3Error(
                400,
                f"invalid {what} {key!r}: no empty, '.' or '..' segments, backslashes, "
                "control characters or U+FFFE / U+FFFF",
                code="InvalidArgument",
            )
    # A prefix's last segment is partial: listings skip the names it may match.
    if any(s.endswith(LOCAL_TEMP_SUFFIX) for s in segments[: last if prefix else None]):
        raise S3Error(
            400,
            f"invalid {what} {key!r}: a name ending with {LOCAL_TEMP_SUFFIX!r} is a "
            "temporary file of aiozarr's local store, never an object",
            code="InvalidArgument",
        )
    if segments[0] == TMP_DIR:
        raise S3Error(
            400, f"invalid key {key!r}: the emulator's temp folder", code="InvalidArgument"
        )
    return segments


def is_inside(root: Path, real: str) -> bool:
    """Whether the resolved path `real` is `root` or under it, and not in the temp folder."""
    top = str(root)
    if real != top and not real.startswith(top.rstrip(os.sep) + os.sep):
        return False
    tmp = os.path.join(top, TMP_DIR)
    return real != tmp and not real.startswith(tmp + os.sep)


def _inside_or_refuse(root: Path, path: Path, key: str) -> None:
    if not is_inside(root, os.path.realpath(path)):
        raise S3Error(403, f"{key!r} leads outside the served folder", key=key, code="AccessDenied")


def object_path(root: Path, key: str) -> Path:
    """The path of the object `key` under `root` (a resolved directory), checked."""
    path = root.joinpath(*check_key(key))
    _inside_or_refuse(root, path, key)
    return path


def listing_dir(root: Path, prefix: str) -> Path:
    """The folder a listing of `prefix` walks (the prefix up to its last `/`), checked."""
    directory = root.joinpath(*check_key(prefix, prefix=True)[:-1])
    _inside_or_refuse(root, directory, prefix)
    return directory
