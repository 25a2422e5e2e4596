"""The same calls on zarr-python and on aiozarr, over the same arrays: same values, same
shapes and dtypes, same exception types (issue #16, "same call, same answer").

zarr-python writes every array; aiozarr opens the same directory. Where aiozarr differs
on purpose (README, "API: what differs from zarr-python"), the test says so and checks the
documented behaviour instead.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import aiozarr

zarr = pytest.importorskip("zarr")
numcodecs = pytest.importorskip("numcodecs")

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

SHAPE = (11, 13)
DATA = np.arange(np.prod(SHAPE), dtype="i4").reshape(SHAPE)


@pytest.fixture(params=["chunked", "sharded", "v2"])
def pair(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Any, aiozarr.Array]:
    """The same array opened by zarr-python and by aiozarr."""
    options: dict[str, Any] = {"chunks": (3, 4)}
    if request.param == "sharded":
        options["shards"] = (6, 8)
    if request.param == "v2":
        options["zarr_format"] = 2
    z = zarr.create_array(str(tmp_path / "a.zarr"), shape=SHAPE, dtype="i4", **options)
    z[...] = DATA
    return z, aiozarr.open_array(tmp_path / "a.zarr")


def _same(z: Any, a: Any, read: Any) -> None:
    expected, got = np.asarray(read(z)), np.asarray(read(a))
    assert got.shape == expected.shape
    assert got.dtype == expected.dtype
    assert np.array_equal(got, expected)


SELECTIONS = [
    (slice(None), slice(None)),
    (2, 3),
    (slice(1, 9, 2), slice(None, None, -1) if False else slice(0, 13, 3)),
    (Ellipsis, 4),
    (-1,),
    ([1, 3], [2, 4]),  # points, as numpy
    (np.array([[0, 10], [5, 5]]), np.array([[1, 12], [0, 0]])),
    ([2, 0, 7], slice(None)),  # one array among slices: orthogonal
    (DATA % 3 == 0,),  # an N-d mask
]


@pytest.mark.parametrize("selection", SELECTIONS, ids=range(len(SELECTIONS)))
def test_getitem(pair: tuple[Any, aiozarr.Array], selection: tuple[Any, ...]) -> None:
    z, a = pair
    _same(z, a, lambda arr: arr[selection])


def test_oindex_vindex_blocks_and_named_selections(pair: tuple[Any, aiozarr.Array]) -> None:
    z, a = pair
    _same(z, a, lambda arr: arr.oindex[[0, 5, 10], [1, 12]])
    _same(z, a, lambda arr: arr.oindex[np.arange(11) % 2 == 0, 3:9])
    _same(z, a, lambda arr: arr.vindex[[1, 2, 10], [0, 12, 5]])
    _same(z, a, lambda arr: arr.vindex[DATA > 100])
    _same(z, a, lambda arr: arr.blocks[1, 0])
    _same(z, a, lambda arr: arr.blocks[0:2, 1:])
    _same(z, a, lambda arr: arr.get_basic_selection((slice(2, 5), 7)))
    _same(z, a, lambda arr: arr.get_orthogonal_selection(([4, 1], slice(None))))
    _same(z, a, lambda arr: arr.get_coordinate_selection(([4, 1], [0, 3])))
    _same(z, a, lambda arr: arr.get_mask_selection(DATA % 7 == 1))
    _same(z, a, lambda arr: arr.get_block_selection((0, 1)))


def test_writes_through_every_selection(tmp_path: Path) -> None:
    """The same writes through zarr-python and aiozarr leave the same values."""
    arrays = []
    for name, lib in (("z", zarr), ("a", aiozarr)):
        arr = lib.create_array(
            str(tmp_path / f"{name}.zarr"), shape=SHAPE, dtype="i4", chunks=(3, 4), shards=(6, 8)
        )
        arr[...] = DATA
        arr[2:4, 5] = -1
        arr.oindex[[0, 9], [1, 2, 3]] = -2
        arr.vindex[[1, 5, 10], [12, 0, 6]] = [-3, -4, -5]
        arr.vindex[DATA % 11 == 0] = -6
        arr.blocks[1, 1] = -7
        arr.set_coordinate_selection(([0], [0]), -8)
        arr.set_mask_selection(DATA == 50, -9)
        arr.set_block_selection((0, 0), 99)
        arrays.append(arr)
    z, a = arrays
    assert np.array_equal(a[...], z[...])
    # and each reads what the other wrote
    assert np.array_equal(zarr.open_array(str(tmp_path / "a.zarr"))[...], z[...])
    assert np.array_equal(aiozarr.open_array(tmp_path / "z.zarr")[...], a[...])


def test_descriptions(pair: tuple[Any, aiozarr.Array]) -> None:
    z, a = pair
    for name in ("shape", "dtype", "chunks", "shards", "ndim", "size", "nbytes", "nchunks"):
        assert getattr(a, name) == getattr(z, name), name
    assert a.fill_value == z.fill_value
    assert a.order == z.order
    assert a.read_only == z.read_only
    assert a.nchunks_initialized == z.nchunks_initialized
    assert a.zarr_format == z.metadata.zarr_format
    assert a.info.shape == a.shape and str(a.info).startswith("Type")
    assert "Stored size" in a.info_complete()
    if z.metadata.zarr_format == 2:
        assert a.compressors == z.compressors  # numcodecs codecs compare by config
        assert a.filters == z.filters
        assert a.serializer is z.serializer is None
    else:  # codecs as metadata (aiozarr's CodecMetadata): compare their documents
        assert [c.to_json() for c in a.compressors] == [c.to_dict() for c in z.compressors]
        assert a.serializer.to_json() == _json(z.serializer.to_dict())
        assert [f.to_json() for f in a.filters] == [f.to_dict() for f in z.filters]
        assert a.metadata.to_dict() == _json(z.metadata.to_dict())


def _json(doc: Any) -> Any:
    import json

    return json.loads(json.dumps(doc, default=str))


def test_nbytes_stored_and_append(tmp_path: Path) -> None:
    arrays = []
    for name, lib in (("z", zarr), ("a", aiozarr)):
        arr = lib.create_array(
            str(tmp_path / f"{name}.zarr"), shape=(5, 4), dtype="f8", chunks=(2, 4)
        )
        arr[...] = 1.0
        assert arr.append(np.full((3, 4), 2.0)) == (8, 4)
        assert arr.append(np.zeros((8, 1)), axis=1) == (8, 5)
        arrays.append(arr)
    z, a = arrays
    assert np.array_equal(a[...], z[...])
    assert a.nchunks_initialized == z.nchunks_initialized
    assert a.nbytes_stored() == z.nbytes_stored()


def test_groups(tmp_path: Path) -> None:
    root = zarr.open_group(str(tmp_path / "g.zarr"), mode="w")
    root.create_array("x", shape=(4,), dtype="f4", chunks=(2,))
    root.create_array("y", shape=(3, 3), dtype="u1", chunks=(3, 3))
    root.create_group("sub").create_array("deep", shape=(2,), dtype="i8", chunks=(2,))
    g = aiozarr.open_group(tmp_path / "g.zarr")
    assert sorted(g.keys()) == sorted(root.keys())
    assert sorted(g.array_keys()) == sorted(root.array_keys())
    assert sorted(g.group_keys()) == sorted(root.group_keys())
    assert [n for n, _ in g.members()] == sorted(n for n, _ in root.members())
    assert {n: type(m).__name__ for n, m in g.members()} == {
        n: type(m).__name__ for n, m in root.members()
    }
    assert g["sub/deep"].shape == root["sub/deep"].shape
    assert ("x" in g) == ("x" in root) and ("nope" in g) == ("nope" in root)
    assert (
        g.require_array("x", shape=(4,), dtype="f8").shape
        == root.require_array("x", shape=(4,), dtype="f8").shape
    )
    for lib_group in (g, root):
        with pytest.raises(TypeError):
            lib_group.require_array("x", shape=(5,), dtype="f4")
    assert g.require_array("new", shape=(2,), dtype="i2").dtype == np.dtype("i2")
    del g["y"]
    assert "y" not in zarr.open_group(str(tmp_path / "g.zarr"))
    assert sorted(g.keys()) == ["new", "sub", "x"]


def test_missing_nodes_out_of_bounds_and_wrong_values(
    pair: tuple[Any, aiozarr.Array], tmp_path: Path
) -> None:
    z, a = pair
    store = tmp_path / "a.zarr"
    for open_array in (
        lambda lib: lib.open_array(str(store), path="missing"),
        lambda lib: lib.open_group(str(store), path="missing", mode="r"),
    ):
        with pytest.raises(FileNotFoundError):
            open_array(zarr)
        with pytest.raises(FileNotFoundError):
            open_array(aiozarr)
    zarr.open_group(str(tmp_path / "g.zarr"), mode="w")
    with pytest.raises(KeyError):
        zarr.open_group(str(tmp_path / "g.zarr"), mode="r")["nope"]
    with pytest.raises(KeyError):
        aiozarr.open_group(tmp_path / "g.zarr", mode="r")["nope"]
    for bad in ((20, 0), (slice(None), 13), ([1, 30], [0, 0])):
        with pytest.raises(IndexError):
            z[bad]
        with pytest.raises(IndexError):
            a[bad]
    with pytest.raises(IndexError):
        z.oindex[[0], [99]]
    with pytest.raises(IndexError):
        a.oindex[[0], [99]]
    with pytest.raises(IndexError):
        z.vindex[[99], [0]]
    with pytest.raises(IndexError):
        a.vindex[[99], [0]]
    # On purpose: zarr-python casts float into an int array silently; aiozarr refuses.
    z[0, 0] = 1.5
    with pytest.raises(TypeError):
        a[0, 0] = 1.5


def test_create_array_takes_zarr_pythons_arguments(tmp_path: Path) -> None:
    data = np.linspace(0, 1, 3000).reshape(60, 50)
    made = {}
    for name, lib in (("z", zarr), ("a", aiozarr)):
        made[name] = lib.create_array(
            str(tmp_path / f"{name}.zarr"),
            name="x/y",
            data=data,
            chunks="auto",
            compressors=[zarr.codecs.BloscCodec(cname="lz4")],
            filters=[zarr.codecs.TransposeCodec(order=(1, 0))],
            serializer=zarr.codecs.BytesCodec(endian="big"),
            config={"write_empty_chunks": True},
        )
    z, a = made["z"], made["a"]
    assert a.path == "x/y" and a.chunks == z.chunks
    assert a.metadata.to_dict()["codecs"] == _json(z.metadata.to_dict()["codecs"])
    assert np.array_equal(zarr.open_array(str(tmp_path / "a.zarr"), path="x/y")[...], data)
    # write_empty_chunks=True keeps chunks of fill values, as zarr-python does
    z[...] = 0
    a[...] = 0
    assert a.nchunks_initialized == z.nchunks_initialized == a.nchunks


@pytest.mark.parametrize(
    "shape,itemsize",
    [
        ((1000, 1000), 8),
        ((10,), 1),
        ((7, 3, 100000), 4),
        ((0,), 8),
        ((2**20,), 2),
        ((50, 1, 9), 16),
    ],
)
def test_auto_chunks_are_zarr_pythons(shape: tuple[int, ...], itemsize: int) -> None:
    from zarr.core import chunk_grids

    from aiozarr.nodes.creation import auto_chunks

    # zarr-python 3.4 names its guess `_guess_regular_chunks` (3.1: `_guess_chunks`).
    guess = getattr(chunk_grids, "_guess_chunks", None) or chunk_grids._guess_regular_chunks
    assert auto_chunks(shape, itemsize) == guess(shape, itemsize)


def test_numcodecs_objects(tmp_path: Path) -> None:
    v2 = {}
    for name, lib in (("z", zarr), ("a", aiozarr)):
        v2[name] = lib.create_array(
            str(tmp_path / f"{name}.zarr"),
            shape=(10,),
            dtype="f8",
            zarr_format=2,
            compressors=numcodecs.Zstd(level=3),
            filters=[numcodecs.Delta(dtype="f8")],
        )
    assert v2["a"].metadata.to_dict()["compressor"] == v2["z"].metadata.to_dict()["compressor"]
    assert v2["a"].metadata.to_dict()["filters"] == v2["z"].metadata.to_dict()["filters"]
    # v3: zarr-python refuses numcodecs objects; aiozarr takes those with a v3 twin
    with pytest.raises(TypeError):
        zarr.create_array(
            str(tmp_path / "z3.zarr"), shape=(4,), dtype="f8", compressors=numcodecs.Zstd()
        )
    a3 = aiozarr.create_array(
        tmp_path / "a3.zarr", shape=(4,), dtype="f8", compressors=[numcodecs.Zstd(level=2)]
    )
    a3[:] = 1.5
    back = zarr.open_array(str(tmp_path / "a3.zarr"))
    assert back.metadata.to_dict()["codecs"][1] == {
        "name": "zstd",
        "configuration": {"level": 2, "checksum": False},
    }
    assert np.array_equal(back[:], np.full(4, 1.5))
    with pytest.raises(ValueError, match="no Zarr v3 codec"):
        aiozarr.create_array(
            tmp_path / "bad.zarr", shape=(4,), dtype="f8", filters=[numcodecs.Delta(dtype="f8")]
        )


def test_import_aiozarr_does_not_import_zarr() -> None:
    import subprocess
    import sys

    code = "import sys, aiozarr; print('zarr' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_no_warnings_for_plain_calls(pair: tuple[Any, aiozarr.Array]) -> None:
    _, a = pair
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a[0]
