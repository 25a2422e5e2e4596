"""Write tests/formats/data/gdal_blosc_v2.zarr and gdal_blosc_v3draft.zarr with GDAL.

GDAL 3.6.2 (Debian bookworm's gdal-bin / python3-gdal 3.6.2+dfsg-1+b2) writes blosc's
`shuffle` as its creation option's spelling when that is "NONE" or "BIT" (and as 1 for
"BYTE"), in Zarr v2 (`.zarray` compressor) and in the 2020 v3 draft (compressor
configuration) alike. Run with Debian's Python (not aiozarr's environment):
    apt-get install -y gdal-bin python3-gdal
    /usr/bin/python3 tests/formats/data/make_gdal_blosc_fixture.py

Each fixture is a group with one array per shuffle; GDAL reads every array back and the
values go to the `.expected.json` beside it.
"""

import json
import shutil
from pathlib import Path

import numpy as np
from osgeo import gdal

gdal.UseExceptions()
here = Path(__file__).parent

ARRAYS = [
    # (name, GDAL type, BLOSC_CNAME, BLOSC_SHUFFLE, values)
    ("none", gdal.GDT_Float64, "lz4", "NONE", np.linspace(-1, 1, 30).reshape(5, 6)),
    ("byte", gdal.GDT_Int16, "zstd", "BYTE", np.arange(30, dtype="<i2").reshape(5, 6) * 7 - 50),
    ("bit", gdal.GDT_UInt32, "zlib", "BIT", np.arange(30, dtype="<u4").reshape(5, 6) ** 3),
]


def write(out: Path, fmt: str) -> None:
    shutil.rmtree(out, ignore_errors=True)
    ds = gdal.GetDriverByName("Zarr").CreateMultiDimensional(str(out), options=[f"FORMAT={fmt}"])
    root = ds.GetRootGroup()
    y = root.CreateDimension("y", None, None, 5)
    x = root.CreateDimension("x", None, None, 6)
    for name, kind, cname, shuffle, values in ARRAYS:
        arr = root.CreateMDArray(
            name,
            [y, x],
            gdal.ExtendedDataType.Create(kind),
            ["BLOCKSIZE=2,4", "COMPRESS=BLOSC", f"BLOSC_CNAME={cname}", f"BLOSC_SHUFFLE={shuffle}"],
        )
        arr.Write(values)
        del arr
    del root, ds  # closing the dataset writes everything

    expected = {}
    ds = gdal.OpenEx(str(out), gdal.OF_MULTIDIM_RASTER)
    root = ds.GetRootGroup()
    for name in root.GetMDArrayNames():
        values = root.OpenMDArray(name).ReadAsArray()
        expected[name] = {
            "shape": list(values.shape),
            "dtype": values.dtype.str,
            "values": values.tolist(),
            "nodata": None,
        }
    lines = [
        f"  {json.dumps(k)}: {json.dumps(v, sort_keys=True)}" for k, v in sorted(expected.items())
    ]
    (here / out.name.replace(".zarr", ".expected.json")).write_text(
        f'{{"gdal": {json.dumps(gdal.__version__)}, "arrays": {{\n' + ",\n".join(lines) + "\n}}\n"
    )


write(here / "gdal_blosc_v2.zarr", "ZARR_V2")
write(here / "gdal_blosc_v3draft.zarr", "ZARR_V3")
print(gdal.__version__)
