"""Whole reads of a sharded array from a store that fails a quarter of its requests.

Every request the read engine sends (metadata, shard indexes, parts read ahead of their
index, their re-reads, the ranges past them, hedged copies) runs under the one request
policy, so no transient failure ends a read: each read returns the exact values, for
every amount read ahead and part sizes that split the shards.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import aiozarr
from aiozarr import config
from aiozarr.emulator import Emulator
from aiozarr.storage.backends.local import LocalStore
from aiozarr.storage.opening.url import from_url

pytestmark = pytest.mark.timeout(300)

SEEDS = range(20)
# The fault mix of a flaky store: 20 % answered 503, 5 % reset, 2 % cut short, 1 % late
# (each rule draws among the requests the rules before it left alone).
MIX = [("status", 0.20), ("reset", 0.05 / 0.80), ("truncate", 0.02 / 0.75), ("late", 0.01 / 0.73)]
# 4 shards of 16 inner chunks of 2 KiB (random floats: zstd cannot shrink them).
DATA = np.random.default_rng(11).random((128, 128))
SHARD_BYTES = 64 * 64 * 8


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("flaky")
    arr = aiozarr.create_array(
        LocalStore(root / "a.zarr"),
        shape=DATA.shape,
        dtype="f8",
        chunks=(16, 16),
        shards=(64, 64),
        compressors=[{"name": "zstd"}],
    )
    arr[...] = DATA
    return root


@pytest.mark.parametrize("part", [8 << 10, 12_000], ids=["part-8KiB", "part-12000"])
@pytest.mark.parametrize("ahead", [0.0, 0.5, 1.0], ids=lambda f: f"ahead-{f}")
async def test_every_read_is_exact_under_a_seeded_fault_mix(
    root: Path, ahead: float, part: int
) -> None:
    assert part < SHARD_BYTES  # every shard is read in parts
    # 16 tries: the 20 reads here send ~600 requests that fail 27 % of the time; the
    # default's 10 give each a 2e-6 chance of giving up, this test's runs 1e-9.
    settings = config.set(
        read_ahead_fraction=ahead,
        max_request_bytes=part,
        retry_attempts=16,
        retry_base_delay_s=0.002,
        retry_max_delay_s=0.05,
        hedge_min_delay_s=0.05,
    )
    faults = 0
    with settings:
        for seed in SEEDS:
            async with Emulator(root, latency_ms=1, seed=seed) as emulator:
                for kind, rate in MIX:
                    emulator.inject(kind, rate=rate, methods=["GET"], delay_s=1.0)
                store = from_url(
                    emulator.s3_url("a.zarr"), storage_options=emulator.storage_options()
                )
                arr = await aiozarr.open_array_async(store, mode="r")
                got = await arr.getitem(...)
                assert np.array_equal(got, DATA), f"seed {seed}"
                assert store.runtime.bytes.held == 0
                faults += emulator.stats()["faults"]
    assert faults >= len(SEEDS) * 3  # the mix did fail reads, many times
