"""Endpoint options (`endpoint`, `endpoint_url`, `base_url`, `AWS_ENDPOINT_URL`) checked
before obstore sees them: it takes any text and panics on the first request."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from aiozarr.errors import StoreError
from aiozarr.storage.backends.redaction import redact_url

__all__ = ["check_endpoint", "endpoint_problem"]


def check_endpoint(where: str, value: Any) -> None:
    """Refuse an endpoint that is not `http(s)://host[:port][/path]`: obstore takes any
    text and panics on the first request (a Rust panic on stderr, then `RustPanic`)."""
    problem = endpoint_problem(value)
    if problem:
        shown = repr(redact_url(value)) if isinstance(value, str) else type(value).__name__
        raise StoreError(
            f"{where} must be an http(s)://host[:port][/path] URL, got {shown}: {problem}"
        )


def endpoint_problem(value: Any) -> str:
    """What is wrong with `value` as an endpoint, or ""."""
    if not isinstance(value, str):
        return "not a string"
    if not value:
        return "empty"
    if any(c.isspace() or not c.isprintable() for c in value):
        return "it has white space or control characters"
    try:
        parts = urlsplit(value)
        port = parts.port  # checks the port: a number below 65536
    except ValueError as error:
        return str(error)
    if parts.scheme.lower() not in ("http", "https"):
        return "the scheme must be http or https"
    if not parts.hostname:
        return "no host"
    if parts.username is not None or parts.password is not None:
        return "credentials belong in the storage options, not in the endpoint"
    if parts.query or parts.fragment or value.endswith(("?", "#")):
        return "no query or fragment is taken"
    if port == 0:
        return "port 0"
    return ""
