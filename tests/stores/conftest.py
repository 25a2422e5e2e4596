"""Fixtures for Azure and GCS tests: azurite (Azure Storage emulator) and GCS on the emulator.

* azurite is a Node program (npm package `azurite`); `.ci/install-emulators.sh` installs it
  into `~/.cache/aiozarr-ci` (or `$AIOZARR_CI_CACHE`). The session starts `azurite-blob` as
  a subprocess on a free port of 127.0.0.1 and stops it at the end; without node or
  azurite the Azure tests are skipped, saying so (they fail instead when `CI` is set).
* GCS: obstore's `GCSStore` cannot use gcp-storage-emulator (see docs/decisions/storage.md), but it
  speaks GCS's S3-compatible XML API, which aiozarr's own emulator serves, so the GCS
  backend runs against the emulator (`base_url` + a dummy bearer token).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import re
import shutil
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator
from email.utils import formatdate
from pathlib import Path
from typing import Any

import pytest
from obstore.store import AzureStore, GCSStore
from tests.servers import (
    AZURE_CONTAINER,
    AZURITE_ACCOUNT,
    AZURITE_KEY,
    FAST_RETRY,
    unique_prefix,
)

from aiozarr.emulator import Emulator
from aiozarr.storage.backends.object_store import ObjectStore

_STARTUP_TIMEOUT_S = 60.0
_LISTENING = re.compile(r"successfully listens on (http://\S+?)/?\s*$", re.MULTILINE)


def find_azurite() -> str | None:
    """Path of the `azurite-blob` launcher, or None when it (or node) is not installed.

    Looked for in `$AZURITE_BLOB`, on PATH, then in the folder `.ci/install-emulators.sh`
    installs into (`$AIOZARR_CI_CACHE`, default `~/.cache/aiozarr-ci`).
    """
    if shutil.which("node") is None:
        return None
    cache = Path(os.environ.get("AIOZARR_CI_CACHE") or Path.home() / ".cache" / "aiozarr-ci")
    for candidate in (
        os.environ.get("AZURITE_BLOB"),
        shutil.which("azurite-blob"),
        str(cache / "node_modules" / ".bin" / "azurite-blob"),
    ):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def _create_container(endpoint: str, name: str) -> None:
    """Create a container with a Shared Key signed request (obstore cannot create one)."""
    headers = {
        "x-ms-date": formatdate(usegmt=True),
        "x-ms-version": "2021-08-06",
        "Content-Length": "0",
    }
    # Shared Key string to sign: verb, 11 standard headers (all empty here; a zero
    # Content-Length is signed as empty), the x-ms- headers, the resource.
    signed_headers = "".join(
        f"{k}:{v}\n" for k, v in sorted(headers.items()) if k.startswith("x-ms-")
    )
    resource = f"/{AZURITE_ACCOUNT}/{AZURITE_ACCOUNT}/{name}\nrestype:container"
    to_sign = "PUT\n" + "\n" * 11 + signed_headers + resource
    digest = hmac.new(base64.b64decode(AZURITE_KEY), to_sign.encode(), hashlib.sha256).digest()
    headers["Authorization"] = f"SharedKey {AZURITE_ACCOUNT}:{base64.b64encode(digest).decode()}"
    request = urllib.request.Request(
        f"{endpoint}/{name}?restype=container", method="PUT", headers=headers
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 201, response.status


@pytest.fixture(scope="session")
def azurite_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """azurite's blob service with container `aiozarr-test`; yields the account URL.

    The account URL is `http://127.0.0.1:PORT/devstoreaccount1` (path-style, as obstore's
    `endpoint` wants it). azurite picks the port (`--blobPort 0`) and prints it.
    """
    launcher = find_azurite()
    if launcher is None:
        reason = "azurite not installed (needs node; run .ci/install-emulators.sh)"
        if os.environ.get("CI"):  # CI installs it: a skip there would hide a broken install
            pytest.fail(reason)
        pytest.skip(reason)
    workdir = tmp_path_factory.mktemp("azurite")
    log_path = workdir / "azurite.log"
    command = [
        launcher,
        "--blobHost",
        "127.0.0.1",
        "--blobPort",
        "0",
        "--location",
        str(workdir / "data"),
        "--silent",
        "--skipApiVersionCheck",
        "--loose",
        "--disableTelemetry",
    ]
    with log_path.open("wb") as log:  # a file, not a pipe: nothing can block on a full pipe
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=workdir
        )
    try:
        url = _wait_for_listening(process, log_path)
        endpoint = f"{url}/{AZURITE_ACCOUNT}"
        _create_container(endpoint, AZURE_CONTAINER)
        yield endpoint
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait_for_listening(process: subprocess.Popen[bytes], log_path: Path) -> str:
    deadline = time.monotonic() + _STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        text = log_path.read_text(errors="replace")
        found = _LISTENING.search(text)
        if found:
            return found.group(1)
        if process.poll() is not None:
            pytest.fail(f"azurite exited with status {process.returncode}:\n{text}")
        time.sleep(0.05)
    pytest.fail(
        f"azurite did not start within {_STARTUP_TIMEOUT_S:.0f} s:\n"
        f"{log_path.read_text(errors='replace')}"
    )


@pytest.fixture
def azure_options(azurite_server: str) -> dict[str, Any]:
    """obstore Azure settings for azurite (Shared Key signed requests, plain HTTP).

    Not `use_emulator=True`: obstore then ignores `endpoint` and only reads the port from
    the `AZURITE_BLOB_STORAGE_URL` environment variable.
    """
    return {
        "account_name": AZURITE_ACCOUNT,
        "account_key": AZURITE_KEY,
        "endpoint": azurite_server,
        "client_options": {"allow_http": True},
    }


@pytest.fixture
def azure_store(azure_options: dict[str, Any]) -> Callable[..., ObjectStore]:
    """Factory: an `ObjectStore(AzureStore)` on azurite under a fresh prefix."""

    def make(
        prefix: str | None = None, container: str = AZURE_CONTAINER, **kwargs: Any
    ) -> ObjectStore:
        store = AzureStore(
            container, prefix=prefix or unique_prefix(), retry_config=FAST_RETRY, **azure_options
        )
        return ObjectStore(store, **kwargs)

    return make


@pytest.fixture
def gcs_options(emulator: Emulator) -> dict[str, Any]:
    """obstore GCS settings for the emulator: its URL as `base_url`, a dummy token.

    A token, not `skip_signature`: obstore's GCS writes still fetch a token from the
    metadata server when signatures are skipped.
    """
    return {
        "base_url": emulator.endpoint,
        "bearer_token": "emulator",
        "client_options": {"allow_http": True},
    }


@pytest.fixture
def gcs_store(emulator: Emulator, gcs_options: dict[str, Any]) -> Callable[..., ObjectStore]:
    """Factory: an `ObjectStore(GCSStore)` on the emulator's bucket under a fresh prefix."""

    def make(prefix: str | None = None, **kwargs: Any) -> ObjectStore:
        store = GCSStore(
            emulator.bucket,
            prefix=prefix or unique_prefix(),
            retry_config=FAST_RETRY,
            **gcs_options,
        )
        return ObjectStore(store, **kwargs)

    return make
