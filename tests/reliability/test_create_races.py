"""Creators racing for one path: exactly one wins, and no one's metadata is lost.

A node's claim (`zarr.json`; v2 `.zarray` / `.zgroup`) is written only if absent, so of
two creators that both found the path free, the second raises `NodeExistsError`
instead of writing its metadata over the first's (whose handle would then write chunks
in a layout no longer stored). Missing parent groups are written the same way: a
parent another writer created meanwhile keeps its attributes. `require_group` and
`require_array` that lose such a race open the node that won (`nodes/hierarchy.py`,
`nodes/group.py`).

The races are forced, never left to timing: the two creators' steps run in the racing
order (`prepare_node`, then `write_node`, on store objects sharing no lock, as two
processes' would), or the emulator holds one request back (`late`) until the other
writer, started once that request has reached it, is done.
"""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest
from tests.reliability.locations import StoreFactory

import aiozarr
from aiozarr.emulator import Emulator
from aiozarr.emulator.faults import Fault
from aiozarr.errors import NodeExistsError
from aiozarr.metadata.model import ArrayMetadata, GroupMetadata, Node
from aiozarr.nodes import hierarchy, placement
from aiozarr.nodes.creation import array_metadata

pytestmark = pytest.mark.timeout(120)


def _node(kind: str, zarr_format: int, by: str) -> Node:
    """A node of `kind` whose layout and attributes say which creator made it."""
    if kind == "group":
        return GroupMetadata(zarr_format=zarr_format, attributes={"by": by})  # type: ignore[arg-type]
    dtype = "f8" if by == "a" else "i2"
    return array_metadata(shape=(4,), dtype=dtype, zarr_format=zarr_format, attributes={"by": by})


@pytest.mark.parametrize("kind", ["array", "group"])
@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("make_store", ["memory", "local", "s3", "moto"], indirect=True)
async def test_of_two_creators_that_found_the_path_free_the_second_raises(
    make_store: StoreFactory, zarr_format: int, kind: str
) -> None:
    first, second = make_store(own_locks=True), make_store(own_locks=True)
    for store in (first, second):  # both look before either writes
        await placement.prepare_node(store, "x", zarr_format, overwrite=False)
    await hierarchy.write_node(first, "x", _node(kind, zarr_format, "a"))
    with pytest.raises(NodeExistsError, match="another writer"):
        await hierarchy.write_node(second, "x", _node(kind, zarr_format, "b"))
    stored = await hierarchy.read_node(make_store(), "x")
    assert stored.attributes == {"by": "a"}  # v2: the loser wrote no `.zattrs` either
    if kind == "array":
        assert isinstance(stored, ArrayMetadata) and stored.dtype == np.dtype("f8")


@pytest.mark.parametrize("make_store", ["memory", "local", "s3"], indirect=True)
async def test_concurrent_create_group_keeps_the_one_winners_attributes(
    make_store: StoreFactory,
) -> None:
    root = await aiozarr.open_group_async(make_store(), mode="w")
    made = await asyncio.gather(
        *(root.create_group("sub", attributes={"k": i}) for i in range(5)),
        return_exceptions=True,
    )
    won = [g for g in made if isinstance(g, aiozarr.AsyncGroup)]
    assert len(won) == 1, made
    assert all(isinstance(g, NodeExistsError | aiozarr.AsyncGroup) for g in made), made
    stored = await aiozarr.open_group_async(make_store(), path="sub", mode="r")
    assert stored.attrs == won[0].attrs


async def _reached(emulator: Emulator, fault: Fault) -> None:
    """Return once every request `fault` holds back has reached the emulator."""
    while any(f is fault for f in emulator.faults()):
        await asyncio.sleep(0.01)


def _key(s3: tuple[str, dict[str, Any]], path: str) -> str:
    """The bucket key of `path` below the `s3` location."""
    return f"{s3[0].split('/', 3)[3]}/{path}"


async def test_a_create_whose_write_lands_late_raises_and_the_winner_reads_back(
    emulator: Emulator, s3: tuple[str, dict[str, Any]]
) -> None:
    url, options = s3
    late = emulator.inject(
        "late", count=1, delay_s=1.5, methods=["PUT"], key_glob=_key(s3, "x/zarr.json")
    )

    async def create(dtype: str) -> aiozarr.AsyncArray:
        return await aiozarr.create_array_async(
            f"{url}/x", shape=(4,), chunks=(4,), dtype=dtype, storage_options=options
        )

    slow = asyncio.create_task(create("f8"))
    await _reached(emulator, late)  # its check is done, its write held
    winner = await create("i2")
    with pytest.raises(NodeExistsError):
        await slow
    await winner.setitem(slice(None), np.arange(4, dtype="i2"))
    stored = await aiozarr.open_array_async(f"{url}/x", storage_options=options)
    assert stored.dtype == np.dtype("i2")
    assert (await stored.getitem(...)).tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize("zarr_format", [2, 3])
async def test_a_parent_created_meanwhile_keeps_its_attributes(
    emulator: Emulator, s3: tuple[str, dict[str, Any]], zarr_format: int
) -> None:
    url, options = s3
    root = await aiozarr.open_group_async(
        url, mode="w", zarr_format=zarr_format, storage_options=options
    )
    document = "zarr.json" if zarr_format == 3 else ".zgroup"
    late = emulator.inject(
        "late", count=1, delay_s=1.5, methods=["PUT"], key_glob=_key(s3, f"x/{document}")
    )
    child = asyncio.create_task(root.create_array("x/b", shape=(4,), dtype="i4"))
    await _reached(emulator, late)  # it found x missing; its write of x is held
    await root.create_group("x", attributes={"title": "kept"})
    await child  # x is a group now: kept as it is
    x = await aiozarr.open_group_async(f"{url}/x", mode="r", storage_options=options)
    assert x.attrs == {"title": "kept"}
    assert await x.member_names() == ["b"]


async def test_a_parent_that_became_an_array_meanwhile_is_refused(
    emulator: Emulator, s3: tuple[str, dict[str, Any]]
) -> None:
    url, options = s3
    root = await aiozarr.open_group_async(url, mode="w", storage_options=options)
    late = emulator.inject(
        "late", count=1, delay_s=1.5, methods=["PUT"], key_glob=_key(s3, "x/zarr.json")
    )
    child = asyncio.create_task(root.create_array("x/b", shape=(4,), dtype="i4"))
    await _reached(emulator, late)
    await root.create_array("x", shape=(3,), dtype="f4")
    with pytest.raises(NodeExistsError, match="parent 'x' is an array"):
        await child
    x = await aiozarr.open_array_async(f"{url}/x", storage_options=options)
    assert x.shape == (3,)  # not written over by a group


def _hold_open_and_check(emulator: Emulator, s3: tuple[str, dict[str, Any]]) -> Fault:
    """Hold back the two reads of `results/zarr.json` a `require_*` makes: its look
    (answered missing) and its create's check (answered after the other writer)."""
    key = _key(s3, "results/zarr.json")
    return emulator.inject("late", count=2, delay_s=1.0, methods=["GET"], key_glob=key)


async def test_require_group_that_loses_the_race_opens_the_winners_group(
    emulator: Emulator, s3: tuple[str, dict[str, Any]]
) -> None:
    url, options = s3
    root = await aiozarr.open_group_async(url, mode="w", storage_options=options)
    held = _hold_open_and_check(emulator, s3)
    required = asyncio.create_task(root.require_group("results"))
    await _reached(emulator, held)
    await root.create_group("results", attributes={"by": "other"})
    group = await required
    assert group.attrs == {"by": "other"}


@pytest.mark.parametrize(("shape", "fits"), [((4,), True), ((5,), False)])
async def test_require_array_that_loses_the_race_checks_the_winners_array(
    emulator: Emulator, s3: tuple[str, dict[str, Any]], shape: tuple[int, ...], fits: bool
) -> None:
    url, options = s3
    root = await aiozarr.open_group_async(url, mode="w", storage_options=options)
    held = _hold_open_and_check(emulator, s3)
    required = asyncio.create_task(root.require_array("results", shape=(4,), dtype="i4"))
    await _reached(emulator, held)
    await root.create_array("results", shape=shape, dtype="i4", attributes={"by": "other"})
    if not fits:
        with pytest.raises(TypeError, match="incompatible shape"):
            await required
        return
    array = await required
    assert array.attrs == {"by": "other"} and array.shape == (4,)


@pytest.mark.parametrize("make_store", ["memory", "local"], indirect=True)
async def test_concurrent_require_calls_all_get_the_one_node(make_store: StoreFactory) -> None:
    root = await aiozarr.open_group_async(make_store(), mode="w")
    groups = await asyncio.gather(*(root.require_group("g") for _ in range(5)))
    arrays = await asyncio.gather(
        *(root.require_array("a", shape=(4,), dtype="i4") for _ in range(5))
    )
    assert all(isinstance(g, aiozarr.AsyncGroup) for g in groups)
    assert all(a.shape == (4,) and a.dtype == np.dtype("i4") for a in arrays)
