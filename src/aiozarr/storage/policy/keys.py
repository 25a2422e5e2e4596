"""What a store key may be: relative, `/`-separated, no way out of the store's root."""

from __future__ import annotations

import functools

from aiozarr.errors import InvalidKeyError

__all__ = ["check_key"]


def check_key(key: str, *, prefix: bool = False) -> None:
    """Raise `InvalidKeyError` unless `key` is a relative `/`-separated key.

    No NUL, no backslash, no leading `/`, no empty, `.` or `..` segment: such a key could
    escape a store's root or name another object than the one meant. With `prefix=True`,
    `key` may be empty or end with `/` (a listing prefix).
    """
    problem = "keys must be strings" if not isinstance(key, str) else _problem(key, prefix)
    if problem is not None:
        raise InvalidKeyError(f"invalid key {key!r}: {problem}")


@functools.lru_cache(maxsize=4096)  # a read asks for the same few keys many times
def _problem(key: str, prefix: bool) -> str | None:
    if "\x00" in key:
        return "keys may not contain NUL bytes"
    if "\\" in key:
        return "keys may not contain backslashes"
    if key.startswith("/"):
        return "keys may not start with '/'"
    if prefix and key == "":
        return None
    segments = key.split("/")
    if prefix and key.endswith("/"):
        segments = segments[:-1]
    if any(segment in ("", ".", "..") for segment in segments):
        return "keys may not have empty, '.' or '..' segments"
    return None
