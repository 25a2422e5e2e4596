"""URLs as they may be shown: without the credentials some of them carry.

A presigned or SAS URL carries its signature in the query string (`?X-Amz-Signature=...`,
`?sig=...&se=...`), and `https://user:password@host/` its password. Every repr, error
message, log line and command output that shows a URL shows `redact_url(url)`:

    https://***@host/data.zarr?<redacted>

Text that quotes URLs it did not build (obstore's error messages name the URL each
request was sent to) goes through `redact_text`.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

__all__ = ["redact_text", "redact_url"]

HIDDEN = "<redacted>"
# scheme://..., up to white space, a quote or an angle bracket (what ends a URL in text)
_URL = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]+")
# Schemes whose user names a container, not a credential: hadoop's
# `abfs[s]://CONTAINER@ACCOUNT.dfs.core.windows.net/PATH` (a password is still hidden).
_CONTAINER_AS_USER = ("abfs", "abfss")


def redact_url(url: str) -> str:
    """`url` with its userinfo replaced by `***` (but an `abfs://` URL's container) and its
    query and fragment by `<redacted>`; a local path (no `scheme://host`) is returned as
    it is."""
    try:
        parts = urlsplit(url)
    except ValueError:  # a malformed host ("http://[::1"): hide all after the scheme
        scheme, sep, _ = url.partition("://")
        return f"{scheme}{sep}{HIDDEN}" if sep else url
    if not parts.scheme or not parts.netloc:
        return url
    netloc = parts.netloc
    user, at, host = netloc.rpartition("@")
    if at and not (parts.scheme.lower() in _CONTAINER_AS_USER and ":" not in user):
        netloc = "***@" + host
    query = HIDDEN if parts.query else ""
    fragment = HIDDEN if parts.fragment else ""
    return urlunsplit((parts.scheme, netloc, parts.path, query, fragment))


def redact_text(text: str) -> str:
    """`text` with every URL in it redacted (`redact_url`)."""
    if "://" not in text:
        return text
    return _URL.sub(lambda found: redact_url(found.group(0)), text)
