"""What a read of an icechunk repository costs, counted by the emulator serving it: one
batch of manifests, then every chunk range coalesced per object."""

from __future__ import annotations

import datetime
import os
import secrets
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.interop.icechunk.generate import Written, write_virtual_repository

import aiozarr
from aiozarr.emulator import Emulator
from aiozarr.emulator.files import etag_of as served_etag
from aiozarr.errors import SourceChangedError
from aiozarr.storage.opening.url import from_url
from aiozarr.storage.references.icechunk import IcechunkStore
from aiozarr.storage.references.icechunk.kept import kept_files
from aiozarr.sync import run


def _gets(emulator: Emulator) -> int:
    return emulator.stats()["by_method"].get("GET", 0)


def _virtual_on_emulator(
    emulator: Emulator, prefix: str, etags: bool = False, updated_at: Any = None
) -> np.ndarray:
    """A repository in the emulator's bucket whose virtual chunks lie in 5 HDF5 files
    in the same bucket (so they need no allowed_targets)."""
    folder = emulator.root / prefix
    sources = folder / "sources"

    def url(path: Path) -> str:
        return emulator.s3_url(f"{prefix}/sources/{path.name}")

    etag_of = None
    if etags:  # the ETag the emulator gives each source file
        store = from_url(
            emulator.s3_url(f"{prefix}/sources"), storage_options=emulator.storage_options()
        )

        def etag_of(path: Path) -> str:
            return run(store.get_versioned, path.name)[1][0]

    return write_virtual_repository(folder / "repo", sources, url, etag_of, updated_at)


def test_virtual_chunks_contiguous_in_five_files_cost_five_gets(
    emulator: Emulator, prefix: str
) -> None:
    expected = _virtual_on_emulator(emulator, prefix)
    url = emulator.s3_url(f"{prefix}/repo")
    options = {**emulator.storage_options(), "branch": "main"}
    emulator.reset_stats()
    arr = aiozarr.open_array(url, "virtual", mode="r", storage_options=options)
    assert _gets(emulator) == 3  # repo + the spec-1 ref in one batch, then the snapshot
    emulator.reset_stats()
    np.testing.assert_array_equal(arr[0:20, :], expected[0:20, :])  # 25 chunks of part0.h5
    assert _gets(emulator) == 1 + 1  # the manifest, then one coalesced range
    emulator.reset_stats()
    np.testing.assert_array_equal(arr[...], expected)  # 125 chunks in 5 files
    assert _gets(emulator) == 5  # the manifest is cached: one GET per file
    emulator.reset_stats()
    # a 5 x 5-chunk tile across two files: one run in each
    np.testing.assert_array_equal(arr[12:32, 0:30], expected[12:32, 0:30])
    assert _gets(emulator) == 2


def test_a_tile_of_25_chunks_in_five_files_costs_five_data_gets(
    emulator: Emulator, prefix: str
) -> None:
    folder = emulator.root / prefix

    def url(path: Path) -> str:
        return emulator.s3_url(f"{prefix}/sources/{path.name}")

    # five files of one row of 5 chunks each: the tile's 25 chunks lie in 5 runs
    expected = write_virtual_repository(folder / "repo", folder / "sources", url, rows=4)
    options = {**emulator.storage_options(), "branch": "main"}
    arr = aiozarr.open_array(emulator.s3_url(f"{prefix}/repo"), "virtual", storage_options=options)
    assert arr.shape == (20, 30) and arr.chunks == (4, 6)
    emulator.reset_stats()
    np.testing.assert_array_equal(arr[...], expected)
    assert _gets(emulator) == 1 + 5  # the manifest, then one GET per file


def test_a_remote_repository_is_found_by_its_layout(emulator: Emulator, prefix: str) -> None:
    expected = _virtual_on_emulator(emulator, prefix)
    url = emulator.s3_url(f"{prefix}/repo")
    group = aiozarr.open_group(url, storage_options=emulator.storage_options())  # mode "a"
    assert isinstance(group.store, IcechunkStore)
    np.testing.assert_array_equal(group["virtual"][0:4, 0:6], expected[0:4, 0:6])
    assert not (emulator.root / prefix / "repo" / "zarr.json").exists()  # nothing created
    with pytest.raises(aiozarr.errors.NodeNotFoundError):  # and Zarr is still Zarr
        aiozarr.open_group(
            emulator.s3_url(f"{prefix}/none"), mode="r", storage_options=emulator.storage_options()
        )


def test_a_changed_source_is_refused_by_its_etag(emulator: Emulator, prefix: str) -> None:
    expected = _virtual_on_emulator(emulator, prefix, etags=True)
    url = emulator.s3_url(f"{prefix}/repo")
    arr = aiozarr.open_array(url, "virtual", mode="r", storage_options=emulator.storage_options())
    np.testing.assert_array_equal(arr[...], expected)
    part = emulator.root / prefix / "sources" / "part1.h5"
    part.write_bytes(part.read_bytes()[::-1])  # rewritten: same size, other bytes
    np.testing.assert_array_equal(arr[0:20], expected[0:20])  # part0.h5: unchanged
    emulator.reset_stats()
    with pytest.raises(SourceChangedError, match=r"part1\.h5.*(if_match|ETag)"):
        arr[20:40]
    # the condition went with the GET: the server refused it, no byte of part1.h5 read
    assert emulator.stats()["by_status"] == {"412": 1}


def test_a_changed_source_is_refused_by_its_last_modified(emulator: Emulator, prefix: str) -> None:
    stamp = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=60)
    expected = _virtual_on_emulator(emulator, prefix, updated_at=stamp)
    url = emulator.s3_url(f"{prefix}/repo")
    arr = aiozarr.open_array(url, "virtual", mode="r", storage_options=emulator.storage_options())
    np.testing.assert_array_equal(arr[...], expected)
    part = emulator.root / prefix / "sources" / "part2.h5"
    later = stamp.timestamp() + 3600
    os.utime(part, (later, later))  # the same bytes, modified after the references
    np.testing.assert_array_equal(arr[60:100], expected[60:100])
    emulator.reset_stats()
    with pytest.raises(SourceChangedError, match=r"part2\.h5.*(if_unmodified_since|modified)"):
        arr[40:60]
    assert emulator.stats()["by_status"] == {"412": 1}


def test_a_changed_local_source_is_refused_by_its_time(written: Written) -> None:
    options = {"allowed_targets": [str(written.sources)]}
    arr = aiozarr.open_array(written.path, "virtual", mode="r", storage_options=options)
    expected = written.snapshots[written.refs["branch:main"]]["virtual"]
    np.testing.assert_array_equal(arr[60:80], expected[60:80])
    part = written.sources / "part4.h5"
    later = time.time() + 3600  # changed after the references were written
    os.utime(part, (later, later))
    try:
        with pytest.raises(SourceChangedError, match=r"part4\.h5.*modified"):
            arr[80:100]
        np.testing.assert_array_equal(arr[0:20], expected[0:20])  # the others still read
    finally:
        os.utime(part, (0, 0))  # older than the references again
    np.testing.assert_array_equal(arr[80:100], expected[80:100])


def test_a_changed_source_over_http_is_refused_by_its_etag(tmp_path: Path) -> None:
    # icechunk keeps no port in a virtual chunk's http location: the sources are served
    # at port 80, on a loopback address of this test's own
    host = f"127.{os.getpid() % 250 + 1}.{secrets.randbelow(250) + 1}.{secrets.randbelow(250) + 1}"
    try:
        served = Emulator(tmp_path / "served", host=host, port=80).running_in_thread()
        emulator = served.__enter__()
    except OSError as error:  # not allowed to listen on port 80 here
        pytest.skip(f"cannot serve http://{host}:80 ({error})")
    try:
        folder = emulator.root / "virtual"
        sources = emulator.http_url("virtual/sources/").replace(":80/", "/")

        def etag_of(path: Path) -> str:  # the ETag the server gives each source now
            return served_etag(path.stat())

        expected = write_virtual_repository(
            folder / "repo", folder / "sources", lambda p: sources + p.name, etag_of
        )
        options = {"allowed_targets": [sources]}
        repo = str(folder / "repo")
        arr = aiozarr.open_array(repo, "virtual", mode="r", storage_options=options)
        np.testing.assert_array_equal(arr[...], expected)
        part = folder / "sources" / "part1.h5"
        part.write_bytes(part.read_bytes()[::-1])  # rewritten: same size, other bytes
        np.testing.assert_array_equal(arr[0:20], expected[0:20])  # part0.h5: unchanged
        emulator.reset_stats()
        with pytest.raises(SourceChangedError, match=r"part1\.h5.*If-Match"):
            arr[20:40]
        # the condition went with the GET: the server refused it, no byte of part1.h5 read
        assert emulator.stats()["by_status"] == {"412": 1}
    finally:
        served.__exit__(None, None, None)


def test_manifests_kept_are_bounded_in_bytes(written: Written) -> None:
    options = {"allowed_targets": [str(written.sources)]}
    with aiozarr.config.set(icechunk_manifest_cache_bytes=0):
        store = IcechunkStore(written.path, storage_options=options)
        arr = aiozarr.open_array(store, "virtual", mode="r")
        expected = written.snapshots[written.refs["branch:main"]]["virtual"]
        np.testing.assert_array_equal(arr[...], expected)  # read, though none is kept
        assert len(kept_files()) == 0
    store = IcechunkStore(written.path, storage_options=options)
    arr = aiozarr.open_array(store, "virtual", mode="r")
    arr[...]
    assert len(kept_files()) >= 2  # the snapshot and the manifest
    assert kept_files().nbytes <= aiozarr.config.get().icechunk_manifest_cache_bytes
