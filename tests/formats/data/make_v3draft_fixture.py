"""Write tests/formats/data/v3draft.zarr with zarr-python 2.18 (the 2020 v3 draft layout).

Run with a zarr-python 2.18 environment (not aiozarr's):
    python3.11 -m venv /tmp/zp218 && /tmp/zp218/bin/pip install 'zarr==2.18.*'
    ZARR_V3_EXPERIMENTAL_API=1 /tmp/zp218/bin/python tests/formats/data/make_v3draft_fixture.py
"""

import os
import shutil
from pathlib import Path

import numcodecs
import numpy as np
import zarr
from zarr._storage.v3 import DirectoryStoreV3

out = Path(__file__).parent / "v3draft.zarr"
shutil.rmtree(out, ignore_errors=True)
store = DirectoryStoreV3(os.fspath(out))
root = zarr.group(store=store, path="/", zarr_version=3)
root.attrs["title"] = "draft fixture"
a = root.create_dataset(
    "grp/ints",
    shape=(5, 7),
    chunks=(2, 3),
    dtype="<i4",
    fill_value=-1,
    compressor=numcodecs.Zlib(level=3),
)
a[:] = np.arange(35, dtype="<i4").reshape(5, 7)
a.attrs["units"] = "m"
b = root.create_dataset(
    "floats",
    shape=(10,),
    chunks=(4,),
    dtype=">f8",
    fill_value=np.nan,
    compressor=numcodecs.Blosc(cname="lz4", clevel=5, shuffle=1),
)
b[:8] = np.linspace(0, 1, 8)
c = root.create_dataset(
    "fortran", shape=(4, 4), chunks=(3, 3), dtype="<u2", order="F", compressor=None
)
c[:] = np.arange(16, dtype="<u2").reshape(4, 4)
print(sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()))
