"""What a store key may be: relative, `/`-separated, no way out of the store's root."""

from __future__ import annotations

from aiozarr.errors import InvalidKeyError

__all__ = ["check_key"]


def check_key(key: str, *, prefix: bool = False) -> None:
    """Raise `InvalidKeyError` unless `key` is a relative `/`-separated key.

    No NUL, no backslash, no leading `/`, no empty, `.` or `..` segment: such a key could
    escape a store's root or name another object than the one meant. With `prefix=True`,
    `key` may be empty or end with `/` (a listing prefix).
    """
    problem = None
    if not isinstance(key, str):
        problem = "keys must be strings"
    elif "\x00" in key:
        problem = "keys may not contain NUL bytes"
    elif "\\" in key:
        problem = "keys may not contain backslashes"
    elif key.startswith("/"):
        problem = "keys may not start with '/'"
    elif not (prefix and key == ""):
        segments = key.split("/")
        if prefix and key.endswith("/"):
            segments = segments[:-1]
        if any(segment in ("", ".", "..") for segment in segments):
            problem = "keys may not have empty, '.' or '..' segments"
    if problem is not None:
        raise InvalidKeyError(f"invalid key {key!r}: {problem}")
