"""Float fill values in a v3 document read as TensorStore reads them, bit for bit: a
decimal number is rounded once to the JSON double and once to the array's type (as every
reader does), hex text is the bits (NaN payloads and signalling NaNs kept, where
zarr-python quiets them), and the document aiozarr writes back reads the same."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import tensorstore as ts

import aiozarr

FILLS = {
    "float32": [
        "0.1",
        "1.00000005960464477539062500000001",  # above a float32 midpoint, a tie as a double
        "-0.0",
        "1e-45",
        "7e-46",
        "3.4028235677973366e38",
        '"0x7fc00001"',
        '"0x7f800001"',
        '"0xffc00000"',
        "1152921573326323713",  # 2**60 + 2**36 + 1: a tie once it is a double
    ],
    "float16": ["0.1", "1.00048828125000001", "-0.0", "6e-8", "65519", "65520", '"0x7e01"'],
}
CASES = [(dtype, fill) for dtype, fills in FILLS.items() for fill in fills]


def bits(values: np.ndarray) -> list[int]:
    return values.reshape(-1).view(f"u{values.dtype.itemsize}").tolist()


@pytest.mark.parametrize(("dtype", "fill"), CASES)
def test_a_float_fill_reads_as_tensorstore_reads_it(tmp_path: Path, dtype: str, fill: str) -> None:
    doc = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": [2],
        "data_type": dtype,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": "FILL",
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
        "attributes": {},
    }
    # the fill's JSON text as it is: a Python float would round the long decimals
    (tmp_path / "zarr.json").write_text(json.dumps(doc).replace('"FILL"', fill))
    spec = {"driver": "zarr3", "kvstore": f"file://{tmp_path}"}
    theirs = bits(ts.open(spec).result().read().result())
    arr = aiozarr.open_array(tmp_path)
    assert bits(arr[:]) == theirs
    arr.attrs["touched"] = True  # rewrites zarr.json with aiozarr's spelling of the fill
    assert json.loads((tmp_path / "zarr.json").read_text())["attributes"] == {"touched": True}
    assert bits(ts.open(spec).result().read().result()) == theirs
    assert bits(aiozarr.open_array(tmp_path)[:]) == theirs
