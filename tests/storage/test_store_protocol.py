"""The backend protocol: capabilities as one frozen object, one read primitive, the one
fan-in every batch streams through, and no import cycle between the store and batching."""

from __future__ import annotations

import ast
import asyncio
import dataclasses
import gc
import warnings
from pathlib import Path

import anyio
import pytest
from obstore.store import HTTPStore, S3Store

import aiozarr.storage
from aiozarr.byte_range import ByteRange
from aiozarr.errors import StoreError, ValueTooLargeError
from aiozarr.storage.backends.counting import CountingStore
from aiozarr.storage.backends.local import LocalStore
from aiozarr.storage.backends.memory import MemoryStore
from aiozarr.storage.backends.object_store import ObjectStore
from aiozarr.storage.backends.zip import ZipStore
from aiozarr.storage.opening.url import from_url
from aiozarr.storage.policy.fanin import Emit, Spawn, fan_in
from aiozarr.storage.protocol import RangeRequest, Versioned
from aiozarr.storage.references.reference_store import ReferenceStore

pytestmark = pytest.mark.timeout(30)

# -- capabilities --------------------------------------------------------------------------


def test_capabilities_are_frozen_and_declared_by_the_class(tmp_path: Path) -> None:
    caps = MemoryStore.CAPABILITIES
    with pytest.raises(dataclasses.FrozenInstanceError):
        caps.batched_reads = False  # type: ignore[misc]
    assert MemoryStore().capabilities is caps
    assert caps.inline_reads and caps.batched_reads and caps.conditional_writes
    local = LocalStore(tmp_path).capabilities
    assert local.batched_reads and local.coalesce_gap_bytes == 0 and not local.inline_reads
    assert ObjectStore.CAPABILITIES.hedge_reads and not local.hedge_reads
    assert not ZipStore.CAPABILITIES.deletes and ZipStore.CAPABILITIES.delegates_reads
    assert not ReferenceStore.CAPABILITIES.writes


def test_an_object_store_declares_what_its_server_can_do() -> None:
    http = ObjectStore(HTTPStore("http://127.0.0.1:1/data"))
    s3 = ObjectStore(  # a bucket of its own: equal stores share what their server does
        S3Store("protocol-test", endpoint="http://127.0.0.1:1", skip_signature=True)
    )
    assert not http.listable and not http.capabilities.conditional_writes
    assert s3.listable and s3.capabilities.conditional_writes
    assert s3.capabilities.conditions_from_server and s3.capabilities.hedge_reads
    assert not s3.capabilities.batched_reads
    s3.runtime.whole_reads.ignored = True  # found to ignore ranges: one read per key
    assert s3.capabilities.batched_reads
    assert CountingStore(s3).capabilities.batched_reads  # wrappers see it change


def test_writable_is_the_capability_and_the_read_only_flag() -> None:
    assert MemoryStore().writable
    assert not MemoryStore(read_only=True).writable
    assert not ReferenceStore({"refs": {}}).writable


def test_a_wrapper_passes_its_inner_capabilities_through_but_inline_reads(
    tmp_path: Path,
) -> None:
    inner = MemoryStore()
    counting = CountingStore(inner)
    assert counting.capabilities == dataclasses.replace(inner.capabilities, inline_reads=False)
    assert counting.capabilities is counting.capabilities  # made once, not per call
    assert not counting.reads_inline  # its reads are counted: none bypasses it
    assert counting.budget is inner.budget and counting.runtime is inner.runtime
    read_only = CountingStore(LocalStore(tmp_path, read_only=True))
    assert read_only.read_only and not read_only.writable


def test_a_memory_store_subclass_that_reads_differently_is_not_read_inline() -> None:
    class Slow(MemoryStore):
        async def read(
            self, key: str, byte_range: ByteRange | None, max_bytes: int | None
        ) -> Versioned | None:
            await anyio.sleep(0)
            return await super().read(key, byte_range, max_bytes)

    class Tuned(MemoryStore):
        CAPABILITIES = dataclasses.replace(MemoryStore.CAPABILITIES, coalesce_gap_bytes=10)

    assert not Slow().reads_inline and Slow().capabilities.batched_reads
    assert Tuned().reads_inline and Tuned().capabilities.coalesce_gap_bytes == 10


# -- the fan-in ----------------------------------------------------------------------------


class Gated(MemoryStore):
    """Reads of `slow/...` wait until cancelled (and say so); `bad/...` fails naming
    its key; every other key reads at once."""

    CAPABILITIES = dataclasses.replace(MemoryStore.CAPABILITIES, batched_reads=False)

    def __init__(self) -> None:
        super().__init__()
        self.waiting = 0
        self.cancelled = 0

    async def read(
        self, key: str, byte_range: ByteRange | None, max_bytes: int | None
    ) -> Versioned | None:
        if key.startswith("bad/"):
            raise StoreError(f"cannot read {key!r}: the disk is on fire")
        if key.startswith("slow/"):
            self.waiting += 1
            try:
                await anyio.sleep_forever()
            except anyio.get_cancelled_exc_class():
                self.cancelled += 1
                raise
        return await super().read(key, byte_range, max_bytes)


def _others() -> set[asyncio.Task[object]]:
    return asyncio.all_tasks() - {asyncio.current_task()}  # type: ignore[operator]


async def _until(condition: object) -> None:
    with anyio.fail_after(5):
        while not condition():  # type: ignore[operator]
            await anyio.sleep(0.001)


async def test_leaving_a_batch_early_cancels_its_reads_and_leaves_no_task() -> None:
    store = Gated()
    await store.set("fast", b"1")
    before = _others()
    requests = [RangeRequest("slow/a"), RangeRequest("fast"), RangeRequest("slow/b")]
    async with store.stream_versioned_values(requests) as answers:
        async for index, data, _ in answers:
            assert (index, bytes(data)) == (1, b"1")
            await _until(lambda: store.waiting == 2)
            break
    assert store.cancelled == 2
    assert _others() == before
    assert store.budget.inflight == 0


async def test_a_failed_read_cancels_the_batch_and_is_raised_naming_its_key() -> None:
    store = Gated()
    before = _others()
    requests = [RangeRequest("slow/a"), RangeRequest("bad/k", ByteRange.of(0, 4))]
    with pytest.raises(StoreError, match="'bad/k'") as info:
        await store.get_partial_values(requests)
    assert not isinstance(info.value, BaseExceptionGroup)
    assert store.cancelled == store.waiting  # the slow read did not outlive the batch
    assert _others() == before


async def test_fan_in_streams_what_it_is_given_and_what_its_tasks_emit() -> None:
    async def produce(emit: Emit, spawn: Spawn) -> None:
        emit((0, b"now", None))

        async def later(i: int) -> None:
            await anyio.sleep(0)
            emit((i, b"later", i))

        for i in (1, 2):
            spawn(later, i)

    async with fan_in(produce) as answers:
        got = sorted([answer async for answer in answers])
    assert got == [(0, b"now", None), (1, b"later", 1), (2, b"later", 2)]


async def test_fan_in_raises_a_task_failure_as_itself() -> None:
    async def produce(emit: Emit, spawn: Spawn) -> None:
        async def fail(key: str) -> None:
            raise StoreError(f"cannot read {key!r}")

        emit((0, b"first", None))
        spawn(fail, "k")

    seen = []
    with pytest.raises(StoreError, match="cannot read 'k'") as info:
        async with fan_in(produce) as answers:
            async for answer in answers:
                seen.append(answer)
    assert not isinstance(info.value, BaseExceptionGroup)


async def test_fan_in_leaves_no_coroutine_unawaited_when_a_spawn_comes_as_it_stops() -> None:
    # The range pump hands a failed range on from an answer's callback: one coming as
    # the batch stops for another task's failure cannot start, and its coroutine, made
    # already, was dropped unawaited (a RuntimeWarning when collected).
    loop = asyncio.get_running_loop()
    refused: list[RuntimeError] = []

    async def produce(emit: Emit, spawn: Spawn) -> None:
        async def late() -> None:
            pass

        def from_a_callback() -> None:
            try:
                spawn(late)
            except RuntimeError as exc:
                refused.append(exc)

        async def fail() -> None:
            loop.call_soon(loop.call_soon, from_a_callback)  # once the group has heard
            raise StoreError("cannot read 'k'")

        spawn(fail)
        await asyncio.Event().wait()

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(StoreError, match="'k'"):
            async with fan_in(produce) as answers:
                async for _ in answers:
                    pass
        assert refused  # it came too late to start
        refused.clear()  # nor does its traceback hold the coroutine any longer
        gc.collect()
    assert not [w for w in caught if "never awaited" in str(w.message)]


async def test_a_zip_member_batch_left_early_leaves_no_task(tmp_path: Path) -> None:
    with ZipStore(tmp_path / "a.zip", mode="w") as writer:
        for i in range(20):
            await writer.set(f"m/{i}", bytes([i]) * 10)
    store = ZipStore(tmp_path / "a.zip")
    before = _others()
    async with store.stream_versioned_values([RangeRequest(f"m/{i}") for i in range(20)]) as got:
        async for _ in got:
            break
    assert _others() == before
    assert bytes(await store.get("m/3")) == bytes([3]) * 10  # a batch of one


async def test_a_reference_batch_raises_its_target_failure_naming_the_key() -> None:
    await from_url("memory://protocol-refs").set("obj", b"0123456789")
    refs = ReferenceStore(
        {"version": 1, "refs": {"x": "inline", "y": ["memory://protocol-refs/obj"]}},
        allowed_targets=["memory://protocol-refs/"],
    )
    got = await refs.get_partial_values([RangeRequest("x"), RangeRequest("y", ByteRange.of(2, 3))])
    assert [bytes(d) for d in got] == [b"inline", b"234"]
    with pytest.raises(ValueTooLargeError, match="'y'"):  # the target's error, with the key
        await refs.get_partial_values([RangeRequest("x"), RangeRequest("y", None, 4)])


# -- no cycle ------------------------------------------------------------------------------

STORAGE = Path(aiozarr.storage.__file__).parent


def _imports(path: Path) -> set[str]:
    """Every `aiozarr.storage` module `path` imports: at the top, lazily in a function,
    or for type checking only."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [f"{node.module}.{a.name}" for a in node.names] + [node.module]
            found.update(n for n in names if n.startswith("aiozarr.storage."))
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("aiozarr.storage."))
    return {name.removeprefix("aiozarr.storage.").split(".")[0] for name in found}


@pytest.mark.parametrize("module", ["protocol", "fanin", "batching", "retry", "runtime"])
def test_what_the_store_class_uses_never_imports_it_back(module: str) -> None:
    # Walk everything `module` imports, however it imports it: base is not among it.
    seen, todo = set(), [module]
    while todo:
        name = todo.pop()
        if name in seen or not (STORAGE / f"{name}.py").exists():
            continue
        seen.add(name)
        todo.extend(_imports(STORAGE / f"{name}.py"))
    assert "base" not in seen, sorted(seen)
