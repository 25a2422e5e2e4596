"""Arrays and groups through the public API, on LocalStore and MemoryStore."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import aiozarr
from aiozarr import errors
from aiozarr.storage.backends.counting import CountingStore
from aiozarr.storage.backends.local import LocalStore
from aiozarr.storage.backends.memory import MemoryStore
from aiozarr.sync import run


@pytest.fixture(params=["memory", "local"])
def store(request: pytest.FixtureRequest, tmp_path: Path):  # type: ignore[no-untyped-def]
    return MemoryStore() if request.param == "memory" else LocalStore(tmp_path / "data.zarr")


@pytest.mark.parametrize("zarr_format", [2, 3])
async def test_roundtrip_with_edge_chunks(store, zarr_format: int) -> None:
    data = np.random.default_rng(1).normal(size=(13, 7, 5)).astype("f4")
    arr = await aiozarr.create_array_async(
        store, "x", shape=data.shape, dtype="f4", chunks=(4, 3, 5), zarr_format=zarr_format
    )
    await arr.setitem(..., data)
    again = await aiozarr.open_array_async(store, "x")
    assert again.zarr_format == zarr_format
    assert np.array_equal(await again.getitem(...), data)
    for sel in [(slice(None, None, -2), 1, slice(1, 4)), (-1, -1, -1), (slice(3, 11), ...)]:
        assert np.array_equal(await again.getitem(sel), data[sel])


async def test_missing_chunks_read_fill_and_fill_chunks_are_not_stored(store) -> None:
    arr = await aiozarr.create_array_async(
        store, "f", shape=(10, 10), dtype="i2", chunks=(5, 5), fill_value=9
    )
    assert np.all(await arr.getitem(...) == 9)
    await arr.setitem((slice(0, 5), slice(0, 5)), 9)
    keys = [k async for k in store.list_prefix("f/c")]
    assert keys == []
    await arr.setitem((0, 0), 1)
    assert [k async for k in store.list_prefix("f/c")] == ["f/c/0/0"]
    await arr.setitem((0, 0), 9)  # back to all-fill: the chunk is deleted
    assert [k async for k in store.list_prefix("f/c")] == []


async def test_resize_deletes_chunks_outside(store) -> None:
    arr = await aiozarr.create_array_async(store, "r", shape=(10,), dtype="i4", chunks=(3,))
    await arr.setitem(..., np.arange(1, 11))
    await arr.resize(4)
    assert arr.shape == (4,)
    assert sorted([k async for k in store.list_prefix("r/c")]) == ["r/c/0", "r/c/1"]
    await arr.resize(8)
    again = await aiozarr.open_array_async(store, "r")
    # Elements 4 and 5 of the kept chunk 1 were filled when the shrink cut them off.
    assert list(await again.getitem(slice(0, 8))) == [1, 2, 3, 4, 0, 0, 0, 0]


async def test_attributes_and_info(store) -> None:
    arr = await aiozarr.create_array_async(
        store, "a", shape=(2,), dtype="u1", attributes={"x": 1}, dimension_names=["t"]
    )
    await arr.update_attributes({"y": [1, 2]})
    again = await aiozarr.open_array_async(store, "a")
    assert again.attrs == {"x": 1, "y": [1, 2]}
    assert again.metadata.dimension_names == ("t",)
    assert "Shape              : (2,)" in again.info()


@pytest.mark.parametrize("zarr_format", [2, 3])
async def test_groups(store, zarr_format: int) -> None:
    root = await aiozarr.create_group_async(store, attributes={"r": 1}, zarr_format=zarr_format)
    await root.create_array("a/b/arr", shape=(3,), dtype="i4")  # parents become groups
    sub = await root.getitem("a")
    assert isinstance(sub, aiozarr.AsyncGroup)
    assert await root.member_names() == ["a"]
    assert await root.contains("a/b/arr")
    assert not await root.contains("nope")
    assert "arr (3,) int32" in await root.tree()
    opened = await aiozarr.open_async(store, "a/b")
    assert isinstance(opened, aiozarr.AsyncGroup)


async def test_implicit_v3_group(store) -> None:
    # Zarr v3.0 has no implicit groups: only the `implicit_groups` setting opens one.
    await aiozarr.create_array_async(store, "p/q", shape=(1,), dtype="i4")
    await store.delete("p/zarr.json")
    with pytest.raises(errors.GroupNotFoundError):
        await aiozarr.open_group_async(store, "p", mode="r")
    assert await (await aiozarr.open_group_async(store, mode="r")).member_names() == []
    with aiozarr.config.set(implicit_groups=True):
        group = await aiozarr.open_group_async(store, "p", mode="r")
        assert await group.member_names() == ["q"]
        root = await aiozarr.open_group_async(store, mode="r")
        assert await root.member_names() == ["p"]


async def test_overwrite_and_exists(store) -> None:
    await aiozarr.create_array_async(store, "o", shape=(2,), dtype="i4")
    with pytest.raises(errors.NodeExistsError):
        await aiozarr.create_array_async(store, "o", shape=(2,), dtype="i4")
    arr = await aiozarr.create_array_async(store, "o", shape=(5,), dtype="f8", overwrite=True)
    assert arr.shape == (5,)


@pytest.mark.parametrize("zarr_format", [2, 3])
async def test_overwrite_drops_chunks_left_without_metadata(store, zarr_format: int) -> None:
    # An array whose metadata is gone (a failed delete, a hand-made cleanup) leaves its
    # chunks: the array created over it with overwrite must read fill, as in zarr-python.
    old = await aiozarr.create_array_async(
        store, "s", shape=(4,), dtype="i4", chunks=(4,), fill_value=0, zarr_format=zarr_format
    )
    await old.setitem(..., np.arange(1, 5, dtype="i4"))
    await store.delete("s/zarr.json" if zarr_format == 3 else "s/.zarray")
    new = await aiozarr.create_array_async(
        store,
        "s",
        shape=(4,),
        dtype="i4",
        chunks=(4,),
        fill_value=0,
        zarr_format=zarr_format,
        overwrite=True,
    )
    assert np.array_equal(await new.getitem(...), np.zeros(4, "i4"))
    group = await aiozarr.create_group_async(store, "s", overwrite=True, zarr_format=zarr_format)
    assert await group.member_names() == []
    document = "s/zarr.json" if zarr_format == 3 else "s/.zgroup"
    assert [k async for k in store.list_prefix("s/")] == [document]


async def test_overwrite_deletes_while_it_reads_the_parents() -> None:
    counting = CountingStore(MemoryStore())
    await aiozarr.create_group_async(counting, "a")
    await aiozarr.create_array_async(counting, "a/b", shape=(2,), dtype="i4")
    counting.reset()
    await aiozarr.create_array_async(counting, "a/b", shape=(2,), dtype="i4", overwrite=True)
    # The parents' metadata is read, not the node's own: it goes whatever it is, its
    # documents (named, in either format, one batch) first. The parents are read again
    # once it is written, for snapshots that list the node replaced.
    assert sorted(counting.requests) == [
        *[("delete", f"a/b/{name}", None) for name in (".zarray", ".zattrs", ".zgroup")],
        ("delete", "a/b/.zmetadata", None),
        ("delete", "a/b/zarr.json", None),
        ("delete_prefix", "a/b/", None),
        *[("get", "a/zarr.json", None)] * 2,
        *[("get", "zarr.json", None)] * 2,
        ("set", "a/b/zarr.json", None),
    ]


# -- bad input, as a new user would try it ----------------------------------------------------


async def test_missing_array_names_the_path(store) -> None:
    with pytest.raises(errors.NodeNotFoundError, match="nothing"):
        await aiozarr.open_array_async(store, "nothing")


async def test_corrupt_zarr_json(store) -> None:
    await store.set("bad/zarr.json", b"{not json")
    with pytest.raises(errors.MetadataError, match=r"bad/zarr\.json"):
        await aiozarr.open_array_async(store, "bad")


async def test_unknown_codec(store) -> None:
    doc = (
        b'{"zarr_format":3,"node_type":"array","shape":[2],"data_type":"int32",'
        b'"chunk_grid":{"name":"regular","configuration":{"chunk_shape":[2]}},'
        b'"chunk_key_encoding":{"name":"default"},"fill_value":0,'
        b'"codecs":[{"name":"bytes","configuration":{"endian":"little"}},{"name":"lzfancy"}]}'
    )
    await store.set("u/zarr.json", doc)
    with pytest.raises(errors.UnsupportedError, match="lzfancy"):
        await aiozarr.open_array_async(store, "u")


async def test_wrong_dtype_on_write(store) -> None:
    arr = await aiozarr.create_array_async(store, "w", shape=(3,), dtype="i4")
    with pytest.raises(errors.InvalidValueError, match="int32"):
        await arr.setitem(..., np.array(["a", "b", "c"]))
    with pytest.raises(errors.InvalidValueError):
        await arr.setitem(..., np.ones(4))


async def test_out_of_bounds(store) -> None:
    arr = await aiozarr.create_array_async(store, "b", shape=(3, 3), dtype="i4")
    with pytest.raises(errors.BoundsCheckError) as info:
        await arr.getitem((3, 0))
    assert isinstance(info.value, IndexError)
    with pytest.raises(IndexError):
        await arr.setitem((0, -4), 1)


async def test_escaping_key_is_refused(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "root")
    with pytest.raises(errors.InvalidKeyError, match=r"\.\./"):
        await aiozarr.create_array_async(store, "../outside", shape=(1,), dtype="i4")
    assert not (tmp_path / "outside").exists()


async def test_read_only_store_refuses_writes(tmp_path: Path) -> None:
    await aiozarr.create_array_async(str(tmp_path / "ro.zarr"), shape=(2,), dtype="i4")
    arr = await aiozarr.open_array_async(str(tmp_path / "ro.zarr"), mode="r")
    with pytest.raises(errors.ReadOnlyError):
        await arr.setitem(..., 1)


async def test_members_read_each_child_metadata_once() -> None:
    from aiozarr.storage.backends.counting import CountingStore

    counting = CountingStore(MemoryStore())
    root = await aiozarr.create_group_async(counting)
    for i in range(20):
        await root.create_array(f"a{i:02d}", shape=(2,), dtype="i4")
    group = await aiozarr.open_group_async(counting)
    counting.reset()
    members = [name async for name, _ in group.members()]
    assert members == [f"a{i:02d}" for i in range(20)]
    assert counting.counts["list"] == 1
    assert counting.counts["get"] == 20  # one zarr.json per child, all in flight together


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_group_info_describes_without_io_and_counts_members_on_request(zarr_format: int) -> None:
    counting = CountingStore(MemoryStore())
    group = aiozarr.create_group(counting, "g", zarr_format=zarr_format)
    group.create_array("a", shape=(2,), dtype="i1")
    group.create_array("b", shape=(2,), dtype="i1")
    group.create_group("sub")
    counting.reset()
    info = group.info  # as zarr-python's `Group.info`: a description, no request
    assert counting.requests == []
    assert (info.type, info.name, info.zarr_format, info.read_only) == (
        "Group",
        "/g",
        zarr_format,
        False,
    )
    assert info.count_members is None
    assert str(info).splitlines()[0] == f"Type               : Group (Zarr v{zarr_format})"
    complete = group.info_complete()
    assert (complete.count_members, complete.count_arrays, complete.count_groups) == (3, 2, 1)
    assert "Members            : 3 (2 arrays, 1 group)" in complete


BYTES_FOR_TEXT = {
    "a bytes scalar": (b"ab", ["ab", "ab"]),
    "a list of bytes": ([b"ab", "cd"], ["ab", "cd"]),
    "an object array of bytes": (np.array([b"ab", "\u00e9".encode()], dtype=object), ["ab", "é"]),
    "a bytes array": (np.array([b"ab", b"cd"]), ["ab", "cd"]),
}


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("given", BYTES_FOR_TEXT, ids=list(BYTES_FOR_TEXT))
def test_bytes_written_into_a_string_array_are_their_utf8_text(
    zarr_format: int, given: str
) -> None:
    # as zarr-python 3.4 takes all of them; the object array was refused, the rest taken
    value, stored = BYTES_FOR_TEXT[given]
    arr = aiozarr.create_array(
        MemoryStore(), shape=(2,), dtype=str, chunks=(2,), zarr_format=zarr_format
    )
    arr[...] = value
    assert arr[...].tolist() == stored


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize(
    "value", [b"\xff", [b"a", b"\xff"], np.array([b"a", b"\xff"], dtype=object)]
)
def test_bytes_that_are_not_utf8_are_refused_for_a_string_array(
    zarr_format: int, value: object
) -> None:
    arr = aiozarr.create_array(
        MemoryStore(), shape=(2,), dtype=str, chunks=(2,), zarr_format=zarr_format
    )
    with pytest.raises(errors.InvalidValueError, match=r"b'\\xff' are not UTF-8 text"):
        arr[...] = value
    assert arr.nchunks_initialized == 0  # refused before anything is written


@pytest.mark.parametrize("sharded", [False, True])
def test_nchunks_initialized_counts_chunk_keys_only(sharded: bool) -> None:
    """Objects below an array that are no chunk of its grid (the directory marker blobs
    `c/` and `c/0/` Azure tools write, a file of notes, a chunk a shrink left) are not
    counted; zarr-python counts 16 of 16 here."""
    store = MemoryStore()
    grid = {"chunks": (2, 2), "shards": (4, 4)} if sharded else {"chunks": (2, 2)}
    arr = aiozarr.create_array(store, "a", shape=(8, 8), dtype="i1", **grid)
    arr[...] = 1
    for key in ("a/c/", "a/c/0/", "a/c/notes.txt", "a/c/9/9"):
        run(store.set, key, b"")
    assert arr.nchunks_initialized == 16


def test_a_node_under_a_group_of_the_other_format_is_refused(tmp_path: Path) -> None:
    """A v3 array below a v2 group wrote a v3 group document beside `.zgroup`, and the
    v3 root, holding only the new array, hid the v2 group's members and attributes."""
    root = aiozarr.create_group(tmp_path, zarr_format=2, attributes={"title": "kept"})
    root.create_array("old", shape=(2,), dtype="i4", fill_value=0)
    with pytest.raises(errors.NodeExistsError, match="zarr_format=2"):
        aiozarr.create_array(tmp_path, "sub/new", shape=(2,), dtype="i4", zarr_format=3)
    assert not (tmp_path / "zarr.json").exists()
    again = aiozarr.open_group(tmp_path)
    assert again.attrs == {"title": "kept"} and again.member_names() == ["old"]


class _RivalMakesParent(MemoryStore):
    """A memory store where, right after the first batch that finds no `sub` group,
    another writer creates `sub` (as `require_group`s of siblings in threads do)."""

    def __init__(self) -> None:
        super().__init__()
        self.fired = False

    async def get_partial_values(self, requests):  # type: ignore[no-untyped-def]
        answers = await super().get_partial_values(requests)
        keys = [r.key for r in requests]
        if not self.fired and "sub/zarr.json" in keys and len(keys) > 1:
            self.fired = True
            await aiozarr.create_group_async(self, "sub", attributes={"by": "rival"})
        return answers


async def test_a_parent_another_writer_created_meanwhile_is_kept() -> None:
    """Its second read found the rival's group, of the same format, and took it for a
    group of the other format: `NodeExistsError` for a valid call."""
    store = _RivalMakesParent()
    await aiozarr.create_group_async(store)
    await aiozarr.create_group_async(store, "sub/s1")
    assert store.fired
    sub = await aiozarr.open_group_async(store, "sub")
    assert dict(sub.attrs) == {"by": "rival"}  # the rival's, not rewritten
    assert [name async for name, _ in sub.members()] == ["s1"]
