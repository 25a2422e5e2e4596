"""Whether a virtual chunk's source is still the object it was referenced in (pure).

icechunk stores a checksum with a virtual chunk reference: the source object's ETag, or
a time (seconds since the epoch) it was last modified at or before. The answer that
brings a chunk's bytes carries the version of the object they came from, in its store's
shape: an object store's `protocol.ObjectVersion` (`(ETag, version id)`, its
Last-Modified beside; an http(s) answer read under a checksum has the same shape), an
HTTP server's ETag header (a `str`), a local file's `FileVersion` (its mtime). It is
compared before the bytes are used:

- an ETag is compared with the answer's ETag by its opaque value (quotes and a weak
  `W/` prefix aside); an answer that carries none cannot be compared;
- a time is compared with a local file's mtime (to the nanosecond), or with an object
  store or http(s) answer's Last-Modified: changed later, refused.

A local file's ETag is the one object_store's local storage (icechunk 1.x's reader,
obstore) gives it: `<inode>-<mtime in microseconds>-<size>` in hex, made from the file's
stat. A local source referenced with an ETag of that shape is compared so; one of any
other shape is read without a check (nothing on disk gives it; the file is the reader's
own).
"""

from __future__ import annotations

import datetime
import re
from typing import Any

from aiozarr.storage.policy.backend import FileVersion
from aiozarr.storage.references.icechunk.format import ChunkRef

__all__ = ["checksum_problem"]

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
#: object_store's ETag of a local file: inode, mtime (microseconds), size, in hex.
_FILE_ETAG = re.compile(r"([0-9a-f]+)-([0-9a-f]+)-([0-9a-f]+)")


def _opaque(etag: Any) -> str:
    """An ETag's opaque value: without its weakness mark and quotes."""
    text = str(etag).strip()
    if text[:2] in ("W/", "w/"):
        text = text[2:]
    return text.strip('"')


def _etag_of(version: Any) -> Any:
    if isinstance(version, str | bytes):
        return version.decode() if isinstance(version, bytes) else version
    if isinstance(version, tuple) and version:
        return version[0]
    return None


def _later(modified_ns: int, referenced: int) -> str | None:
    """Modified after second `referenced`, compared to the nanosecond (a change half a
    second after the recorded second is a change, as icechunk's reader refuses it)."""
    if modified_ns > referenced * 1_000_000_000:
        seconds, part = divmod(modified_ns, 1_000_000_000)
        when = f"{seconds}.{part:09d}".rstrip("0").rstrip(".")
        return f"modified at {when}, after {referenced}"
    return None


def _nanoseconds(when: datetime.datetime) -> int:
    """`when` (UTC where it names no zone) in nanoseconds since the epoch."""
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.UTC)
    return (when - _EPOCH) // datetime.timedelta(microseconds=1) * 1000


def _file_etag_problem(etag: str, version: FileVersion) -> str | None:
    """How a local file differs from the object_store ETag `etag` it was referenced
    with; None when it does not, or `etag` is no such ETag. An inode of 0 is not
    compared: object_store gives every file that inode where the system has none."""
    found = _FILE_ETAG.fullmatch(_opaque(etag))
    if found is None:
        return None
    inode, mtime_us, size = (int(part, 16) for part in found.groups())
    now = (version.inode if inode else 0, max(version.mtime_ns, 0) // 1000, version.size)
    if (inode, mtime_us, size) == now:
        return None
    mine = "-".join(f"{n:x}" for n in now)
    return f"ETag {mine!r} (inode, mtime, size), referenced with {_opaque(etag)!r}"


def checksum_problem(chunk: ChunkRef, version: Any) -> str | None:
    """What differs between `chunk`'s checksum and the `version` its bytes came from;
    None when nothing that can be compared differs."""
    if isinstance(version, FileVersion):
        if chunk.etag is not None and (problem := _file_etag_problem(chunk.etag, version)):
            return problem
        if chunk.last_modified is not None:
            return _later(version.mtime_ns, chunk.last_modified)
        return None
    found = _etag_of(version)
    if chunk.etag is not None and found and _opaque(found) != _opaque(chunk.etag):
        return f"ETag {_opaque(found)!r}, referenced with {_opaque(chunk.etag)!r}"
    modified = getattr(version, "last_modified", None)
    if chunk.last_modified is not None and modified is not None:
        return _later(_nanoseconds(modified), chunk.last_modified)
    return None
