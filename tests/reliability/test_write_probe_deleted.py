"""A delete racing the conditional-write probe is no verdict on the server.

The probe (storage/protocol/write_conditions.py) writes its object under the array's
prefix, which another writer's `del group[name]` or `create_array(overwrite=True)`
removes. A probe whose object vanished says nothing about the server: it is repeated on
a fresh key, and never recorded as the server ignoring conditions (which would refuse
every partial write on the store for the rest of the process). The deletes are forced
at each step of the probe, in order, by a wrapper around the emulator's store.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio
import pytest

import aiozarr
from aiozarr.byte_range import ByteRange
from aiozarr.emulator import Emulator
from aiozarr.errors import ConditionalWriteUnsupportedError
from aiozarr.storage.backends.object_store import ObjectStore
from aiozarr.storage.protocol import Buffer, Version, Versioned
from aiozarr.storage.protocol.wrapper import WrapperStore
from aiozarr.storage.protocol.write_conditions import PROBE_NAME

pytestmark = pytest.mark.timeout(120)


class DeletedMidProbe(WrapperStore):
    """The store, but the probe's object is deleted (a real DELETE, as another writer's
    delete of the array's prefix would) just before the probe's step `before`:
    "get" (its GET), "if_match" (its first If-Match PUT) or "if_none_match"; `times`:
    how many probes this happens to (None: every one)."""

    def __init__(self, inner: ObjectStore, before: str, times: int | None = 1) -> None:
        super().__init__(inner)
        self.before, self.left = before, times
        self.deleted: list[str] = []

    async def _maybe_delete(self, key: str, step: str) -> None:
        if PROBE_NAME not in key or step != self.before or self.left == 0:
            return
        if step == "if_match" and key in self.deleted:
            return  # only the first If-Match PUT of a probe, the one that must succeed
        await self.inner.delete_prefix(key.rpartition("/")[0] + "/")  # `del group[name]`
        self.deleted.append(key)
        self.left = None if self.left is None else self.left - 1

    async def read(
        self, key: str, byte_range: ByteRange | None, max_bytes: int | None
    ) -> Versioned | None:
        if not self.deleted or self.deleted[-1] != key:  # the probe's first GET
            await self._maybe_delete(key, "get")
        return await super().read(key, byte_range, max_bytes)

    async def set_if(
        self, key: str, value: Buffer, expected: Version | None, *, claim: bool = False
    ) -> None:
        await self._maybe_delete(key, "if_none_match" if expected is None else "if_match")
        await super().set_if(key, value, expected, claim=claim)


def _group(store: WrapperStore) -> tuple[aiozarr.Array, aiozarr.Array]:
    group = aiozarr.open_group(store, mode="w")
    a = group.create_array("a", shape=(8,), chunks=(4,), dtype="i4")
    b = group.create_array("b", shape=(8,), chunks=(4,), dtype="i4")
    return a, b


@pytest.mark.parametrize("before", ["get", "if_match", "if_none_match"])
def test_a_probe_whose_object_is_deleted_is_repeated_not_recorded(
    emulator: Emulator, emulator_s3_store: Callable[..., ObjectStore], before: str
) -> None:
    store = DeletedMidProbe(emulator_s3_store(), before)
    a, b = _group(store)
    a[1:3] = 5  # partial: probed; the first probe's object is deleted under it
    assert len(store.deleted) == 1
    verdict = store.runtime.conditions
    assert verdict.probed and verdict.problem is None
    b[1:3] = 7  # and every later partial write of the store goes through
    assert b[...].tolist() == [0, 7, 7, 0, 0, 0, 0, 0]
    assert a[...].tolist() == [0, 5, 5, 0, 0, 0, 0, 0]


def test_a_prefix_deleted_under_every_probe_fails_the_write_but_records_nothing(
    emulator: Emulator, emulator_s3_store: Callable[..., ObjectStore]
) -> None:
    store = DeletedMidProbe(emulator_s3_store(), "get", times=None)
    a, b = _group(store)
    with pytest.raises(ConditionalWriteUnsupportedError, match=r"inconclusive.*deleted") as info:
        a[1:3] = 5
    assert "no ETag" not in str(info.value)  # says what happened, not a server fault
    assert len(store.deleted) == 3  # three probes, each on a fresh key
    assert len(set(store.deleted)) == 3
    assert not store.runtime.conditions.probed  # the verdict stays open
    store.left = 0  # the other writer is done: the next write probes again, and writes
    b[1:3] = 7
    assert store.runtime.conditions.problem is None
    assert b[...].tolist() == [0, 7, 7, 0, 0, 0, 0, 0]


class IgnoresIfNoneMatch(WrapperStore):
    """The store, but a PUT's `If-None-Match: *` never reaches the server (as behind a
    proxy that strips it): the PUT is unconditional."""

    async def set_if(
        self, key: str, value: Buffer, expected: Version | None, *, claim: bool = False
    ) -> None:
        if expected is None:
            await super().set(key, value)
        else:
            await super().set_if(key, value, expected, claim=claim)


def test_a_server_ignoring_if_none_match_is_recorded_once_two_probes_agree(
    emulator: Emulator, emulator_s3_store: Callable[..., ObjectStore]
) -> None:
    """A delete could explain one probe's If-None-Match going through; two fresh probes
    seeing it cannot be, so it is recorded, saying so."""
    store = IgnoresIfNoneMatch(emulator_s3_store())
    a, b = _group(store)
    with pytest.raises(ConditionalWriteUnsupportedError, match=r"ignores If-None-Match.*two"):
        a[1:3] = 5
    assert "If-None-Match" in (store.runtime.conditions.problem or "")
    with pytest.raises(ConditionalWriteUnsupportedError, match="ignores If-None-Match"):
        b[1:3] = 7  # the verdict is kept for the store


@pytest.mark.parametrize("step", ["set", "read"])
async def test_a_write_cancelled_during_the_probe_leaves_no_probe_object(
    emulator_s3_store: Callable[..., ObjectStore], step: str
) -> None:
    """Cancelled by an anyio scope (as the sync facade's Ctrl-C is) while it writes or
    reads its object, the probe still deletes it (the delete was cancelled again).

    Cancelled while it writes, its PUT may still reach the server, in flight beside the
    DELETE: a server may apply the two in either order, so what is checked there is
    that the DELETE was sent and answered."""
    scope = anyio.CancelScope()
    deleted: list[str] = []

    class CancelledMidProbe(WrapperStore):
        async def delete(self, key: str) -> None:
            await super().delete(key)
            deleted.append(key)

        async def set(self, key: str, value: Buffer) -> None:
            if PROBE_NAME in key and step == "set":
                scope.cancel()
            await super().set(key, value)

        async def read(
            self, key: str, byte_range: ByteRange | None, max_bytes: int | None
        ) -> Versioned | None:
            if PROBE_NAME in key and step == "read":
                scope.cancel()
            return await super().read(key, byte_range, max_bytes)

    inner = emulator_s3_store()
    arr = await aiozarr.create_array_async(
        CancelledMidProbe(inner), "a", shape=(8,), chunks=(4,), dtype="i4"
    )
    with scope:
        await arr.setitem(slice(1, 3), 5)  # partial: the store is probed first
    assert scope.cancelled_caught
    assert [key for key in deleted if PROBE_NAME in key]
    if step == "read":  # its PUT was answered before: nothing of it is left
        assert [key async for key in inner.list_prefix("") if PROBE_NAME in key] == []
