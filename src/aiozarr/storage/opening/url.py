"""`from_url`: pick and configure the store for a URL or a local path.

    from_url("s3://bucket/data.zarr", storage_options={"region": "us-west-2"})
    from_url("gs://bucket/data.zarr")            # public bucket: no credentials needed
    from_url("https://example.org/data.zarr")    # read-only
    from_url("memory://scratch")                 # one MemoryStore per name, per process
    from_url("/tmp/data.zarr")                   # LocalStore
    from_url("/tmp/data.zarr.zip")               # ZipStore (a local one can be written)

The store is rooted at the URL's path: keys are relative to it. This module is the one
that turns strings into stores: `open_zip` opens a `.zip` path or URL, a remote archive
through the store of its parent URL (zip.py itself only takes a path or a store).

How a path is read from a URL:

- `s3://`, `gs://`, `az://` (...): everything after the bucket (container) is the key
  prefix exactly as written, as s3fs and gcsfs (and so zarr-python) read it: `#` and `?`
  are part of the key (`s3://b/run#1.zarr` is key prefix `run#1.zarr`, not `run`), and
  `%` is a character (`s%20p` is not `s p`). Object keys may hold any of them. Where
  such a URL with a percent-escape opens nothing, the error says so and names the URL
  of the decoded path (`escapes_noted`).
- `file:` URLs: see `local_path` (percent-decoded; `#` and `?` kept in the path; no host).
- `http(s)://` URLs are URLs: a query is sent as one.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import SplitResult, quote, unquote, urlsplit
from urllib.request import url2pathname

from aiozarr import config
from aiozarr.errors import NodeNotFoundError, StoreError
from aiozarr.storage.backends import aws_config, credentials
from aiozarr.storage.backends.redaction import redact_url
from aiozarr.storage.backends.zip import ZipMode, ZipStore
from aiozarr.storage.opening import cloud_credentials, shared_clients
from aiozarr.storage.opening.endpoints import check_endpoint
from aiozarr.storage.opening.option_names import closest_option
from aiozarr.storage.protocol import Store

if TYPE_CHECKING:
    from aiozarr.storage.backends.object_store import ObjectStore

__all__ = [
    "escapes_noted",
    "from_url",
    "identity_encoding",
    "is_local",
    "local_path",
    "names_zip",
    "open_zip",
    "without_trailing_slash",
]

_S3 = ("s3", "s3a")
_GCS = ("gs", "gcs")
_AZURE = ("az", "azure", "abfs", "abfss", "adl")
_HTTP = ("http", "https")
_REMOTE = (*_S3, *_GCS, *_AZURE, *_HTTP, "memory")
_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")

# obstore client settings (`ClientConfig`); anything else goes to the store's config.
_CLIENT_KEYS = frozenset(
    {
        "allow_http",
        "allow_invalid_certificates",
        "connect_timeout",
        "default_content_type",
        "default_headers",
        "pool_idle_timeout",
        "pool_max_idle_per_host",
        "proxy_url",
        "proxy_ca_certificate",
        "proxy_excludes",
        "root_certificate",
        "randomize_addresses",
        "read_timeout",
        "timeout",
        "user_agent",
    }
)
# fsspec spellings -> obstore's: any store's, then s3fs's (gcsfs's `token` and adlfs's
# `connection_string`: `cloud_credentials`).
_ALIASES = {
    "endpoint_url": "endpoint",
    "region_name": "region",
}
_S3_ALIASES = {
    "key": "access_key_id",
    "secret": "secret_access_key",
    "token": "session_token",
    "aws_access_key_id": "access_key_id",
    "aws_secret_access_key": "secret_access_key",
    "aws_session_token": "session_token",
    "requester_pays": "request_payer",
}
# gcsfs names its server `endpoint_url` (as a fake-gcs-server's); obstore's GCS, `base_url`.
_GCS_ALIASES = {"endpoint_url": "base_url"}
# Options that name the server to send requests to (S3 `endpoint`, fsspec's `endpoint_url`,
# obstore's `aws_endpoint`, GCS `base_url`, ...): each must be an http(s) URL.
_ENDPOINT_OPTION = re.compile(r"(?:^|_)(?:endpoint(?:_url)?|base_url)$", re.IGNORECASE)
# S3-compatible servers are often named by the environment, as the AWS tools read it.
_ENDPOINT_ENV = ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_ENDPOINT")


def from_url(
    url: str | os.PathLike[str],
    *,
    storage_options: Mapping[str, Any] | None = None,
    read_only: bool = False,
    check_redirect: Callable[[str, str], str] | None = None,
) -> Store:
    """The store for `url`, rooted at its path.

    Schemes: `s3://`, `gs://` / `gcs://`, `az://` / `azure://` / `abfs[s]://`,
    `http[s]://` (always read-only), `file://` or a plain path (`LocalStore`) and
    `memory://NAME` (a `MemoryStore` shared by every open of the same name in this
    process). `storage_options` go to obstore (`region`, `endpoint`, credentials,
    `client_options`, ...); fsspec spellings (`anon`, `endpoint_url`, `key`/`secret`/
    `token`, `client_kwargs`, `profile`, `requester_pays`, `use_ssl`) are understood too.
    A `retry_config` is accepted, but obstore's retries are always off: aiozarr retries,
    as `aiozarr.config` `retry_*` say.

    S3 credentials are found where boto3 and s3fs find them: the options, the
    environment's keys, the profile of `~/.aws/credentials` and `~/.aws/config` that
    `AWS_PROFILE` (or `profile=`) names or their `[default]`, an instance or container
    role (`storage.credentials`). GCS and Azure stores take the options' and the
    environment's. A store with none signs nothing, so public data needs no account;
    `anon=True` never signs; `anon=False`, where nothing is found, leaves the signing to
    obstore's own sources (an EC2 instance role, a GCE service account); an S3 store
    whose instance metadata service lists no role is then refused here. `use_ssl=False`
    sends S3 requests over http to AWS (an `endpoint` keeps its own scheme, as for boto3).

    `check_redirect(from, to)`: an http(s) store follows a redirect only where this
    returns the URL to read (it raises to refuse), and sends none of its headers to
    another scheme, host or port (`storage/backends/guarded_http.py`); without it, obstore's client
    follows redirects. Other schemes ignore it.
    """
    text = os.fspath(url)
    parts = urlsplit(text)
    scheme = parts.scheme.lower()
    options = dict(storage_options or {})
    if names_zip(text):
        mode: ZipMode = "r" if read_only else "a"
        return open_zip(text, mode=mode, storage_options=options, check_redirect=check_redirect)
    if is_local(text):
        if options:  # the names only: the values may be credentials
            raise StoreError(f"local path {text!r} takes no storage options, got {sorted(options)}")
        from aiozarr.storage.backends.local import LocalStore

        return LocalStore(Path(local_path(text)), read_only=read_only)
    if scheme == "memory":  # the name as written: `memory://run#1` is not `memory://run`
        return _memory_store(text.partition(":")[2].removeprefix("//"), read_only=read_only)
    if scheme in _HTTP:  # keys are joined with "/": a root ending in one asks "//key"
        text = without_trailing_slash(text)
    if scheme in _HTTP and check_redirect is not None:
        return _guarded_http(text, options, check_redirect)
    if scheme in _S3 + _GCS + _AZURE + _HTTP:
        _check_host(text, parts)
        return _object_store(text, scheme, options).with_read_only(read_only or scheme in _HTTP)
    raise StoreError(f"cannot open {redact_url(text)!r}: unknown URL scheme {scheme!r}")


def without_trailing_slash(url: str) -> str:
    """`url` without the slashes that end its path, its query and fragment kept
    (`http://h/a.zarr/?sig=1` -> `http://h/a.zarr?sig=1`)."""
    marks = [at for at in (url.find("?"), url.find("#")) if at >= 0]
    end = min(marks, default=len(url))
    return url[:end].rstrip("/") + url[end:]


def _check_host(text: str, parts: SplitResult) -> None:
    """Refuse a remote URL without a bucket or host (`s3:/bucket/x`), for which obstore
    says only "Unable to recognise URL", a bucket name holding `?` or `#` (obstore
    would read the bucket before them, and the key after them as another key), and an
    S3 or GCS bucket with a user, password or port (`s3://KEY:SECRET@bucket`, `gs://b:1`):
    obstore drops them and opens the bucket with other credentials, or none."""
    scheme = parts.scheme.lower()
    if not parts.netloc:
        path = parts.path.lstrip("/")
        meant = f": did you mean {f'{scheme}://{path}'!r}?" if path else ""
        raise StoreError(
            f"cannot open {redact_url(text)!r}: no bucket or host after '{scheme}:' "
            f"(URLs are {scheme}://BUCKET/PATH{meant})"
        )
    bucket = _bucket_and_key(text)[0]
    if scheme not in _HTTP and ("?" in bucket or "#" in bucket):
        raise StoreError(f"cannot open {text!r}: bucket {bucket!r} holds '?' or '#'")
    if scheme in _S3 + _GCS and ("@" in bucket or ":" in bucket):  # obstore drops them
        raise StoreError(
            f"cannot open {redact_url(text)!r}: a bucket name holds no '@' or ':' (give "
            "credentials and an endpoint in storage_options, not in the URL)"
        )


def _bucket_and_key(url: str) -> tuple[str, str]:
    """`"s3://b/run#1.zarr"` -> `("b", "run#1.zarr")`: the key as written, nothing parsed
    away (`urlsplit` would make `#1.zarr` a fragment)."""
    bucket, _, key = url.partition("://")[2].partition("/")
    return bucket, key


def _obstore_url(url: str) -> str:
    """`url` (`s3://`, `gs://`, `az://`, ...) as obstore's `from_url` must be given it to
    root its store at the key as written: obstore parses the path as a URL's (a `#` or
    `?` ends it) and percent-decodes it, so every character is given percent-encoded."""
    scheme = url.partition("://")[0]
    bucket, key = _bucket_and_key(url)
    return f"{scheme}://{bucket}/{quote(key, safe='/')}"


def escapes_noted(missing: NodeNotFoundError, url: object) -> NodeNotFoundError:
    """`missing` (nothing found at `url`), told, where `url` is an object store's URL with
    a percent-escape in its path (`s3://b/my%20data.zarr`), that the escape was taken as
    the characters written, and which URL names the decoded path (`s3://b/my data.zarr`);
    else `missing` itself. No request is sent: the decoded path is only named."""
    scheme, _, rest = url.partition("://") if isinstance(url, str) else ("", "", "")
    bucket, key = _bucket_and_key(url) if rest else ("", "")
    if scheme.lower() not in (*_S3, *_GCS, *_AZURE) or not _ESCAPE.search(key):
        return missing
    decoded = redact_url(f"{scheme}://{bucket}/{unquote(key)}")
    return type(missing)(
        f"{missing}; a percent-escape in an object store's URL is taken as written, as "
        f"s3fs and gcsfs take it ('%20' is 3 characters of the key): the decoded path "
        f"is {decoded!r}"
    )


def is_local(url: str) -> bool:
    """Whether `url` is a local path (or a `file://` URL): as fsspec (and so zarr-python)
    reads it, a name with a colon but no `://` is a path (`run:1.zarr`,
    `T00:00.zarr`), unless the scheme is one `from_url` opens (`s3:/b` is a typo)."""
    scheme = urlsplit(url).scheme.lower()
    if scheme and "://" not in url and scheme not in _REMOTE:
        return True
    return scheme in ("", "file") or len(scheme) == 1  # len 1: a Windows drive letter


def local_path(url: str) -> str:
    """The local path that a plain path or a `file:` URL names (a plain path as it is).

    A `file:` URL is read as `Path.as_uri()` writes one (RFC 8089): its path is
    percent-decoded (`file:///tmp/s%20p.zarr` is `/tmp/s p.zarr`), and its host is
    empty or `localhost` (`file://tmp/x` names host `tmp`: a `StoreError` says so).
    `#` and `?` are part of the path, as fsspec (and so zarr-python) read a `file://`
    URL: a local file has no query or fragment, and `file:///d/x#1.zarr` means the
    directory `x#1.zarr` (`Path.as_uri()` writes it `x%231.zarr`, read the same).
    """
    if urlsplit(url).scheme.lower() != "file":
        return url
    rest = url[len("file:") :]
    if rest.startswith("//"):
        host, slash, path = rest[2:].partition("/")
        if host.lower() not in ("", "localhost"):
            raise StoreError(
                f"cannot open {url!r}: a file URL names no host, got {host!r} "
                f"(for the local path /{host}/{path}, write 'file:///{host}/{path}')"
            )
        rest = slash + path
    return url2pathname(rest)


def names_zip(url: str) -> bool:
    """Whether `url` (a path or URL) names a zip archive: its path ends with `.zip`
    (for an object store's or a `file:` URL, the path as `from_url` reads it, with any
    `#` or `?` in it)."""
    parts = urlsplit(url)
    if parts.scheme.lower() in (*_HTTP, "memory"):
        path = parts.path
    else:
        path = local_path(url) if is_local(url) else _bucket_and_key(url)[1]
    return path.rstrip("/").endswith(".zip")


def _can_write(path: str) -> bool:
    """Whether the archive at `path` can be opened for writing (True if missing: "a"
    creates it). Tried, not guessed from permission bits: root, read-only mounts and
    immutable files each answer differently."""
    try:
        fd = os.open(Path(path).expanduser(), os.O_RDWR)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    os.close(fd)
    return True


def open_zip(
    url: str,
    *,
    mode: ZipMode,
    storage_options: Mapping[str, Any] | None = None,
    check_redirect: Callable[[str, str], str] | None = None,
) -> ZipStore:
    """The `ZipStore` for a `.zip` path or URL: a local file in `mode`, or a remote archive
    (read only) through the store of its parent URL. Mode "a" (append, the default of
    `aiozarr.open_*`) opens a remote archive, or a local file that cannot be written, for
    reading; "w" and "x" on a remote archive raise."""
    if is_local(url):
        if storage_options:
            raise StoreError(f"local path {url!r} takes no storage options")
        path = local_path(url)
        if mode == "a" and not _can_write(path):  # "a" writes if it can: reads otherwise
            mode = "r"
        return ZipStore(path, mode=mode)
    if mode not in ("r", "a"):  # "a" (open_*'s default) reads, as http:// stores do
        raise StoreError(
            f"cannot write {url!r}: zip archives are written locally (ZipStore(path, mode="
            "'w')), then uploaded; remote ones are read only"
        )
    parent, _, name = url.rstrip("/").rpartition("/")
    parent_store = from_url(
        parent, storage_options=storage_options, read_only=True, check_redirect=check_redirect
    )
    return ZipStore.over(parent_store, name)


def _guarded_http(
    url: str, options: dict[str, Any], check_redirect: Callable[[str, str], str]
) -> Store:
    from aiozarr.storage.backends.guarded_http import GuardedHTTPStore

    given = _given_names(options)
    store_options, client = _normalize(urlsplit(url).scheme.lower(), options)
    _refuse_store_options(url, store_options, given)
    return GuardedHTTPStore(url, check_redirect=check_redirect, client_options=client)


def _memory_store(name: str, *, read_only: bool) -> Store:
    from aiozarr.storage.backends.memory import MemoryStore

    store = MemoryStore.named(name)  # the name travels in its pickles
    return store.with_read_only(read_only) if read_only else store


def _default_retry() -> dict[str, Any]:
    # aiozarr retries in one place (storage/policy/retry.py, `aiozarr.config` retry_*); obstore
    # retrying too would multiply the attempts. ObjectStore enforces this for any store.
    return {"max_retries": 0, "retry_timeout": timedelta(seconds=config.get().retry_deadline_s)}


def _normalize(scheme: str, options: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Split options into (store config, client options), mapping fsspec spellings."""
    client: dict[str, Any] = dict(options.pop("client_options", None) or {})
    for name, value in (options.pop("client_kwargs", None) or {}).items():
        options.setdefault(name, value)  # s3fs passes endpoint_url / region_name here
    if scheme in _AZURE:
        options = cloud_credentials.adlfs_options(options)
    aliases = _aliases(scheme)
    store: dict[str, Any] = {}
    given: dict[str, str] = {}  # obstore's name -> the spelling that set it
    for name, value in options.items():
        if _ENDPOINT_OPTION.search(name):
            check_endpoint(f"storage option {name!r}", value)
        target = aliases.get(name, name)
        into = client if target in _CLIENT_KEYS else store
        if target in into and into[target] != value:
            raise _conflict(given[target], name, target)
        into[target], given[target] = value, name
    if scheme in _GCS and "token" in store:
        store.update(cloud_credentials.gcsfs_token(store.pop("token")))
    anon = store.pop("anon", None)
    if anon is not None:
        unsigned = _flag("anon", anon)
        skip = store.get("skip_signature")
        if skip is not None and _flag("skip_signature", skip) != unsigned:
            raise _conflict("anon", "skip_signature", "skip_signature")
        store["skip_signature"] = unsigned
    variable = _env_endpoint()
    if scheme in _S3 and "endpoint" not in store and variable:
        check_endpoint(f"environment variable {variable}", os.environ[variable])
        store["endpoint"] = os.environ[variable]
    endpoint = str(store.get("endpoint") or store.get("base_url") or "")  # base_url: GCS
    if endpoint.startswith("http://") or scheme == "http":
        client.setdefault("allow_http", True)
    return store, client


def _conflict(first: str, second: str, target: str) -> StoreError:
    """Two spellings of one option with different values: which one wins is not for
    aiozarr to guess (a server, a region, whether to sign). The values are not shown:
    they may be credentials."""
    both = f"storage options {first!r} and {second!r}"
    return StoreError(f"{both} both set {target!r}, to different values: give one of them")


def _aliases(scheme: str) -> dict[str, str]:
    """The fsspec spellings a `scheme` store takes -> obstore's names."""
    if scheme in _S3:
        return {**_ALIASES, **_S3_ALIASES}
    return {**_ALIASES, **_GCS_ALIASES} if scheme in _GCS else _ALIASES


def _given_names(options: Mapping[str, Any]) -> set[str]:
    """The option names a user wrote (`client_kwargs`' among them), for error messages."""
    return {*options, *(options.get("client_kwargs") or {})}


def _as_given(name: str, scheme: str, given: set[str]) -> str:
    """Obstore's option `name` as the user spelled it (`region` given as `region_name`,
    `skip_signature` as `anon`), so an error names what they wrote."""
    if name in given:
        return name
    spellings = {**_aliases(scheme), "anon": "skip_signature"}
    return next((g for g in sorted(given) if spellings.get(g) == name), name)


def _refuse_store_options(url: str, store_options: Mapping[str, Any], given: set[str]) -> None:
    """An http(s) store takes client options only: the others are refused by the names
    given (`anon`, not the `skip_signature` it became)."""
    if store_options:
        names = sorted(_as_given(name, "https", given) for name in store_options)
        raise StoreError(
            f"HTTP store {redact_url(url)!r} takes only client options, got {names} "
            "(an http(s) URL is read unsigned, from its own host)"
        )


def _env_endpoint() -> str:
    """The environment variable that names an S3 endpoint (MinIO, `aiozarr serve`), or
    ""."""
    return next((e for e in _ENDPOINT_ENV if os.environ.get(e)), "")


def _use_ssl(value: Any, store: dict[str, Any], client: dict[str, Any]) -> None:
    """fsspec's `use_ssl`: False sends requests to AWS's S3 endpoint over http. As for
    boto3, an endpoint given (option or environment) keeps its own scheme."""
    if value is None:
        return
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        value = value.strip().lower() == "true"
    if not isinstance(value, bool):
        raise StoreError(f"storage option 'use_ssl' must be true or false, got {value!r}")
    if value or store.get("endpoint") or store.get("aws_endpoint_url_s3"):
        return
    env = os.environ
    region = store.get("region") or env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
    endpoint = f"http://s3.{region or 'us-east-1'}.amazonaws.com"
    check_endpoint("the endpoint use_ssl=False makes of the region", endpoint)
    store["endpoint"] = endpoint
    client["allow_http"] = True


def _flag(name: str, value: Any) -> bool:
    """A true/false option, as a bool or as the text `-o name=False` gives."""
    if isinstance(value, str) and value.strip().lower() in ("true", "false", "1", "0"):
        return value.strip().lower() in ("true", "1")
    if not isinstance(value, bool | int):
        raise StoreError(f"storage option {name!r} must be true or false, got {value!r}")
    return bool(value)


def _object_store(url: str, scheme: str, options: dict[str, Any]) -> ObjectStore:
    """The store for `url`, its obstore client shared by every URL of its bucket opened
    with the same options and credential environment (`shared_clients`)."""
    from aiozarr.storage.backends.object_store import ObjectStore

    if "credential_provider" in options:  # a callable: identity is not configuration
        return ObjectStore(_build_obstore_store(url, scheme, options))
    names = [*_ENDPOINT_ENV, *credentials.S3_ENVIRONMENT]
    # The AWS files too: a profile written since, or changed, may change how it signs.
    settings = repr(
        (
            sorted(options.items(), key=lambda item: item[0]),
            *(os.environ.get(name) for name in names),
            cloud_credentials.credential_environment(),
            aws_config.files_state(),
        )
    )
    if scheme in _HTTP:  # an HTTP store is its URL: a query may sign it
        root, prefix = url, ""
    else:
        bucket, key = _bucket_and_key(url)
        root, prefix = f"{scheme}://{bucket}", _key_prefix(url, key)
    return shared_clients.shared_store(
        url, root, prefix, settings, lambda: _build_obstore_store(root, scheme, dict(options), url)
    )


def _key_prefix(url: str, key: str) -> str:
    """The key prefix of an object store's `url` (its `key` after the bucket), as obstore
    reads a URL's path: `.` and `..` segments resolved, one trailing `/` dropped, an empty
    segment refused (`a//b`: no object store has one)."""
    segments = key.split("/")
    if segments[-1] == "":
        segments.pop()
    kept: list[str] = []
    for segment in segments:
        if segment == "":
            raise StoreError(f"cannot open {redact_url(url)!r}: its path has an empty segment")
        if segment == "..":
            del kept[-1:]
        elif segment != ".":
            kept.append(segment)
    return "/".join(kept)


def _build_obstore_store(url: str, scheme: str, options: dict[str, Any], shown: str = "") -> Any:
    """The obstore store of `url` (a bucket's root, or a whole URL); an error names
    `shown` (the URL opened, which may go below `url`) and what is wrong with it."""
    where = redact_url(shown or url)
    try:
        return _build(url, scheme, options, where)
    except StoreError as error:
        if where in str(error):
            raise
        raise StoreError(f"cannot open {where!r}: {error}") from error


def _build(url: str, scheme: str, options: dict[str, Any], where: str) -> Any:
    from obstore.store import HTTPStore
    from obstore.store import from_url as obstore_from_url

    from aiozarr.storage.backends import obstore_errors
    from aiozarr.storage.backends.obstore_client import CLIENT_TIMEOUT

    extra = {k: options.pop(k) for k in ("retry_config", "credential_provider") if k in options}
    extra.setdefault("retry_config", _default_retry())
    given = _given_names(options)
    store_options, client = _normalize(scheme, options)
    # Set here what ObjectStore would otherwise rebuild the store for (a ~8 ms rebuild).
    client.setdefault("timeout", CLIENT_TIMEOUT)
    try:
        if scheme in _HTTP:
            _refuse_store_options(url, store_options, given)
            client["default_headers"] = identity_encoding(client.get("default_headers"))
            return HTTPStore(url, client_options=client, retry_config=extra["retry_config"])
        if scheme in _S3:
            use_ssl = store_options.pop("use_ssl", None)
            credentials.choose_s3_signing(store_options, extra)
            _use_ssl(use_ssl, store_options, client)
        elif "skip_signature" not in store_options and not cloud_credentials.has_credentials(
            "gcs" if scheme in _GCS else "azure", store_options, extra
        ):
            store_options["skip_signature"] = True
        if scheme in _AZURE:
            store_options = cloud_credentials.without_url_account(url, store_options)
        if scheme == "gcs":
            url = "gs" + url[len("gcs") :]
        return obstore_from_url(_obstore_url(url), client_options=client, **extra, **store_options)
    except StoreError:
        raise
    except Exception as exc:  # obstore: unknown option, malformed URL
        message = _option_hint(obstore_errors.classify(exc).text, scheme, given)
        if scheme in _GCS and _flag("skip_signature", store_options.get("skip_signature", False)):
            message += cloud_credentials.unsigned_yet_read(scheme)
        raise StoreError(f"cannot open {where!r}: {message}") from exc


def identity_encoding(headers: Any) -> dict[str, Any]:
    """`headers` asking for bodies as stored (`Accept-Encoding: identity`) unless they
    ask otherwise: without it a server may gzip its answers, which are then refused
    (`object_ranges.check_encoding`)."""
    given = dict(headers or {})
    if not any(str(name).lower() == "accept-encoding" for name in given):
        given["Accept-Encoding"] = "identity"
    return given


# obstore's words for a store option (first) and a client option it does not know
# obstore's words for an Azure URL without its account, and the ways to name one.
_NO_ACCOUNT = "Account must be specified"
_ACCOUNT_WAYS = (
    "give the storage option account_name (or AZURE_STORAGE_ACCOUNT_NAME), or the URL "
    "as abfs://CONTAINER@ACCOUNT.dfs.core.windows.net/PATH"
)
_REFUSED_OPTION = re.compile(r"Configuration key: '([^']+)' is not valid|Invalid key: ([\w.-]+)")


def _option_hint(message: str, scheme: str, given: set[str]) -> str:
    """obstore's `message`: where it refuses an option name, with the name as given
    (`region_name` for the `region` a GCS store refuses) or the option meant; where an
    Azure URL names no account, the ways to name one."""
    refused = _REFUSED_OPTION.search(message)
    if refused is None and _NO_ACCOUNT in message:
        return f"{message.rstrip('.')}: {_ACCOUNT_WAYS}"
    if refused is None:
        return message
    name = refused.group(1) or refused.group(2)
    spelled = _as_given(name, scheme, given)
    if spelled != name:  # an fsspec spelling this kind of store has no counterpart for
        return f"{message.rstrip('.')} (given as {spelled!r}, which {scheme}:// does not take)"
    kind = "s3" if scheme in _S3 else "gcs" if scheme in _GCS else "azure"
    own = {*_aliases(scheme), "anon", "use_ssl", "client_options", "retry_config"}
    meant = closest_option(name, kind, own)
    return f"{message.rstrip('.')}; did you mean {meant!r}?" if meant else message
