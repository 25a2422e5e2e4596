"""aiozarr reads icechunk repositories as icechunk's own reader does, at every snapshot."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest
import zarr
from tests.interop.icechunk.generate import Written, open_repository
from tests.interop.icechunk.round_trips import RoundTrips

import aiozarr
from aiozarr.errors import (
    NodeNotFoundError,
    ReferenceTargetError,
    StoreError,
    UnsupportedError,
)
from aiozarr.storage.references.icechunk import IcechunkStore
from aiozarr.storage.references.icechunk.kept import kept_files
from aiozarr.sync import run


def _options(written: Written, **ref: str) -> dict:
    return {"allowed_targets": [str(written.sources)], **ref}


def test_every_array_at_every_snapshot_reads_as_icechunk_reads(written: Written) -> None:
    repo = open_repository(written)
    assert len(written.snapshots) == 3
    for snapshot, arrays in written.snapshots.items():
        session = repo.readonly_session(snapshot_id=snapshot)
        group = aiozarr.open_group(
            written.path, mode="r", storage_options=_options(written, snapshot=snapshot)
        )
        for path, expected in arrays.items():
            theirs = zarr.open_array(session.store, path=path, mode="r")[...]
            ours = group[path][...]
            np.testing.assert_array_equal(theirs, expected, err_msg=path)
            np.testing.assert_array_equal(ours, theirs, err_msg=f"{path} at {snapshot}")
            assert ours.dtype == theirs.dtype, path


def test_branches_and_tags_name_their_snapshots(written: Written) -> None:
    for ref, snapshot in written.refs.items():
        kind, name = ref.split(":")
        arr = aiozarr.open_array(
            written.path, "group/sub/inline", mode="r", storage_options={kind: name}
        )
        np.testing.assert_array_equal(arr[...], written.snapshots[snapshot]["group/sub/inline"])
    # main is the default; "late" exists only from the second commit on
    assert aiozarr.open_array(written.path, "late", mode="r")[...].tolist() == list(
        range(0, 9000, 1000)
    )
    with pytest.raises(NodeNotFoundError):
        aiozarr.open_array(written.path, "late", mode="r", storage_options={"tag": "v1"})
    for mode in ("r", "a"):  # "a" has nothing to create it in: the missing branch is named
        with pytest.raises(NodeNotFoundError, match="no branch 'nope'") as raised:
            aiozarr.open_group(written.path, mode=mode, storage_options={"branch": "nope"})
        assert "implicit" not in str(raised.value)  # the branch is missing, not a document


def test_groups_attributes_and_members(written: Written) -> None:
    group = aiozarr.open_group(written.path)
    assert group.attrs["title"] == "conformance"
    assert sorted(group) == [
        "empty",
        "group",
        "late",
        "native",
        "scalar",
        "sharded",
        "split",
        "virtual",
    ]
    sub = group["group/sub"]
    assert dict(sub.attrs) == {"units": "m", "level": 2}
    assert list(sub) == ["inline"]
    assert sorted(group["native"]) == ["c8", "f8", "i2", "u1"]


def test_selections_match(written: Written) -> None:
    arrays = written.snapshots[written.refs["branch:main"]]
    group = aiozarr.open_group(written.path, mode="r", storage_options=_options(written))
    np.testing.assert_array_equal(group["native/f8"][3:17, 9:31], arrays["native/f8"][3:17, 9:31])
    np.testing.assert_array_equal(group["sharded"][7:33:3, 1], arrays["sharded"][7:33:3, 1])
    np.testing.assert_array_equal(group["split"][5:11, ::5], arrays["split"][5:11, ::5])
    np.testing.assert_array_equal(group["virtual"][18:63, 4:29], arrays["virtual"][18:63, 4:29])


def test_virtual_chunks_need_their_folder_allowed(written: Written) -> None:
    arr = aiozarr.open_array(written.path, "virtual", mode="r")  # metadata reads no target
    with pytest.raises(ReferenceTargetError, match=r"part0\.h5") as refused:
        arr[0, 0]
    container = written.source_url()
    if written.spec_version >= 2:  # the container the repository declares is named
        assert f"virtual chunk container {container!r} (local_file_system)" in str(refused.value)
        assert f"allowed_targets=[{container!r}]" in str(refused.value)


def test_the_declared_virtual_chunk_containers_are_read(written: Written) -> None:
    containers = run(
        IcechunkStore(written.path, snapshot=written.refs["tag:v1"]).virtual_chunk_containers
    )
    if written.spec_version == 1:
        assert containers is None  # config.yaml is not read
    else:
        assert containers == {written.source_url(): {"local_file_system": str(written.sources)}}


def test_a_repository_is_known_by_its_layout_not_its_name(written: Written, tmp_path) -> None:
    renamed = tmp_path / "plain-name"
    renamed.symlink_to(written.path)
    assert isinstance(aiozarr.open_group(renamed, mode="r").store, IcechunkStore)
    with pytest.raises(NodeNotFoundError):  # a plain folder is still a plain folder
        aiozarr.open_group(tmp_path / "nothing", mode="r")


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_a_zarr_hierarchy_with_members_named_like_a_repository_is_zarr(
    tmp_path, zarr_format: int
) -> None:
    path = tmp_path / "data.zarr"
    root = aiozarr.create_group(path, zarr_format=zarr_format)
    root.create_array("snapshots", shape=(3,), dtype="i4")[...] = [1, 2, 3]
    root.create_group("refs")
    group = aiozarr.open_group(path, mode="r")
    assert not isinstance(group.store, IcechunkStore)
    assert group["snapshots"][...].tolist() == [1, 2, 3]
    assert aiozarr.open_array(path, "snapshots", mode="r")[...].tolist() == [1, 2, 3]


def test_a_repository_named_by_a_percent_encoded_file_url_is_a_repository(
    written: Written, tmp_path
) -> None:
    renamed = tmp_path / "a repo ü#1"
    renamed.symlink_to(written.path)
    group = aiozarr.open_group(renamed.as_uri())  # mode "a": nothing is created there
    assert isinstance(group.store, IcechunkStore)
    assert group.attrs["title"] == "conformance"
    assert not (written.path / "zarr.json").exists()


def test_listing_a_group_reads_no_manifest_and_an_array_lists_its_chunks(
    written: Written, round_trips: RoundTrips
) -> None:
    kept_files().clear()
    store = IcechunkStore(written.path)

    async def entries(prefix: str) -> list:
        return [entry async for entry in store.list_dir_entries(prefix)]

    assert run(entries, "group") == [("sub", True), ("zarr.json", False)]
    assert not [key for _, key in round_trips.reads if "manifests/" in key]  # the snapshot
    assert [key for _, key in round_trips.reads if "snapshots/" in key]  # alone answered
    assert run(entries, "native/i2") == [("c", True), ("zarr.json", False)]
    assert run(entries, "native/i2/c") == [(str(i), False) for i in range(5)]
    assert run(entries, "scalar") == [("c", False), ("zarr.json", False)]
    assert run(store.exists, "native/i2/c/4") and not run(store.exists, "native/i2/c/5")


def test_a_pickled_array_reads_the_snapshot_it_was_opened_at(written: Written) -> None:
    options = _options(written, branch="dev")
    arr = aiozarr.open_array(written.path, "virtual", mode="r", storage_options=options)
    values = arr[...]  # its manifest read: it does not travel
    copy = pickle.loads(pickle.dumps(arr))
    assert repr(copy.store).endswith(f"snapshot={written.refs['branch:dev']!r})")
    np.testing.assert_array_equal(copy[...], values)


def test_a_local_repository_refuses_options_it_cannot_use(written: Written) -> None:
    with pytest.raises(StoreError, match=r"takes no storage options.*\['anon'\]"):
        aiozarr.open_group(written.path, storage_options={"anon": True, "tag": "v1"})


def test_as_of_opens_the_snapshot_icechunk_opens(written: Written) -> None:
    repo = open_repository(written)
    history = list(repo.ancestry(branch="main"))  # newest first: second, first, initial
    second, first = written.refs["branch:main"], written.refs["tag:v1"]
    assert [info.id for info in history[:2]] == [second, first]
    between = history[1].written_at + (history[0].written_at - history[1].written_at) / 2
    if written.spec_version == 1:
        with pytest.raises(UnsupportedError, match="spec-2"):
            aiozarr.open_group(written.path, mode="r", storage_options={"as_of": between})
        return
    for when, expected in [(between, first), (history[0].written_at, second)]:
        assert repo.readonly_session("main", as_of=when).snapshot_id == expected
        for as_of in (when, when.isoformat()):  # a time, or its text
            store = IcechunkStore(
                written.path, storage_options={**_options(written), "as_of": as_of}
            )
            assert run(store.snapshot).id == expected
    arr = aiozarr.open_array(
        written.path, "late", mode="r", storage_options={"as_of": history[0].written_at}
    )
    np.testing.assert_array_equal(arr[...], written.snapshots[second]["late"])
    with pytest.raises(NodeNotFoundError, match="no snapshot as old as 2000-01-01"):
        aiozarr.open_group(written.path, mode="r", storage_options={"as_of": "2000-01-01"})
    with pytest.raises(StoreError, match="as_of goes with a branch, not a tag"):
        IcechunkStore(written.path, tag="v1", as_of="2000-01-01")


@pytest.mark.parametrize("path", ["native/f8", "sharded"])
def test_a_session_store_with_the_cache_is_read_once(written: Written, path: str) -> None:
    """icechunk's session store answers with no version; the chunk cache keeps its chunks
    all the same (under "open": until the array is opened again)."""
    from aiozarr.storage.backends.counting import CountingStore
    from aiozarr.storage.backends.zarr_store import ZarrStore

    snapshot, arrays = next(iter(written.snapshots.items()))
    session = open_repository(written).readonly_session(snapshot_id=snapshot)
    store = CountingStore(ZarrStore(session.store, read_only=True))
    arr = aiozarr.open_array(store, path, mode="r", cache_bytes=16 << 20)
    np.testing.assert_array_equal(arr[...], arrays[path])
    assert store.counts["get"] > 0
    store.reset()
    np.testing.assert_array_equal(arr[...], arrays[path])
    assert store.counts["get"] == 0


def test_a_container_prefix_of_any_text_is_read(tmp_path) -> None:
    """FlexBuffers keys were read as ASCII: a container in a folder `données` made the
    repository's configuration "malformed", and a refused chunk's error that one."""
    icechunk = pytest.importorskip("icechunk")
    if int(icechunk.__version__.split(".")[0]) < 2:
        pytest.skip("spec-2 repositories (icechunk 2.x) declare containers in their repo file")
    sources = tmp_path / "données"
    sources.mkdir()
    np.arange(4, dtype="<i4").tofile(sources / "f.bin")
    prefix = f"file://{sources}/"
    config = icechunk.RepositoryConfig.default()
    store = icechunk.local_filesystem_store(str(sources))
    config.set_virtual_chunk_container(icechunk.VirtualChunkContainer(prefix, store))
    storage = icechunk.local_filesystem_storage(str(tmp_path / "r"))
    session = icechunk.Repository.create(storage, config=config).writable_session("main")
    zarr.create_array(session.store, name="v", shape=(4,), dtype="<i4", compressors=None)
    spec = icechunk.VirtualChunkSpec(index=[0], location=f"{prefix}f.bin", offset=0, length=16)
    session.store.set_virtual_refs("v", [spec], validate_containers=False)
    session.commit("virtual")
    store = IcechunkStore(tmp_path / "r")
    assert run(store.virtual_chunk_containers) == {prefix: {"local_file_system": str(sources)}}
    with pytest.raises(ReferenceTargetError, match=r"'v/c/0'.*declares virtual chunk container"):
        aiozarr.open_array(tmp_path / "r", "v", mode="r")[...]


def test_a_location_relative_to_a_named_container_is_read(tmp_path) -> None:
    """icechunk 2.x writes `vcc://NAME/path`, relative to the container named NAME: it
    was taken for a URL of its own, refused whatever the allowed_targets."""
    icechunk = pytest.importorskip("icechunk")
    if int(icechunk.__version__.split(".")[0]) < 2:
        pytest.skip("named containers and vcc:// locations are icechunk 2.x's")
    sources = tmp_path / "src"
    (sources / "sub").mkdir(parents=True)
    np.arange(8, dtype="<i4").tofile(sources / "sub" / "f 1.bin")
    prefix = f"file://{sources}/"
    config = icechunk.RepositoryConfig.default()
    store = icechunk.local_filesystem_store(str(sources))
    config.set_virtual_chunk_container(icechunk.VirtualChunkContainer(prefix, store, name="d"))
    access = {prefix: icechunk.credentials.LocalFileSystemAccess}
    storage = icechunk.local_filesystem_storage(str(tmp_path / "r"))
    repo = icechunk.Repository.create(storage, config=config, authorize_virtual_chunk_access=access)
    session = repo.writable_session("main")
    for name, container in (("v", "d"), ("lost", "nope")):
        zarr.create_array(
            session.store, name=name, shape=(8,), chunks=(4,), dtype="<i4", compressors=None
        )
        refs = [
            icechunk.VirtualChunkSpec([i], f"vcc://{container}/sub/f%201.bin", 16 * i, 16)
            for i in range(2)
        ]
        session.store.set_virtual_refs(name, refs, validate_containers=False)
    snapshot = session.commit("relative")
    theirs = zarr.open_array(repo.readonly_session("main").store, path="v", mode="r")[...]
    assert theirs.tolist() == list(range(8))
    for ref in ({"branch": "main"}, {"snapshot": snapshot}):  # by id: the repo file unread
        options = {"allowed_targets": [str(sources)], **ref}
        ours = aiozarr.open_array(tmp_path / "r", "v", mode="r", storage_options=options)
        assert ours[...].tolist() == theirs.tolist()
        lost = aiozarr.open_array(tmp_path / "r", "lost", mode="r", storage_options=options)
        with pytest.raises(ReferenceTargetError, match=r"'lost/c/0'.*container 'nope'"):
            lost[...]
    with pytest.raises(ReferenceTargetError, match=r"allowed_targets=\[" + repr(prefix)):
        aiozarr.open_array(tmp_path / "r", "v", mode="r")[...]  # the container allows nothing


def test_a_chunk_key_encoding_named_by_a_string_reads_its_chunks(tmp_path) -> None:
    """`"chunk_key_encoding": "v2"`, a name alone, is v2 with "." to the metadata layer,
    which asks for chunk `0`; the repository's key grammar took it for `default` and
    answered "no chunk": every chunk read as the fill value, with no error."""
    icechunk = pytest.importorskip("icechunk")
    from zarr.core.buffer import default_buffer_prototype
    from zarr.core.sync import sync

    np.arange(1, 7, dtype="<i4").tofile(tmp_path / "f.bin")
    storage = icechunk.local_filesystem_storage(str(tmp_path / "r"))
    session = icechunk.Repository.create(storage).writable_session("main")
    zarr.create_array(
        session.store, name="v", shape=(6,), chunks=(2,), dtype="<i4", compressors=None
    )
    stored = sync(session.store.get("v/zarr.json", default_buffer_prototype()))
    document = json.loads(stored.to_bytes())
    document["chunk_key_encoding"] = "v2"
    encoded = default_buffer_prototype().buffer.from_bytes(json.dumps(document).encode())
    sync(session.store.set("v/zarr.json", encoded))
    location = f"file://{tmp_path}/f.bin"
    refs = [icechunk.VirtualChunkSpec([i], location, 8 * i, 8) for i in range(3)]
    session.store.set_virtual_refs("v", refs, validate_containers=False)
    session.commit("a name alone")
    options = {"allowed_targets": [str(tmp_path)]}
    arr = aiozarr.open_array(tmp_path / "r", "v", mode="r", storage_options=options)
    assert arr[...].tolist() == [1, 2, 3, 4, 5, 6]
    assert arr.nchunks_initialized == 3
