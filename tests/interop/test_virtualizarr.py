"""What VirtualiZarr writes from HDF5 files (h5py's, made here) reads as the files say:
its kerchunk references (JSON with Zarr v2 or v3 metadata, Parquet) through
`aiozarr.open_group`, the xarray backend, `aiozarr.zarr.Store` and the codec pipeline,
and its virtual references in an icechunk repository through `aiozarr.open_group` and
the codec pipeline. Values are compared with h5py's."""

from __future__ import annotations

import inspect
import logging
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

h5py = pytest.importorskip("h5py")
xr = pytest.importorskip("xarray")
virtualizarr = pytest.importorskip("virtualizarr")
zarr = pytest.importorskip("zarr")

from obspec_utils.registry import ObjectStoreRegistry  # noqa: E402
from obstore.store import LocalStore  # noqa: E402
from virtualizarr.parsers import HDFParser  # noqa: E402

import aiozarr  # noqa: E402
import aiozarr.zarr  # noqa: E402

pytestmark = [
    # zarr-python 3.1, whenever VirtualiZarr builds a `numcodecs.*` codec object
    pytest.mark.filterwarnings("ignore:Numcodecs codecs are not in the Zarr version 3"),
    # pandas 3, as kerchunk writes VirtualiZarr's Parquet (fsspec's default engine)
    pytest.mark.filterwarnings("ignore:The 'fastparquet' engine is deprecated"),
]

TIMES = 4  # steps per file
WIDTH = 6


def _write_hdf5(path: Path, start: int) -> None:
    """A netCDF-like HDF5 file: dimension scales `time` and `x`; `v` gzip-compressed with
    shuffle; `m` with a fill value and chunks never written."""
    with h5py.File(path, "w") as f:
        time = f.create_dataset("time", data=np.arange(start, start + TIMES, dtype="i8"))
        time.make_scale("time")
        x = f.create_dataset("x", data=np.linspace(0.0, 1.0, WIDTH))
        x.make_scale("x")
        values = np.arange(TIMES * WIDTH, dtype="f4").reshape(TIMES, WIDTH) + 100 * start
        v = f.create_dataset("v", data=values, chunks=(2, 3), compression="gzip", shuffle=True)
        m = f.create_dataset("m", shape=(TIMES, WIDTH), dtype="i4", chunks=(2, 3), fillvalue=-7)
        m[:2, :3] = start + 1
        v.attrs["units"] = "K"
        for variable in (v, m):
            variable.dims[0].attach_scale(time)
            variable.dims[1].attach_scale(x)


def _expected(paths: list[Path]) -> dict[str, np.ndarray]:
    """Each variable as h5py reads it, the files concatenated along time."""
    out: dict[str, list[np.ndarray]] = {}
    for path in paths:
        with h5py.File(path, "r") as f:
            for name in ("time", "v", "m"):
                out.setdefault(name, []).append(f[name][()])
            x = f["x"][()]
    return {**{name: np.concatenate(parts) for name, parts in out.items()}, "x": x}


@pytest.fixture
def files(tmp_path: Path) -> list[Path]:
    # icechunk needs the real path of a virtual chunk's container (no symlinks)
    folder = Path(os.path.realpath(tmp_path))
    paths = [folder / "a.h5", folder / "b.h5"]
    for i, path in enumerate(paths):
        _write_hdf5(path, i * TIMES)
    return paths


@pytest.fixture
def virtual(files: list[Path]) -> Any:
    """The files as one virtual dataset, concatenated along time."""
    registry = ObjectStoreRegistry({"file://": LocalStore()})
    parts = [
        virtualizarr.open_virtual_dataset(f"file://{p}", registry=registry, parser=HDFParser())
        for p in files
    ]
    return xr.concat(parts, dim="time", coords="minimal", compat="override")


#: How VirtualiZarr writes references: (name, file name, to_kerchunk options).
WRITERS = [
    ("json-v2", "refs.json", {"format": "json"}),
    ("json-v3", "refs3.json", {"format": "json", "zarr_format": 3}),
    ("parquet", "refs.parq", {"format": "parquet", "record_size": 3}),
]


@pytest.fixture(params=WRITERS, ids=[w[0] for w in WRITERS])
def references(request: pytest.FixtureRequest, virtual: Any, files: list[Path]) -> str:
    """A reference file VirtualiZarr wrote next to the HDF5 files."""
    _, name, options = request.param
    if "zarr_format" in options and "zarr_format" not in _to_kerchunk_options(virtual):
        pytest.skip(f"VirtualiZarr {virtualizarr.__version__} writes Zarr v2 references only")
    if options["format"] == "parquet":
        pytest.importorskip("fastparquet")  # what kerchunk writes Parquet with
    target = str(files[0].parent / name)
    virtual.vz.to_kerchunk(target, **options)
    return target


def _to_kerchunk_options(virtual: Any) -> set[str]:
    return set(inspect.signature(virtual.vz.to_kerchunk).parameters)


def _fell_back(caplog: pytest.LogCaptureFixture) -> list[str]:
    """Why batches went to zarr-python's own pipeline (the codec pipeline's debug log)."""
    return [r.getMessage() for r in caplog.records if "falls back" in r.getMessage()]


def _check_group(group: Any, files: list[Path]) -> None:
    for name, values in _expected(files).items():
        np.testing.assert_array_equal(group[name][:], values, err_msg=name)
    np.testing.assert_array_equal(group["v"][5:7, 1:5], _expected(files)["v"][5:7, 1:5])
    assert group["v"].attrs["units"] == "K"


def test_aiozarr_reads_virtualizarrs_references(references: str, files: list[Path]) -> None:
    group = aiozarr.open_group(references, mode="r")
    assert sorted(group.keys()) == ["m", "time", "v", "x"]
    _check_group(group, files)


def test_a_0d_variable_in_virtualizarrs_v2_references(tmp_path: Path) -> None:
    """VirtualiZarr writes a 0-d array's chunk under the key `"s/"`: it reads as stored,
    not as the fill value."""
    path = Path(os.path.realpath(tmp_path)) / "s.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("s", data=np.float64(3.5))
    registry = ObjectStoreRegistry({"file://": LocalStore()})
    vds = virtualizarr.open_virtual_dataset(f"file://{path}", registry=registry, parser=HDFParser())
    vds.vz.to_kerchunk(str(path.parent / "refs.json"), format="json")
    assert aiozarr.open_array(str(path.parent / "refs.json"), "s", mode="r")[()] == 3.5


def test_the_xarray_backend_reads_virtualizarrs_references(
    references: str, files: list[Path]
) -> None:
    expected = _expected(files)
    # unmasked: xarray masks a v2 fill value (0.0 for `v` here), as its zarr engine does
    options = {"consolidated": False, "mask_and_scale": False}
    with xr.open_dataset(references, engine="aiozarr", **options) as ds:
        for name in ("v", "m", "time", "x"):
            np.testing.assert_array_equal(ds[name].values, expected[name], err_msg=name)
        assert ds["v"].dims == ("time", "x") and ds["v"].attrs["units"] == "K"


def test_zarr_python_reads_them_through_aiozarr(
    references: str, files: list[Path], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="aiozarr.zarr")
    store = aiozarr.zarr.Store(references)
    assert store.read_only
    with zarr.config.set({"codec_pipeline.path": "aiozarr.zarr.CodecPipeline"}):
        _check_group(zarr.open_group(store, mode="r"), files)
    assert _fell_back(caplog) == []


def test_the_codec_pipeline_reads_references_through_fsspec(
    virtual: Any, files: list[Path], caplog: pytest.LogCaptureFixture
) -> None:
    # zarr-python's own way to references: fsspec's reference filesystem. The pipeline
    # runs its batches on the engine, each read a call of the fsspec store.
    target = files[0].parent / "refs.json"
    virtual.vz.to_kerchunk(str(target), format="json")
    fsspec_store = zarr.storage.FsspecStore.from_url(
        "reference://",
        storage_options={"fo": str(target), "remote_protocol": "file"},
        read_only=True,
    )
    caplog.set_level(logging.DEBUG, logger="aiozarr.zarr")
    with zarr.config.set({"codec_pipeline.path": "aiozarr.zarr.CodecPipeline"}):
        _check_group(zarr.open_group(fsspec_store, mode="r", zarr_format=2), files)
    assert _fell_back(caplog) == []


# -- icechunk ----------------------------------------------------------------------------------


def test_virtual_references_in_icechunk(
    virtual: Any, files: list[Path], caplog: pytest.LogCaptureFixture
) -> None:
    icechunk = pytest.importorskip("icechunk")
    prefix = f"file://{files[0].parent}/"
    config = icechunk.RepositoryConfig.default()
    container = icechunk.VirtualChunkContainer(
        url_prefix=prefix, store=icechunk.local_filesystem_store(prefix)
    )
    config.set_virtual_chunk_container(container)
    # icechunk 2 names local access; icechunk 1 takes None
    access = getattr(icechunk.credentials, "LocalFileSystemAccess", None)
    repo = icechunk.Repository.create(
        icechunk.in_memory_storage(),
        config=config,
        authorize_virtual_chunk_access={prefix: access},
    )
    session = repo.writable_session("main")
    virtual.vz.to_icechunk(session.store)
    session.commit("virtual references")
    store = repo.readonly_session("main").store

    _check_group(aiozarr.open_group(store, mode="r"), files)
    caplog.set_level(logging.DEBUG, logger="aiozarr.zarr")
    with zarr.config.set({"codec_pipeline.path": "aiozarr.zarr.CodecPipeline"}):
        _check_group(zarr.open_group(store, mode="r"), files)
        _check_group(zarr.open_group(aiozarr.zarr.Store(store), mode="r"), files)
    assert _fell_back(caplog) == []
