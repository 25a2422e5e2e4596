"""The first parts of a shard needed whole, read before its index says what they hold.

A shard's stored size is known only from its index, one round trip in. The store's
`RequestShape.parts_ahead` says how many parts to send beside the index; `PartsAhead`
reads them, drops those the index shows to lie past the shard's
data, and decodes each chunk as soon as every part holding its bytes has landed.
"""

from __future__ import annotations

import anyio

from aiozarr.byte_range import ByteRange
from aiozarr.engine.decoding import DecodeJob, Reads
from aiozarr.engine.located import LocatedChunk
from aiozarr.engine.located_index import StaleIndexError, check_version
from aiozarr.errors import CodecError
from aiozarr.storage.protocol import Buffer, Version


class PartsAhead:
    """The first `count` parts of one shard, read before its index says what they hold.

    Each part takes its bytes from the byte budget before it is asked for and gives them
    back once every chunk it holds is decoded (or it is dropped), so what the read holds
    stays within the budget and a part never waits on anything but its own chunks.
    """

    def __init__(self, reads: Reads, key: str, part: int, count: int) -> None:
        self.reads = reads
        self.key = key
        self.part = part
        self.count = count
        self.end = part * count
        self._scopes = [anyio.CancelScope() for _ in range(count)]
        self._taken: dict[int, int] = {}
        self._dropped: set[int] = set()
        self._send, self._landed = anyio.create_memory_object_stream[
            tuple[int, tuple[Buffer, Version | None] | None]
        ](max_buffer_size=count)

    async def fetch(self, i: int) -> None:
        store = self.reads.array.store
        with self._scopes[i]:
            taken = await store.runtime.bytes.acquire(self.part)
            if i in self._dropped:  # before its turn came: no checkpoint saw the cancel
                store.runtime.bytes.release(taken)
                return
            self._taken[i] = taken
            answer = await store.get_versioned(self.key, ByteRange.of(i * self.part, self.part))
            if i not in self._dropped:
                self._send.send_nowait((i, answer))

    def holds(self, chunk: LocatedChunk) -> bool:
        """Whether every byte of `chunk` lies in the parts ahead."""
        end = None if chunk.byte_range is None else chunk.byte_range.end
        return end is not None and end <= self.end

    def keep(self, held: list[LocatedChunk]) -> None:
        """Drop every part no chunk of `held` lies in (past the shard's data, or holding
        only chunks read apart), so its bytes are free for the rest of the read."""
        needed = {i for chunk in held for i in self._parts_of(chunk.byte_range)}  # type: ignore[arg-type]
        for i in range(self.count):
            if i not in needed:
                self.drop(i)

    def drop(self, i: int) -> None:
        """Stop part `i` (if still on its way) and give its bytes back."""
        self._dropped.add(i)
        self._scopes[i].cancel()
        taken = self._taken.pop(i, 0)
        if taken:
            self.reads.array.store.runtime.bytes.release(taken)

    def close(self) -> None:
        """Stop every part still on its way and give back the bytes of all."""
        for i in range(self.count):
            self.drop(i)
        self._send.close()
        self._landed.close()

    async def decode_as_parts_land(self, held: list[LocatedChunk]) -> None:
        """Decode each chunk of `held` (located by one index, within the parts `keep`
        kept) as soon as every part holding its bytes has landed."""
        located = held[0].index
        assert located is not None
        spans = [self._parts_of(chunk.byte_range) for chunk in held]  # type: ignore[arg-type]
        waiting: dict[int, list[int]] = {}  # part -> the chunks that still wait for it
        users = [0] * self.count  # part -> its chunks not yet decoded
        for c, span in enumerate(spans):
            for i in span:
                waiting.setdefault(i, []).append(c)
                users[i] += 1
        missing = [len(span) for span in spans]  # chunk -> its parts not yet landed
        landed: dict[int, memoryview] = {}

        async def decode(chunks: list[int]) -> None:
            await self.reads.decode([self._job(held[c], spans[c], landed) for c in chunks])
            for c in chunks:
                for i in spans[c]:
                    users[i] -= 1
                    if not users[i]:
                        del landed[i]
                        self.drop(i)

        async with anyio.create_task_group() as tg:
            while waiting:
                i, answer = await self._landed.receive()
                if i not in waiting:
                    continue
                if answer is None:  # deleted since its index was read
                    raise StaleIndexError(self.key)
                check_version(located, self.key, answer[1])
                landed[i] = memoryview(answer[0]).cast("B")
                ready = []
                for c in waiting.pop(i):
                    missing[c] -= 1
                    if not missing[c]:
                        ready.append(c)
                if ready:
                    tg.start_soon(decode, ready)

    def _parts_of(self, byte_range: ByteRange) -> range:
        start, stop = byte_range.offset, byte_range.offset + (byte_range.length or 0)
        return range(start // self.part, max(start, stop - 1) // self.part + 1)

    def _job(self, chunk: LocatedChunk, span: range, landed: dict[int, memoryview]) -> DecodeJob:
        """The decoding of one chunk from its bytes: a slice of one part, or joined from
        the parts it spans."""
        byte_range = chunk.byte_range
        assert byte_range is not None
        start = byte_range.offset
        stop = start + (byte_range.length or 0)
        pieces = []
        for i in span:
            base = i * self.part
            pieces.append(landed[i][max(start, base) - base : min(stop, base + self.part) - base])
        if sum(piece.nbytes for piece in pieces) != stop - start:
            raise CodecError(
                f"shard {self.key!r}: an inner chunk at bytes {start}-{stop} lies past the end "
                "of the shard"
            )
        data = pieces[0] if len(pieces) == 1 else b"".join(pieces)
        return DecodeJob(chunk, data)
