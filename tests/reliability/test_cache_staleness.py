"""A cached chunk is never served past what its recheck policy promises: another process
rewrites the array on the emulator, and a reader with the chunk cache sees the new values
under `True` at once, under "open" once it reopens, and never under `False`."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from tests.reliability.spawned import run_writers

import aiozarr

SHAPE = (64, 64)


def _values(seed: int) -> np.ndarray:
    """Random values: compressed chunks of other sizes, so a rewrite moves them in a shard."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, 1 << (8 + seed), size=SHAPE, dtype="i8")


def _rewrite(url: str, options: dict[str, Any], writer: int, start: Any) -> None:
    """In a process of its own: write other values over the whole array."""
    start.wait()
    aiozarr.open_array(url, storage_options=options)[...] = _values(2)


def _create(url: str, options: dict[str, Any], sharded: bool) -> None:
    shards = {"shards": (32, 32)} if sharded else {}
    aiozarr.create_array(url, storage_options=options, data=_values(1), chunks=(8, 8), **shards)


def _reader(url: str, options: dict[str, Any], recheck: Any) -> aiozarr.Array:
    return aiozarr.open_array(
        url, storage_options=options, mode="r", cache_bytes=8 << 20, cache_recheck=recheck
    )


@pytest.mark.parametrize("sharded", [True, False], ids=["shards", "chunks"])
def test_under_true_a_rewrite_is_read_at_once(
    s3: tuple[str, dict[str, Any]], sharded: bool
) -> None:
    url, options = s3
    _create(url, options, sharded)
    reader = _reader(url, options, True)
    assert np.array_equal(reader[...], _values(1))
    assert np.array_equal(reader[8:40, 8:40], _values(1)[8:40, 8:40])
    run_writers(_rewrite, 1, url, options)
    assert np.array_equal(reader[8:40, 8:40], _values(2)[8:40, 8:40])
    assert np.array_equal(reader[...], _values(2))


def test_a_maximum_age_of_zero_revalidates_every_read(s3: tuple[str, dict[str, Any]]) -> None:
    url, options = s3
    _create(url, options, sharded=True)
    reader = _reader(url, options, 0)
    assert np.array_equal(reader[...], _values(1))
    run_writers(_rewrite, 1, url, options)
    assert np.array_equal(reader[...], _values(2))


def test_under_open_a_rewrite_is_read_once_reopened(s3: tuple[str, dict[str, Any]]) -> None:
    url, options = s3
    _create(url, options, sharded=True)
    reader = _reader(url, options, "open")
    assert np.array_equal(reader[...], _values(1))
    run_writers(_rewrite, 1, url, options)
    # Checked since this handle was opened: served as cached, as "open" promises.
    assert np.array_equal(reader[...], _values(1))
    assert np.array_equal(_reader(url, options, "open")[...], _values(2))


def test_under_false_the_cache_is_never_rechecked(s3: tuple[str, dict[str, Any]]) -> None:
    url, options = s3
    _create(url, options, sharded=False)
    first = _reader(url, options, False)  # kept: a pool lives while an array uses it
    assert np.array_equal(first[...], _values(1))
    run_writers(_rewrite, 1, url, options)
    assert np.array_equal(_reader(url, options, False)[...], _values(1))
    assert np.array_equal(_reader(url, options, True)[...], _values(2))
