"""Write tests/formats/data/zarr_v1/ with zarr 1.1.0, the last zarr-python of format 1.

zarr 1.x has no groups: each directory under zarr_v1/ is one array (`meta`, `attrs`
and `0.0`-style chunk keys). zarr 1.1.0 builds its blosc extension from source and needs
an old Python (3.6 works; the setuptools_scm its setup asks for must be one that still
runs there, so install it first):
    python3.6 -m venv /tmp/z1venv
    /tmp/z1venv/bin/pip install "numpy<1.20" "setuptools_scm<4"
    /tmp/z1venv/bin/pip install zarr==1.1.0
    /tmp/z1venv/bin/python tests/formats/data/make_zarr_v1_fixture.py

zarr 1.1.0 reads every array back; the values go to zarr_v1.expected.json (complex
values as [real, imag] pairs, bytes as latin-1 text).
"""

import json
import os
import shutil

import numpy as np
import zarr

here = os.path.dirname(os.path.abspath(__file__))
out = os.path.join(here, "zarr_v1")
shutil.rmtree(out, ignore_errors=True)
os.makedirs(out)

BITSHUFFLE_ZSTD = {"cname": "zstd", "clevel": 3, "shuffle": 2}


def create(name, shape, chunks, dtype, **options):
    return zarr.open(
        os.path.join(out, name), mode="w", shape=shape, chunks=chunks, dtype=dtype, **options
    )


# 3-D arrays in F order: each chunk is the chunk's values in column-major order.
a = create(
    "fortran_3d", (5, 7, 9), (2, 3, 4), "<i4", order="F", compression="zlib", compression_opts=1
)
a[...] = np.arange(5 * 7 * 9, dtype="<i4").reshape(5, 7, 9)
a.attrs["note"] = "F order"

a = create(
    "fortran_3d_partial",
    (5, 7, 9),
    (2, 3, 4),
    ">f8",
    order="F",
    compression="none",
    fill_value=-1.5,
)
a[1:4, 2:7, 3:] = np.linspace(0, 1, 3 * 5 * 6).reshape(3, 5, 6)

# blosc with zstd and bit-shuffle, C and F order.
a = create(
    "blosc_zstd_bitshuffle",
    (20, 30),
    (7, 8),
    "<f8",
    compression="blosc",
    compression_opts=BITSHUFFLE_ZSTD,
)
a[...] = np.sin(np.arange(600.0)).reshape(20, 30)

a = create(
    "blosc_zstd_bitshuffle_f",
    (8, 10, 6),
    (6, 5, 4),
    "<u2",
    order="F",
    compression="blosc",
    compression_opts=BITSHUFFLE_ZSTD,
)
a[...] = np.arange(480, dtype="<u2").reshape(8, 10, 6) * 3

a = create(
    "blosc_lz4_bitshuffle",
    (50,),
    (16,),
    "<i8",
    compression="blosc",
    compression_opts={"cname": "lz4", "clevel": 5, "shuffle": 2},
)
a[...] = np.arange(50, dtype="<i8") ** 2

# fill_value 0 on fixed-length bytes and complex types (zarr 1.x fills chunks with
# numpy's conversion of the number); the last chunk of each is never written.
a = create("bytes_fill_0", (7,), (3,), "|S5", fill_value=0, compression="zlib", compression_opts=1)
a[:4] = np.array([b"ab", b"", b"hello", b"xyz"], dtype="S5")

a = create(
    "complex_fill_0", (7,), (3,), "<c16", fill_value=0, compression="zlib", compression_opts=1
)
a[:4] = np.array([1 + 2j, -3.5j, 4, 0.25 - 1j])

a = create(
    "complex64_fill_0",
    (2, 3),
    (2, 2),
    "<c8",
    fill_value=0,
    compression="blosc",
    compression_opts=BITSHUFFLE_ZSTD,
)
a[:, :2] = np.array([[1 + 1j, 2], [3j, -4 - 4j]], dtype="<c8")

a = create(
    "float_fill_nan",
    (4, 6),
    (3, 4),
    "<f4",
    fill_value=float("nan"),
    order="F",
    compression="bz2",
    compression_opts=5,
)
a[:2, :3] = np.arange(6, dtype="<f4").reshape(2, 3)


def plain(values):
    if values.dtype.kind == "c":
        return [[v.real, v.imag] for v in values.ravel().tolist()]
    if values.dtype.kind == "S":
        return [v.decode("latin-1") for v in values.ravel().tolist()]
    if values.dtype.kind == "f":
        return [None if np.isnan(v) else v for v in values.ravel().tolist()]
    return values.ravel().tolist()


expected = {}
for name in sorted(os.listdir(out)):
    arr = zarr.open(os.path.join(out, name), mode="r")
    values = arr[...]
    expected[name] = {
        "shape": list(values.shape),
        "dtype": values.dtype.str,
        "order": arr.order,
        "values": plain(values),
        "attrs": dict(arr.attrs),
    }
lines = [f"  {json.dumps(k)}: {json.dumps(v, sort_keys=True)}" for k, v in sorted(expected.items())]
with open(os.path.join(here, "zarr_v1.expected.json"), "w") as f:
    f.write(
        f'{{"zarr": {json.dumps(zarr.__version__)}, "arrays": {{\n' + ",\n".join(lines) + "\n}}\n"
    )
print(zarr.__version__, sorted(os.listdir(out)))
