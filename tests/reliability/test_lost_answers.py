"""A conditional write that landed but whose answer was lost (the connection dropped
after the server wrote it) is retried; the retry's refusal (412: the value is no longer
the version the write expected, or it exists) is then the write's own doing, not
another writer's. Taken as a conflict, an append grew the array twice (its update
applied again to the document it had written) and a create said another writer had
created the node."""

from __future__ import annotations

import asyncio
import socket

import numpy as np
import pytest

import aiozarr
from aiozarr import config
from aiozarr.emulator import Emulator
from aiozarr.errors import StoreError, VersionConflictError, WriteOutcomeUnknownError
from aiozarr.storage.opening.url import from_url

pytestmark = pytest.mark.timeout(60)


async def _append_held_against_another(
    emulator: Emulator, name: str, first_try: str
) -> tuple[asyncio.Future[tuple[int, ...]], aiozarr.AsyncArray]:
    """An array of rows [0 1 2 3] at `name` and its append of [10 11], started: the
    growth's first PUT meets the fault `first_try` ("lost": it lands, unseen; "reset":
    it does not land) and its retry is held back 3 s. Returns the append, and the array
    opened as another process opens it (its own connections and locks) meanwhile."""
    url, options = emulator.s3_url(name), emulator.storage_options()
    other = {**options, "client_options": {**options.get("client_options", {}), "timeout": "31s"}}
    mine = await aiozarr.create_array_async(
        url, shape=(4,), dtype="i4", chunks=(2,), fill_value=-1, storage_options=options
    )
    await mine.setitem(..., np.arange(4, dtype="i4"))
    document = {"key_glob": f"{name}/zarr.json", "methods": ["PUT"], "count": 1}
    emulator.inject(first_try, **document)
    emulator.inject("late", **document, delay_s=3)
    appending = asyncio.ensure_future(mine.append(np.array([10, 11], dtype="i4")))
    while emulator.faults():  # the first PUT met its fault; the retry is held
        await asyncio.sleep(0.01)
    theirs = await aiozarr.open_array_async(url, mode="r+", storage_options=other)
    assert theirs.store.runtime is not mine.store.runtime  # as another process's
    return appending, theirs


@pytest.mark.parametrize("single_writer", [True, False])
@pytest.mark.parametrize("zarr_format", [2, 3])
async def test_an_append_whose_answer_was_lost_grows_the_array_once(
    emulator: Emulator, zarr_format: int, single_writer: bool
) -> None:
    """The retry finds the document holding what the lost try sent. With `single_writer`
    that is the append's own growth, and its rows go there. Otherwise it may be another
    append's, grown from the same shape by as much: the append says it cannot tell and
    writes no rows, and the growth stays as fill values."""
    name = f"a{zarr_format}-{single_writer}.zarr"
    document = "zarr.json" if zarr_format == 3 else ".zarray"
    url, options = emulator.s3_url(name), emulator.storage_options()
    fast = config.set(retry_base_delay_s=0.001, retry_max_delay_s=0.01, single_writer=single_writer)
    with fast:
        arr = await aiozarr.create_array_async(
            url,
            shape=(4,),
            dtype="i4",
            chunks=(4,),
            fill_value=-1,
            zarr_format=zarr_format,
            storage_options=options,
        )
        await arr.setitem(..., np.arange(4, dtype="i4"))
        emulator.inject("lost", count=1, key_glob=f"{name}/{document}", methods=["PUT"])
        appending = arr.append(np.array([10, 11, 12], dtype="i4"))
        if single_writer:
            await appending
        else:
            with pytest.raises(WriteOutcomeUnknownError, match="by this call"):
                await appending
    assert not emulator.faults()  # the answer was lost
    again = await aiozarr.open_array_async(url, mode="r", storage_options=options)
    rows = [10, 11, 12] if single_writer else [-1, -1, -1]
    assert (await again.getitem(...)).tolist() == [0, 1, 2, 3, *rows]


async def test_two_appends_growing_one_shape_never_take_the_same_rows(
    emulator: Emulator,
) -> None:
    """Append B's growth PUT is reset before the server carries it out; its retry is
    held back while another process appends as many rows from the same shape, storing
    byte for byte the document B sends. B's retry is refused (412) and finds its own
    bytes there. Taken as its own write, both appends returned (6,) and B's rows
    overwrote the other's; B now says it cannot tell, and writes nothing."""
    with config.set(retry_base_delay_s=0.001, retry_max_delay_s=0.01):
        appending, theirs = await _append_held_against_another(emulator, "two.zarr", "reset")
        assert theirs.shape == (4,)  # the reset PUT did not land
        assert await theirs.append(np.array([20, 21], dtype="i4")) == (6,)
        with pytest.raises(WriteOutcomeUnknownError, match="by this call"):
            await appending
    stored = await aiozarr.open_array_async(
        emulator.s3_url("two.zarr"), mode="r", storage_options=emulator.storage_options()
    )
    assert (await stored.getitem(...)).tolist() == [0, 1, 2, 3, 20, 21]


async def test_a_create_whose_answer_was_lost_creates_the_array(emulator: Emulator) -> None:
    url, options = emulator.s3_url("c.zarr"), emulator.storage_options()
    emulator.inject("lost", count=1, key_glob="c.zarr/zarr.json", methods=["PUT"])
    with config.set(retry_base_delay_s=0.001, retry_max_delay_s=0.01):
        arr = await aiozarr.create_array_async(
            url, shape=(4,), dtype="i4", chunks=(2,), storage_options=options
        )
    assert not emulator.faults()
    assert (await aiozarr.open_array_async(url, mode="r", storage_options=options)).shape == (4,)
    assert arr.shape == (4,)


async def test_a_lost_append_another_writer_appended_after_is_not_applied_twice(
    emulator: Emulator,
) -> None:
    """The append's metadata PUT lands, its answer is lost, and another process appends
    before the retry (held back here by a late answer): the retry's 412 finds another
    writer's document, so whether its own landed cannot be told. Applied again it grew
    the array twice ([0 1 2 3 -1 -1 20 21 10 11]); it now fails, naming that."""
    with config.set(retry_base_delay_s=0.001, retry_max_delay_s=0.01):
        appending, theirs = await _append_held_against_another(emulator, "aba.zarr", "lost")
        assert theirs.shape == (6,)  # the append's document landed
        await theirs.append(np.array([20, 21], dtype="i4"))
        with pytest.raises(WriteOutcomeUnknownError, match="may or may not have been made"):
            await appending
    stored = await aiozarr.open_array_async(
        emulator.s3_url("aba.zarr"), mode="r", storage_options=emulator.storage_options()
    )
    assert (await stored.getitem(...)).tolist() == [0, 1, 2, 3, -1, -1, 20, 21]


async def test_a_write_whose_every_answer_was_lost_says_it_may_have_landed(
    emulator: Emulator,
) -> None:
    url, options = emulator.s3_url("w.zarr"), emulator.storage_options()
    arr = await aiozarr.create_array_async(
        url, shape=(4,), dtype="i4", chunks=(4,), storage_options=options
    )
    emulator.inject("lost", count=100, key_glob="w.zarr/c/0", methods=["PUT"])
    fast = config.set(retry_attempts=3, retry_base_delay_s=0.001, retry_max_delay_s=0.01)
    with fast, pytest.raises(StoreError, match=r"write failed .*its new one where an answer"):
        await arr.setitem(..., np.full(4, 5, dtype="i4"))
    emulator.clear_faults()
    assert (await arr.getitem(...)).tolist() == [5, 5, 5, 5]  # it had landed


async def test_an_append_whose_tries_ran_out_after_a_lost_answer_says_it_cannot_tell(
    emulator: Emulator,
) -> None:
    """The growth's first PUT is refused (503), its last lands with its answer lost,
    and the tries run out. The array is grown (its new rows fill values): a plain
    `StoreError` ("cannot write") read as "nothing happened", and the append run again
    put its rows after a band of fill values. It says it cannot tell, as when a retry
    finds its bytes."""
    url, options = emulator.s3_url("ran-out.zarr"), emulator.storage_options()
    fast = config.set(retry_attempts=2, retry_base_delay_s=0.001, retry_max_delay_s=0.01)
    with fast:
        arr = await aiozarr.create_array_async(
            url, shape=(4,), dtype="i4", chunks=(4,), fill_value=-1, storage_options=options
        )
        await arr.setitem(..., np.arange(4, dtype="i4"))
        document = {"key_glob": "ran-out.zarr/zarr.json", "methods": ["PUT"], "count": 1}
        emulator.inject("status", status=503, **document)
        emulator.inject("lost", **document)
        with pytest.raises(WriteOutcomeUnknownError, match="may or may not have been made"):
            await arr.append(np.array([10, 11], dtype="i4"))
    emulator.clear_faults()
    again = await aiozarr.open_array_async(url, mode="r", storage_options=options)
    assert (await again.getitem(...)).tolist() == [0, 1, 2, 3, -1, -1]


async def test_a_growth_the_server_refused_is_a_store_error_not_an_unknown_outcome(
    emulator: Emulator,
) -> None:
    """A 403 is an answer: the PUT was not carried out, so the append fails plainly
    (`StoreError`, naming the refusal), not as a write that may have been made."""
    url, options = emulator.s3_url("denied.zarr"), emulator.storage_options()
    arr = await aiozarr.create_array_async(
        url, shape=(4,), dtype="i4", chunks=(4,), fill_value=-1, storage_options=options
    )
    emulator.inject("status", status=403, key_glob="denied.zarr/zarr.json", methods=["PUT"])
    with pytest.raises(StoreError, match="403 Forbidden") as raised:
        await arr.append(np.array([10, 11], dtype="i4"))
    assert not isinstance(raised.value, WriteOutcomeUnknownError)
    emulator.clear_faults()
    again = await aiozarr.open_array_async(url, mode="r", storage_options=options)
    assert again.shape == (4,)


async def test_a_growth_no_server_took_is_a_store_error_not_an_unknown_outcome() -> None:
    """Nothing listens at the endpoint: no try can have landed, so the append's growth
    fails plainly (`StoreError`), not as a write that may have been made."""
    with socket.socket() as sock:  # a port nothing listens on once closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    options = {"endpoint_url": f"http://127.0.0.1:{port}", "skip_signature": True}
    store = from_url("s3://bucket/gone.zarr", storage_options={**options, "region": "us-east-1"})
    fast = config.set(retry_attempts=2, retry_base_delay_s=0.001, retry_max_delay_s=0.01)
    with fast, pytest.raises(StoreError, match="connection refused") as raised:
        await store.set_if("zarr.json", b"{}", None, claim=True)
    assert not isinstance(raised.value, WriteOutcomeUnknownError)


@pytest.mark.parametrize("kind", ["lost", "truncate"])
async def test_a_chunk_whose_multipart_completion_answer_was_lost_is_written(
    emulator: Emulator, kind: str
) -> None:
    """The completion of a multipart upload landed, its answer lost: obstore aborts the
    upload, finds it gone (404 NoSuchUpload) and raises that; the write, safe to repeat,
    is retried instead of failing a chunk that holds its new value."""
    url, options = emulator.s3_url(f"m-{kind}.zarr"), emulator.storage_options()
    data = np.random.default_rng(5).random((1024, 1024))  # one 8 MiB chunk: two parts
    with config.set(retry_base_delay_s=0.001, retry_max_delay_s=0.01):
        arr = await aiozarr.create_array_async(
            url,
            shape=data.shape,
            dtype="f8",
            chunks=data.shape,
            compressors=None,
            storage_options=options,
        )
        # Hold back a part's answer; meanwhile make the next POST (the completion; the
        # upload was created before its parts went up) lose or cut its answer.
        emulator.inject("late", count=1, methods=["PUT"], delay_s=2.0)
        writing = asyncio.create_task(arr.setitem(..., data))
        while emulator.stats()["faults"] < 1:
            await asyncio.sleep(0.01)
        emulator.inject(kind, count=1, methods=["POST"])
        await writing
    assert not emulator.faults()  # the completion's answer was lost or cut
    assert emulator.stats()["by_kind"]["complete_multipart"] >= 2  # uploaded again
    stored = await aiozarr.open_array_async(url, mode="r", storage_options=options)
    np.testing.assert_array_equal(await stored.getitem(...), data)


@pytest.mark.parametrize("status", [429, 503])
async def test_a_conditional_write_throttled_then_refused_is_a_conflict(
    emulator: Emulator, status: int
) -> None:
    """A try answered 429/503 was refused, not carried out: the next try's 412 is another
    writer's change, a `VersionConflictError` the caller merges again after, not a
    `WriteOutcomeUnknownError` (which ends a metadata update: under throttling, writers
    racing on one document failed where a merge would have landed)."""
    store = from_url(emulator.s3_url(f"t{status}"), storage_options=emulator.storage_options())
    await store.set("k", b"first")
    _, version = await store.get_versioned("k")
    await store.set("k", b"another writer's")
    emulator.inject("status", status=status, count=1, methods=["PUT"])
    fast = config.set(retry_base_delay_s=0.001, retry_max_delay_s=0.01)
    with fast, pytest.raises(VersionConflictError) as raised:
        await store.set_if("k", b"mine", version)
    assert not isinstance(raised.value, WriteOutcomeUnknownError)
    assert emulator.stats()["by_status"][str(status)] == 1  # refused, then tried again
    assert bytes(await store.get("k")) == b"another writer's"


async def test_a_v2_create_reset_while_another_creates_the_same_node_keeps_its_attributes(
    emulator: Emulator,
) -> None:
    """Create A's `.zgroup` PUT is reset before the server carries it out; its retry is
    held back while another process creates the group with the very same `.zgroup`
    (`{"zarr_format": 2}`: every v2 group's) and its attributes. A's retry is refused and
    finds its own bytes there. Taken as its own, A wrote its `.zattrs` over the other's
    (both creates returned); A now says it cannot tell, and writes nothing more."""
    name = "v2group.zarr"
    url, options = emulator.s3_url(name), emulator.storage_options()
    other = {**options, "client_options": {**options.get("client_options", {}), "timeout": "31s"}}
    document = {"key_glob": f"{name}/.zgroup", "methods": ["PUT"], "count": 1}
    emulator.inject("reset", **document)
    emulator.inject("late", **document, delay_s=3)
    with config.set(retry_base_delay_s=0.001, retry_max_delay_s=0.01):
        creating = asyncio.ensure_future(
            aiozarr.create_group_async(
                url, zarr_format=2, attributes={"by": "A"}, storage_options=options
            )
        )
        while emulator.faults():  # the first PUT was reset; the retry is held
            await asyncio.sleep(0.01)
        await aiozarr.create_group_async(
            url, zarr_format=2, attributes={"by": "B"}, storage_options=other
        )
        with pytest.raises(WriteOutcomeUnknownError, match=r"v2group\.zarr.*by this call"):
            await creating
    stored = await aiozarr.open_group_async(url, mode="r", storage_options=options)
    assert stored.attrs == {"by": "B"}


@pytest.mark.parametrize("single_writer", [True, False])
async def test_a_v2_create_whose_answer_was_lost_cannot_tell_unless_single_writer(
    emulator: Emulator, single_writer: bool
) -> None:
    """The retry finds the `.zarray` holding what the lost try sent: with `single_writer`
    the node is this create's, and its `.zattrs` follows; otherwise another create may
    have written those bytes, and its `.zattrs` must not be replaced."""
    name = f"lost-v2-{single_writer}.zarr"
    url, options = emulator.s3_url(name), emulator.storage_options()
    emulator.inject("lost", count=1, key_glob=f"{name}/.zarray", methods=["PUT"])
    fast = config.set(retry_base_delay_s=0.001, retry_max_delay_s=0.01, single_writer=single_writer)
    create = aiozarr.create_array_async(
        url, shape=(4,), dtype="i4", zarr_format=2, attributes={"a": 1}, storage_options=options
    )
    with fast:
        if single_writer:
            assert (await create).attrs == {"a": 1}
        else:
            with pytest.raises(WriteOutcomeUnknownError, match="by this call"):
                await create
    assert not emulator.faults()
    stored = await aiozarr.open_array_async(url, mode="r", storage_options=options)
    assert stored.attrs == ({"a": 1} if single_writer else {})
