"""Where an obstore store points, in words without credentials: what errors name."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from obstore.store import AzureStore, GCSStore, HTTPStore, LocalStore, MemoryStore, S3Store

from aiozarr.storage.backends.redaction import redact_url

__all__ = ["describe", "missing_bucket", "server"]


def describe(store: Any) -> str:
    """Where an obstore store points, as a URL-like string without credentials (no keys;
    a URL's query and password redacted: `redact_url`)."""
    try:
        return _describe(store)
    except BaseException as exc:  # obstore panics on some configs (client keys in config)
        if isinstance(exc, KeyboardInterrupt | SystemExit):
            raise
        return type(store).__name__


def _describe(store: Any) -> str:
    prefix = str(getattr(store, "prefix", None) or "").strip("/")
    tail = f"/{prefix}" if prefix else ""
    if isinstance(store, S3Store):
        config = store.config
        where = f"s3://{config.get('bucket', '')}{tail}"
        endpoint = config.get("endpoint")
        return f"{where} (endpoint {redact_url(endpoint)})" if endpoint else where
    if isinstance(store, GCSStore):
        return f"gs://{store.config.get('bucket', '')}{tail}"
    if isinstance(store, AzureStore):
        config = store.config
        return f"az://{config.get('account_name', '')}/{config.get('container_name', '')}{tail}"
    if isinstance(store, HTTPStore):
        return redact_url(store.url)
    if isinstance(store, LocalStore):
        return f"file://{prefix and '/' + prefix}"
    if isinstance(store, MemoryStore):
        return "memory://"
    return type(store).__name__


def missing_bucket(store: Any) -> str:
    """What to tell a user whose bucket (or Azure container) is not there."""
    config = store.config
    if isinstance(store, AzureStore):
        return f"container {config.get('container_name', '')!r} does not exist ({describe(store)})"
    where = f" at {redact_url(config['endpoint'])}" if config.get("endpoint") else ""
    return f"bucket {config.get('bucket', '')!r} does not exist{where}"


def server(store: Any) -> str:
    """The server `store` sends its requests to, without credentials: its endpoint, the
    origin of an HTTP store's URL, else where it points (`describe`)."""
    config = getattr(store, "config", None) or {}
    endpoint = config.get("endpoint") if isinstance(config, dict) else None
    if endpoint:
        return redact_url(str(endpoint))
    if isinstance(store, HTTPStore):
        parts = urlsplit(store.url)
        return redact_url(f"{parts.scheme}://{parts.netloc}")
    return describe(store)
