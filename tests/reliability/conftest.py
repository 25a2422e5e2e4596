"""Fixtures for the reliability tests: `s3`, a fresh location on the session's emulator,
and `make_store`, store objects over one new location of the backend a test names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.reliability.locations import StoreFactory

from aiozarr.emulator import Emulator


@pytest.fixture
def s3(emulator: Emulator, request: pytest.FixtureRequest) -> tuple[str, dict[str, Any]]:
    """`(url, storage_options)` of a fresh `s3://` location on the session's emulator."""
    name = request.node.name.replace("[", "-").replace("]", "").replace("/", "-")
    return emulator.s3_url(f"{name}-{id(request)}.zarr"), emulator.storage_options()


@pytest.fixture
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> StoreFactory:
    """Store objects over one new, empty location (tests/reliability/locations.py): a
    new object at each `make_store()`, one sharing no write lock at
    `make_store(own_locks=True)`. A test names its backends, any of `BACKENDS`:
    `@pytest.mark.parametrize("make_store", ["memory", "local"], indirect=True)`."""
    kind = getattr(request, "param", None)
    if kind is None:
        raise pytest.UsageError(
            f"{request.node.name}: name the backends of make_store with "
            '@pytest.mark.parametrize("make_store", [...], indirect=True)'
        )
    return StoreFactory(kind, request, tmp_path)
