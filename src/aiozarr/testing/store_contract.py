"""`StoreContract`: the behaviour every `Store` must have, as a reusable test class.

Subclass it in a test module under a name starting with `Test`, provide an async or
plain `store` fixture that returns an **empty** store (a fresh directory, bucket
prefix, ...), and set the capability flags that do not hold:

    class TestMyStore(StoreContract):
        @pytest.fixture
        def store(self, tmp_path):
            return MyStore(tmp_path)

A store that cannot write (HTTP, zip) sets `writable = False` and overrides
`set_raw` to put test data in place behind the store's back; the read tests then
still run. Nothing here assumes a local disk.

The backend protocol is tested too: the store's `capabilities` must agree with these
flags and with what the store does, and its read primitives (`read`, and `read_ranges`
where it declares `batched_reads`) must answer as `get` does. See
docs/decisions/store-protocol.md for what a backend implements.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence
from typing import Any

import anyio
import numpy as np
import pytest

from aiozarr.byte_range import ByteRange
from aiozarr.errors import ReadOnlyError, ValueTooLargeError, VersionConflictError
from aiozarr.storage.protocol import (
    UNCHANGED,
    Capabilities,
    RangeRequest,
    Store,
    stored_size,
)

__all__ = ["StoreContract", "expected_slice"]

#: A value whose byte at offset i is i % 251 (251 is prime: shifted slices differ).
_VALUE = bytes(i % 251 for i in range(1000))

_RANGES = {
    "of": (ByteRange.of(10, 20), _VALUE[10:30]),
    "of_to_end_exactly": (ByteRange.of(900, 100), _VALUE[900:]),
    "of_past_end": (ByteRange.of(990, 50), _VALUE[990:]),
    "of_starting_past_end": (ByteRange.of(5000, 10), b""),
    "of_starting_at_end": (ByteRange.of(1000, 10), b""),
    "of_zero_length": (ByteRange.of(10, 0), b""),
    "from_offset": (ByteRange.from_offset(900), _VALUE[900:]),
    "from_offset_zero": (ByteRange.from_offset(0), _VALUE),
    "from_offset_past_end": (ByteRange.from_offset(5000), b""),
    "from_offset_at_end": (ByteRange.from_offset(1000), b""),
    "last": (ByteRange.last(16), _VALUE[-16:]),
    "last_longer_than_value": (ByteRange.last(5000), _VALUE),
    "last_zero": (ByteRange.last(0), b""),
    "whole": (None, _VALUE),
}


def expected_slice(value: bytes, byte_range: ByteRange | None) -> bytes:
    """What reading `byte_range` of `value` must return (ranges past the end are clipped)."""
    if byte_range is None:
        return value
    start, stop = byte_range.resolve(len(value))
    return value[start:stop]


def _bytes(data: Any) -> bytes | None:
    return None if data is None else bytes(memoryview(data).cast("B"))


async def _collect(iterator: Any) -> list[str]:
    return [item async for item in iterator]


class StoreContract:
    """Async tests any `Store` must pass; subclasses provide the `store` fixture."""

    #: The store accepts `set` / `delete` (False: read tests use `set_raw` to set up).
    writable: bool = True
    #: The store can list keys.
    listable: bool = True
    #: `delete` removes values (False: a zip archive, which only appends).
    supports_delete: bool = True
    #: `delete_prefix` is supported (needs writable and listable, or a native call).
    supports_delete_prefix: bool = True
    #: `store.with_read_only()` gives a read-only view of the same data.
    supports_read_only: bool = True
    #: Size of the "large value" used by the large-value tests.
    large_value_bytes: int = 3 << 20
    #: Answers carry the version of the value they came from (ETag, inode+mtime+size).
    has_versions: bool = True

    @pytest.fixture
    def store(self) -> Store:
        """An empty store to test; every subclass must override this fixture."""
        raise NotImplementedError("StoreContract subclasses must provide a `store` fixture")

    # -- hooks: override to bypass the API under test ----------------------------------

    async def set_raw(self, store: Store, key: str, value: bytes) -> None:
        """Put `value` at `key` for a test's setup (default: `store.set`)."""
        await store.set(key, value)

    async def get_raw(self, store: Store, key: str) -> bytes | None:
        """Read `key` to check a write (default: `store.get`)."""
        return _bytes(await store.get(key))

    def _require(self, *flags: str) -> None:
        for flag in flags:
            if not getattr(self, flag):
                pytest.skip(f"{type(self).__name__} does not have {flag}")

    # -- get ---------------------------------------------------------------------------

    async def test_get_missing_is_none(self, store: Store) -> None:
        assert await store.get("missing") is None
        assert await store.get("no/such/key") is None
        assert await store.get("missing", ByteRange.of(0, 4)) is None
        assert await store.get("missing", ByteRange.last(4)) is None

    async def test_set_get_roundtrip(self, store: Store) -> None:
        self._require("writable")
        await store.set("a/b/c", b"hello")
        assert _bytes(await store.get("a/b/c")) == b"hello"
        assert await self.get_raw(store, "a/b/c") == b"hello"

    @pytest.mark.parametrize("kind", [bytes, bytearray, memoryview])
    async def test_set_accepts_any_buffer(self, store: Store, kind: type) -> None:
        self._require("writable")
        await store.set("k", kind(b"\x00\x01\x02"))
        assert await self.get_raw(store, "k") == b"\x00\x01\x02"

    async def test_set_accepts_a_numpy_array(self, store: Store) -> None:
        self._require("writable")
        await store.set("n", np.arange(4, dtype="<u2"))
        assert await self.get_raw(store, "n") == np.arange(4, dtype="<u2").tobytes()

    async def test_set_copies_a_mutable_buffer(self, store: Store) -> None:
        self._require("writable")
        buffer = bytearray(b"abc")
        await store.set("k", buffer)
        buffer[:] = b"xyz"
        assert _bytes(await store.get("k")) == b"abc"

    async def test_overwrite(self, store: Store) -> None:
        self._require("writable")
        await store.set("k", b"first value, longer")
        await store.set("k", b"second")
        assert _bytes(await store.get("k")) == b"second"
        assert await store.getsize("k") == 6

    async def test_empty_value(self, store: Store) -> None:
        await self.set_raw(store, "empty", b"")
        assert _bytes(await store.get("empty")) == b""
        assert await store.exists("empty")
        assert await store.getsize("empty") == 0
        assert _bytes(await store.get("empty", ByteRange.of(0, 10))) == b""
        assert _bytes(await store.get("empty", ByteRange.last(3))) == b""
        answers = await store.get_partial_values(
            [RangeRequest("empty"), RangeRequest("empty", ByteRange.from_offset(2))]
        )
        assert [_bytes(a) for a in answers] == [b"", b""]

    @pytest.mark.parametrize("case", sorted(_RANGES))
    async def test_byte_range(self, store: Store, case: str) -> None:
        byte_range, expected = _RANGES[case]
        await self.set_raw(store, "v", _VALUE)
        assert _bytes(await store.get("v", byte_range)) == expected
        # The batched path must give the same answer.
        (answer,) = await store.get_partial_values([RangeRequest("v", byte_range)])
        assert _bytes(answer) == expected

    async def test_keys_with_dots_and_unicode(self, store: Store) -> None:
        keys = ["dir.with.dots/.zattrs", "données/キー/0.1", "a/b..c/d", ".zgroup"]
        for i, key in enumerate(keys):
            await self.set_raw(store, key, bytes([i]) * 3)
        for i, key in enumerate(keys):
            assert _bytes(await store.get(key)) == bytes([i]) * 3
            assert _bytes(await store.get(key, ByteRange.of(1, 1))) == bytes([i])
        if self.listable:
            assert sorted(await _collect(store.list())) == sorted(keys)

    # -- versions and conditional writes -----------------------------------------------

    async def test_versions_name_one_value(self, store: Store) -> None:
        self._require("has_versions")
        await self.set_raw(store, "v", b"first")
        data, first = await store.get_versioned("v")  # type: ignore[misc]
        _, again = await store.get_versioned("v", ByteRange.last(2))  # type: ignore[misc]
        assert first is not None and again == first
        await self.set_raw(store, "v", b"other")  # same size: the version must still change
        data, second = await store.get_versioned("v")  # type: ignore[misc]
        assert _bytes(data) == b"other" and second != first
        answers = await store.get_versioned_values(
            [
                RangeRequest("v", ByteRange.of(0, 2)),
                RangeRequest("v", ByteRange.last(2)),
                RangeRequest("nothing"),
            ]
        )
        assert [None if a is None else a[1] for a in answers] == [second, second, None]

    async def test_get_if_changed_answers_unchanged_for_the_version_held(
        self, store: Store
    ) -> None:
        """The chunk cache's revalidation: nothing while the value is the version held;
        the value and its new version once it changed; None once it is gone."""
        self._require("has_versions")
        await self.set_raw(store, "r", b"first")
        _, first = await store.get_versioned("r")  # type: ignore[misc]
        assert await store.get_if_changed("r", None, first) is UNCHANGED
        assert await store.get_if_changed("r", ByteRange.last(2), first) is UNCHANGED
        await self.set_raw(store, "r", b"other")
        changed = await store.get_if_changed("r", ByteRange.last(2), first)
        assert isinstance(changed, tuple) and _bytes(changed[0]) == b"er"
        assert changed[1] is not None and changed[1] != first
        if self.writable:
            await store.delete("r")
            assert await store.get_if_changed("r", None, changed[1]) is None

    async def test_set_if_writes_only_over_the_version_read(self, store: Store) -> None:
        self._require("writable")
        if not store.supports_conditional_writes:
            pytest.skip(f"{type(self).__name__} cannot write on a condition")
        await store.set_if("c/k", b"created", None)  # absent: created
        with pytest.raises(VersionConflictError, match="c/k"):
            await store.set_if("c/k", b"again", None)  # not absent any more
        _, version = await store.get_versioned("c/k")  # type: ignore[misc]
        await store.set_if("c/k", b"updated", version)
        with pytest.raises(VersionConflictError, match="c/k"):
            await store.set_if("c/k", b"stale", version)  # the version read is gone
        assert _bytes(await store.get("c/k")) == b"updated"
        if store.supports_conditional_deletes:
            with pytest.raises(VersionConflictError, match="c/k"):
                await store.delete_if("c/k", version)
            _, current = await store.get_versioned("c/k")  # type: ignore[misc]
            await store.delete_if("c/k", current)
            assert await store.get("c/k") is None
            with pytest.raises(VersionConflictError, match="c/k"):
                await store.set_if("c/k", b"gone", current)  # nothing there any more

    async def test_concurrent_set_if_lets_exactly_one_win(self, store: Store) -> None:
        self._require("writable")
        if not store.supports_conditional_writes:
            pytest.skip(f"{type(self).__name__} cannot write on a condition")
        await store.set("race", b"start")
        _, version = await store.get_versioned("race")  # type: ignore[misc]
        outcomes: list[str] = []

        async def write(n: int) -> None:
            try:
                await store.set_if("race", f"writer {n}".encode(), version)
                outcomes.append(f"writer {n}")
            except VersionConflictError:
                outcomes.append("conflict")

        async with anyio.create_task_group() as tg:
            for n in range(8):
                tg.start_soon(write, n)
        winners = [o for o in outcomes if o != "conflict"]
        assert len(winners) == 1
        assert _bytes(await store.get("race")) == winners[0].encode()

    # -- get_partial_values ------------------------------------------------------------

    async def test_get_partial_values_many_keys(self, store: Store) -> None:
        values = {f"k/{i}": bytes(random.Random(i).randbytes(300 + 7 * i)) for i in range(8)}
        for key, value in values.items():
            await self.set_raw(store, key, value)
        rng = random.Random(42)
        requests: list[RangeRequest] = []
        for _ in range(120):
            key = rng.choice([*values, "k/missing", "other/missing"])
            kind = rng.randrange(5)
            if kind == 0:
                byte_range = None
            elif kind == 1:
                byte_range = ByteRange.of(rng.randrange(400), rng.randrange(80))
            elif kind == 2:
                byte_range = ByteRange.from_offset(rng.randrange(400))
            elif kind == 3:
                byte_range = ByteRange.last(rng.randrange(100))
            else:  # overlapping / adjacent to a previous range of the same key
                byte_range = ByteRange.of(rng.randrange(0, 300, 50), 50)
            requests.append(RangeRequest(key, byte_range))
        requests += requests[:10]  # exact duplicates
        answers = await store.get_partial_values(requests)
        assert len(answers) == len(requests)
        for request, answer in zip(requests, answers, strict=True):
            value = values.get(request.key)
            if value is None:
                assert answer is None, request
            else:
                assert _bytes(answer) == expected_slice(value, request.byte_range), request

    async def test_get_partial_values_overlapping_ranges_of_one_key(self, store: Store) -> None:
        await self.set_raw(store, "v", _VALUE)
        ranges = [
            ByteRange.of(0, 100),
            ByteRange.of(50, 100),
            ByteRange.of(100, 10),
            ByteRange.of(110, 0),
            ByteRange.of(0, 1000),
            ByteRange.of(500, 1),
            ByteRange.of(0, 100),
            ByteRange.last(500),
            ByteRange.from_offset(999),
        ]
        answers = await store.get_partial_values([RangeRequest("v", r) for r in ranges])
        assert [_bytes(a) for a in answers] == [expected_slice(_VALUE, r) for r in ranges]

    async def test_get_partial_values_empty_request_list(self, store: Store) -> None:
        assert await store.get_partial_values([]) == []

    async def test_get_partial_values_all_missing(self, store: Store) -> None:
        requests = [RangeRequest("x", ByteRange.of(0, 1)), RangeRequest("y"), RangeRequest("x")]
        assert await store.get_partial_values(requests) == [None, None, None]

    # -- stream_partial_values ---------------------------------------------------------

    async def test_stream_yields_every_index_once(self, store: Store) -> None:
        for i in range(20):
            await self.set_raw(store, f"s/{i}", bytes([i]) * 10)
        requests = [RangeRequest(f"s/{i % 25}", ByteRange.of(i % 10, 1)) for i in range(50)]
        seen: list[int] = []
        async with store.stream_partial_values(requests) as answers:
            async for index, data in answers:
                seen.append(index)
                key_number = int(requests[index].key.split("/")[1])
                if key_number >= 20:
                    assert data is None
                else:
                    assert _bytes(data) == bytes([key_number])
        assert sorted(seen) == list(range(len(requests)))

    async def test_stream_early_break_cancels_cleanly(self, store: Store) -> None:
        for i in range(100):
            await self.set_raw(store, f"s/{i}", bytes(100))
        requests = [RangeRequest(f"s/{i}") for i in range(100)]
        with anyio.fail_after(30):
            for _ in range(3):  # answers landing while the block is left must not fail it
                async with store.stream_partial_values(requests) as answers:
                    async for _ in answers:
                        break
        # The store is still usable afterwards.
        assert _bytes(await store.get("s/0")) == bytes(100)

    async def test_stream_error_in_the_block_propagates_as_itself(self, store: Store) -> None:
        await self.set_raw(store, "s", b"x")
        with pytest.raises(LookupError, match="from the caller"):
            async with store.stream_partial_values([RangeRequest("s")] * 3) as answers:
                async for _ in answers:
                    raise LookupError("from the caller")

    # -- exists / getsize --------------------------------------------------------------

    async def test_exists(self, store: Store) -> None:
        await self.set_raw(store, "a/b", b"1")
        assert await store.exists("a/b")
        assert not await store.exists("a/c")
        assert not await store.exists("a")  # a "directory" is not a key
        assert not await store.exists("a/b/c")

    async def test_getsize(self, store: Store) -> None:
        await self.set_raw(store, "a/b", b"12345")
        assert await store.getsize("a/b") == 5
        assert await store.getsize("a/missing") is None

    # -- delete ------------------------------------------------------------------------

    async def test_delete(self, store: Store) -> None:
        self._require("writable", "supports_delete")
        await store.set("a/b", b"1")
        await store.set("a/c", b"2")
        await store.delete("a/b")
        assert await store.get("a/b") is None
        assert not await store.exists("a/b")
        assert _bytes(await store.get("a/c")) == b"2"
        await store.delete("a/b")  # deleting a missing key is fine
        await store.delete("never/there")

    async def test_set_many_and_delete_many(self, store: Store) -> None:
        self._require("writable", "supports_delete")
        await store.set_many((f"m/{i}", bytes([i])) for i in range(10))
        for i in range(10):
            assert await self.get_raw(store, f"m/{i}") == bytes([i])
        await store.delete_many([f"m/{i}" for i in range(0, 10, 2)] + ["m/missing"])
        for i in range(10):
            assert await store.exists(f"m/{i}") == (i % 2 == 1)

    async def test_delete_prefix(self, store: Store) -> None:
        self._require("writable", "supports_delete", "supports_delete_prefix")
        for key in ["a/b/1", "a/b/2", "a/b/c/3", "a/bc", "a/c", "ab"]:
            await store.set(key, b"x")
        await store.delete_prefix("a/b/")
        for key in ["a/b/1", "a/b/2", "a/b/c/3"]:
            assert not await store.exists(key), key
        for key in ["a/bc", "a/c", "ab"]:
            assert await store.exists(key), key
        await store.delete_prefix("a/b")  # a plain string prefix: takes a/bc too
        assert not await store.exists("a/bc")
        assert await store.exists("a/c") and await store.exists("ab")
        await store.delete_prefix("nothing/here/")
        if self.listable:
            assert await _collect(store.list_dir("a")) == ["c"]

    # -- listing -----------------------------------------------------------------------

    _LAYOUT = (
        "zarr.json",
        "a/zarr.json",
        "a/c/0/0",
        "a/c/0/1",
        "a/c/1/0",
        "b/x",
        "bb",
    )

    async def _make_layout(self, store: Store) -> None:
        for key in self._LAYOUT:
            await self.set_raw(store, key, key.encode())

    async def test_list(self, store: Store) -> None:
        self._require("listable")
        assert await _collect(store.list()) == []
        await self._make_layout(store)
        assert sorted(await _collect(store.list())) == sorted(self._LAYOUT)

    async def test_list_prefix(self, store: Store) -> None:
        self._require("listable")
        await self._make_layout(store)

        async def listed(prefix: str) -> list[str]:
            return sorted(await _collect(store.list_prefix(prefix)))

        assert await listed("") == sorted(self._LAYOUT)
        assert await listed("a/") == ["a/c/0/0", "a/c/0/1", "a/c/1/0", "a/zarr.json"]
        assert await listed("a/c/0/") == ["a/c/0/0", "a/c/0/1"]
        assert await listed("b") == ["b/x", "bb"]
        assert await listed("a/c/1/0") == ["a/c/1/0"]
        assert await listed("nothing/") == []

    async def test_list_dir(self, store: Store) -> None:
        self._require("listable")
        await self._make_layout(store)

        async def listed(prefix: str) -> list[str]:
            return sorted(await _collect(store.list_dir(prefix)))

        assert await listed("") == ["a", "b", "bb", "zarr.json"]
        assert await listed("a") == ["c", "zarr.json"]
        assert await listed("a/") == ["c", "zarr.json"]
        assert await listed("a/c") == ["0", "1"]
        assert await listed("a/c/0/") == ["0", "1"]
        assert await listed("nothing") == []

    async def test_list_dir_entries(self, store: Store) -> None:
        """Keys and directories told apart in one listing (None: the store cannot tell)."""
        self._require("listable")
        await self._make_layout(store)

        async def entries(prefix: str) -> list[tuple[str, bool | None]]:
            return sorted(await _collect(store.list_dir_entries(prefix)))

        root = await entries("")
        assert [name for name, _ in root] == ["a", "b", "bb", "zarr.json"]
        assert all(
            kind in (expected, None)
            for (_, kind), expected in zip(root, [True, True, False, False], strict=True)
        )
        assert [name for name, _ in await entries("a/c/0/")] == ["0", "1"]
        assert await entries("nothing") == []

    async def test_listing_follows_writes_and_deletes(self, store: Store) -> None:
        self._require("listable", "writable", "supports_delete")
        await store.set("d/1", b"1")
        await store.set("d/2", b"2")
        await store.delete("d/1")
        assert await _collect(store.list_prefix("d/")) == ["d/2"]
        await store.delete("d/2")
        assert await _collect(store.list_prefix("d/")) == []
        assert await _collect(store.list_dir("")) == []

    # -- read-only ---------------------------------------------------------------------

    async def test_read_only_refuses_writes(self, store: Store) -> None:
        self._require("supports_read_only")
        await self.set_raw(store, "k", b"old")
        read_only = store.with_read_only()
        assert read_only.read_only and not read_only.writable
        assert _bytes(await read_only.get("k")) == b"old"
        attempts: Sequence[Any] = [
            lambda: read_only.set("k", b"new"),
            lambda: read_only.set("fresh", b"new"),
            lambda: read_only.set_many([("k", b"new")]),
            lambda: read_only.delete("k"),
            lambda: read_only.delete_many(["k"]),
            lambda: read_only.delete_prefix(""),
        ]
        for attempt in attempts:
            with pytest.raises(ReadOnlyError, match="read-only"):
                await attempt()
        assert _bytes(await store.get("k")) == b"old"
        assert await store.get("fresh") is None
        assert not store.with_read_only(False).read_only

    # -- the backend protocol ----------------------------------------------------------

    async def test_capabilities_are_one_frozen_object_that_agrees(self, store: Store) -> None:
        caps = store.capabilities
        assert isinstance(caps, Capabilities)
        with pytest.raises(dataclasses.FrozenInstanceError):
            caps.writes = not caps.writes  # type: ignore[misc]
        assert store.writable == (caps.writes and not store.read_only) == self.writable
        assert store.listable == caps.listing == self.listable
        assert store.supports_conditional_writes == caps.conditional_writes
        if not self.supports_delete:
            assert not caps.deletes
        assert store.reads_inline == caps.inline_reads

    async def test_sized_versions_tell_the_value_s_size(self, store: Store) -> None:
        """`sized_versions`: every answer, whole or a range, tells the value's size (a
        span of an uncompressed chunk is read only where it is checked against it)."""
        if not store.capabilities.sized_versions:
            pytest.skip("the store declares no sized versions: chunks are read whole")
        await self.set_raw(store, "s", _VALUE)
        for byte_range in (None, ByteRange.of(10, 20), ByteRange.last(16)):
            answer = await store.get_versioned("s", byte_range)
            assert answer is not None and stored_size(answer[1]) == len(_VALUE)

    async def test_read_primitives_answer_as_get_does(self, store: Store) -> None:
        await self.set_raw(store, "p/v", _VALUE)
        for byte_range in (ByteRange.of(10, 20), ByteRange.last(16), None):
            answer = await store.read("p/v", byte_range, None)
            assert answer is not None
            assert _bytes(answer[0]) == expected_slice(_VALUE, byte_range)
        assert await store.read("p/missing", None, None) is None
        with pytest.raises(ValueTooLargeError, match="p/v"):
            await store.read("p/v", None, len(_VALUE) - 1)
        if store.capabilities.batched_reads:
            wanted = [ByteRange.of(0, 4), ByteRange.of(500, 10), ByteRange.last(3)]
            got = await store.read_ranges("p/v", wanted, None)
            assert got is not None
            assert [_bytes(d) for d in got[0]] == [expected_slice(_VALUE, r) for r in wanted]
            assert await store.read_ranges("p/missing", wanted, None) is None
        if store.reads_inline:
            answer = store.get_inline("p/v", ByteRange.of(1, 2))
            assert answer is not None and _bytes(answer[0]) == _VALUE[1:3]

    # -- large values ------------------------------------------------------------------

    async def test_large_value_ranges(self, store: Store) -> None:
        size = self.large_value_bytes
        value = random.Random(7).randbytes(size)
        await self.set_raw(store, "big", value)
        assert await store.getsize("big") == size
        ranges = [
            ByteRange.of(0, 1),
            ByteRange.of(size // 2 - 100, 200),
            ByteRange.of(size // 3, size // 3),
            ByteRange.of(size - 10, 100),
            ByteRange.last(1 << 20),
            ByteRange.from_offset(size - (1 << 19)),
            None,
        ]
        for byte_range in ranges:
            assert _bytes(await store.get("big", byte_range)) == expected_slice(value, byte_range)
        answers = await store.get_partial_values([RangeRequest("big", r) for r in ranges])
        for byte_range, answer in zip(ranges, answers, strict=True):
            assert _bytes(answer) == expected_slice(value, byte_range), byte_range
