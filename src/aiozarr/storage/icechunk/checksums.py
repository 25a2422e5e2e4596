"""Whether a virtual chunk's source is still the object it was referenced in (pure).

icechunk stores a checksum with a virtual chunk reference: the source object's ETag, or
a time (seconds since the epoch) it was last modified at or before. The answer that
brings a chunk's bytes carries the version of the object they came from (an object
store's `(ETag, version id)`, a local file's `(inode, mtime in ns, size)`); it is
compared before the bytes are used:

- an ETag is compared with an object store answer's ETag (quotes aside); a local file
  has no ETag, so one is not compared there;
- a time is compared with a local file's mtime, or with an object store answer's
  Last-Modified (`protocol.ObjectVersion.last_modified`): changed later, refused.
"""

from __future__ import annotations

from typing import Any

from aiozarr.storage.icechunk.format import ChunkRef

__all__ = ["checksum_problem"]


def _is_file_version(version: Any) -> bool:
    if not isinstance(version, tuple) or len(version) != 3:
        return False
    return all(isinstance(v, int) for v in version)


def checksum_problem(chunk: ChunkRef, version: Any) -> str | None:
    """What differs between `chunk`'s checksum and the `version` its bytes came from;
    None when nothing that can be compared differs."""
    if _is_file_version(version):
        if chunk.last_modified is not None:
            modified_s = version[1] // 1_000_000_000
            if modified_s > chunk.last_modified:
                return f"modified at {modified_s}, after {chunk.last_modified}"
        return None
    if chunk.etag is not None and isinstance(version, tuple) and version and version[0]:
        found, expected = str(version[0]).strip('"'), chunk.etag.strip('"')
        if found != expected:
            return f"ETag {found!r}, referenced with {expected!r}"
    modified = getattr(version, "last_modified", None)
    if chunk.last_modified is not None and modified is not None:
        modified_s = int(modified.timestamp())
        if modified_s > chunk.last_modified:
            return f"modified at {modified_s}, after {chunk.last_modified}"
    return None
