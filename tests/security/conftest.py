"""The stores the security tests write to."""

from __future__ import annotations

from pathlib import Path

import pytest

from aiozarr.emulator import Emulator
from aiozarr.storage.backends.local import LocalStore
from aiozarr.storage.opening.url import from_url
from aiozarr.storage.protocol import Store


@pytest.fixture(params=["local", "s3"])
def store(request: pytest.FixtureRequest, tmp_path: Path, emulator: Emulator) -> Store:
    """An empty store of each kind: a local directory, a prefix of the S3 emulator."""
    if request.param == "local":
        return LocalStore(tmp_path / "data.zarr")
    name = f"range-{request.node.name}-{id(request)}.zarr"
    url = emulator.s3_url("".join(c if c.isalnum() or c in ".-" else "-" for c in name))
    return from_url(url, storage_options=emulator.storage_options())
