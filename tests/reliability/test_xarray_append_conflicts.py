"""xarray writers that share no lock (other store objects, other processes) lose no
update: two `to_zarr(append_dim=...)` appenders both land, every variable's rows (the
coordinate's included) at one offset; two `to_zarr(mode="a")` writers' group attributes
both land.

Each writer reads the group before the other writes, as two processes would: its copy
of the metadata is stale by the time it writes (`xarray/appends.py`).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.reliability.interleaving import BeforeWrites
from tests.reliability.locations import StoreFactory
from tests.reliability.spawned import run_writers

import aiozarr
from aiozarr import config
from aiozarr.emulator import Emulator
from aiozarr.errors import StoreError, VersionConflictError
from aiozarr.nodes import hierarchy
from aiozarr.storage.backends.local import LocalStore
from aiozarr.storage.opening.url import from_url
from aiozarr.storage.protocol import Store

xr = pytest.importorskip("xarray")

from aiozarr.xarray import to_zarr, to_zarr_async  # noqa: E402
from aiozarr.xarray import writer as writer_module  # noqa: E402

pytestmark = pytest.mark.timeout(180)

LAT = 3
ROUNDS = 4


def _rows(times: list[int]) -> xr.Dataset:
    """Rows at `times`: `x` and `y` are functions of the time, so a row whose values do
    not match its coordinate was written at another appender's offset."""
    t = np.array(times, dtype="i8")
    return xr.Dataset(
        {
            "x": (("time",), t * 10),
            "y": (("time", "lat"), t[:, None] * 100 + np.arange(LAT)),
            "label": (("lat",), np.array([7, 8, 9], dtype="i4")),
        },
        coords={"time": t, "lat": np.arange(LAT, dtype="i4")},
    )


def _check_rows(store: Store, expected: set[int]) -> None:
    """Every time written is there once, with its own values in every variable."""
    ds = xr.open_dataset(store, engine="aiozarr", consolidated=False).load()
    times = ds["time"].values.tolist()
    assert sorted(times) == sorted(expected), times
    np.testing.assert_array_equal(ds["x"].values, ds["time"].values * 10)
    want_y = ds["time"].values[:, None] * 100 + np.arange(LAT)
    np.testing.assert_array_equal(ds["y"].values, want_y)
    np.testing.assert_array_equal(ds["label"].values, [7, 8, 9])


async def _both_read_first(monkeypatch: pytest.MonkeyPatch, writers: int) -> None:
    """Make every `to_zarr` wait, once it has read the group, until `writers` have: each
    then writes from a copy of the metadata read before the others wrote."""
    read = writer_module._read_existing
    arrived, everyone = 0, asyncio.Event()

    async def read_then_wait(*args: Any, **kwargs: Any) -> Any:
        nonlocal arrived
        got = await read(*args, **kwargs)
        arrived += 1
        if arrived == writers:
            everyone.set()
        await everyone.wait()
        return got

    monkeypatch.setattr(writer_module, "_read_existing", read_then_wait)


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("make_store", ["local", "s3"], indirect=True)
def test_two_xarray_appenders_both_land(
    make_store: StoreFactory, zarr_format: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    to_zarr(_rows([0, 1, 2]), make_store(), zarr_format=zarr_format)
    stores = [make_store(own_locks=True) for _ in range(2)]

    async def main() -> None:
        await _both_read_first(monkeypatch, 2)
        await asyncio.gather(
            to_zarr_async(_rows([100, 101]), stores[0], append_dim="time"),
            to_zarr_async(_rows([200, 201]), stores[1], append_dim="time"),
        )

    asyncio.run(main())
    _check_rows(make_store(), {0, 1, 2, 100, 101, 200, 201})


@pytest.mark.parametrize("make_store", ["memory", "local", "s3"], indirect=True)
def test_concurrent_xarray_appenders_lose_no_row(make_store: StoreFactory) -> None:
    """Three appenders, each round a new write of one row, all at once."""
    to_zarr(_rows([0]), make_store())
    stores = [make_store(own_locks=True) for _ in range(3)]

    async def appender(store: Store, writer: int) -> None:
        for r in range(ROUNDS):
            await to_zarr_async(_rows([1000 * (writer + 1) + r]), store, append_dim="time")

    async def main() -> None:
        await asyncio.gather(*(appender(s, w) for w, s in enumerate(stores)))

    asyncio.run(main())
    expected = {0} | {1000 * (w + 1) + r for w in range(3) for r in range(ROUNDS)}
    _check_rows(make_store(), expected)


def _process_appender(
    kind: str, where: str, options: dict[str, Any], writer: int, start: Any
) -> None:
    store = LocalStore(where) if kind == "local" else from_url(where, storage_options=options)
    start.wait(60)  # both processes are ready, then append at once
    for r in range(ROUNDS):
        to_zarr(_rows([1000 * (writer + 1) + r]), store, append_dim="time")
    os._exit(0)  # obstore's runtime may abort at interpreter exit (see test_conditional_writes)


@pytest.mark.parametrize("kind", ["local", "s3"])
def test_two_processes_appending_with_xarray_lose_no_row(
    kind: str, tmp_path: Path, emulator: Emulator
) -> None:
    if kind == "local":
        where, options = str(tmp_path / "a.zarr"), {}
        store: Store = LocalStore(where)
    else:
        where, options = emulator.s3_url("two-xarray-appenders.zarr"), emulator.storage_options()
        store = from_url(where, storage_options=options)
    to_zarr(_rows([0]), store)
    run_writers(_process_appender, 2, kind, where, options)
    expected = {0} | {1000 * (w + 1) + r for w in range(2) for r in range(ROUNDS)}
    _check_rows(store, expected)


@pytest.mark.parametrize("make_store", ["local"], indirect=True)
def test_a_variable_grown_out_of_step_is_a_conflict(make_store: StoreFactory) -> None:
    """Another writer grew `x` alone: this append's rows of `x` would go at another
    offset than its time's, so it raises, and writes no row of `x` there."""
    to_zarr(_rows([0, 1]), make_store())
    aiozarr.open_array(make_store(), path="x", mode="r+").append([-1])
    with pytest.raises(VersionConflictError, match=r"variable 'x' has 3 rows.*offset 2"):
        to_zarr(_rows([5]), make_store(own_locks=True), append_dim="time")
    stored = aiozarr.open_array(make_store(), path="x", mode="r")
    assert stored[...].tolist() == [0, 10, -1]  # its own row was not written over the other's


@pytest.mark.parametrize("make_store", ["local"], indirect=True)
def test_a_variable_left_behind_is_waited_for_then_a_conflict(make_store: StoreFactory) -> None:
    """An appender that grew the time coordinate and failed before `x`: the next one
    waits for `x` to reach its offset, then gives up, naming it."""
    to_zarr(_rows([0, 1]), make_store())
    aiozarr.open_array(make_store(), path="time", mode="r+").append([9])
    with (
        config.set(retry_deadline_s=0.2),
        pytest.raises(VersionConflictError, match=r"variable '[xy]' still has 2 rows.*offset 3"),
    ):
        to_zarr(_rows([5]), make_store(own_locks=True), append_dim="time")
    assert aiozarr.open_array(make_store(), path="x", mode="r").shape == (2,)


def test_a_failed_append_takes_every_variables_growth_back(emulator: Emulator) -> None:
    """The store refuses the growth of `y` after `time` and `x` have grown: the append
    fails, and takes those growths back. Left grown, the group had `time` and `x` of 3
    rows and `y` of 2, which xarray refuses to open, and the append run again waited for
    `y`, failed, and grew `time` and `x` once more."""
    url, options = emulator.s3_url("undone.zarr"), emulator.storage_options()
    to_zarr(_rows([0, 1]), url, storage_options=options)
    emulator.inject("status", status=503, key_glob="undone.zarr/y/zarr.json", methods=["PUT"])
    with config.set(retry_attempts=1, retry_deadline_s=0.2), pytest.raises(StoreError):
        to_zarr(_rows([5]), url, append_dim="time", storage_options=options)
    emulator.clear_faults()
    store = from_url(url, storage_options=options)
    for name in ("time", "x", "y"):
        assert aiozarr.open_array(store, path=name, mode="r").shape[0] == 2, name
    _check_rows(store, {0, 1})
    to_zarr(_rows([5]), url, append_dim="time", storage_options=options)  # run again
    _check_rows(from_url(url, storage_options=options), {0, 1, 5})


class _AnotherAppendFirst(BeforeWrites):
    """Before its first write of the group's consolidated snapshot (read before), lets
    another appender append and consolidate: the snapshot then misses its rows."""

    def __init__(self, inner: Store, other: Callable[[], Awaitable[Any]]) -> None:
        super().__init__(inner)
        self.other: Callable[[], Awaitable[Any]] | None = other

    async def before(self, key: str) -> None:
        if key in ("zarr.json", ".zmetadata") and self.other is not None:
            other, self.other = self.other, None
            await other()


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("make_store", ["local", "s3"], indirect=True)
def test_a_snapshot_that_misses_another_append_is_written_again(
    make_store: StoreFactory, zarr_format: int
) -> None:
    to_zarr(_rows([0]), make_store(), zarr_format=zarr_format)
    other = make_store(own_locks=True)
    store = _AnotherAppendFirst(
        make_store(own_locks=True),
        lambda: to_zarr_async(_rows([200]), other, append_dim="time"),
    )
    to_zarr(_rows([100]), store, append_dim="time")
    assert store.other is None  # the other appender ran in between
    ds = xr.open_dataset(make_store(), engine="aiozarr", consolidated=True)
    assert sorted(ds["time"].values.tolist()) == [0, 100, 200]


def _attributes_writer(attrs: dict[str, Any], consolidated: bool) -> Callable[[Store], Any]:
    ds = xr.Dataset(attrs=attrs)
    return lambda store: to_zarr_async(ds, store, mode="a", consolidated=consolidated)


@pytest.mark.parametrize("consolidated", [False, True])
@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("make_store", ["local", "s3"], indirect=True)
def test_two_xarray_attribute_writers_both_land(
    make_store: StoreFactory,
    zarr_format: int,
    consolidated: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    to_zarr(_rows([0]).assign_attrs(first=0), make_store(), zarr_format=zarr_format)
    stores = [make_store(own_locks=True) for _ in range(2)]

    async def main() -> None:
        await _both_read_first(monkeypatch, 2)
        await asyncio.gather(
            _attributes_writer({"a": 1}, consolidated)(stores[0]),
            _attributes_writer({"b": 2}, consolidated)(stores[1]),
        )

    asyncio.run(main())
    stored = asyncio.run(hierarchy.read_node(make_store(), "", use_consolidated=False))
    assert stored.attributes == {"first": 0, "a": 1, "b": 2}
    ds = xr.open_dataset(make_store(), engine="aiozarr", consolidated=consolidated)
    assert ds.attrs == {"first": 0, "a": 1, "b": 2}  # with consolidated: the snapshot's
    if zarr_format == 3:  # a snapshot of both writes, or (not consolidated) none
        group = asyncio.run(hierarchy.read_node(make_store(), ""))
        assert (group.consolidated is not None) == consolidated
