"""icechunk repositories through every door: `aiozarr.open_*` on a session's store,
`aiozarr.zarr.Store` over it for zarr-python, and `aiozarr.zarr.CodecPipeline` on it,
each batch run by aiozarr's engine (no fallback to zarr-python's pipeline). What one door
writes and commits, the others and zarr-python's own pipeline read."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from tests.bridge.pipeline_helpers import Fallbacks, aiozarr_pipeline, zarr

import aiozarr
from aiozarr.errors import ReadOnlyError
from aiozarr.storage.backends.zarr_store import ZarrStore
from aiozarr.zarr import Store

icechunk = pytest.importorskip("icechunk")

SHAPE = (20, 30)
DATA = np.arange(600, dtype="float64").reshape(SHAPE)


@pytest.fixture
def repo() -> Any:
    return icechunk.Repository.create(icechunk.in_memory_storage())


def _read_back(repo: Any, expected: np.ndarray) -> None:
    """The committed array, read by zarr-python's own pipeline and by aiozarr."""
    store = repo.readonly_session("main").store
    np.testing.assert_array_equal(zarr.open_array(store, path="a", mode="r")[:], expected)
    np.testing.assert_array_equal(aiozarr.open_array(store, "a", mode="r")[:], expected)


def test_aiozarr_writes_and_reads_a_session(repo: Any) -> None:
    session = repo.writable_session("main")
    group = aiozarr.open_group(session.store, mode="w")
    arr = group.create_array(
        "a", shape=SHAPE, chunks=(5, 5), shards=(10, 10), dtype="f8", fill_value=-1
    )
    expected = np.full(SHAPE, -1.0)
    arr[:12] = DATA[:12]
    arr[15:17, 3:29] = 5
    expected[:12] = DATA[:12]
    expected[15:17, 3:29] = 5
    np.testing.assert_array_equal(arr[:], expected)
    session.commit("written by aiozarr")
    _read_back(repo, expected)
    assert sorted(aiozarr.open_group(repo.readonly_session("main").store).keys()) == ["a"]


def test_an_array_is_created_over_another(repo: Any) -> None:
    # what was under the path goes first: one `delete_dir` of the node (icechunk lists
    # only the prefixes of nodes, so a listing of the new path would be refused)
    session = repo.writable_session("main")
    aiozarr.open_group(session.store, mode="w")
    for fill in (1, 2):
        arr = aiozarr.create_array(
            session.store, "a", shape=(8,), chunks=(4,), dtype="i4", fill_value=0, overwrite=True
        )
        arr[:4] = fill
    np.testing.assert_array_equal(arr[:], [2, 2, 2, 2, 0, 0, 0, 0])
    session.commit("created twice")
    assert (
        aiozarr.open_array(repo.readonly_session("main").store, "a")[:].tolist()
        == [2] * 4 + [0] * 4
    )


def test_zarr_python_through_aiozarr_zarr_store(repo: Any, fallbacks: Fallbacks) -> None:
    session = repo.writable_session("main")
    store = Store(session.store)
    assert isinstance(store.aiozarr_store, ZarrStore) and not store.read_only
    with aiozarr_pipeline():
        arr = zarr.create_array(
            store, name="a", shape=SHAPE, chunks=(5, 5), shards=(10, 10), dtype="f8"
        )
        arr[:] = DATA
        np.testing.assert_array_equal(arr[3:17, 2:29], DATA[3:17, 2:29])
    session.commit("written through aiozarr.zarr.Store")
    _read_back(repo, DATA)
    read_only = Store(repo.readonly_session("main").store)
    assert read_only.read_only
    with pytest.raises(ReadOnlyError):
        zarr.open_array(read_only, path="a")[0, 0] = 1
    assert fallbacks.reasons == []


@pytest.mark.parametrize("shards", [(10, 10), None], ids=["sharded", "unsharded"])
def test_the_codec_pipeline_runs_icechunk_batches_on_the_engine(
    repo: Any, shards: Any, fallbacks: Fallbacks
) -> None:
    session = repo.writable_session("main")
    zarr.create_array(
        session.store,
        name="a",
        shape=SHAPE,
        chunks=(5, 5),
        shards=shards,
        dtype="f8",
        fill_value=-1.0,
    )[:] = DATA
    session.commit("written by zarr-python")
    expected = DATA.copy()
    fallbacks.clear()
    session = repo.writable_session("main")
    with aiozarr_pipeline():
        arr = zarr.open_array(session.store, path="a")
        np.testing.assert_array_equal(arr[:], DATA)
        np.testing.assert_array_equal(arr.oindex[[1, 19], [0, 29]], DATA[np.ix_([1, 19], [0, 29])])
        arr[2:13, 4:9] = 7
        arr[15:, :] = -1
        expected[2:13, 4:9] = 7
        expected[15:, :] = -1
        np.testing.assert_array_equal(arr[:], expected)
    assert fallbacks.reasons == []
    if shards is None:  # chunks equal to the fill value are deleted
        assert not zarr.core.sync.sync(session.store.exists("a/c/3/0"))
    session.commit("rewritten through the pipeline")
    _read_back(repo, expected)
