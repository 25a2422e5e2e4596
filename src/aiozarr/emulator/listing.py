"""ListObjectsV2 over the stored keys: pages of `max-keys`, common prefixes under a
`delimiter`, continuation tokens."""

from __future__ import annotations

import base64
import os
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from xml.sax.saxutils import escape

from aiohttp import web

from aiozarr.emulator.files import etag_of
from aiozarr.emulator.s3 import S3_NS, xml_response

__all__ = ["list_objects_v2"]


def list_objects_v2(
    query: Mapping[str, str],
    bucket: str,
    keys: Callable[[str], list[tuple[str, os.stat_result]]],
) -> web.Response:
    """A ListObjectsV2 answer: `keys(prefix)` gives the stored keys, sorted, with their
    stats; `continuation-token` is the last key of the page before, base64-encoded."""
    prefix = query.get("prefix", "")
    delimiter = query.get("delimiter", "")
    max_keys = int(query.get("max-keys", 1000))
    token = query.get("continuation-token")
    after = base64.urlsafe_b64decode(token).decode() if token else query.get("start-after", "")
    contents: list[str] = []
    prefixes: list[str] = []
    last, truncated = "", False
    for key, st in keys(prefix):
        if after and key.encode() <= after.encode():
            continue
        common = ""
        if delimiter and delimiter in key[len(prefix) :]:
            common = key[: key.index(delimiter, len(prefix)) + len(delimiter)]
            if prefixes and prefixes[-1] == common:
                last = key  # every key under one common prefix counts once
                continue
        if len(contents) + len(prefixes) >= max_keys:
            truncated = True
            break
        if common:
            prefixes.append(common)
        else:
            modified = (
                datetime.fromtimestamp(st.st_mtime, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
            )
            contents.append(
                f"<Contents><Key>{escape(key)}</Key><LastModified>{modified}"
                f"</LastModified><ETag>{escape(etag_of(st))}</ETag>"
                f"<Size>{st.st_size}</Size><StorageClass>STANDARD</StorageClass>"
                "</Contents>"
            )
        last = key
    items = "".join(contents) + "".join(
        f"<CommonPrefixes><Prefix>{escape(p)}</Prefix></CommonPrefixes>" for p in prefixes
    )
    next_token = ""
    if truncated:
        encoded = base64.urlsafe_b64encode(last.encode()).decode()
        next_token = f"<NextContinuationToken>{encoded}</NextContinuationToken>"
    count = len(contents) + len(prefixes)
    return xml_response(
        f'<ListBucketResult xmlns="{S3_NS}"><Name>{bucket}</Name>'
        f"<Prefix>{escape(prefix)}</Prefix><KeyCount>{count}</KeyCount>"
        f"<MaxKeys>{max_keys}</MaxKeys><Delimiter>{escape(delimiter)}</Delimiter>"
        f"<IsTruncated>{str(truncated).lower()}</IsTruncated>{items}{next_token}"
        "</ListBucketResult>"
    )
