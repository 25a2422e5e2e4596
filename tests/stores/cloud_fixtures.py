"""Shared fixtures for object-store tests: the emulator and moto's S3 server.

Import them into a conftest (`from tests.stores.cloud_fixtures import *`). Servers are
session-scoped, run on background threads and listen on 127.0.0.1, random ports.
"""

from __future__ import annotations

import socket
import uuid
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from obstore.store import HTTPStore, S3Store

from aiozarr.emulator import Emulator
from aiozarr.storage.object_store import ObjectStore

__all__ = [
    "FAST_RETRY",
    "closed_port",
    "emulator_http_store",
    "emulator_s3_store",
    "moto_s3_options",
    "moto_server",
    "moto_store",
    "unique_prefix",
]

# Tests retry fast and give up fast: a dead endpoint fails in well under a second.
FAST_RETRY: dict[str, Any] = {
    "max_retries": 2,
    "retry_timeout": timedelta(seconds=5),
    "backoff": {"init_backoff": timedelta(milliseconds=10),
                "max_backoff": timedelta(milliseconds=50), "base": 2},
}
MOTO_BUCKET = "aiozarr-test"


def unique_prefix() -> str:
    """A fresh key prefix, so tests sharing one server do not see each other's keys."""
    return f"t-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def emulator_s3_store(emulator: Emulator) -> Callable[..., ObjectStore]:
    """Factory: an `ObjectStore(S3Store)` on the emulator under a fresh prefix."""

    def make(prefix: str | None = None, **kwargs: Any) -> ObjectStore:
        store = S3Store(emulator.bucket, prefix=prefix or unique_prefix(),
                        retry_config=FAST_RETRY, **emulator.storage_options())
        return ObjectStore(store, **kwargs)

    return make


@pytest.fixture
def emulator_http_store(emulator: Emulator) -> Callable[[str], tuple[ObjectStore, Path]]:
    """Factory: `(read-only ObjectStore(HTTPStore), directory it serves)` under a prefix."""

    def make(prefix: str | None = None) -> tuple[ObjectStore, Path]:
        prefix = prefix or unique_prefix()
        directory = emulator.root / prefix
        directory.mkdir(parents=True, exist_ok=True)
        store = HTTPStore(emulator.http_url(prefix), client_options={"allow_http": True},
                          retry_config=FAST_RETRY)
        return ObjectStore(store, read_only=True), directory

    return make


@pytest.fixture(scope="session")
def moto_server() -> Iterator[str]:
    """moto's S3 server with bucket `aiozarr-test`; yields its endpoint URL."""
    moto_server_mod = pytest.importorskip("moto.server")
    boto3 = pytest.importorskip("boto3")
    server = moto_server_mod.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                          aws_access_key_id="testing", aws_secret_access_key="testing")
    client.create_bucket(Bucket=MOTO_BUCKET)
    yield endpoint
    server.stop()


@pytest.fixture
def moto_s3_options(moto_server: str) -> dict[str, Any]:
    """obstore S3 settings for the moto server (signed requests with dummy keys)."""
    return {"endpoint": moto_server, "region": "us-east-1", "access_key_id": "testing",
            "secret_access_key": "testing", "client_options": {"allow_http": True}}


@pytest.fixture
def moto_store(moto_s3_options: dict[str, Any]) -> Callable[..., ObjectStore]:
    """Factory: an `ObjectStore(S3Store)` on moto under a fresh prefix."""

    def make(prefix: str | None = None, **kwargs: Any) -> ObjectStore:
        store = S3Store(MOTO_BUCKET, prefix=prefix or unique_prefix(),
                        retry_config=FAST_RETRY, **moto_s3_options)
        return ObjectStore(store, **kwargs)

    return make


@pytest.fixture
def closed_port() -> int:
    """A port on 127.0.0.1 nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
