"""Fixtures for the reliability tests: one emulator for the session, reset for each test."""

from __future__ import annotations

from typing import Any

import pytest

from aiozarr.emulator import Emulator


@pytest.fixture
def emu(emulator: Emulator) -> Emulator:
    """The session's emulator (tests/conftest.py), reset for this test."""
    return emulator


@pytest.fixture
def s3(emu: Emulator, request: pytest.FixtureRequest) -> tuple[str, dict[str, Any]]:
    """`(url, storage_options)` of a fresh `s3://` location on the emulator."""
    name = request.node.name.replace("[", "-").replace("]", "").replace("/", "-")
    return emu.s3_url(f"{name}-{id(request)}.zarr"), emu.storage_options()
