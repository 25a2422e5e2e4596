"""A GET's or HEAD's conditional headers against the version read, in RFC 9110's order
(13.2.2), as S3 answers them: `If-Match` (else `If-Unmodified-Since`) -> 412;
`If-None-Match` (else `If-Modified-Since`) -> 304; `If-Range` decides whether `Range`
applies at all. All of them before the range, so a 412 or 304 is never a 416."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from email.utils import parsedate_to_datetime

from aiozarr.emulator.s3 import S3Error

__all__ = ["NOT_MODIFIED", "range_to_serve"]

#: `range_to_serve`'s answer when the client's copy is current (a 304).
NOT_MODIFIED = object()


def _tags(header: str) -> list[str]:
    return [tag.strip() for tag in header.split(",") if tag.strip()]


def _strong_match(header: str, etag: str) -> bool:
    """Whether a list of entity tags (or `*`) names `etag`, compared strongly (a weak
    tag never matches)."""
    return any(tag == "*" or tag.strip('"') == etag.strip('"') for tag in _tags(header))


def _weak_match(header: str, etag: str) -> bool:
    current = etag.strip('"')
    return any(tag == "*" or tag.removeprefix("W/").strip('"') == current for tag in _tags(header))


def _seconds(date: str) -> float | None:
    with contextlib.suppress(TypeError, ValueError, IndexError):
        return parsedate_to_datetime(date).timestamp()
    return None  # an unreadable date: the condition is ignored


def _not_after(mtime: int, date: str) -> bool:
    limit = _seconds(date)
    return limit is not None and mtime <= limit


def range_to_serve(etag: str, mtime: int, headers: Mapping[str, str]) -> str | object | None:
    """The `Range` to serve for the version `etag` last modified at `mtime` (whole
    seconds): None for the whole object (no range, or an `If-Range` that does not name
    this version), `NOT_MODIFIED`, or a 412 raised."""
    if_match, since = headers.get("If-Match"), headers.get("If-Unmodified-Since")
    held = True
    if if_match is not None:
        held = _strong_match(if_match, etag)
    elif since is not None and _seconds(since) is not None:
        held = _not_after(mtime, since)
    if not held:
        raise S3Error(412, "At least one of the pre-conditions you specified did not hold")
    if_none_match, modified_since = headers.get("If-None-Match"), headers.get("If-Modified-Since")
    if if_none_match is not None:
        if _weak_match(if_none_match, etag):
            return NOT_MODIFIED
    elif modified_since is not None and _not_after(mtime, modified_since):
        return NOT_MODIFIED
    wanted, if_range = headers.get("Range"), headers.get("If-Range")
    if wanted is None or if_range is None:
        return wanted
    if_range = if_range.strip()
    if if_range.startswith(('"', "W/")):  # an entity tag: strong comparison only
        return (
            wanted if if_range.startswith('"') and if_range.strip('"') == etag.strip('"') else None
        )
    return wanted if _seconds(if_range) == mtime else None
