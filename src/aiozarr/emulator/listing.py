"""ListObjectsV2 and ListObjects (v1) over the served folder: pages of at most 1,000 keys
(`max-keys`), common prefixes under a `delimiter`, continuation tokens (v2) or markers
(v1), keys percent-encoded on request (`encoding-type=url`).

The folder is walked lazily in key order and the walk stops once the page is full, so a
page costs the folders on its way, not the whole tree: a subtree that sorts wholly
before the page's start is skipped unread, and with `delimiter=/` a folder becomes one
common prefix without its keys being listed. Symlinks that lead outside the folder are
not listed, and linked folders are not walked (no loops). The walk does blocking disk
I/O: the server runs it on a thread of its own.
"""

from __future__ import annotations

import base64
import binascii
import os
import stat
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote
from xml.sax.saxutils import escape

from aiohttp import web

from aiozarr.emulator.files import etag_of
from aiozarr.emulator.paths import TMP_DIR, is_inside, listing_dir, valid_name
from aiozarr.emulator.s3 import S3_NS, S3Error, xml_response

__all__ = ["MAX_KEYS", "list_objects", "walk_keys"]

MAX_KEYS = 1000  # S3's cap on one page

#: One walk result: a key and its stat, or a common prefix (ending in `/`) and None.
Entry = tuple[str, os.stat_result | None]


def list_objects(query: Mapping[str, str], bucket: str, root: Path) -> web.Response:
    """A ListObjectsV2 answer for the folder `root` (`list-type=2`; its
    `continuation-token` is the last key or common prefix of the page before,
    base64-encoded), else a ListObjects (v1) one (`marker`, `NextMarker`). With
    `encoding-type=url` the keys and prefixes in it are percent-encoded, as S3's."""
    v2 = "list-type" in query
    prefix, delimiter = query.get("prefix", ""), query.get("delimiter", "")
    encoding = query.get("encoding-type")
    if encoding is not None and encoding != "url":
        raise S3Error(400, "Invalid Encoding Method specified in Request", code="InvalidArgument")
    try:
        max_keys = min(int(query.get("max-keys", MAX_KEYS)), MAX_KEYS)
    except ValueError:
        raise S3Error(400, "max-keys must be an integer", code="InvalidArgument") from None
    if max_keys < 0:
        raise S3Error(400, "max-keys must not be negative", code="InvalidArgument")
    token = query.get("continuation-token") if v2 else None
    if token is not None:
        after = _decode_token(token)
    else:
        after = query.get("start-after" if v2 else "marker", "")
    contents, prefixes, last, truncated = _page(root, prefix, after, delimiter, max_keys)
    enc = _encoder(encoding)
    items = "".join(_contents(enc(key), st) for key, st in contents) + "".join(
        f"<CommonPrefixes><Prefix>{enc(p)}</Prefix></CommonPrefixes>" for p in prefixes
    )
    head = (
        f'<ListBucketResult xmlns="{S3_NS}"><Name>{escape(bucket)}</Name>'
        f"<Prefix>{enc(prefix)}</Prefix>"
    )
    tail = (
        f"<MaxKeys>{max_keys}</MaxKeys><Delimiter>{enc(delimiter)}</Delimiter>"
        + ("<EncodingType>url</EncodingType>" if encoding else "")
        + f"<IsTruncated>{str(truncated).lower()}</IsTruncated>"
    )
    if not v2:
        # S3 sends NextMarker only with a delimiter; always sending it is allowed, and
        # spares a client without one from finding the last key itself.
        following = f"<NextMarker>{enc(last)}</NextMarker>" if truncated else ""
        return xml_response(
            f"{head}<Marker>{enc(after)}</Marker>{tail}{items}{following}</ListBucketResult>"
        )
    following = ""
    if truncated:
        encoded = base64.urlsafe_b64encode(last.encode()).decode()
        following = f"<NextContinuationToken>{encoded}</NextContinuationToken>"
    if token is None and "start-after" in query:
        following += f"<StartAfter>{enc(after)}</StartAfter>"
    count = len(contents) + len(prefixes)
    return xml_response(
        f"{head}<KeyCount>{count}</KeyCount>{tail}{items}{following}</ListBucketResult>"
    )


def _decode_token(token: str) -> str:
    try:
        return base64.b64decode(token, altchars=b"-_", validate=True).decode()
    except (ValueError, binascii.Error):
        raise S3Error(
            400, "the continuation token is not one this server gave", code="InvalidArgument"
        ) from None


def _encoder(encoding: str | None) -> Callable[[str], str]:
    if encoding == "url":
        return lambda text: escape(quote(text, safe="/"))
    return escape


def _page(
    root: Path, prefix: str, after: str, delimiter: str, max_keys: int
) -> tuple[list[Entry], list[str], str, bool]:
    """One page: its keys, its common prefixes, the last key or prefix on it, whether
    more follow."""
    contents: list[Entry] = []
    prefixes: list[str] = []
    last, truncated = "", False
    for key, st in walk_keys(root, prefix, after, delimiter):
        common = ""
        if st is None:
            common = key
        elif delimiter and delimiter in key[len(prefix) :]:
            common = key[: key.index(delimiter, len(prefix)) + len(delimiter)]
        if common and prefixes and prefixes[-1] == common:
            last = key  # every key under one common prefix counts once
            continue
        if common and common == after:
            continue  # the page before ended on it (its NextMarker)
        if len(contents) + len(prefixes) >= max_keys:
            truncated = max_keys > 0
            break
        if common:
            prefixes.append(common)
        else:
            contents.append((key, st))
        last = common or key
    return contents, prefixes, last, truncated


def _contents(key_text: str, st: os.stat_result) -> str:
    """One `<Contents>`; `key_text`: the key as the page writes it (escaped, encoded)."""
    modified = datetime.fromtimestamp(st.st_mtime, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]
    return (
        f"<Contents><Key>{key_text}</Key><LastModified>{modified}Z</LastModified>"
        f"<ETag>{escape(etag_of(st))}</ETag><Size>{st.st_size}</Size>"
        "<StorageClass>STANDARD</StorageClass></Contents>"
    )


def walk_keys(root: Path, prefix: str, after: str = "", delimiter: str = "") -> Iterator[Entry]:
    """The stored keys under `root` that start with `prefix` and sort after `after`, in
    key order (UTF-8 bytes, which is code-point order), lazily. With `delimiter="/"` each
    folder below the prefix comes as one common prefix (when it holds a key) instead of
    its keys. Raises for a prefix that fails the key check."""
    directory = listing_dir(root, prefix)
    base, _, start = prefix.rpartition("/")
    base = base + "/" if base else ""
    yield from _walk(root, directory, base, start, after, delimiter == "/")


def _walk(
    root: Path, directory: Path | str, base: str, start: str, after: str, collapse: bool
) -> Iterator[Entry]:
    for name, is_dir, path in _entries(root, directory):
        if not name.startswith(start):
            continue
        key = base + name
        if is_dir:
            folder = key + "/"
            if after and folder <= after and not after.startswith(folder):
                continue  # every key in it sorts before the page
            if collapse:
                if folder != after and _holds_a_key(root, path, folder, after):
                    yield folder, None
                continue
            yield from _walk(root, path, folder, "", after, collapse)
        elif not after or key > after:
            try:
                st = os.stat(path)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):
                yield key, st


def _entries(root: Path, directory: Path | str) -> list[tuple[str, bool, str]]:
    """`(name, is_folder, path)` of what `directory` holds that a key can name, sorted in
    key order (a folder sorts as its name followed by `/`)."""
    try:
        with os.scandir(directory) as it:
            found = list(it)
    except OSError:  # gone, not a folder, not readable
        return []
    at_root = os.fspath(directory) == os.fspath(root)
    out = []
    for entry in found:
        if (at_root and entry.name == TMP_DIR) or not valid_name(entry.name):
            continue
        try:
            if entry.is_symlink():
                real = os.path.realpath(entry.path)
                if is_inside(root, real) and not os.path.isdir(real):
                    out.append((entry.name, False, entry.path))
            elif entry.is_dir(follow_symlinks=False):
                out.append((entry.name, True, entry.path))
            elif entry.is_file(follow_symlinks=False):
                out.append((entry.name, False, entry.path))
        except OSError:
            continue
    out.sort(key=lambda e: e[0] + "/" if e[1] else e[0])
    return out


def _holds_a_key(root: Path, directory: str, folder: str, after: str) -> bool:
    """Whether any key lies under `directory` (the folder `folder`) that sorts after
    `after` (stops at the first): a page that starts inside a folder still lists it as
    a common prefix when keys after its start roll up into it, as S3 does."""
    start = after if after.startswith(folder) else ""
    return next(_walk(root, directory, folder, "", start, False), None) is not None
