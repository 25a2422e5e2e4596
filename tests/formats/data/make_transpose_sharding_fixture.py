"""Write tests/formats/data/transpose_sharding.zarr: `transpose` before `sharding_indexed`.

zarr-python 3.4 writes this codec order when `filters=[TransposeCodec(...)]` goes with a
`ShardingCodec` serializer; zarrs (its Rust codec pipeline for zarr-python) writes the same
metadata with its own encoder, so its shards differ byte for byte. Run with Python 3.12:
    python3.12 -m venv /tmp/venv312 && /tmp/venv312/bin/pip install zarr==3.4.2 zarrs==0.2.3
    /tmp/venv312/bin/python tests/formats/data/make_transpose_sharding_fixture.py

zarr-python reads every array back; the values go to transpose_sharding.expected.json.
"""

import json
import shutil
from pathlib import Path

import numpy as np
import zarr
from zarr.codecs import (
    BytesCodec,
    Crc32cCodec,
    GzipCodec,
    ShardingCodec,
    TransposeCodec,
    ZstdCodec,
)

here = Path(__file__).parent
out = here / "transpose_sharding.zarr"
shutil.rmtree(out, ignore_errors=True)
root = zarr.open_group(out, mode="w", zarr_format=3)


def cube(group: zarr.Group) -> None:
    """3-D int32, shards (4, 6, 8) stored as (6, 8, 4), inner chunks (2, 2, 4) of those."""
    arr = group.create_array(
        "cube",
        shape=(7, 11, 13),
        chunks=(4, 6, 8),
        dtype="int32",
        fill_value=-1,
        filters=[TransposeCodec(order=(1, 2, 0))],
        serializer=ShardingCodec(chunk_shape=(2, 2, 4), codecs=[BytesCodec(), ZstdCodec()]),
        compressors=None,
    )
    arr[:6] = np.arange(6 * 11 * 13, dtype="int32").reshape(6, 11, 13)  # row 6 stays fill


def plane(group: zarr.Group) -> None:
    """2-D float64, index at the start, gzip and crc32c inside, shards (12, 8) stored as (8, 12)."""
    arr = group.create_array(
        "plane",
        shape=(20, 15),
        chunks=(12, 8),
        dtype="float64",
        fill_value=np.nan,
        filters=[TransposeCodec(order=(1, 0))],
        serializer=ShardingCodec(
            chunk_shape=(4, 2),
            codecs=[BytesCodec(), GzipCodec(level=5), Crc32cCodec()],
            index_location="start",
        ),
        compressors=None,
    )
    arr[2:, :13] = np.linspace(-5, 5, 18 * 13).reshape(18, 13)


cube(root.create_group("zarr_python"))
plane(root["zarr_python"])
with zarr.config.set({"codec_pipeline.path": "zarrs.ZarrsCodecPipeline"}):
    zarrs_group = root.create_group("zarrs")
    cube(zarrs_group)
    plane(zarrs_group)

expected = {}
for writer in ("zarr_python", "zarrs"):
    for name in ("cube", "plane"):
        values = zarr.open_array(out / writer / name, mode="r")[...]
        expected[f"{writer}/{name}"] = {
            "shape": list(values.shape),
            "dtype": values.dtype.str,
            "values": [None if np.isnan(v) else v for v in values.ravel().tolist()],
        }
lines = [f"  {json.dumps(k)}: {json.dumps(v, sort_keys=True)}" for k, v in sorted(expected.items())]
(here / "transpose_sharding.expected.json").write_text(
    f'{{"zarr": {json.dumps(zarr.__version__)}, "arrays": {{\n' + ",\n".join(lines) + "\n}}\n"
)
print(zarr.__version__, sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()))
