"""A rectilinear array written by hand, as the extension's spec describes it, read back.

The `zarr.json` uses every spelling of `chunk_shapes` (an integer step, explicit edges,
`[length, count]` runs, overflow past the end) and the chunk files are made here with
numpy and Python's gzip module, not with aiozarr, so a reader that agrees with itself
but not with the spec fails.
"""

from __future__ import annotations

import gzip
import itertools
import json
from pathlib import Path

import numpy as np
import pytest

import aiozarr
from aiozarr.errors import CodecError

SHAPE = (6, 6, 5)
# axis 0: step 4 -> (4, 4); axis 1: runs + explicit -> (1, 1, 1, 3); axis 2: overflow.
CHUNK_SHAPES = [4, [[1, 3], 3], [2, 4]]
EDGES = [(4, 4), (1, 1, 1, 3), (2, 4)]
FILL = -9


def _offsets(edges: tuple[int, ...]) -> list[int]:
    return [sum(edges[:i]) for i in range(len(edges) + 1)]


def write_by_hand(root: Path, data: np.ndarray, skip: set[tuple[int, ...]]) -> None:
    root.mkdir(parents=True)
    doc = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": list(SHAPE),
        "data_type": "uint16",
        "chunk_grid": {
            "name": "rectilinear",
            "configuration": {"kind": "inline", "chunk_shapes": CHUNK_SHAPES},
        },
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": FILL & 0xFFFF,
        "codecs": [
            {"name": "bytes", "configuration": {"endian": "big"}},
            {"name": "gzip", "configuration": {"level": 1}},
        ],
        "attributes": {},
        "dimension_names": ["t", "y", "x"],
    }
    (root / "zarr.json").write_text(json.dumps(doc))
    offsets = [_offsets(e) for e in EDGES]
    for coords in itertools.product(*(range(len(e)) for e in EDGES)):
        if coords in skip:
            continue
        shape = tuple(e[c] for e, c in zip(EDGES, coords, strict=True))
        chunk = np.zeros(shape, dtype=">u2")  # the overflow part holds anything: zeros
        region = tuple(
            slice(o[c], min(o[c + 1], n)) for o, c, n in zip(offsets, coords, SHAPE, strict=True)
        )
        part = data[region]
        chunk[tuple(slice(0, n) for n in part.shape)] = part
        path = root / "c" / "/".join(map(str, coords))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(gzip.compress(chunk.tobytes(order="C"), compresslevel=1))


def test_hand_written_rectilinear_array_reads(tmp_path: Path) -> None:
    data = np.arange(np.prod(SHAPE), dtype="u2").reshape(SHAPE) * 3
    missing = {(1, 3, 0), (0, 0, 1)}
    write_by_hand(tmp_path / "hand.zarr", data, missing)
    expected = data.copy()
    expected[4:6, 3:6, 0:2] = FILL & 0xFFFF
    expected[0:4, 0:1, 2:5] = FILL & 0xFFFF

    arr = aiozarr.open_array(tmp_path / "hand.zarr")
    assert arr.metadata.chunk_grid is not None
    assert arr.metadata.chunk_grid.edges == tuple(EDGES)
    assert arr.read_chunk_sizes == ((4, 2), (1, 1, 1, 3), (2, 3))
    np.testing.assert_array_equal(arr[...], expected)
    np.testing.assert_array_equal(arr[5, 2:5, ::-1], expected[5, 2:5, ::-1])
    np.testing.assert_array_equal(
        arr.oindex[[5, 0, 3], :, [4, 1]], expected[np.ix_([5, 0, 3], range(6), [4, 1])]
    )


def test_writing_back_keeps_the_hand_written_layout(tmp_path: Path) -> None:
    data = np.arange(np.prod(SHAPE), dtype="u2").reshape(SHAPE)
    write_by_hand(tmp_path / "hand.zarr", data, set())
    arr = aiozarr.open_array(tmp_path / "hand.zarr", mode="r+")
    arr[1:5, 2, :] = 7
    data[1:5, 2, :] = 7
    # chunk (1, 2, 1) is 4 x 1 x 4 (x overflows by 1): decode it by hand
    raw = gzip.decompress((tmp_path / "hand.zarr" / "c" / "1" / "2" / "1").read_bytes())
    chunk = np.frombuffer(raw, dtype=">u2").reshape(4, 1, 4)
    np.testing.assert_array_equal(chunk[:2, :, :3], data[4:6, 2:3, 2:5])
    np.testing.assert_array_equal(aiozarr.open_array(tmp_path / "hand.zarr")[...], data)


def test_a_chunk_stored_with_the_wrong_shape_fails_loudly(tmp_path: Path) -> None:
    """An edge chunk cut at the array's end (not its full edges) is refused, not misread."""
    data = np.arange(np.prod(SHAPE), dtype="u2").reshape(SHAPE)
    write_by_hand(tmp_path / "hand.zarr", data, set())
    clipped = data[4:6, 3:6, 2:5].astype(">u2")  # chunk (1, 3, 1) is 4 x 3 x 4
    (tmp_path / "hand.zarr" / "c" / "1" / "3" / "1").write_bytes(gzip.compress(clipped.tobytes()))
    arr = aiozarr.open_array(tmp_path / "hand.zarr")
    np.testing.assert_array_equal(arr[:4], data[:4])
    with pytest.raises(CodecError, match="c/1/3/1"):
        arr[5, 4, 3]
