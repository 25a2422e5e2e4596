"""Write tests/formats/data/z5py_v2.zarr with z5py, blosc chunks padded as z5py 2.0 left them.

z5py up to 2.0 (z5's blosc compressor) stored each blosc chunk with BLOSC_MAX_OVERHEAD
(16) zero bytes after the end of the frame; numcodecs, and so zarr-python, read such
chunks (the frame header says where it ends). z5py 3.0.2, the only z5py on PyPI, writes
exact frames, so this script writes the arrays with z5py 3.0.2 and then appends the 16
zero bytes to every blosc chunk, which is byte for byte what z5py 2.0 stored. Run with
z5py in its own environment (it needs nothing of aiozarr's):
    python3.11 -m venv /tmp/z5venv && /tmp/z5venv/bin/pip install z5py==3.0.2 numpy
    /tmp/z5venv/bin/python tests/formats/data/make_z5py_fixture.py

z5py reads the padded arrays back; the values go to z5py_v2.expected.json.
"""

import json
import shutil
from pathlib import Path

import numpy as np
import z5py

BLOSC_MAX_OVERHEAD = 16
here = Path(__file__).parent
out = here / "z5py_v2.zarr"
shutil.rmtree(out, ignore_errors=True)

f = z5py.File(str(out), mode="w", use_zarr_format=True, zarr_format=2)
arrays = {
    "floats": (np.linspace(0, 1, 10 * 13).reshape(10, 13), (4, 5), {"codec": "lz4", "shuffle": 1}),
    "ints": (np.arange(-60, 60, dtype="<i4").reshape(2, 6, 10), (1, 4, 4), {"codec": "zstd"}),
    "bytes": (np.arange(50, dtype="u1"), (16,), {"codec": "blosclz", "shuffle": 2}),
}
for name, (values, chunks, options) in arrays.items():
    ds = f.create_dataset(
        name, shape=values.shape, chunks=chunks, dtype=values.dtype, compression="blosc", **options
    )
    ds[...] = values
del f

for chunk in sorted(out.rglob("*")):
    if chunk.is_file() and not chunk.name.startswith("."):
        chunk.write_bytes(chunk.read_bytes() + bytes(BLOSC_MAX_OVERHEAD))

f = z5py.File(str(out), mode="r")
expected = {}
for name in sorted(arrays):
    values = f[name][...]
    np.testing.assert_array_equal(values, arrays[name][0])
    expected[name] = {
        "shape": list(values.shape),
        "dtype": values.dtype.str,
        "values": values.tolist(),
        "fill_value": 0,
    }
lines = [f"  {json.dumps(k)}: {json.dumps(v, sort_keys=True)}" for k, v in expected.items()]
(here / "z5py_v2.expected.json").write_text(
    f'{{"z5py": {json.dumps(z5py.__version__)}, "arrays": {{\n' + ",\n".join(lines) + "\n}}\n"
)
print(z5py.__version__, sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()))
