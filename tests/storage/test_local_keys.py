"""LocalStore beyond the contract: key safety, atomic writes, identity, thread hops."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import anyio
import pytest

import aiozarr
from aiozarr.byte_range import ByteRange
from aiozarr.errors import InvalidKeyError, ReadOnlyError, StoreError
from aiozarr.storage.backends import local
from aiozarr.storage.backends.local import TEMP_SUFFIX, LocalStore
from aiozarr.storage.protocol import RangeRequest

BAD_KEYS = [
    "../x",
    "/abs",
    "/etc/passwd",
    "a/../../b",
    "a/../b",
    "a\\b",
    "..\\x",
    "a\x00b",
    "",
    "a//b",
    "a/",
    "./a",
    "a/./b",
    "..",
    "k" + TEMP_SUFFIX,
    "g" + TEMP_SUFFIX + "/zarr.json",
    "a/b" + TEMP_SUFFIX + "/c/0",
]


def all_files(path: Path) -> list[str]:
    return sorted(p.relative_to(path).as_posix() for p in path.rglob("*") if p.is_file())


@pytest.fixture
def store(tmp_path: Path) -> LocalStore:
    return LocalStore(tmp_path / "root")


@pytest.mark.parametrize("key", BAD_KEYS)
async def test_bad_keys_are_refused_everywhere(store: LocalStore, key: str) -> None:
    outside = store.root.parent
    before = all_files(outside)
    with pytest.raises(InvalidKeyError, match="invalid key") as info:
        await store.set(key, b"evil")
    assert repr(key) in str(info.value)
    for call in (
        lambda: store.get(key),
        lambda: store.get(key, ByteRange.of(0, 1)),
        lambda: store.get_partial_values([RangeRequest("fine"), RangeRequest(key)]),
        lambda: store.exists(key),
        lambda: store.getsize(key),
        lambda: store.delete(key),
    ):
        with pytest.raises(InvalidKeyError):
            await call()
    assert all_files(outside) == before


@pytest.mark.parametrize("prefix", ["../", "/abs/", "a/../../", "a\\b"])
async def test_bad_prefixes_are_refused(store: LocalStore, prefix: str) -> None:
    with pytest.raises(InvalidKeyError):
        [k async for k in store.list_prefix(prefix)]
    with pytest.raises(InvalidKeyError):
        [k async for k in store.list_dir(prefix)]
    with pytest.raises(InvalidKeyError):
        await store.delete_prefix(prefix)


def test_a_node_named_like_a_temporary_file_is_refused(tmp_path: Path) -> None:
    """Listings skip a directory whose name ends with the temp suffix and the sweep
    removes it once old: such a node would be hidden, then deleted."""
    group = aiozarr.open_group(tmp_path / "g.zarr", mode="w")
    with pytest.raises(InvalidKeyError, match=r"run\.aiozarr-tmp/"):
        group.create_array("run" + TEMP_SUFFIX, shape=(4,), dtype="i4")
    assert all_files(tmp_path / "g.zarr") == ["zarr.json"]


async def test_keys_map_to_files_under_the_root(store: LocalStore) -> None:
    await store.set("a/b/c", b"abc")
    await store.set("zarr.json", b"{}")
    assert (store.root / "a" / "b" / "c").read_bytes() == b"abc"
    assert all_files(store.root) == ["a/b/c", "zarr.json"]


async def test_no_temp_file_left_after_writes(store: LocalStore) -> None:
    for i in range(5):
        await store.set("a/k", bytes([i]) * 100)
    await store.set_many((f"a/{i}", b"x") for i in range(20))
    names = os.listdir(store.root / "a")
    assert not [n for n in names if n.endswith(TEMP_SUFFIX)]
    assert (store.root / "a" / "k").read_bytes() == bytes([4]) * 100


async def test_failed_write_keeps_old_value_and_leaves_no_temp_file(
    store: LocalStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    await store.set("a/k", b"old value")

    def broken_replace(src: str, dst: str) -> None:
        assert Path(src).exists()  # the new value was written to a temp file first
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(local.os, "replace", broken_replace)
    with pytest.raises(StoreError, match=r"cannot write .a/k.*No space left"):
        await store.set("a/k", b"new value that never lands")
    monkeypatch.undo()
    assert (store.root / "a" / "k").read_bytes() == b"old value"
    assert os.listdir(store.root / "a") == ["k"]
    assert [k async for k in store.list()] == ["a/k"]


async def test_interrupted_write_leaves_no_temp_file(
    store: LocalStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(src: str, dst: str) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(local.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        await store.set("k", b"v")
    monkeypatch.undo()
    assert all_files(store.root) == []


@pytest.mark.parametrize("name", ["k" * 255, "日本" * 42], ids=["255-ascii", "252-utf8"])
async def test_a_key_named_at_the_file_name_limit_is_written(store: LocalStore, name: str) -> None:
    """The temporary file beside it has a name of its own within the limit."""
    await store.set(f"a/{name}", b"v")
    assert (store.root / "a" / name).read_bytes() == b"v"
    assert os.listdir(store.root / "a") == [name]


async def test_listings_skip_temp_files_of_writes_in_progress(store: LocalStore) -> None:
    await store.set("a/k", b"v")
    (store.root / "a" / f".k.123{TEMP_SUFFIX}").write_bytes(b"half")
    assert [k async for k in store.list()] == ["a/k"]
    assert [k async for k in store.list_dir("a")] == ["k"]


async def test_delete_removes_empty_directories(store: LocalStore) -> None:
    await store.set("a/b/c/d", b"1")
    await store.set("a/x", b"2")
    await store.delete("a/b/c/d")
    assert [n async for n in store.list_dir("a")] == ["x"]
    assert store.root.is_dir()
    await store.delete("a/x")
    assert [n async for n in store.list_dir("")] == []
    assert store.root.is_dir()  # the root itself stays


async def test_write_over_directory_or_through_file_is_a_store_error(store: LocalStore) -> None:
    await store.set("a/b", b"1")
    with pytest.raises(StoreError, match="'a'"):
        await store.set("a", b"a directory is there")
    with pytest.raises(StoreError, match="'a/b/c'"):
        await store.set("a/b/c", b"a file is in the way")
    assert await store.get("a/b/c") is None  # reading through a file: missing
    assert await store.get("a") is None  # a directory is not a value


async def test_read_only_store_does_not_create_its_root(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "nothing", read_only=True)
    assert await store.get("k") is None
    assert [k async for k in store.list()] == []
    with pytest.raises(ReadOnlyError):
        await store.set("k", b"v")
    assert not (tmp_path / "nothing").exists()


async def test_ranges_of_one_key_are_one_open_and_one_thread_hop(
    store: LocalStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    await store.set("k", bytes(range(256)))
    opened: list[object] = []
    real_read_ranges = local._read_ranges

    def spy(
        path: Path, byte_ranges: list[ByteRange | None], max_bytes: int | None = None
    ) -> list[bytes] | None:
        opened.append(list(byte_ranges))
        return real_read_ranges(path, byte_ranges, max_bytes)

    monkeypatch.setattr(local, "_read_ranges", spy)
    ranges = [ByteRange.of(0, 4), ByteRange.of(100, 4), ByteRange.last(4), None]
    answers = await store.get_partial_values([RangeRequest("k", r) for r in ranges])
    assert [bytes(a) for a in answers] == [
        bytes(range(4)),
        bytes(range(100, 104)),
        bytes(range(252, 256)),
        bytes(range(256)),
    ]
    assert len(opened) == 1  # one open (one thread hop) for all four ranges
    assert len(opened[0]) == 4  # gap 0: nothing coalesced on local disk


def test_identity_repr_pickle(tmp_path: Path) -> None:
    a = LocalStore(tmp_path)
    b = LocalStore(str(tmp_path / "x" / ".."))
    assert a == b and hash(a) == hash(b)
    assert a != a.with_read_only()
    assert a.with_read_only() == LocalStore(tmp_path, read_only=True)
    assert a.with_read_only().with_read_only(False) == a
    assert str(tmp_path) in repr(a) and "read_only=True" in repr(a.with_read_only())
    c = pickle.loads(pickle.dumps(a.with_read_only()))
    assert c == a.with_read_only() and c.read_only
    assert LocalStore(tmp_path).capabilities.coalesce_gap_bytes == 0


async def test_pickled_store_works_after_use(store: LocalStore) -> None:
    await store.set("k", b"v")
    copy = pickle.loads(pickle.dumps(store))
    assert bytes(await copy.get("k")) == b"v"


async def test_writes_survive_concurrent_deletes_pruning_their_directory(tmp_path: Path) -> None:
    # Deleting the last key of a directory removes the directory (and empty parents)
    # while a write into it may be making it: every write must still land.
    store = LocalStore(tmp_path)
    rounds = 300
    await store.set_many([(f"c/{r}/0/old", b"x") for r in range(rounds)])

    async def churn(r: int) -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(store.delete, f"c/{r}/0/old")
            tg.start_soon(store.set, f"c/{r}/0/new", b"y")

    async with anyio.create_task_group() as tg:
        for r in range(rounds):
            tg.start_soon(churn, r)
    found = await store.get_partial_values([RangeRequest(f"c/{r}/0/new") for r in range(rounds)])
    assert all(data is not None and bytes(data) == b"y" for data in found)
