"""http(s) URLs of AWS S3's and GCS's own hosts, as the object store URLs that open
the same data with listing: an http(s) store cannot list, and a user who pasted a
bucket's https URL (a dataset's landing page gives them) is told what to open instead.

    cannot_list("https://b.s3.us-west-2.amazonaws.com/my%20data.zarr")
    # ... open 's3://b/my data.zarr' with storage_options={'region': 'us-west-2'} ...
"""

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit

from aiozarr.errors import StoreError
from aiozarr.storage.backends.redaction import redact_url

__all__ = ["bucket_url", "cannot_list"]

# Virtual-hosted (the bucket in the host) and path-style (the bucket the path's first
# segment) hosts, S3's with or without a region (`s3.REGION` or the older `s3-REGION`).
_S3_HOSTED = re.compile(r"(?P<bucket>.+)\.s3[.-](?:(?P<region>[a-z0-9-]+)\.)?amazonaws\.com")
_S3_PATH = re.compile(r"s3[.-](?:(?P<region>[a-z0-9-]+)\.)?amazonaws\.com")
_GCS_HOSTED = re.compile(r"(?P<bucket>.+)\.storage\.googleapis\.com")
_GCS_PATH = "storage.googleapis.com"
# Host labels in a region's place that name no region.
_NOT_REGIONS = ("dualstack", "external-1", "accelerate")


def cannot_list(url: str, where: str) -> StoreError:
    """The error for listing the http(s) store of `url` (shown as `where`), naming the
    `s3://` or `gs://` URL that lists, where `url` is on S3's or GCS's own hosts."""
    instead = bucket_url(url)
    hint = f"; to list it, open {instead}" if instead else ""
    return StoreError(
        f"an http(s):// store cannot list ({where}): open the array by its path, or "
        f"write consolidated metadata{hint}"
    )


def bucket_url(url: str) -> str:
    """The `s3://` or `gs://` URL (and region option) naming the data of `url` on S3's or
    GCS's own hosts; "" for another URL. Its path is percent-decoded: an object store's
    URL takes its key as written."""
    parts = urlsplit(url)
    host, path = (parts.hostname or "").lower(), unquote(parts.path).strip("/")
    hosted = _S3_HOSTED.fullmatch(host) or _GCS_HOSTED.fullmatch(host)
    if hosted is not None:
        scheme = "s3" if hosted.re is _S3_HOSTED else "gs"
        return _shown(scheme, hosted["bucket"], path, hosted.groupdict().get("region"))
    at_path = _S3_PATH.fullmatch(host)
    if path and (at_path is not None or host == _GCS_PATH):
        bucket, _, path = path.partition("/")
        scheme, region = ("s3", at_path["region"]) if at_path else ("gs", None)
        return _shown(scheme, bucket, path, region)
    return ""


def _shown(scheme: str, bucket: str, path: str, region: str | None) -> str:
    where = redact_url(f"{scheme}://{bucket}/{path}".rstrip("/"))
    if region and region not in _NOT_REGIONS:
        return f"{where!r} with storage_options={{'region': {region!r}}}"
    return repr(where)
