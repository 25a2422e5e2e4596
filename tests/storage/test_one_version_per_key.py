"""`get_partial_values`: every answer of one key comes from one version of its value, also
where its ranges are read in separate requests and the value is replaced between them."""

from __future__ import annotations

import asyncio
from typing import Any

import obstore
import pytest
from obstore.store import S3Store
from tests.servers import unique_prefix

from aiozarr import config
from aiozarr.byte_range import ByteRange
from aiozarr.emulator import Emulator
from aiozarr.errors import StoreError
from aiozarr.storage.backends.object_store import ObjectStore
from aiozarr.storage.protocol import RangeRequest

SHORT = bytes(range(256)) * 4  # 1,024 bytes
LONG = bytes(reversed(range(256))) * 12  # 3,072 bytes


class RewritingStore(ObjectStore):
    """Writes `values` to the key, one before each range GET after the first, once the
    GET before it has its answer's headers: the ranges of one batch meet a value
    replaced between them, in this order."""

    def __init__(self, store: Any, values: list[bytes]) -> None:
        super().__init__(store)
        self.values = values
        self.sent = 0
        self.previous: Any = None

    def _get_future(self, key: str, options: Any) -> Any:
        self.sent += 1
        previous, get = self.previous, super()._get_future
        if previous is None or not self.values:
            future = get(key, options)
        else:
            value = self.values.pop(0)

            async def rewritten_then_sent() -> Any:
                await asyncio.wait([previous])
                await obstore.put_async(self.obstore, key, value)
                return await get(key, options)

            future = asyncio.ensure_future(rewritten_then_sent())
        self.previous = future
        return future


@pytest.fixture
def bucket(emulator: Emulator) -> S3Store:
    return S3Store(emulator.bucket, prefix=unique_prefix(), **emulator.storage_options())


def _model(value: bytes, byte_range: ByteRange) -> bytes:
    return value[byte_range.offset : byte_range.offset + (byte_range.length or 0)]


@pytest.mark.parametrize(
    ("first", "then", "asked"),
    [
        # two runs of one key (farther apart than the coalescing gap)
        (SHORT, LONG, [ByteRange.of(0, 100), ByteRange.of(900, 100)]),
        # the second range lies past the end of the value it meets: its empty answer
        # has a version too, and it is not that of the first
        (LONG, SHORT, [ByteRange.of(0, 100), ByteRange.of(2900, 100)]),
    ],
)
async def test_ranges_of_a_key_replaced_between_its_requests_are_read_again(
    bucket: S3Store, first: bytes, then: bytes, asked: list[ByteRange]
) -> None:
    store = RewritingStore(bucket, [then])
    await store.set("k", first)
    with config.set(coalesce_gap_bytes=0, hedge_reads=False):
        got = await store.get_partial_values([RangeRequest("k", r) for r in asked])
    assert [bytes(g) for g in got] == [_model(then, r) for r in asked]  # type: ignore[arg-type]
    assert store.sent == 4  # both ranges, then both again


async def test_a_key_replaced_at_every_read_fails_naming_it(bucket: S3Store) -> None:
    store = RewritingStore(bucket, [LONG, SHORT] * 5)
    await store.set("k", SHORT)
    asked = [RangeRequest("k", ByteRange.of(0, 10)), RangeRequest("k", ByteRange.of(900, 10))]
    with (
        config.set(coalesce_gap_bytes=0, hedge_reads=False),
        pytest.raises(StoreError, match=r"'k'.*replaced while its ranges were read, 5 times"),
    ):
        await store.get_partial_values(asked)


async def test_a_range_past_the_end_carries_the_version_it_was_past(bucket: S3Store) -> None:
    store = ObjectStore(bucket)
    await store.set("k", SHORT)
    (whole,) = await store.get_versioned_values([RangeRequest("k")])
    (past,) = await store.get_versioned_values([RangeRequest("k", ByteRange.of(2000, 10))])
    assert whole is not None and past is not None
    assert bytes(past[0]) == b"" and past[1] == whole[1]
