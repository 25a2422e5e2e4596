"""Helpers of the codec pipeline tests (tests/bridge/test_codec_pipeline*.py): the
pipeline switched on for a block, the batches it left to zarr-python, and new zarr stores
of every kind it reads through aiozarr (their fixtures are in tests/bridge/conftest.py)."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

zarr = pytest.importorskip("zarr")
obstore = pytest.importorskip("obstore")

import aiozarr.zarr  # noqa: E402,F401  (registers the pipeline with zarr-python)
from aiozarr.emulator import Emulator  # noqa: E402

PIPELINE = "aiozarr.zarr.CodecPipeline"
#: zarr-python's own pipeline, the one the pipeline's values are compared with.
DEFAULT = "zarr.core.codec_pipeline.BatchedCodecPipeline"


@contextlib.contextmanager
def aiozarr_pipeline() -> Iterator[None]:
    """zarr-python arrays opened inside the block read and write through aiozarr."""
    with zarr.config.set({"codec_pipeline.path": PIPELINE}):
        yield


class Fallbacks:
    """The batches the pipeline left to zarr-python's default pipeline (its debug log)."""

    def __init__(self, caplog: pytest.LogCaptureFixture) -> None:
        self._caplog = caplog

    @property
    def reasons(self) -> list[str]:
        return [
            r.getMessage()
            for r in self._caplog.records
            if r.name == "aiozarr.zarr" and "falls back" in r.getMessage()
        ]

    def clear(self) -> None:
        self._caplog.clear()


def _emulator_store(emulator: Emulator) -> Any:
    s3 = obstore.store.S3Store(
        emulator.bucket, prefix=f"pipeline-{uuid.uuid4().hex}", **emulator.storage_options()
    )
    return zarr.storage.ObjectStore(s3)


#: The zarr stores the pipeline reads through aiozarr, by name.
STORES = ["memory", "local", "obstore-memory", "emulator"]
#: ... and zarr's ZipStore (written and read while open; it cannot delete a stored chunk,
#: so the write tests, which delete chunks, leave it out: it has its own).
READ_STORES = [*STORES, "zip"]


def new_store(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> Any:
    """A new, empty zarr store of `kind` (one of `STORES`) under `tmp_path`."""
    if kind == "memory":
        return zarr.storage.MemoryStore()
    if kind == "local":
        return zarr.storage.LocalStore(tmp_path / f"store-{uuid.uuid4().hex}")
    if kind == "obstore-memory":
        return zarr.storage.ObjectStore(obstore.store.MemoryStore())
    if kind == "zip":  # written and read while open
        store = zarr.storage.ZipStore(tmp_path / f"store-{uuid.uuid4().hex}.zip", mode="a")
        request.addfinalizer(store.close)
        return store
    if kind == "emulator":
        return _emulator_store(request.getfixturevalue("emulator"))
    raise ValueError(kind)
