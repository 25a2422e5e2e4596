"""Where a kerchunk reference file may point, and which options go with each target.

A reference file is someone else's list of URLs: opening one must not read whatever it
names (`file:///etc/passwd`, a metadata endpoint, another bucket) with the caller's
credentials. `TargetPolicy` decides, for each target URL of a reference file:

- whether it may be read: a target must lie under one of the allowed prefixes. By
  default that is the reference file's own location: for a remote file its scheme and
  bucket or host (`s3://bucket/`, `https://host:port/`), for a local file its own
  directory (and what lies below it); a references dict has none. `allowed_targets`
  widens it (`["s3://noaa-goes16/", "/data/nc/"]`; a scheme alone, `"s3://"`, allows
  every bucket of it). Inline values need no target and are always read.
- with which options: `target_options` go where the caller says: one dict for every
  target, or `{url prefix: dict}` per prefix (the longest matching prefix wins);
  otherwise `storage_options` (those of the reference file) go to targets in the
  reference file's own bucket or host, and only there (a references dict has no file:
  its `storage_options` are its targets' options). Any other target is opened without
  options (S3 and GCS then sign nothing unless the environment holds credentials).
  Local paths and `memory://` take no options.
- where a redirect may lead (`check_redirect`): the stores opened for a reference file
  over http(s) follow a redirect only to a location these rules allow, with none of the
  options unless it is on the same scheme, host and port; S3, GCS and Azure targets are
  read through obstore, whose client follows its servers' redirects.

Targets are compared after normalisation, and the target read is the normalised one:
scheme and host in lower case (`s3a` is `s3`, `gcs` is `gs`), default ports dropped,
`.` and `..` resolved (climbing above a bucket's or host's root is refused), local paths
made absolute with symbolic links resolved (a `file:` URL's path read as `from_url` reads
it: percent-decoded, `#` and `?` in it). What a server could read as another path than
the one checked is refused: a percent-encoded `/`, `\\` or `.` (`..%2F`, `%2e%2e`), a
backslash, a query or a fragment (`a?/../../private`) in a remote target.
A host part with a user (`http://allowed@evil/`) is refused outright (Azure's
`container@account` form excepted), and prefixes match whole path segments:
`s3://bucket` does not admit `s3://bucket-evil`, nor `/data/nc` `/data/ncx`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from aiozarr.errors import ReferenceTargetError, StoreError
from aiozarr.storage.opening.url import local_path

__all__ = ["Location", "TargetPolicy", "locate"]

_AZURE = ("az", "azure", "abfs", "abfss", "adl")
_ALIASES = {"s3a": "s3", "gcs": "gs"}
_DEFAULT_PORTS = {"http": 80, "https": 443}
_HOST = re.compile(r"[a-z0-9._~\-]+|\[[0-9a-f:.]+\]")
# In a remote path: what a server may decode or split into another path than the one
# checked (an encoded slash, backslash or dot, a backslash, a query or fragment mark).
_AMBIGUOUS = re.compile(r"%(?:2f|5c|2e)|[\\?#]", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Location:
    """A normalised URL: scheme, bucket or host (or "" for local paths), path segments.

    Local paths have scheme "file" and the parts of the absolute, resolved path as
    segments (the first is the anchor, "/").
    """

    scheme: str
    authority: str
    segments: tuple[str, ...]
    query: str = ""

    @property
    def is_local(self) -> bool:
        return self.scheme == "file"

    @property
    def url(self) -> str:
        """The URL (or local path) to open: what was checked is what is read."""
        if self.is_local:
            return str(Path(*self.segments)) if self.segments else ""
        path = "/".join(self.segments)
        query = f"?{self.query}" if self.query else ""
        return f"{self.scheme}://{self.authority}/{path}{query}"

    @property
    def parent(self) -> Location:
        """The directory this location is in (a local root is its own)."""
        if self.is_local:
            return Location(self.scheme, self.authority, self.segments[:-1] or self.segments)
        return Location(self.scheme, self.authority, self.segments[:-1])

    @property
    def root(self) -> Location:
        """The bucket or host (remote), or the directory (local) this location is in."""
        if self.is_local:
            return self.parent
        return Location(self.scheme, self.authority, ())

    def same_place(self, other: Location) -> bool:
        """Same scheme and bucket or host (local: both local)."""
        return (self.scheme, self.authority) == (other.scheme, other.authority)

    def within(self, prefix: Location) -> bool:
        """Whether this location lies at or below `prefix` (whole segments)."""
        if self.scheme != prefix.scheme:
            return False
        if not prefix.is_local and not prefix.authority:  # "s3://": every bucket
            return True
        if self.authority != prefix.authority:
            return False
        return self.segments[: len(prefix.segments)] == prefix.segments

    def __str__(self) -> str:
        return self.url


def locate(
    text: str, base: Location | None = None, *, prefix: bool = False, query: bool = False
) -> Location:
    """The normalised location of URL or path `text`; a relative one is taken relative to
    `base` (a directory; the working directory when None). `prefix`: `text` is an
    allowed prefix, which may name a scheme alone (`"s3://"`). `query`: a remote URL may
    have a query (a redirect's `Location`; its fragment is dropped, as it is never sent).

    Raises `ReferenceTargetError` for a URL that could mean two places (a user in the
    host part, encoded slashes or dots, a query or fragment, a climb above the root, a
    host on a `file://` URL).
    """
    if "\x00" in text:  # no path or URL holds one; the OS would refuse it, unnamed
        raise _refused(text, "a NUL character")
    if "://" in text and "::" in text:
        raise _refused(text, "a chained URL (fsspec's '::'); name the object itself")
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 (checks the port)
    except ValueError as error:
        raise _refused(text, f"a malformed host part ({error})") from None
    scheme = parts.scheme.lower()
    if scheme != "file" and "://" not in text:
        scheme = ""  # "ab:c.bin" is a file name with a colon, as fsspec reads it
    if scheme == "file" or len(scheme) <= 1:  # a path (len 1: a Windows drive letter)
        if scheme == "file":
            if parts.netloc.lower() not in ("", "localhost"):
                raise _refused(text, "a file:// URL naming a host")
            text = local_path(text)  # what `from_url` opens: decoded, `#` and `?` kept
        if not os.path.isabs(text) and base is not None and not base.is_local:
            return _remote(base.scheme, base.authority, [*base.segments, *text.split("/")], "")
        if not os.path.isabs(text) and base is not None:
            text = os.path.join(base.url, text)
        return Location("file", "", Path(os.path.realpath(text)).parts)
    scheme = _ALIASES.get(scheme, scheme)
    authority = _authority(scheme, parts.netloc, text, prefix=prefix)
    if not query and ("?" in text or "#" in text):
        raise _refused(text, "a query or fragment ('?' or '#'), which a server reads apart")
    segments = parts.path.split("/")
    if segments and segments[0] == "":
        segments = segments[1:]
    return _remote(scheme, authority, segments, parts.query, text)


def _authority(scheme: str, netloc: str, text: str, *, prefix: bool) -> str:
    if scheme in _AZURE:  # `container@account.dfs.core.windows.net` names one place
        authority = netloc
    elif "@" in netloc:
        raise _refused(text, "a user name in its host part")
    elif scheme in _DEFAULT_PORTS:
        host, _, port = netloc.lower().rpartition(":") if _has_port(netloc) else (netloc, "", "")
        host = host.lower().rstrip(".")
        if host and not _HOST.fullmatch(host):
            raise _refused(text, f"an invalid host {host!r}")
        if port and (not port.isdigit() or int(port) > 65535):
            raise _refused(text, f"an invalid port {port!r}")
        if port and int(port) == _DEFAULT_PORTS[scheme]:
            port = ""
        authority = f"{host}:{int(port)}" if port else host
    else:
        authority = netloc
    if any(c in authority for c in "\\%") or any(ord(c) < 33 for c in authority):
        raise _refused(text, "an invalid host part")
    if not authority and not prefix:
        raise _refused(text, "no bucket or host")
    return authority


def _has_port(netloc: str) -> bool:
    return ":" in netloc and not netloc.endswith("]")


def _remote(
    scheme: str, authority: str, segments: Sequence[str], query: str, text: str | None = None
) -> Location:
    """A remote location with `.` and `..` resolved (a trailing slash dropped)."""
    where = text if text is not None else f"{scheme}://{authority}/{'/'.join(segments)}"
    out: list[str] = []
    for segment in segments:
        if _AMBIGUOUS.search(segment):
            raise _refused(
                where,
                "a percent-encoded '/', '\\' or '.', a backslash, '?' or '#' in its path (a "
                "server may read it as another path than the one checked)",
            )
        if segment == "..":
            if not out:
                raise _refused(where, "a '..' above the root of its bucket or host")
            out.pop()
        elif segment != ".":
            out.append(segment)
    if out and out[-1] == "":
        out.pop()
    return Location(scheme, authority, tuple(out), query)


def _refused(text: str, why: str) -> ReferenceTargetError:
    return ReferenceTargetError(f"reference target {_shown(text)!r} is refused: it has {why}")


def _shown(text: str) -> str:
    """`text` for a message: a user and password in it, or a query (a signed URL's
    signature), replaced by `***`."""
    scheme, sep, rest = text.partition("://")
    if not sep:
        return text
    host, slash, path = rest.partition("/")
    if "@" in host:
        host = "***@" + host.rpartition("@")[2]
    path, question, _ = path.partition("?")
    return f"{scheme}://{host}{slash}{path}" + ("?***" if question else "")


class TargetPolicy:
    """The allowed prefixes and the options of the targets of one reference file.

    `home`: the reference file's location (None for a references dict).
    """

    def __init__(
        self,
        home: Location | None,
        *,
        allowed_targets: Sequence[str] | str | None = None,
        storage_options: Mapping[str, Any] | None = None,
        target_options: Mapping[str, Any] | None = None,
    ) -> None:
        if isinstance(allowed_targets, str | os.PathLike):
            allowed_targets = [os.fspath(allowed_targets)]
        self.home = home
        self.allowed: list[Location] = [] if home is None else [home.root]
        self.allowed += [locate(os.fspath(p), prefix=True) for p in allowed_targets or ()]
        self._storage_options = dict(storage_options or {})
        self._flat: dict[str, Any] | None = None
        self._by_prefix: list[tuple[Location, dict[str, Any]]] = []
        if target_options is not None:
            if target_options and all("://" in str(k) for k in target_options):
                self._by_prefix = sorted(
                    (
                        (locate(str(k), prefix=True), dict(v or {}))
                        for k, v in target_options.items()
                    ),
                    key=lambda item: -len(item[0].segments),
                )
            elif any("://" in str(k) for k in target_options):
                raise StoreError(
                    "target_options is either one dict of options for every target or "
                    "{url prefix: options}, not a mix of both: got keys "
                    f"{sorted(map(str, target_options))}"
                )
            else:
                self._flat = dict(target_options)

    def check(self, target: Location, key: str | None = None) -> None:
        """Raise `ReferenceTargetError` unless `target` lies under an allowed prefix."""
        if any(target.within(prefix) for prefix in self.allowed):
            return
        for_key = f" (for {key!r})" if key is not None else ""
        allowed = ", ".join(repr(p.url or "/") for p in self.allowed[1 if self.home else 0 :])
        own = (
            "a references dict has no location of its own"
            if self.home is None
            else "a reference file may read its own bucket or host (its own directory when local)"
        )
        suggestion = (
            target.root.url if target.is_local else f"{target.scheme}://{target.authority}/"
        )
        raise ReferenceTargetError(
            f"reference target {_shown(target.url)!r}{for_key} is not allowed: {own} and the "
            f"allowed_targets prefixes ({allowed or 'none given'}). If you trust it, pass "
            f"allowed_targets=[{suggestion!r}] (to ReferenceStore or open_references, or in "
            "storage_options of aiozarr.open_* and the xarray backend)"
        )

    def options_for(self, target: Location) -> tuple[str, dict[str, Any] | None]:
        """(which options, the options) to open `target` with: None for local paths and
        `memory://`; the caller's target_options where they name it; storage_options in
        the reference file's own bucket or host; else none."""
        if target.is_local or target.scheme == "memory":
            return "none", None
        for prefix, options in self._by_prefix:
            if target.within(prefix):
                return f"prefix:{prefix.url}", options
        if self._flat is not None:
            return "target", self._flat
        if self.home is not None and target.same_place(self.home):
            return "home", self._storage_options
        return "none", {}

    def check_redirect(self, source: str, location: str) -> str:
        """The URL to read where a read of `source` (http(s)) was redirected to
        `location`, normalised as a target is; raises `ReferenceTargetError` naming the
        hop unless it lies under an allowed prefix, over http(s)."""
        try:
            hop = locate(location, query=True)
            if hop.scheme not in _DEFAULT_PORTS:
                raise _refused(location, "a scheme that is not http(s) after a redirect")
            self.check(hop)
        except ReferenceTargetError as error:
            raise ReferenceTargetError(
                f"{_shown(source)!r} redirected to {_shown(location)!r}, which is refused "
                f"(redirects are followed only to allowed targets): {error}"
            ) from None
        return hop.url
