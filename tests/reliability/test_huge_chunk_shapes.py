"""A chunk too large for memory is a `CodecError` naming it, not numpy's error.

A v3 array whose `chunk_shape` is 2**40 x 2**40 with a 64-byte chunk stored raised
numpy's `ValueError: Maximum allowed dimension exceeded` (zstd: its decode buffer),
`OverflowError` (gzip), or "array is too big" (a partial write of a missing chunk). Now
each is a `CodecError` naming the chunk, its shape and the memory it would need, raised
before anything is allocated; a missing chunk still reads as the fill value.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zstandard

import aiozarr
from aiozarr.errors import CodecError

HUGE = [2**40, 2**40]
STORED = bytes(range(64))
SHARD_INDEX = (0).to_bytes(8, "little") + (64).to_bytes(8, "little")

CHAINS: dict[str, tuple[list[dict[str, Any]], bytes]] = {
    "bytes": ([{"name": "bytes"}], STORED),
    "zstd": (
        [{"name": "bytes"}, {"name": "zstd", "configuration": {"level": 1, "checksum": False}}],
        zstandard.compress(STORED),
    ),
    "gzip": (
        [{"name": "bytes"}, {"name": "gzip", "configuration": {"level": 1}}],
        gzip.compress(STORED),
    ),
    "transpose": (
        [{"name": "transpose", "configuration": {"order": [1, 0]}}, {"name": "bytes"}],
        STORED,
    ),
    "sharding": (
        [
            {
                "name": "sharding_indexed",
                "configuration": {
                    "chunk_shape": HUGE,
                    "codecs": [{"name": "bytes"}],
                    "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
                },
            }
        ],
        STORED + SHARD_INDEX,
    ),
}


def _array(root: Path, codecs: list[dict[str, Any]], stored: bytes | None) -> Path:
    meta = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": HUGE,
        "data_type": "uint8",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": HUGE}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "codecs": codecs,
        "fill_value": 7,
    }
    (root / "a" / "c" / "0").mkdir(parents=True)
    (root / "a" / "zarr.json").write_text(json.dumps(meta))
    if stored is not None:
        (root / "a" / "c" / "0" / "0").write_bytes(stored)
    return root / "a"


@pytest.mark.parametrize("chain", sorted(CHAINS))
def test_a_stored_chunk_too_large_for_memory_is_a_codec_error(tmp_path: Path, chain: str) -> None:
    codecs, stored = CHAINS[chain]
    arr = aiozarr.open_array(_array(tmp_path, codecs, stored), mode="r+")
    for action in (lambda: arr[0, :4], lambda: arr.__setitem__((0, 0), 1)):
        with pytest.raises(CodecError, match=r"'c/0/0'.*\(1099511627776, 1099511627776\)") as e:
            action()
        # uncompressed, four values are read as their span: the size stored is refused
        assert "memory" in str(e.value) or (
            chain == "bytes" and "stored as 64 bytes" in str(e.value)
        )


def test_a_missing_chunk_reads_as_fill_and_refuses_a_partial_write(tmp_path: Path) -> None:
    codecs, _ = CHAINS["zstd"]
    arr = aiozarr.open_array(_array(tmp_path, codecs, None), mode="r+")
    np.testing.assert_array_equal(arr[0, :4], [7, 7, 7, 7])
    with pytest.raises(CodecError, match=r"'c/0/0'.*cannot be read or written"):
        arr[0, 0] = 1
    assert not (tmp_path / "a" / "c" / "0" / "0").exists()
