"""Retries in the storage layer: what is retried, how often, and how it gives up.

Run against the emulator with injected faults; request counts come from the emulator,
so each test checks what really went over the wire.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from typing import Any

import anyio
import pytest
from obstore.store import S3Store
from tests.servers import FAST_RETRY, unique_prefix

from aiozarr import config
from aiozarr.byte_range import ByteRange
from aiozarr.emulator import Emulator
from aiozarr.errors import StoreError, WriteOutcomeUnknownError
from aiozarr.storage.backends.memory import MemoryStore
from aiozarr.storage.backends.object_store import ObjectStore
from aiozarr.storage.opening.url import from_url
from aiozarr.storage.policy.retry import (
    Failure,
    RetryPolicy,
    ShortReadError,
    classify,
    request_timeout_s,
)
from aiozarr.storage.protocol import RangeRequest, Versioned

pytestmark = [pytest.mark.timeout(60), pytest.mark.usefixtures("fast_retries")]

DATA = bytes(range(256)) * 16  # 4 KiB


def s3(emulator: Emulator, **options: Any) -> ObjectStore:
    opts = {**emulator.storage_options(), **options}
    return ObjectStore(
        S3Store(emulator.bucket, prefix=unique_prefix(), retry_config=FAST_RETRY, **opts)
    )


async def stored(emulator: Emulator, key: str = "k", value: bytes = DATA) -> ObjectStore:
    store = s3(emulator)
    await store.set(key, value)
    emulator.reset_stats()
    store.reset_stats()
    return store


FAULTS = [
    pytest.param("status", {"status": 503}, id="503"),
    pytest.param("status", {"status": 500}, id="500"),
    pytest.param("status", {"status": 429}, id="429"),
    pytest.param("reset", {}, id="reset"),
    pytest.param("truncate", {}, id="truncate"),
]


# -- transient failures are retried --------------------------------------------------------


@pytest.mark.parametrize(("kind", "options"), FAULTS)
async def test_fault_is_retried(emulator: Emulator, kind: str, options: dict[str, Any]) -> None:
    store = await stored(emulator)
    emulator.inject(kind, count=2, methods=["GET"], **options)
    assert bytes(await store.get("k", ByteRange.of(100, 1000))) == DATA[100:1100]
    stats = emulator.stats()
    assert stats["faults"] == 2
    assert stats["requests"] == 3  # two failures, then the answer
    assert store.stats()["retries"] == 2


async def test_obstore_retries_are_off(emulator: Emulator) -> None:
    # The fixture's obstore store asked for 2 retries of its own; aiozarr switched them
    # off, so the attempts are exactly aiozarr's `retry_attempts`.
    store = await stored(emulator)
    assert store.obstore.retry_config["max_retries"] == 0
    emulator.inject("status", status=503, methods=["GET"])
    with pytest.raises(StoreError):
        await store.get("k")
    assert emulator.stats()["requests"] == 4


async def test_a_416_to_a_whole_read_is_named_and_not_retried(emulator: Emulator) -> None:
    """It asked no range: it read as "replaced while None was read", after every retry."""
    store = await stored(emulator)
    emulator.inject("status", status=416, methods=["GET"])
    with pytest.raises(StoreError, match=r"'k'.*GET of the whole value.*416; asked no range"):
        await store.get("k")
    assert emulator.stats()["by_method"] == {"GET": 1}


async def test_only_the_failed_range_is_retried(emulator: Emulator) -> None:
    store = await stored(emulator)
    requests = [RangeRequest("k", ByteRange.of(i * 512, 256)) for i in range(8)]
    emulator.inject("status", count=1, status=503, methods=["GET"])
    with config.set(coalesce_gap_bytes=0):
        answers = await store.get_partial_values(requests)
    assert [bytes(a) for a in answers] == [DATA[i * 512 : i * 512 + 256] for i in range(8)]
    assert emulator.stats()["requests"] == 9  # 8 ranges + 1 retry, not 8 + 8


async def test_whole_batch_survives_a_fault_on_every_key(emulator: Emulator) -> None:
    store = s3(emulator)
    await store.set_many([(f"c/{i}", DATA[i:]) for i in range(6)])
    emulator.reset_stats()
    emulator.inject("reset", count=6, methods=["GET"])
    answers = await store.get_partial_values([RangeRequest(f"c/{i}") for i in range(6)])
    assert [bytes(a) for a in answers] == [DATA[i:] for i in range(6)]
    assert emulator.stats()["requests"] == 12


async def test_writes_and_deletes_are_retried(emulator: Emulator) -> None:
    store = await stored(emulator)
    emulator.inject("status", count=1, status=503, methods=["PUT"])
    await store.set("w", b"new value")
    assert emulator.stats()["by_method"]["PUT"] == 2
    assert bytes(await store.get("w")) == b"new value"
    emulator.reset_stats()
    emulator.inject("status", count=1, status=500, methods=["POST"])  # S3 DeleteObjects
    await store.delete("w")
    assert await store.get("w") is None
    assert emulator.stats()["by_method"]["POST"] == 2


async def test_a_conditional_write_whose_value_went_after_a_lost_answer_cannot_tell(
    emulator: Emulator,
) -> None:
    # Its first try lands unseen; another writer deletes the value while the retry is
    # held; the retry's 412 may be its own doing or not. The GET that looks for its
    # bytes finds nothing: obstore's 404 (a built-in FileNotFoundError) escaped `set_if`.
    store = await stored(emulator)
    _, version = await store.get_versioned("k")
    rule: dict[str, Any] = {"key_glob": "*k", "methods": ["PUT"], "count": 1}
    emulator.inject("lost", **rule)
    emulator.inject("late", **rule, delay_s=2.0)
    writing = asyncio.ensure_future(store.set_if("k", b"mine", version))
    while emulator.faults():  # the first try met `lost`, the retry is held
        await asyncio.sleep(0.01)
    await ObjectStore(store.obstore).delete("k")  # another writer, its own store
    with pytest.raises(WriteOutcomeUnknownError, match="'k'"):
        await writing


async def test_head_is_retried(emulator: Emulator) -> None:
    store = await stored(emulator)
    emulator.inject("status", count=1, status=503, methods=["HEAD"])
    assert await store.getsize("k") == len(DATA)
    assert emulator.stats()["requests"] == 2


async def test_timeout_is_retried(emulator: Emulator) -> None:
    store = await stored(emulator)
    emulator.inject("slow", count=1, delay_s=60.0, methods=["GET"])
    # 2 s: the timeout the held try meets, and room for the next try on a busy machine (a
    # second timeout would make the counts below 3)
    with config.set(request_timeout_s=2.0):
        assert bytes(await store.get("k", ByteRange.of(0, 100))) == DATA[:100]
    assert store.stats()["timeouts"] == 1
    assert emulator.stats()["requests"] == 2


async def test_a_hedged_read_times_out_too(emulator: Emulator) -> None:
    # With recent latencies known, a read runs under a hedge timer, which sets the
    # read's timeout only when it fires: a read held past every limit must still time out.
    store = await stored(emulator)
    for i in range(20):
        await store.get("k", ByteRange.of(i, 100))
    emulator.inject("slow", count=1000, delay_s=60.0, methods=["GET"])
    with (
        config.set(request_timeout_s=2.0, retry_attempts=1, hedge_reads=True),
        pytest.raises(StoreError, match="no answer within"),
    ):
        await store.get("k", ByteRange.of(0, 100))
    assert store.stats()["timeouts"] >= 1


# -- final answers are not retried ---------------------------------------------------------


@pytest.mark.parametrize("status", [403, 400, 401])
async def test_refusals_are_not_retried(emulator: Emulator, status: int) -> None:
    store = await stored(emulator)
    emulator.inject("status", status=status, methods=["GET"])
    with pytest.raises(StoreError, match=rf"'k'.*{status}") as info:
        await store.get("k")
    assert "attempts" not in str(info.value)
    assert emulator.stats()["requests"] == 1
    assert store.stats()["retries"] == 0


async def test_missing_key_is_none_after_one_request(emulator: Emulator) -> None:
    store = await stored(emulator)
    assert await store.get("absent") is None
    assert await store.get("absent", ByteRange.of(0, 10)) is None
    assert emulator.stats()["requests"] == 2


async def test_read_only_refusal_is_not_retried() -> None:
    store = MemoryStore(read_only=True)
    with pytest.raises(StoreError, match="'k'"):
        await store.set("k", b"x")
    assert store.stats()["retries"] == 0


# -- giving up -----------------------------------------------------------------------------


async def test_persistent_failure_names_key_attempts_and_cause(emulator: Emulator) -> None:
    store = await stored(emulator)
    emulator.inject("status", status=500, key_glob="*broken/0")
    with pytest.raises(StoreError, match=r"'broken/0'.*500.*gave up after 4 attempts"):
        await store.get("broken/0")
    assert emulator.stats()["by_status"]["500"] == 4


async def test_retries_are_logged_and_giving_up_is_a_warning(
    emulator: Emulator, caplog: pytest.LogCaptureFixture
) -> None:
    store = await stored(emulator)
    emulator.inject("status", status=500, key_glob="*broken/0")
    with caplog.at_level(logging.INFO, logger="aiozarr"), pytest.raises(StoreError):
        await store.get("broken/0")
    retries = [r for r in caplog.records if r.levelno == logging.INFO and "retry" in r.message]
    assert len(retries) == 3 and all("'broken/0'" in r.message for r in retries)
    [gave_up] = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert "'broken/0'" in gave_up.message and "gave up after 4 attempts" in gave_up.message


async def test_persistent_failure_stops_at_the_deadline(emulator: Emulator) -> None:
    store = await stored(emulator)
    emulator.inject("status", status=503, methods=["GET"])
    settings = config.set(
        retry_attempts=10_000, retry_base_delay_s=0.01, retry_max_delay_s=0.05, retry_deadline_s=0.5
    )
    # What the last try met depends on the machine (a 503, or no answer before the
    # deadline when the first try is slow to be answered); what stopped the tries does not.
    expected = pytest.raises(StoreError, match=r"'k'.*gave up after \d+ attempts?")
    with settings, expected as info:
        await store.get("k")
    attempts = int(str(info.value).split("gave up after ")[1].split()[0])
    assert attempts < 10_000  # the deadline, not the attempt count, stopped it
    # The last attempt may be cut by the deadline before its request reaches the server.
    assert emulator.stats()["requests"] in (attempts - 1, attempts)


async def test_slow_server_stops_at_the_deadline(emulator: Emulator) -> None:
    store = await stored(emulator)
    emulator.inject("slow", delay_s=5.0, methods=["GET"])
    expected = pytest.raises(StoreError, match=r"'k'.*no answer within.*gave up after 1 attempt ")
    with config.set(retry_attempts=10_000, retry_deadline_s=0.5), expected:
        await store.get("k")


async def test_timeouts_and_failed_listings_name_the_store_and_its_key(
    emulator: Emulator,
) -> None:
    # Stores of one bucket share a client: the key a failure names is the store's, and
    # the store is named beside it (a timeout among 30 arrays' reads says whose).
    prefix = unique_prefix()
    store = from_url(
        emulator.s3_url(f"{prefix}/deep/a.zarr"), storage_options=emulator.storage_options()
    )
    await store.set("c/0", b"x")
    where = f"in ObjectStore('s3://bucket/{prefix}/deep/a.zarr"
    emulator.inject("late", delay_s=1.0)
    quick = {"request_timeout_s": 0.2, "request_timeout_min_bytes_per_s": 1e9}
    with config.set(retry_attempts=1, hedge_reads=False, **quick):
        for call in (
            store.get("c/0"),
            store.exists("c/0"),
            anext(store.list_prefix("c/")),
            anext(store.list_dir("c")),
        ):
            with pytest.raises(StoreError) as info:
                await call
            message = str(info.value)
            assert (
                f"'c/0' {where}" in message
                or f"'c/' {where}" in message
                or (f"'c' {where}" in message)
            ), message
            assert f"'{prefix}/deep" not in message, message


class ResetThenHang(MemoryStore):
    """A backend whose first answer is a reset connection and whose later ones never come."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    async def read(
        self, key: str, byte_range: ByteRange | None, max_bytes: int | None
    ) -> Versioned | None:
        self.calls += 1
        if self.calls == 1:
            raise ConnectionResetError("connection reset by peer")
        await anyio.sleep(30)
        return None


async def test_giving_up_at_the_deadline_names_the_last_real_failure() -> None:
    store = ResetThenHang()
    settings = config.set(
        retry_attempts=100, retry_base_delay_s=0.01, retry_max_delay_s=0.01, retry_deadline_s=2.0
    )  # 2 s: the second try starts well inside it however busy the machine
    with settings, pytest.raises(StoreError) as info:
        await store.get("k")
    message = str(info.value)
    # The second try was cut by the deadline: the reset, not "no answer", is the reason.
    assert "'k'" in message and "connection reset" in message, message
    assert "gave up after 2 attempts" in message and store.calls == 2


# -- short reads ---------------------------------------------------------------------------


class ShortBodies(MemoryStore):
    """A backend whose first `short` answers lose their second half (a cut body)."""

    CAPABILITIES = replace(MemoryStore.CAPABILITIES, verify_short_reads=True)

    def __init__(self, short: int) -> None:
        super().__init__()
        self.short = short
        self.reads = 0

    async def read(
        self, key: str, byte_range: ByteRange | None, max_bytes: int | None
    ) -> Versioned | None:
        self.reads += 1
        answer = await super().read(key, byte_range, max_bytes)
        if answer is not None and self.short > 0:
            self.short -= 1
            data, version = answer
            return memoryview(data)[: len(data) // 2], version
        return answer


async def test_short_read_is_retried() -> None:
    store = ShortBodies(short=2)
    await store.set("k", DATA)
    assert bytes(await store.get("k", ByteRange.of(10, 1000))) == DATA[10:1010]
    assert store.reads == 3
    assert store.stats()["retries"] == 2


async def test_short_reads_everywhere_give_up() -> None:
    store = ShortBodies(short=100)
    await store.set("k", DATA)
    with pytest.raises(StoreError, match=r"'k'.*answered with 500 bytes.*4 attempts"):
        await store.get("k", ByteRange.of(0, 1000))


async def test_clipped_range_is_not_a_short_read() -> None:
    store = ShortBodies(short=0)
    await store.set("k", DATA)
    assert bytes(await store.get("k", ByteRange.of(len(DATA) - 10, 100))) == DATA[-10:]
    assert bytes(await store.get("k", ByteRange.last(10 * len(DATA)))) == DATA
    assert store.reads == 2
    assert store.stats()["retries"] == 0


async def test_object_store_clipped_range_costs_no_head(emulator: Emulator) -> None:
    store = await stored(emulator)
    assert bytes(await store.get("k", ByteRange.of(len(DATA) - 10, 100))) == DATA[-10:]
    # The answer carries the value's size: clipped at the end, not cut short.
    assert emulator.stats()["by_method"] == {"GET": 1}


# -- the pieces ----------------------------------------------------------------------------


def test_classify() -> None:
    assert classify(TimeoutError()).retryable
    assert classify(ConnectionResetError()).retryable
    assert classify(ShortReadError("k")).retryable
    assert not classify(FileNotFoundError("k")).retryable
    assert not classify(StoreError("cannot read 'k'")).retryable
    assert not classify(ValueError("bad")).retryable


def test_classify_obstore_errors() -> None:
    from obstore.exceptions import GenericError, NotFoundError, PermissionDeniedError

    from aiozarr.storage.backends import obstore_errors

    slow_down = GenericError("S3 error: status code: 503 SlowDown\n\nDebug source:\nx")
    seen = obstore_errors.classify(slow_down)
    assert (seen.status, seen.throttled) == (503, True)
    assert seen.text == "S3 error: status code: 503 SlowDown"
    assert classify(slow_down) == Failure(True, True)
    wrapped = StoreError("cannot read 'k'")
    wrapped.__cause__ = GenericError("error sending request for url")
    assert classify(wrapped) == Failure(True)
    assert classify(GenericError("status code: 403 Forbidden")) == Failure(False)
    assert classify(PermissionDeniedError("status code: 503")) == Failure(False)
    missing = obstore_errors.classify(NotFoundError("NoSuchBucket:\n the bucket"))
    assert missing.not_found and missing.missing_bucket
    assert missing.message == "NoSuchBucket: the bucket"
    assert obstore_errors.classify(GenericError("416 Range Not Satisfiable")).bad_range
    assert obstore_errors.classify(GenericError("got a non-partial response")).not_partial


def test_backoff_is_bounded_full_jitter() -> None:
    policy = RetryPolicy(attempts=5, base_delay_s=0.1, max_delay_s=1.0, deadline_s=10)
    for retry in range(20):
        cap = min(1.0, 0.1 * 2**retry)
        delays = [policy.delay_s(retry) for _ in range(50)]
        assert all(0 <= d <= cap for d in delays)
    assert len({policy.delay_s(3) for _ in range(20)}) > 1  # jittered, not fixed


def test_timeout_scales_with_size() -> None:
    with config.set(
        request_timeout_s=30.0, request_timeout_min_bytes_per_s=1 << 20, max_request_bytes=64 << 20
    ) as settings:
        assert request_timeout_s(0, settings) == 30.0
        assert request_timeout_s(512 << 20, settings) == 30.0 + 512
        assert request_timeout_s(None, settings) == 30.0 + 64  # size unknown: the largest request
