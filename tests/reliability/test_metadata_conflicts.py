"""Metadata writers that share no lock (other store objects, other processes) lose no
update: two appenders both land, two attribute updates both land, a resize and an
append both land, in some order.

Each handle is opened before the other writes, as two processes would hold them: its
cached metadata is stale by the time it writes. A metadata change is applied to the
metadata as stored and written on its version (`nodes/node_updates.py`).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from obstore.store import S3Store
from tests.reliability.interleaving import BeforeWrites
from tests.reliability.locations import StoreFactory
from tests.reliability.proxies import Proxy
from tests.reliability.spawned import run_writers
from tests.servers import unique_prefix

import aiozarr
from aiozarr import config
from aiozarr.emulator import Emulator
from aiozarr.errors import ConditionalWriteUnsupportedError, VersionConflictError
from aiozarr.nodes import node_updates
from aiozarr.storage.backends.local import LocalStore
from aiozarr.storage.backends.object_store import ObjectStore
from aiozarr.storage.opening.url import from_url
from aiozarr.storage.protocol import Buffer, Store, Version
from aiozarr.storage.protocol.wrapper import WrapperStore

pytestmark = pytest.mark.timeout(180)

ALL = ["memory", "local", "s3", "moto"]
ROUNDS = 12


def _create(store: Store, zarr_format: int = 3, rows: int = 0) -> None:
    aiozarr.create_array(
        store, shape=(rows, 2), dtype="i4", chunks=(4, 2), fill_value=-1, zarr_format=zarr_format
    )


def _opened(make_store: StoreFactory) -> aiozarr.Array:
    """A handle over a store object of its own, as another process would hold."""
    return aiozarr.open_array(make_store(own_locks=True), mode="r+")


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("make_store", ALL, indirect=True)
def test_two_appenders_both_land(make_store: StoreFactory, zarr_format: int) -> None:
    _create(make_store(), zarr_format)
    w1, w2 = _opened(make_store), _opened(make_store)
    assert w1.append([[1, 1]]) == (1, 2)
    assert w2.append([[2, 2]]) == (2, 2)  # grown from the stored shape, not its own
    assert w2.shape == (2, 2)  # the handle keeps what it committed
    got = aiozarr.open_array(make_store(), mode="r")[...]
    np.testing.assert_array_equal(got, [[1, 1], [2, 2]])


async def _appender(arr: Any, writer: int) -> None:
    for r in range(ROUNDS):
        await arr.append(np.array([[writer, r]], dtype="i4"))


def _check_appends(arr: aiozarr.Array, writers: int) -> None:
    """Every row of every writer is there once, each writer's in the order it appended."""
    got = arr[...]
    assert got.shape == (writers * ROUNDS, 2)
    for w in range(writers):
        assert got[got[:, 0] == w, 1].tolist() == list(range(ROUNDS)), got.tolist()


@pytest.mark.parametrize("make_store", ALL, indirect=True)
def test_concurrent_appenders_lose_no_row(make_store: StoreFactory) -> None:
    _create(make_store())
    stores = [make_store(own_locks=True) for _ in range(2)]

    async def main() -> None:
        arrays = [await aiozarr.open_array_async(s, mode="r+") for s in stores]
        await asyncio.gather(*(_appender(arr, w) for w, arr in enumerate(arrays)))

    asyncio.run(main())
    _check_appends(aiozarr.open_array(make_store(), mode="r"), 2)


def _process_appender(
    kind: str, where: str, options: dict[str, Any], writer: int, start: Any
) -> None:
    store = LocalStore(where) if kind == "local" else from_url(where, storage_options=options)

    async def main() -> None:
        arr = await aiozarr.open_array_async(store, mode="r+")
        start.wait(60)  # both processes hold a handle, then append at once
        await _appender(arr, writer)

    asyncio.run(main())
    os._exit(0)  # obstore's runtime may abort at interpreter exit (see test_conditional_writes)


@pytest.mark.parametrize("kind", ["local", "s3"])
def test_two_processes_appending_lose_no_row(kind: str, tmp_path: Path, emulator: Emulator) -> None:
    if kind == "local":
        where, options = str(tmp_path / "a.zarr"), {}
        store: Store = LocalStore(where)
    else:
        where, options = emulator.s3_url("two-appenders.zarr"), emulator.storage_options()
        store = from_url(where, storage_options=options)
    _create(store)
    run_writers(_process_appender, 2, kind, where, options)
    _check_appends(aiozarr.open_array(store, mode="r"), 2)


@pytest.mark.parametrize("node", ["array", "group"])
@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("make_store", ALL, indirect=True)
def test_two_attribute_updates_both_land(
    make_store: StoreFactory, zarr_format: int, node: str
) -> None:
    if node == "array":
        _create(make_store(), zarr_format)
        w1, w2 = _opened(make_store), _opened(make_store)
    else:
        aiozarr.create_group(make_store(), zarr_format=zarr_format)  # type: ignore[arg-type]
        w1, w2 = (aiozarr.open_group(make_store(own_locks=True), mode="r+") for _ in range(2))  # type: ignore[assignment]
    w1.update_attributes({"a": 1})
    assert w2.update_attributes({"b": 2}) == {"a": 1, "b": 2}
    w1.attrs["c"] = 3
    del w2.attrs["a"]  # removes "a" from what is stored, keeping "c"
    opened = aiozarr.open(make_store(), mode="r")
    assert opened.attrs.asdict() == {"b": 2, "c": 3}
    assert w2.attrs.asdict() == {"b": 2, "c": 3}


@pytest.mark.parametrize("make_store", ["local", "s3"], indirect=True)
def test_concurrent_attribute_updates_all_land(make_store: StoreFactory) -> None:
    _create(make_store())
    stores = [make_store(own_locks=True) for _ in range(2)]

    async def updater(store: Store, writer: int) -> None:
        arr = await aiozarr.open_array_async(store, mode="r+")
        for r in range(ROUNDS):
            await arr.update_attributes({f"{writer}-{r}": r})

    async def main() -> None:
        await asyncio.gather(*(updater(s, w) for w, s in enumerate(stores)))

    asyncio.run(main())
    attrs = aiozarr.open_array(make_store(), mode="r").attrs.asdict()
    assert attrs == {f"{w}-{r}": r for w in range(2) for r in range(ROUNDS)}


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("make_store", ALL, indirect=True)
def test_an_append_after_a_resize_lands_at_the_new_end(
    make_store: StoreFactory, zarr_format: int
) -> None:
    _create(make_store(), zarr_format, rows=4)
    appender, resizer = _opened(make_store), _opened(make_store)
    appender[...] = np.arange(8).reshape(4, 2)
    resizer.resize((10, 2))
    assert appender.append([[7, 7]]) == (11, 2)
    got = aiozarr.open_array(make_store(), mode="r")[...]
    np.testing.assert_array_equal(got[:4], np.arange(8).reshape(4, 2))
    np.testing.assert_array_equal(got[4:10], -1)
    np.testing.assert_array_equal(got[10], [7, 7])


@pytest.mark.parametrize("make_store", ["local", "s3"], indirect=True)
def test_an_append_after_a_shrink_lands_at_the_new_end(make_store: StoreFactory) -> None:
    _create(make_store(), rows=8)
    appender, resizer = _opened(make_store), _opened(make_store)
    appender[...] = 5
    resizer.resize((2, 2))
    assert appender.append([[7, 7]]) == (3, 2)
    got = aiozarr.open_array(make_store(), mode="r")[...]
    np.testing.assert_array_equal(got, [[5, 5], [5, 5], [7, 7]])


@pytest.mark.parametrize("make_store", ["local", "s3"], indirect=True)
def test_a_resize_after_an_append_keeps_the_append_inside(make_store: StoreFactory) -> None:
    """A resize is applied to the shape as stored: growing the array it opened at 4 rows
    to 10 keeps the row another writer appended meanwhile."""
    _create(make_store(), rows=4)
    appender, resizer = _opened(make_store), _opened(make_store)
    appender.append([[7, 7]])
    resizer.resize((10, 2))
    got = aiozarr.open_array(make_store(), mode="r")[...]
    assert got.shape == (10, 2)
    np.testing.assert_array_equal(got[4], [7, 7])


@pytest.mark.parametrize("make_store", ["local", "s3"], indirect=True)
def test_a_resize_racing_appends_loses_no_committed_row(make_store: StoreFactory) -> None:
    """Appends run while another writer grows the array: each append's row is where the
    shape it committed put it, and the grow is kept (the final shape is past it)."""
    _create(make_store())
    stores = [make_store(own_locks=True) for _ in range(2)]
    target = 100

    async def main() -> list[tuple[int, ...]]:
        appender = await aiozarr.open_array_async(stores[0], mode="r+")
        resizer = await aiozarr.open_array_async(stores[1], mode="r+")
        shapes: list[tuple[int, ...]] = []
        under_way = asyncio.Event()

        async def append_all() -> None:
            for r in range(ROUNDS):
                shapes.append(await appender.append(np.array([[1, r]], dtype="i4")))
                under_way.set()

        async def grow() -> None:
            await under_way.wait()
            await resizer.resize((target, 2))

        await asyncio.gather(append_all(), grow())
        return shapes

    shapes = asyncio.run(main())
    got = aiozarr.open_array(make_store(), mode="r")[...]
    after = sum(shape[0] > target for shape in shapes)  # appends committed after the grow
    assert got.shape == (target + after, 2)
    for r, shape in enumerate(shapes):
        np.testing.assert_array_equal(got[shape[0] - 1], [1, r])


@pytest.mark.parametrize("make_store", ["memory", "local"], indirect=True)
def test_an_append_that_no_longer_fits_is_a_conflict(make_store: StoreFactory) -> None:
    """Another writer changed the other dimension: re-applying the append means nothing,
    so it is refused, and nothing is written."""
    _create(make_store(), rows=2)
    appender, resizer = _opened(make_store), _opened(make_store)
    resizer.resize((2, 3))
    with pytest.raises(VersionConflictError, match=r"zarr\.json.*another writer changed it"):
        appender.append([[7, 7]])
    assert aiozarr.open_array(make_store(), mode="r").shape == (2, 3)


class _Interleaving(WrapperStore):
    """Before its first conditional write of a metadata document, lets another writer
    change that document: the write is then sure to meet another version."""

    def __init__(self, inner: Store, other: aiozarr.Array) -> None:
        super().__init__(inner)
        self.other: aiozarr.Array | None = other
        self.conditional_writes = 0

    async def set_if(
        self, key: str, value: Buffer, expected: Version | None, *, claim: bool = False
    ) -> None:
        if key.endswith("zarr.json"):
            self.conditional_writes += 1
            if self.other is not None:
                other, self.other = self.other, None
                await other.async_array.update_attributes({"other": True})
        await super().set_if(key, value, expected, claim=claim)


@pytest.mark.parametrize("make_store", ["memory", "local", "s3"], indirect=True)
def test_a_conflict_is_read_again_and_reapplied(make_store: StoreFactory) -> None:
    _create(make_store())
    store = _Interleaving(make_store(own_locks=True), _opened(make_store))
    arr = aiozarr.open_array(store, mode="r+")
    assert arr.update_attributes({"mine": True}) == {"other": True, "mine": True}
    assert store.conditional_writes == 2  # the first met the other's version
    attrs = aiozarr.open_array(make_store(), mode="r").attrs.asdict()
    assert attrs == {"other": True, "mine": True}


@pytest.mark.parametrize("make_store", ["memory"], indirect=True)
def test_tries_are_bounded(make_store: StoreFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(node_updates, "MAX_ATTEMPTS", 1)
    _create(make_store())
    store = _Interleaving(make_store(own_locks=True), _opened(make_store))
    arr = aiozarr.open_array(store, mode="r+")
    with pytest.raises(VersionConflictError, match=r"'zarr\.json'.*after 1 tries"):
        arr.update_attributes({"mine": True})
    assert aiozarr.open_array(make_store(), mode="r").attrs.asdict() == {"other": True}


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_a_member_opened_from_consolidated_metadata_writes_what_is_stored(
    tmp_path: Path, zarr_format: int
) -> None:
    """The consolidated snapshot is never written back over the member's own document."""
    root = aiozarr.create_group(tmp_path, zarr_format=zarr_format)  # type: ignore[arg-type]
    root.create_array("x", shape=(2,), dtype="i4", chunks=(2,))
    aiozarr.consolidate_metadata(tmp_path)
    member = aiozarr.open_group(tmp_path, mode="r+")["x"]  # from the snapshot
    aiozarr.open_array(tmp_path, path="x", mode="r+").append([5])
    member.update_attributes({"units": "m"})
    stored = aiozarr.open_array(tmp_path, path="x", mode="r")
    assert stored.shape == (3,)
    assert stored.attrs.asdict() == {"units": "m"}


@pytest.mark.parametrize("make_store", ["local", "s3"], indirect=True)
def test_emptied_v2_attributes_are_removed_on_their_version(make_store: StoreFactory) -> None:
    """A v2 `.zattrs` left empty is deleted on its version (local disk) or written as `{}`
    on it (S3 has no conditional delete): either way both writers' changes land."""
    _create(make_store(), zarr_format=2)
    w1, w2 = _opened(make_store), _opened(make_store)
    w1.update_attributes({"a": 1})
    w2.delete_attributes(["a"])
    assert aiozarr.open_array(make_store(), mode="r").attrs.asdict() == {}
    w1.update_attributes({"b": 2})
    assert aiozarr.open_array(make_store(), mode="r").attrs.asdict() == {"b": 2}


@pytest.mark.parametrize("make_store", ["local"], indirect=True)
def test_an_implicit_group_gets_its_document(make_store: StoreFactory) -> None:
    aiozarr.create_array(make_store(), "a/x", shape=(2,), dtype="i4", chunks=(2,))
    store = make_store()
    assert isinstance(store, LocalStore)
    (store.root / "a" / "zarr.json").unlink()  # `a` is now an implicit group
    with config.set(implicit_groups=True):  # which Zarr v3 has not: opened on request
        group = aiozarr.open_group(make_store(), "a", mode="r+")
    assert group.update_attributes({"title": "t"}) == {"title": "t"}
    assert aiozarr.open_group(make_store(), "a", mode="r").attrs.asdict() == {"title": "t"}


@pytest.mark.parametrize("rule", ["drop_conditions", "drop_etags"])
def test_a_metadata_change_where_conditions_are_dropped_raises_and_writes_nothing(
    emulator: Emulator, rule: str
) -> None:
    """Behind a proxy that drops conditions or ETags, a metadata change refuses as a
    partial chunk write does; `single_writer` writes it without a condition."""
    prefix = unique_prefix()
    options = emulator.storage_options()

    def store(endpoint: str) -> ObjectStore:
        return ObjectStore(
            S3Store(emulator.bucket, prefix=prefix, **{**options, "endpoint": endpoint})
        )

    _create(store(emulator.endpoint), rows=2)
    with Proxy(emulator.endpoint, **{rule: True}).running() as proxy:
        arr = aiozarr.open_array(store(proxy.endpoint), mode="r+")
        with pytest.raises(ConditionalWriteUnsupportedError, match=r"'zarr\.json'.*single_writer"):
            arr.append([[1, 1]])
        with pytest.raises(ConditionalWriteUnsupportedError, match=r"'zarr\.json'"):
            arr.update_attributes({"a": 1})
        direct = aiozarr.open_array(store(emulator.endpoint), mode="r")
        assert (direct.shape, direct.attrs.asdict()) == ((2, 2), {})
        with config.set(single_writer=True):
            arr.update_attributes({"a": 1})
    assert aiozarr.open_array(store(emulator.endpoint), mode="r").attrs.asdict() == {"a": 1}


class _GroupInterleaving(BeforeWrites):
    """Before its first write of the root group's `zarr.json`, lets another writer add
    an attribute to that group."""

    def __init__(self, inner: Store, other: Store) -> None:
        super().__init__(inner)
        self.other: Store | None = other

    async def before(self, key: str) -> None:
        if key == "zarr.json" and self.other is not None:
            other, self.other = self.other, None
            group = await aiozarr.open_group_async(other, mode="r+")
            await group.update_attributes({"other": True})


@pytest.mark.parametrize("make_store", ["local", "s3"], indirect=True)
def test_consolidating_keeps_attributes_stored_meanwhile(make_store: StoreFactory) -> None:
    """A v3 snapshot goes in the group's own document: written on its version, so an
    attribute another writer stored after the group was read stays."""
    root = aiozarr.create_group(make_store(), zarr_format=3, attributes={"first": 1})
    root.create_array("x", shape=(2,), dtype="i4", chunks=(2,))
    store = _GroupInterleaving(make_store(own_locks=True), make_store(own_locks=True))
    aiozarr.consolidate_metadata(store)
    assert store.other is None  # the other writer ran between the read and the write
    group = aiozarr.open_group(make_store(), mode="r")
    assert group.attrs.asdict() == {"first": 1, "other": True}
    assert group.metadata.consolidated is not None
