"""Fixtures every test folder shares: one emulator for the whole session (and stores on
it), moto's S3 server, fast retries, and dask's scratch space kept inside pytest's
temporary directory; and how many workers `-n auto` starts.

Hedged reads are off in the test suite (child processes inherit it through the
environment): a hedge is a second request sent when a read is slower than its peers,
so request counts would depend on the machine's load. tests/storage/test_hedging.py
turns it on.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from obstore.store import HTTPStore, S3Store

os.environ.setdefault("AIOZARR_HEDGE_READS", "0")

from tests.servers import FAST_RETRY, MOTO_BUCKET, unique_prefix

from aiozarr import config
from aiozarr.emulator import Emulator
from aiozarr.storage.backends.object_store import ObjectStore


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """One worker per CPU this process may run on: a container's CPU quota and affinity,
    not the host's count, which would start dozens of workers on a 2-CPU slice.
    `PYTEST_XDIST_AUTO_NUM_WORKERS` still decides where it is set (xdist reads it)."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    try:
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()
        if quota != "max":
            cpus = min(cpus or 1, max(1, int(quota) // int(period)))
    except (OSError, ValueError):
        pass
    return cpus or 1


@pytest.fixture(scope="session", autouse=True)
def dask_scratch_space(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Every dask `LocalCluster` of the session (here and in child processes) keeps its
    scratch space under pytest's temporary directory."""
    # Left to itself dask makes `$TMPDIR/dask-scratch-space` and never removes its lock
    # files; pytest removes its own directory after a passing run.
    path = str(tmp_path_factory.mktemp("dask-scratch"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DASK_TEMPORARY_DIRECTORY", path)  # read when dask is first imported
        if "dask" in sys.modules:  # imported while collecting: its config is already read
            import dask

            with dask.config.set({"temporary-directory": path}):
                yield
                return
        yield


@pytest.fixture(scope="session")
def emulator_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    """The emulator for the whole session (prefer `emulator`, which resets it)."""
    root = tmp_path_factory.mktemp("emulator")
    with Emulator(root).running_in_thread() as emu:
        yield emu


@pytest.fixture
def emulator(emulator_server: Emulator) -> Iterator[Emulator]:
    """The session's emulator with zeroed counters, no faults and no network shaping."""
    emu = emulator_server
    emu.clear_faults()
    emu.set_network(latency_ms=0, bandwidth_mbps=0, tail_rate=0, tail_ms=0)
    emu.set_list_latency(0)
    emu.reset_stats()
    yield emu
    emu.clear_faults()
    emu.set_network(latency_ms=0, bandwidth_mbps=0, tail_rate=0, tail_ms=0)
    emu.set_list_latency(0)


@pytest.fixture
def prefix() -> str:
    """A fresh key prefix in the emulator's bucket."""
    return f"t-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def bucket_dir(emulator: Emulator) -> Path:
    """The directory the emulator serves as its bucket."""
    return emulator.root


@pytest.fixture
def fast_retries(request: pytest.FixtureRequest) -> Iterator[None]:
    """Retries 1-10 ms apart, at most 4 tries (or the test module's `RETRY_ATTEMPTS`),
    within 10 s; no hedging (tested on its own), so request counts are exact."""
    attempts = getattr(request.module, "RETRY_ATTEMPTS", 4)
    with config.set(
        retry_attempts=attempts,
        retry_base_delay_s=0.001,
        retry_max_delay_s=0.01,
        retry_deadline_s=10.0,
        hedge_reads=False,
    ):
        yield


@pytest.fixture
def emulator_s3_store(emulator: Emulator) -> Callable[..., ObjectStore]:
    """Factory: an `ObjectStore(S3Store)` on the emulator under a fresh prefix."""

    def make(prefix: str | None = None, **kwargs: Any) -> ObjectStore:
        store = S3Store(
            emulator.bucket,
            prefix=prefix or unique_prefix(),
            retry_config=FAST_RETRY,
            **emulator.storage_options(),
        )
        return ObjectStore(store, **kwargs)

    return make


@pytest.fixture
def emulator_http_store(emulator: Emulator) -> Callable[[str], tuple[ObjectStore, Path]]:
    """Factory: `(read-only ObjectStore(HTTPStore), directory it serves)` under a prefix."""

    def make(prefix: str | None = None) -> tuple[ObjectStore, Path]:
        prefix = prefix or unique_prefix()
        directory = emulator.root / prefix
        directory.mkdir(parents=True, exist_ok=True)
        store = HTTPStore(
            emulator.http_url(prefix), client_options={"allow_http": True}, retry_config=FAST_RETRY
        )
        return ObjectStore(store, read_only=True), directory

    return make


@pytest.fixture(scope="session")
def moto_server() -> Iterator[str]:
    """moto's S3 server with bucket `aiozarr-test`; yields its endpoint URL."""
    werkzeug_app = pytest.importorskip("moto.moto_server.werkzeug_app")
    boto3 = pytest.importorskip("boto3")
    from werkzeug.serving import make_server

    app = werkzeug_app.DomainDispatcherApplication(werkzeug_app.create_backend_app)
    server = make_server(
        "127.0.0.1",
        0,
        _one_write_at_a_time(app),
        threaded=True,
        request_handler=werkzeug_app.MotoRequestHandler,
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    client = boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    client.create_bucket(Bucket=MOTO_BUCKET)
    yield endpoint
    server.shutdown()


def _one_write_at_a_time(app: Any) -> Any:
    """moto's WSGI `app` with its writes made one at a time, as S3 makes each write
    atomic. moto checks a PUT's If-Match / If-None-Match and then stores the object in
    two steps, and its server answers each request on a thread of its own: two writers
    on the same version could both pass the check (seen on a busy machine: two updates
    lost by `test_conditional_writes.py`'s writers on moto, none on S3 or the emulator).
    """
    lock = threading.Lock()

    def serve(environ: dict[str, Any], start_response: Any) -> Any:
        if environ["REQUEST_METHOD"] in {"PUT", "POST", "DELETE"}:
            with lock:
                return app(environ, start_response)
        return app(environ, start_response)

    return serve


@pytest.fixture
def moto_s3_options(moto_server: str) -> dict[str, Any]:
    """obstore S3 settings for the moto server (signed requests with dummy keys)."""
    return {
        "endpoint": moto_server,
        "region": "us-east-1",
        "access_key_id": "testing",
        "secret_access_key": "testing",
        "client_options": {"allow_http": True},
    }


@pytest.fixture
def moto_store(moto_s3_options: dict[str, Any]) -> Callable[..., ObjectStore]:
    """Factory: an `ObjectStore(S3Store)` on moto under a fresh prefix."""

    def make(prefix: str | None = None, **kwargs: Any) -> ObjectStore:
        store = S3Store(
            MOTO_BUCKET,
            prefix=prefix or unique_prefix(),
            retry_config=FAST_RETRY,
            **moto_s3_options,
        )
        return ObjectStore(store, **kwargs)

    return make


@pytest.fixture
def closed_port() -> int:
    """A port on 127.0.0.1 nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
