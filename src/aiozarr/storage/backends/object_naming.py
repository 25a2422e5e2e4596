"""Where an obstore store points, without credentials: in words, what errors name; as a
value, the data its keys name (`data_named`: what the chunk cache shares a space by)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from obstore.store import AzureStore, GCSStore, HTTPStore, LocalStore, MemoryStore, S3Store

from aiozarr.storage.backends.redaction import redact_url

__all__ = ["data_named", "describe", "missing_bucket", "server"]

#: The port a scheme means when a URL names none.
_DEFAULT_PORTS = {"http": 80, "https": 443}
#: What names the data of each kind of store in its configuration, besides its endpoint.
_NAMING = {
    S3Store: ("bucket",),
    GCSStore: ("bucket",),
    AzureStore: ("account_name", "container_name", "use_emulator", "use_fabric_endpoint"),
}
#: The setting that names a store's server, where it is not the service's own: GCS's is
#: `base_url` (an emulator's, a proxy's), S3's and Azure's `endpoint`.
_SERVER_OPTION = {GCSStore: "base_url"}


def _endpoint(store: Any, config: Any) -> Any:
    """The server `store` is configured to send its requests to (None: its service's)."""
    name = next((n for kind, n in _SERVER_OPTION.items() if isinstance(store, kind)), "endpoint")
    return config.get(name)


def describe(store: Any, prefix: str = "") -> str:
    """Where an obstore store points, as a URL-like string without credentials (no keys;
    a URL's query and password redacted: `redact_url`), `prefix` (keys' prefix inside
    it) after its own."""
    try:
        return _describe(store, prefix)
    except BaseException as exc:  # obstore panics on some configs (client keys in config)
        if isinstance(exc, KeyboardInterrupt | SystemExit):
            raise
        return type(store).__name__


def _describe(store: Any, inner: str) -> str:
    own = str(getattr(store, "prefix", None) or "").strip("/")
    prefix = "/".join(part for part in (own, inner.strip("/")) if part)
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
    endpoint = _endpoint(store, config)
    where = f" at {redact_url(str(endpoint))}" if endpoint else ""
    return f"bucket {config.get('bucket', '')!r} does not exist{where}"


def server(store: Any) -> str:
    """The server `store` sends its requests to, without credentials: its endpoint, the
    origin of an HTTP store's URL, else where it points (`describe`)."""
    config = getattr(store, "config", None) or {}
    endpoint = _endpoint(store, config) if isinstance(config, dict) else None
    if endpoint:
        return redact_url(str(endpoint))
    if isinstance(store, HTTPStore):
        parts = urlsplit(store.url)
        return redact_url(f"{parts.scheme}://{parts.netloc}")
    return describe(store)


def data_named(store: Any, config: Any) -> tuple[Any, ...] | None:
    """The data an S3, GCS or Azure store's keys name: its kind, its bucket (account and
    container) and its endpoint (`endpoint_named`); never what only signs or routes the
    requests (credentials, `skip_signature`, region). None for another store."""
    names = next((n for kind, n in _NAMING.items() if isinstance(store, kind)), None)
    if names is None:
        return None
    endpoint = _endpoint(store, config)
    named = tuple(str(config.get(name, "")) for name in names)
    return (type(store), *named, endpoint_named(str(endpoint)) if endpoint else "")


def endpoint_named(url: str) -> str:
    """`url` as the server it names: scheme and host in lower case, the scheme's default
    port and a trailing slash dropped, no user or password. Names are not resolved
    (`localhost` and `127.0.0.1` stay two servers)."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:  # not a port: the text as given names it
        return url.strip().rstrip("/")
    host = (parts.hostname or "").lower()
    host = f"[{host}]" if ":" in host else host
    where = host if port is None or port == _DEFAULT_PORTS.get(scheme) else f"{host}:{port}"
    return f"{scheme}://{where}{parts.path.rstrip('/')}"
