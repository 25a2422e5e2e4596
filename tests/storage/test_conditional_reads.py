"""`ConditionalReads`: every read of an object store under one condition (If-Match), a
source that changed answering 412, raised as `SourceChangedError` (icechunk's virtual
chunks). Against the emulator, which honours If-Match on GET."""

from __future__ import annotations

import asyncio

import pytest
from tests.servers import emulator_object_store

from aiozarr.byte_range import ByteRange
from aiozarr.emulator import Emulator
from aiozarr.errors import SourceChangedError
from aiozarr.storage.protocol import RangeRequest
from aiozarr.storage.references.conditional_reads import ConditionalReads

pytestmark = pytest.mark.timeout(60)

OLD = bytes(range(256)) * 4
NEW = bytes(reversed(range(256))) * 4
REQUESTS = [RangeRequest("k", ByteRange.of(0, 4)), RangeRequest("k", ByteRange.of(100, 4))]


async def test_a_conditional_read_never_shares_a_whole_read_made_without_it(
    emulator: Emulator,
) -> None:
    # Where the server ignores ranges, the reads of a key overlapping in time share one
    # whole GET; the conditional store shares its runtime with the plain one, and took
    # the plain GET's answer: the new version's bytes, its condition never sent.
    store = emulator_object_store(emulator)
    await store.set("k", OLD)
    _, version = await store.get_versioned("k")  # type: ignore[misc]
    await store.set("k", NEW)
    store.runtime.whole_reads.ignored = True  # found to ignore ranges: whole reads, shared
    emulator.inject("late", count=1, methods=["GET"], delay_s=1.0)
    plain = asyncio.ensure_future(store.get_partial_values(REQUESTS))
    while emulator.stats()["faults"] < 1:  # the plain whole GET is in flight
        await asyncio.sleep(0.01)
    conditional = ConditionalReads(store, etag=version[0])
    with pytest.raises(SourceChangedError, match="'k'"):
        await conditional.get_partial_values(REQUESTS)
    assert [bytes(a or b"") for a in await plain] == [NEW[0:4], NEW[100:104]]
