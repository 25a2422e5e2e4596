"""How a burst of chunks is cut into codec calls: one per codec thread, but only where
each thread gets `SPLIT_BYTES` of it."""

from __future__ import annotations

import pytest

from aiozarr import config
from aiozarr.engine.executor import SPLIT_BYTES, split_for_threads

KIB = 1 << 10


@pytest.mark.parametrize(
    ("count", "nbytes", "sizes"),
    [
        (0, 0, []),
        (1, 64 * SPLIT_BYTES, [1]),  # one chunk: one call, however large
        (2, 512 * KIB, [2]),  # a drill's burst: two 256 KiB chunks, one hop
        (8, 2 * SPLIT_BYTES - 1, [8]),  # under a split's worth per thread
        (8, 2 * SPLIT_BYTES, [4, 4]),
        (9, 32 * SPLIT_BYTES, [5, 4]),  # a shard landing whole: one call per thread
        (3, 32 * SPLIT_BYTES, [1, 1, 1]),
    ],
)
def test_groups_follow_threads_and_bytes(count: int, nbytes: int, sizes: list[int]) -> None:
    items = list(range(count))
    with config.set(codec_threads=4 if count == 3 else 2):
        groups = split_for_threads(items, nbytes)
    assert [len(g) for g in groups] == sizes
    assert [i for g in groups for i in g] == items  # every item once, in order
