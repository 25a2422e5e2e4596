"""The chunk cache over kerchunk references: chunks checked again as one coalesced read
of their target, never one request per chunk, and never served stale."""

from __future__ import annotations

import json

import numpy as np
import pytest

import aiozarr
from aiozarr.emulator import Emulator

CHUNKS = 50
ZARRAY = {
    "zarr_format": 2,
    "shape": [CHUNKS * 10],
    "chunks": [10],
    "dtype": "<i4",
    "compressor": None,
    "fill_value": -1,
    "filters": None,
    "order": "C",
}


def _write(emulator: Emulator, prefix: str, values: np.ndarray) -> None:
    folder = emulator.root / prefix
    folder.mkdir(exist_ok=True)
    (folder / "data.bin").write_bytes(values.tobytes())
    refs = {".zgroup": '{"zarr_format":2}', "x/.zarray": json.dumps(ZARRAY)}
    refs.update({f"x/{c}": ["data.bin", c * 40, 40] for c in range(CHUNKS)})
    (folder / "refs.json").write_text(json.dumps({"version": 1, "refs": refs}))


@pytest.mark.parametrize("recheck", [True, 0.0])
def test_cached_chunks_of_one_target_are_checked_in_one_request(
    emulator: Emulator, prefix: str, recheck: bool | float
) -> None:
    values = np.arange(CHUNKS * 10, dtype="<i4")
    _write(emulator, prefix, values)
    group = aiozarr.open_group(
        emulator.s3_url(f"{prefix}/refs.json"),
        mode="r",
        storage_options=emulator.storage_options(),
        cache_bytes=1 << 20,
        cache_recheck=recheck,
    )
    arr = group["x"]
    np.testing.assert_array_equal(arr[...], values)
    emulator.reset_stats()
    np.testing.assert_array_equal(arr[...], values)
    assert emulator.stats()["by_method"] == {"GET": 1}  # was one per chunk
    (emulator.root / prefix / "data.bin").write_bytes((values + 1).tobytes())
    np.testing.assert_array_equal(arr[...], values + 1)  # never served stale
