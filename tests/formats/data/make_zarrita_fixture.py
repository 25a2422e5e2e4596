"""Write tests/formats/data/zarrita_v3early.zarr with zarrita 0.1.0a6 (the v3 layout of 2023).

zarrita 0.1.0a6 is the oldest zarrita on PyPI; no release writes the 2020 draft layout.
It writes `zarr.json` per node (`zarr_format: 3`, `node_type`) as the v3 spec stood
before 1.0: the `bytes` codec is still named `endian`, `transpose` takes `"order": "F"`,
`blosc` has no `typesize`, and `sharding_indexed` has no `index_codecs` (its index is
little-endian uint64 pairs and a crc32c, always at the end). zarrita 0.1.0a18 added
`index_codecs`; 0.1.0a21 renamed `endian` to `bytes`. Run in a scratch environment:
    python3.11 -m venv /tmp/zarrita-venv
    /tmp/zarrita-venv/bin/pip install 'zarrita==0.1.0a6'   # pulls numpy 1.26, numcodecs 0.11
    /tmp/zarrita-venv/bin/python tests/formats/data/make_zarrita_fixture.py

zarrita reads every array back and the values go to zarrita_v3early.expected.json.
"""

import json
import shutil
from importlib.metadata import version
from pathlib import Path

import numpy as np
import zarrita
from zarrita import codecs

here = Path(__file__).parent
out = here / "zarrita_v3early.zarr"
shutil.rmtree(out, ignore_errors=True)
store = zarrita.LocalStore(str(out))

zarrita.Group.create(store, attributes={"title": "zarrita fixture"})
zarrita.Group.create(store / "sub", attributes={"level": 1})

ints = zarrita.Array.create(
    store / "ints",
    shape=(5, 7),
    dtype="int32",
    chunk_shape=(2, 3),
    fill_value=-1,
    codecs=[codecs.endian_codec("little"), codecs.gzip_codec(level=3)],
    attributes={"units": "m"},
    dimension_names=["y", "x"],
)
ints[:, :] = np.arange(35, dtype="<i4").reshape(5, 7)

floats = zarrita.Array.create(
    store / "sub" / "floats",
    shape=(10,),
    dtype="float64",
    chunk_shape=(4,),
    fill_value=0,
    codecs=[codecs.endian_codec("big"), codecs.blosc_codec(cname="lz4", shuffle="shuffle")],
)
floats[:8] = np.linspace(0, 1, 8)  # the last chunk is never written

fortran = zarrita.Array.create(
    store / "sub" / "fortran",
    shape=(4, 4),
    dtype="uint16",
    chunk_shape=(3, 3),
    fill_value=0,
    codecs=[codecs.transpose_codec("F"), codecs.endian_codec("little")],
)
fortran[:, :] = np.arange(16, dtype="<u2").reshape(4, 4)

sharded = zarrita.Array.create(
    store / "sharded",
    shape=(8, 8),
    dtype="uint8",
    chunk_shape=(4, 8),
    fill_value=0,
    codecs=[codecs.sharding_codec((2, 2), [codecs.endian_codec("little"), codecs.gzip_codec()])],
)
sharded[:6, :] = np.arange(1, 49, dtype="u1").reshape(6, 8)  # rows 6-7: empty inner chunks

expected = {}
for path in ("ints", "sub/floats", "sub/fortran", "sharded"):
    arr = zarrita.Array.open(store / path)
    values = arr[tuple(slice(None) for _ in arr.metadata.shape)]
    expected[path] = {
        "dtype": values.dtype.str,
        "fill_value": arr.metadata.fill_value,
        "shape": list(values.shape),
        "values": values.tolist(),
    }
lines = [f"  {json.dumps(k)}: {json.dumps(v, sort_keys=True)}" for k, v in sorted(expected.items())]
(here / "zarrita_v3early.expected.json").write_text(
    f'{{"zarrita": {json.dumps(version("zarrita"))}, "arrays": {{\n' + ",\n".join(lines) + "\n}}\n"
)
print(version("zarrita"), sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()))
