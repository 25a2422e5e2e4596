"""Fixtures of the codec pipeline tests (helpers in tests/bridge/pipeline_helpers.py)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.bridge.pipeline_helpers import Fallbacks, new_store


@pytest.fixture
def fallbacks(caplog: pytest.LogCaptureFixture) -> Fallbacks:
    """The batches the codec pipeline leaves to zarr-python's default pipeline."""
    caplog.set_level(logging.DEBUG, logger="aiozarr.zarr")
    return Fallbacks(caplog)


@pytest.fixture
def make_store(tmp_path: Path, request: pytest.FixtureRequest) -> Callable[[str], Any]:
    """`make_store(kind)`: a new, empty zarr store of `kind` (see `STORES`)."""
    return lambda kind: new_store(kind, tmp_path, request)
