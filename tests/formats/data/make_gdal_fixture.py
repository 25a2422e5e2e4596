"""Write tests/formats/data/gdal_v3draft.zarr with GDAL's Zarr driver (FORMAT=ZARR_V3).

GDAL 3.6.2 (Debian bookworm's gdal-bin / python3-gdal 3.6.2+dfsg-1+b2) writes the 2020
v3 draft layout for ZARR_V3: an entry point `zarr.json` whose `zarr_format` is the
protocol URL, `meta/root.group.json`, `meta/root/<path>.array.json` and chunks at
`data/root/<path>/c0/0`. Run with Debian's Python (not aiozarr's environment):
    apt-get install -y gdal-bin python3-gdal
    /usr/bin/python3 tests/formats/data/make_gdal_fixture.py

The multidimensional API writes a group, a nested group and three arrays; then
`gdal.Translate` (as `gdal_translate -of ZARR -co FORMAT=ZARR_V3 -co APPEND_SUBDATASET=YES`)
adds a georeferenced 2-band raster, with its X/Y coordinate arrays and `_CRS`. GDAL reads
every array back and the values go to gdal_v3draft.expected.json.
"""

import json
import shutil
from pathlib import Path

import numpy as np
from osgeo import gdal, osr

gdal.UseExceptions()
here = Path(__file__).parent
out = here / "gdal_v3draft.zarr"
shutil.rmtree(out, ignore_errors=True)

ds = gdal.GetDriverByName("Zarr").CreateMultiDimensional(str(out), options=["FORMAT=ZARR_V3"])
root = ds.GetRootGroup()
root.CreateAttribute("title", [], gdal.ExtendedDataType.CreateString()).Write("gdal fixture")
root.CreateAttribute("version", [], gdal.ExtendedDataType.Create(gdal.GDT_Int32)).Write(3)

y = root.CreateDimension("y", None, None, 5)
x = root.CreateDimension("x", None, None, 7)
ints = root.CreateMDArray(
    "ints",
    [y, x],
    gdal.ExtendedDataType.Create(gdal.GDT_Int32),
    ["BLOCKSIZE=2,3", "COMPRESS=GZIP", "GZIP_LEVEL=6"],
)
ints.Write(np.arange(35, dtype="<i4").reshape(5, 7))

sub = root.CreateGroup("sub")
sub.CreateAttribute("units", [], gdal.ExtendedDataType.CreateString()).Write("m")
t = sub.CreateDimension("t", None, None, 10)
floats = sub.CreateMDArray(
    "floats",
    [t],
    gdal.ExtendedDataType.Create(gdal.GDT_Float64),
    ["BLOCKSIZE=4", "COMPRESS=BLOSC", "BLOSC_CNAME=lz4", "BLOSC_SHUFFLE=BYTE"],
)
floats.SetNoDataValueDouble(-9999.0)
floats.Write(np.linspace(0, 1, 7), array_start_idx=[0], count=[7])  # the rest stays nodata

a = sub.CreateDimension("a", None, None, 4)
b = sub.CreateDimension("b", None, None, 4)
fortran = sub.CreateMDArray(
    "fortran",
    [a, b],
    gdal.ExtendedDataType.Create(gdal.GDT_UInt16),
    ["BLOCKSIZE=3,3", "COMPRESS=ZSTD", "ZSTD_LEVEL=3", "CHUNK_MEMORY_LAYOUT=F"],
)
fortran.Write(np.arange(16, dtype="<u2").reshape(4, 4))
del ints, floats, fortran, sub, root, ds  # closing the dataset writes everything

mem = gdal.GetDriverByName("MEM").Create("", 6, 5, 2, gdal.GDT_Byte)
mem.SetGeoTransform([10.0, 0.5, 0, 50.0, 0, -0.5])
srs = osr.SpatialReference()
srs.ImportFromEPSG(4326)
mem.SetProjection(srs.ExportToWkt())
for band in (1, 2):
    mem.GetRasterBand(band).WriteArray(np.arange(30, dtype="u1").reshape(5, 6) + 100 * (band - 1))
    mem.GetRasterBand(band).SetNoDataValue(255)
gdal.Translate(
    str(out),
    mem,
    format="Zarr",
    creationOptions=[
        "FORMAT=ZARR_V3",
        "APPEND_SUBDATASET=YES",
        "ARRAY_NAME=raster",
        "BLOCKSIZE=2,4",
        "COMPRESS=NONE",
    ],
)
del mem

expected = {}
ds = gdal.OpenEx(str(out), gdal.OF_MULTIDIM_RASTER)


def collect(group, prefix):
    for name in group.GetMDArrayNames() or []:
        arr = group.OpenMDArray(name)
        values = arr.ReadAsArray()
        nodata = arr.GetNoDataValueAsDouble() if arr.GetNoDataValueAsRaw() is not None else None
        expected[prefix + name] = {
            "shape": list(values.shape),
            "dtype": values.dtype.str,
            "values": values.tolist(),
            "nodata": nodata,
        }
    for name in group.GetGroupNames() or []:
        collect(group.OpenGroup(name), prefix + name + "/")


collect(ds.GetRootGroup(), "")
lines = [f"  {json.dumps(k)}: {json.dumps(v, sort_keys=True)}" for k, v in sorted(expected.items())]
(here / "gdal_v3draft.expected.json").write_text(
    f'{{"gdal": {json.dumps(gdal.__version__)}, "arrays": {{\n' + ",\n".join(lines) + "\n}}\n"
)
print(gdal.__version__, sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()))
