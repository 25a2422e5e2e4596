"""How many round trips opening a repository and reading its first chunk takes.

A branch is four dependent reads: its ref names the snapshot, the snapshot the
manifest, the manifest the chunk; nothing the reader has before an answer names what
that answer will name, so none of the four can go out with another. What can go
together does: the spec-2 `repo` file and the spec-1 ref (the version is not known
beforehand). A snapshot id skips the ref; snapshots and manifests are immutable and
kept for the process (`kept.py`), so opening the repository again reads neither.
"""

from __future__ import annotations

import re

import icechunk
import numpy as np
import pytest
import zarr
from tests.interop.icechunk.generate import write_virtual_repository
from tests.interop.icechunk.round_trips import RoundTrips
from tests.interop.icechunk.test_icechunk_requests import _virtual_on_emulator

import aiozarr
from aiozarr.emulator import Emulator
from aiozarr.storage.references.icechunk.kept import kept_files
from aiozarr.sync import run

ID = re.compile(r"[0-9A-Z]{20}")


def _named(log: RoundTrips) -> list[list[str]]:
    """The keys of each round trip, object ids written as `ID`."""
    return [[ID.sub("ID", key) for key in keys] for keys in log.by_round_trip()]


@pytest.fixture
def repository(emulator: Emulator, prefix: str) -> tuple[str, dict, np.ndarray]:
    expected = _virtual_on_emulator(emulator, prefix)
    kept_files().clear()  # what other tests read is not this test's
    return emulator.s3_url(f"{prefix}/repo"), emulator.storage_options(), expected


def _open_and_read(url: str, options: dict, expected: np.ndarray, **ref: str) -> None:
    arr = aiozarr.open_array(url, "virtual", mode="r", storage_options={**options, **ref})
    np.testing.assert_array_equal(arr[0:4, 0:6], expected[0:4, 0:6])  # chunk (0, 0)


def test_a_branch_opens_in_four_round_trips(
    repository: tuple[str, dict, np.ndarray],
    round_trips: RoundTrips,
) -> None:
    _open_and_read(*repository, branch="main")
    assert _named(round_trips) == [
        ["refs/branch.main/ref.json", "repo"],  # one of the two exists
        ["snapshots/ID"],
        ["manifests/ID"],
        ["part0.h5"],
    ]


def test_a_snapshot_id_opens_in_three_round_trips(
    repository: tuple[str, dict, np.ndarray],
    round_trips: RoundTrips,
) -> None:
    url, options, expected = repository
    group = aiozarr.open_group(url, mode="r", storage_options={**options, "branch": "main"})
    snapshot_id = run(group.store.snapshot).id
    kept_files().clear()
    round_trips.clear()
    _open_and_read(url, options, expected, snapshot=snapshot_id)
    assert _named(round_trips) == [["snapshots/ID"], ["manifests/ID"], ["part0.h5"]]


def test_opening_the_repository_again_reads_no_snapshot_or_manifest_twice(
    repository: tuple[str, dict, np.ndarray],
    round_trips: RoundTrips,
) -> None:
    url, options, expected = repository
    _open_and_read(url, options, expected, branch="main")
    snapshot_id = ID.findall(" ".join(k for _, k in round_trips.reads if "snapshots/" in k))[0]
    round_trips.clear()
    _open_and_read(url, options, expected, branch="main")  # a new store, the same files
    assert _named(round_trips) == [["refs/branch.main/ref.json", "repo"], ["part0.h5"]]
    round_trips.clear()
    _open_and_read(url, options, expected, snapshot=snapshot_id)
    assert _named(round_trips) == [["part0.h5"]]
    round_trips.clear()
    other = {**options, "region": "eu-west-1"}  # other options: files read with them
    _open_and_read(url, other, expected, snapshot=snapshot_id)
    assert _named(round_trips) == [["snapshots/ID"], ["manifests/ID"], ["part0.h5"]]


def test_a_sharded_read_reads_its_manifest_once(
    emulator: Emulator, prefix: str, round_trips: RoundTrips
) -> None:
    """A shard's index and its parts ahead (2 MiB each) are looked up at once: one
    manifest read serves them all (each lookup read it again before)."""
    repo = icechunk.Repository.create(
        icechunk.local_filesystem_storage(str(emulator.root / prefix / "repo"))
    )
    session = repo.writable_session("main")
    expected = np.random.default_rng(1).normal(size=(1024, 1024)).astype("f4")  # 4 MiB
    arr = zarr.create_array(
        session.store,
        name="a",
        shape=expected.shape,
        chunks=(256, 256),
        shards=(1024, 1024),
        dtype="f4",
    )
    arr[...] = expected
    session.commit("one shard")
    kept_files().clear()
    options = {**emulator.storage_options(), "branch": "main"}
    url = emulator.s3_url(f"{prefix}/repo")
    arr = aiozarr.open_array(url, "a", mode="r", storage_options=options)
    round_trips.clear()
    np.testing.assert_array_equal(arr[...], expected)
    keys = [key for _, key in round_trips.reads]
    assert len([key for key in keys if key.startswith("manifests/")]) == 1
    assert len([key for key in keys if ID.fullmatch(key)]) == 3  # the index, 2 parts


def test_a_tile_in_five_files_is_one_round_trip_once_its_manifest_is_read(
    emulator: Emulator, prefix: str, round_trips: RoundTrips
) -> None:
    folder = emulator.root / prefix
    expected = write_virtual_repository(
        folder / "repo",
        folder / "sources",
        lambda path: emulator.s3_url(f"{prefix}/sources/{path.name}"),
        rows=4,  # five files of one row of 5 chunks: the 5 x 5 tile lies in 5 runs
    )
    options = {**emulator.storage_options(), "branch": "main"}
    arr = aiozarr.open_array(emulator.s3_url(f"{prefix}/repo"), "virtual", storage_options=options)
    arr[0, 0]  # the manifest read
    round_trips.clear()
    np.testing.assert_array_equal(arr[...], expected)  # 25 chunks
    assert round_trips.by_round_trip() == [[f"part{n}.h5" for n in range(5)]]
