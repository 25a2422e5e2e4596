"""Writes icechunk repositories with icechunk itself, for aiozarr to read back.

One repository covers: native chunked and sharded arrays of several data types, inline
chunks, virtual chunks of local HDF5 files (h5py, `set_virtual_refs`), several commits,
a branch and a tag, split manifests, groups with attributes, an empty array.
`write_repository` returns what was written: the snapshots and where they are.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h5py
import icechunk
import numpy as np
import zarr

#: (path, dtype, shape, chunks, shards or None); written by the first commit.
NATIVE = [
    ("native/f8", "float64", (30, 40), (10, 20), None),
    ("native/i2", "int16", (33,), (8,), None),
    ("native/c8", "complex64", (12, 10), (5, 5), None),
    ("native/u1", "uint8", (70, 30), (64, 16), None),
    ("sharded", "int32", (40, 40), (5, 5), (20, 20)),
    ("split", "float32", (16, 12), (2, 3), None),  # one manifest per 2x2 block of chunks
]
#: Virtual arrays: 5 source files of a (20, 30) float32 dataset each, chunks (4, 6):
#: 25 chunks lying contiguously, uncompressed, in each file; stacked as (100, 30).
VIRTUAL_FILES = 5
VIRTUAL_CHUNKS = (4, 6)


@dataclass
class Written:
    """A repository written: its path, the folder of its virtual chunks' files, the
    snapshots (id -> {array path: values}), and the ids the branch and tag name."""

    path: Path
    sources: Path
    spec_version: int
    snapshots: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    refs: dict[str, str] = field(default_factory=dict)

    def source_url(self) -> str:
        return f"file://{self.sources}/"


def _values(dtype: str, shape: tuple[int, ...], seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":  # noise: compressed, a chunk stays over the inline limit
        return rng.normal(size=shape).astype(dtype)
    values = rng.integers(0, 120, size=shape)
    if np.dtype(dtype).kind == "c":
        return (values + 1j * values[::-1]).astype(dtype)
    return values.astype(dtype)


def _write_sources(folder: Path, rows: int = 20) -> tuple[np.ndarray, list[Any]]:
    """The HDF5 source files (each `rows` x 30) and their chunks' `(path, index, offset,
    length)`, in the order each file holds them."""
    folder.mkdir(parents=True, exist_ok=True)
    parts, chunks = [], []
    per_file = rows // VIRTUAL_CHUNKS[0]
    for n in range(VIRTUAL_FILES):
        data = _values("float32", (rows, 30), 100 + n)
        path = folder / f"part{n}.h5"
        with h5py.File(path, "w") as f:
            dset = f.create_dataset("x", data=data, chunks=VIRTUAL_CHUNKS)
            for i in range(dset.id.get_num_chunks()):
                info = dset.id.get_chunk_info(i)
                row = info.chunk_offset[0] // VIRTUAL_CHUNKS[0] + per_file * n
                index = [row, info.chunk_offset[1] // VIRTUAL_CHUNKS[1]]
                chunks.append((path, index, info.byte_offset, info.size))
        parts.append(data)
    return np.concatenate(parts), chunks


def _config(sources: Path) -> icechunk.RepositoryConfig:
    config = icechunk.RepositoryConfig.default()
    split = icechunk.ManifestSplittingConfig.from_dict(
        {
            icechunk.ManifestSplitCondition.name_matches("split"): {
                icechunk.ManifestSplitDimCondition.Any(): 2
            }
        }
    )
    compress = getattr(icechunk, "ManifestVirtualChunkLocationCompressionConfig", None)
    if compress is None:  # icechunk 1.x: locations are stored as they are
        config.manifest = icechunk.ManifestConfig(splitting=split)
    else:  # 2.x: compressed with a dictionary from as few as 10 virtual chunks
        config.manifest = icechunk.ManifestConfig(
            splitting=split, virtual_chunk_location_compression=compress(min_num_chunks=10)
        )
    store = icechunk.local_filesystem_store(str(sources))
    config.set_virtual_chunk_container(icechunk.VirtualChunkContainer(f"file://{sources}/", store))
    return config


#: What authorizes a local container for icechunk's reader (2.x has a sentinel for it).
NO_AUTH = getattr(getattr(icechunk, "credentials", None), "LocalFileSystemAccess", None)


def open_repository(written: Written) -> icechunk.Repository:
    """The repository, opened by icechunk with its virtual chunks authorized."""
    return icechunk.Repository.open(
        icechunk.local_filesystem_storage(str(written.path)),
        config=_config(written.sources),
        authorize_virtual_chunk_access={written.source_url(): NO_AUTH},
    )


def _create(path: Path, sources: Path, spec_version: int | None) -> icechunk.Repository:
    storage = icechunk.local_filesystem_storage(str(path))
    extra = {} if spec_version is None else {"spec_version": spec_version}
    return icechunk.Repository.create(
        storage,
        config=_config(sources),
        authorize_virtual_chunk_access={f"file://{sources}/": NO_AUTH},
        **extra,
    )


def _first_commit(repo: icechunk.Repository, written: Written) -> str:
    session = repo.writable_session("main")
    root = zarr.group(store=session.store, attributes={"title": "conformance"})
    values: dict[str, np.ndarray] = {}
    for n, (path, dtype, shape, chunks, shards) in enumerate(NATIVE):
        arr = root.create_array(path, shape=shape, chunks=chunks, shards=shards, dtype=dtype)
        arr[...] = values[path] = _values(dtype, shape, n)
    sub = root.create_group("group/sub", attributes={"units": "m", "level": 2})
    small = sub.create_array("inline", shape=(6,), chunks=(2,), dtype="float32")
    small[...] = values["group/sub/inline"] = np.arange(6, dtype="float32") / 4
    root.create_array("empty", shape=(10, 10), chunks=(5, 5), dtype="float64", fill_value=7.5)
    values["empty"] = np.full((10, 10), 7.5)
    scalar = root.create_array("scalar", shape=(), dtype="float64")
    scalar[...] = values["scalar"] = np.array(3.25)
    stacked, chunks = _write_sources(written.sources)
    virtual = root.create_array(
        "virtual",
        shape=stacked.shape,
        chunks=VIRTUAL_CHUNKS,
        dtype="float32",
        compressors=None,
        fill_value=0,
    )
    values["virtual"] = stacked
    stamp = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=5)
    specs = [
        icechunk.VirtualChunkSpec(
            index=index,
            location=f"file://{path}",
            offset=offset,
            length=length,
            last_updated_at_checksum=stamp,
        )
        for path, index, offset, length in chunks
    ]
    assert not session.store.set_virtual_refs(virtual.path, specs)
    snapshot = session.commit("first")
    written.snapshots[snapshot] = values
    return snapshot


def _second_commit(repo: icechunk.Repository, written: Written, first: str) -> str:
    session = repo.writable_session("main")
    root = zarr.open_group(store=session.store)
    values = dict(written.snapshots[first])
    arr = root["native/f8"]
    arr[5:15, 10:30] = -1.0
    values["native/f8"] = values["native/f8"].copy()
    values["native/f8"][5:15, 10:30] = -1.0
    late = root.create_array("late", shape=(9,), chunks=(4,), dtype="int64")
    late[...] = values["late"] = np.arange(9) * 1000
    snapshot = session.commit("second")
    written.snapshots[snapshot] = values
    return snapshot


def _on_branch(repo: icechunk.Repository, written: Written, base: str) -> str:
    repo.create_branch("dev", snapshot_id=base)
    session = repo.writable_session("dev")
    root = zarr.open_group(store=session.store)
    values = dict(written.snapshots[base])
    root["group/sub/inline"][...] = values["group/sub/inline"] = np.full(6, 2.5, "float32")
    snapshot = session.commit("on dev")
    written.snapshots[snapshot] = values
    return snapshot


def write_repository(root: Path, spec_version: int | None = None) -> Written:
    """Writes the repository under `root` (spec `spec_version`, or icechunk's default).

    main: first -> second commit; tag v1 at the first; branch dev: first -> "on dev".
    """
    written = Written(root / "repo", root / "sources", spec_version or 0)
    repo = _create(written.path, written.sources, spec_version)
    first = _first_commit(repo, written)
    second = _second_commit(repo, written, first)
    repo.create_tag("v1", snapshot_id=first)
    dev = _on_branch(repo, written, first)
    written.refs = {"branch:main": second, "tag:v1": first, "branch:dev": dev}
    written.spec_version = spec_version or (2 if (written.path / "repo").exists() else 1)
    return written


def write_virtual_repository(
    path: Path,
    sources: Path,
    url_for: Any,
    etag_of: Any = None,
    updated_at: datetime.datetime | None = None,
    rows: int = 20,
) -> np.ndarray:
    """A repository holding only `virtual` (5 files of 25 contiguous chunks each), its
    chunks' locations `url_for(source path)`, each with its file's ETag `etag_of(source
    path)` or the time `updated_at` when given; returns the array's values. The sources
    are written first (`rows` of 4-row chunks each)."""
    stacked, chunks = _write_sources(sources, rows)
    etags = None if etag_of is None else {p: etag_of(p) for p in {c[0] for c in chunks}}
    repo = icechunk.Repository.create(icechunk.local_filesystem_storage(str(path)))
    session = repo.writable_session("main")
    root = zarr.group(store=session.store)
    virtual = root.create_array(
        "virtual",
        shape=stacked.shape,
        chunks=VIRTUAL_CHUNKS,
        dtype="float32",
        compressors=None,
        fill_value=0,
    )
    specs = [
        icechunk.VirtualChunkSpec(
            index=index,
            location=url_for(source),
            offset=offset,
            length=length,
            etag_checksum=None if etags is None else etags[source],
            last_updated_at_checksum=updated_at,
        )
        for source, index, offset, length in chunks
    ]
    session.store.set_virtual_refs(virtual.path, specs, validate_containers=False)
    session.commit("virtual")
    return stacked
