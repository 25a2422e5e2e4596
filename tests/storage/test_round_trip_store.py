"""`RoundTripStore` counts a request sent on an answer one round trip deeper, however
soon the reader sends it: the depths read_many's tests hold do not depend on load."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from aiozarr.byte_range import ByteRange
from aiozarr.storage.protocol import Store, Versioned
from aiozarr.testing.round_trips import RoundTripStore


class _Chain:
    """Sends `left` more ranges one after another, each the moment the last one's
    answer arrives (as the engine sends inner chunks on a shard index's answer)."""

    def __init__(self, store: RoundTripStore, left: int) -> None:
        self.store, self.left = store, left
        self.finished = asyncio.get_running_loop().create_future()

    def began(self) -> None:
        pass

    def done(self, answer: Versioned | BaseException) -> None:
        assert isinstance(answer, tuple), answer
        self.left -= 1
        if self.left:
            self.send()
        else:
            self.finished.set_result(None)

    def send(self) -> None:
        sender = self.store.range_sender()
        assert sender is not None
        sender.send_range("blob", ByteRange.of(0, 4), self)


async def _blob_store(make: Callable[[], Store]) -> RoundTripStore:
    """A `RoundTripStore` over a new emulator store holding `blob`."""
    inner = make()
    await inner.set("blob", b"0123456789")
    return RoundTripStore(inner)


async def test_a_range_sent_on_an_answer_is_one_round_trip_deeper(
    emulator_s3_store: Callable[[], Store],
) -> None:
    store = await _blob_store(emulator_s3_store)
    chain = _Chain(store, 3)
    chain.send()
    await chain.finished
    assert store.counts["get"] == 3
    assert store.depth == 3


async def test_ranges_sent_together_share_a_round_trip(
    emulator_s3_store: Callable[[], Store],
) -> None:
    store = await _blob_store(emulator_s3_store)
    chains = [_Chain(store, 1) for _ in range(4)]
    for chain in chains:
        chain.send()
    await asyncio.gather(*(chain.finished for chain in chains))
    assert store.depth == 1
