"""Object stores that fail: missing buckets, refusals, dead endpoints, flaky servers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from obstore.store import HTTPStore, S3Store
from tests.servers import FAST_RETRY, serving

from aiozarr import config
from aiozarr.byte_range import ByteRange
from aiozarr.emulator import Emulator
from aiozarr.errors import StoreError
from aiozarr.storage.backends.object_store import ObjectStore
from aiozarr.storage.opening.url import from_url
from aiozarr.storage.protocol import RangeRequest

pytestmark = pytest.mark.timeout(60)


def s3(emulator: Emulator, bucket: str | None = None, **options: Any) -> ObjectStore:
    opts = {**emulator.storage_options(), **options}
    return ObjectStore(S3Store(bucket or emulator.bucket, retry_config=FAST_RETRY, **opts))


# -- configuration errors ----------------------------------------------------------------


async def test_missing_bucket_is_an_error_not_a_missing_key(emulator: Emulator) -> None:
    store = s3(emulator, bucket="no-such-bucket")
    with pytest.raises(StoreError) as info:
        await store.get("zarr.json")
    # the cause in words first; the server's answer stays in the chained exception
    assert str(info.value) == (
        f"cannot read 'zarr.json': bucket 'no-such-bucket' does not exist at {emulator.endpoint}"
    )
    assert "NoSuchBucket" in str(info.value.__cause__)
    with pytest.raises(StoreError, match="no-such-bucket"):
        await store.get_partial_values([RangeRequest("c/0", ByteRange.last(16))])


async def test_missing_bucket_on_moto(moto_s3_options: dict[str, Any]) -> None:
    store = ObjectStore(S3Store("absent-bucket", retry_config=FAST_RETRY, **moto_s3_options))
    with pytest.raises(StoreError, match="bucket 'absent-bucket' does not exist"):
        await store.get("zarr.json")
    with pytest.raises(StoreError, match="absent-bucket"):
        await store.set("zarr.json", b"{}")


async def test_http_store_says_it_cannot_list(emulator: Emulator) -> None:
    store = from_url(emulator.http_url("data.zarr"))
    with pytest.raises(StoreError, match=r"http\(s\):// store cannot list .*consolidated"):
        [name async for name in store.list_dir("")]
    with pytest.raises(StoreError, match=r"cannot list"):
        [key async for key in store.list_prefix("")]
    assert emulator.stats()["requests"] == 0  # refused here, not by the server


@pytest.mark.parametrize(
    ("url", "instead"),
    [
        (
            "https://my.bk.s3.us-west-2.amazonaws.com/a%20b+c.zarr/",
            "open 's3://my.bk/a b+c.zarr' with storage_options={'region': 'us-west-2'}",
        ),
        ("https://bk.s3.amazonaws.com/x.zarr", "open 's3://bk/x.zarr'"),
        (
            "https://s3.eu-west-1.amazonaws.com/bk/x.zarr?versionId=1",
            "open 's3://bk/x.zarr' with storage_options={'region': 'eu-west-1'}",
        ),
        ("https://storage.googleapis.com/bk/d/x.zarr", "open 'gs://bk/d/x.zarr'"),
    ],
)
@pytest.mark.parametrize("guarded", [False, True])
async def test_an_https_url_of_a_bucket_names_the_url_that_lists(
    url: str, instead: str, guarded: bool
) -> None:
    # Refused before any request: a public dataset's https URL, which cannot list,
    # names the s3:// or gs:// URL of the same data (its key percent-decoded).
    check = (lambda old, new: new) if guarded else None
    store = from_url(url, check_redirect=check)
    with pytest.raises(StoreError, match="cannot list") as raised:
        [key async for key in store.list_prefix("")]
    assert str(raised.value).endswith(f"; to list it, {instead}")


async def test_forbidden(emulator: Emulator) -> None:
    store = s3(emulator)
    emulator.inject("status", status=403)
    with pytest.raises(StoreError, match=r"'secret/key'.*s3://bucket.*403") as info:
        await store.get("secret/key")
    assert "AccessDenied" in str(info.value)
    with pytest.raises(StoreError, match="'secret/key'"):
        await store.set("secret/key", b"x")
    with pytest.raises(StoreError):
        [k async for k in store.list_prefix("secret/")]
    stats = emulator.stats()
    assert stats["by_status"]["403"] == 3, stats  # a refusal is not retried


_REDIRECT = (
    b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>PermanentRedirect</Code>'
    b"<Message>The bucket you are attempting to access must be addressed using the "
    b"specified endpoint.</Message><Endpoint>b.s3.us-west-2.amazonaws.com</Endpoint></Error>"
)


async def test_a_bucket_of_another_region_names_the_region_option() -> None:
    # S3's answer to a request sent to another region than the bucket's: a 301 without
    # Location (moto and the emulator do not serve regions), which obstore cannot follow.
    from aiohttp import web

    async def moved(request: web.Request) -> web.Response:
        headers = {"x-amz-bucket-region": "us-west-2", "Content-Type": "application/xml"}
        return web.Response(status=301, body=_REDIRECT, headers=headers)

    async with serving(moved) as endpoint:
        store = from_url("s3://b/data.zarr", storage_options={"endpoint": endpoint, "anon": True})
        with pytest.raises(StoreError, match=r"'zarr.json'.*storage_options=\{'region'"):
            await store.get("zarr.json")


async def test_a_write_answered_not_found_is_a_store_error(emulator: Emulator) -> None:
    """A 404 to a PUT is the server refusing the write, never a missing key to pass on."""
    store = s3(emulator)
    emulator.inject("status", status=404, methods=["PUT"])
    with pytest.raises(StoreError, match=r"cannot write 'c/0' in s3://bucket.*404"):
        await store.set("c/0", b"x")
    assert emulator.stats()["by_status"]["404"] == 1  # a refusal is not retried


async def test_unreachable_endpoint(closed_port: int) -> None:
    endpoint = f"http://127.0.0.1:{closed_port}"
    store = ObjectStore(
        S3Store(
            "bucket",
            endpoint=endpoint,
            region="us-east-1",
            skip_signature=True,
            client_options={"allow_http": True},
            retry_config=FAST_RETRY,
        )
    )
    http = ObjectStore(
        HTTPStore(f"{endpoint}/data", client_options={"allow_http": True}, retry_config=FAST_RETRY)
    )
    with config.set(retry_attempts=2, retry_base_delay_s=0.001, retry_max_delay_s=0.01):
        with pytest.raises(StoreError, match=rf"'c/0'.*{endpoint}.*connection refused"):
            await store.get("c/0")
        with pytest.raises(StoreError, match=rf"'zarr\.json'.*{endpoint}/data.*connection refused"):
            await http.get("zarr.json")


async def test_credentials_never_in_messages(emulator: Emulator) -> None:
    options = {k: v for k, v in emulator.storage_options().items() if k != "skip_signature"}
    store = ObjectStore(
        S3Store(
            "no-such-bucket",
            access_key_id="AKIDSECRETID",
            secret_access_key="hunter2-secret",
            retry_config=FAST_RETRY,
            **options,
        )
    )
    with pytest.raises(StoreError) as info:
        await store.get("k")
    for text in (str(info.value), repr(store)):
        assert "hunter2" not in text and "AKIDSECRETID" not in text


# -- transient failures: obstore retries them ----------------------------------------------


@pytest.mark.parametrize("kind", ["status", "reset", "truncate"])
async def test_transient_fault_is_retried(emulator: Emulator, kind: str) -> None:
    store = s3(emulator)
    await store.set("k", bytes(range(200)))
    emulator.reset_stats()
    emulator.inject(kind, count=1, methods=["GET"])
    assert bytes(await store.get("k", ByteRange.of(10, 50))) == bytes(range(10, 60))
    stats = emulator.stats()
    assert stats["faults"] == 1
    assert stats["requests"] == 2  # the failed try and the retry


async def test_slow_body_still_arrives(emulator: Emulator) -> None:
    store = s3(emulator)
    await store.set("k", bytes(1000))
    emulator.inject("slow", count=1, delay_s=0.1)
    assert len(await store.get("k")) == 1000
    assert emulator.stats()["faults"] == 1


async def test_persistent_server_error_gives_up(emulator: Emulator) -> None:
    store = s3(emulator)
    emulator.inject("status", status=500, key_glob="broken/*")
    fast = {"retry_attempts": 3, "retry_base_delay_s": 0.001, "retry_max_delay_s": 0.01}
    with config.set(**fast), pytest.raises(StoreError, match=r"'broken/0'.*500"):
        await store.get("broken/0")
    # 3 attempts in all, then a StoreError.
    stats = emulator.stats()
    assert stats["by_status"]["500"] == 3, stats


async def test_one_failing_key_fails_the_batch(emulator: Emulator) -> None:
    store = s3(emulator)
    await store.set_many([("ok", b"1234"), ("bad", b"5678")])
    emulator.inject("status", status=403, key_glob="*bad")
    with pytest.raises(StoreError, match="'bad'"):
        await store.get_partial_values([RangeRequest("ok"), RangeRequest("bad")])


async def test_read_timeout_is_a_store_error(emulator: Emulator) -> None:
    store = s3(emulator, client_options={"allow_http": True, "timeout": "200ms"})
    await store.set("k", b"x" * 100)
    emulator.inject("slow", delay_s=5)
    with pytest.raises(StoreError, match="'k'"):
        await store.get("k")


def test_store_error_is_an_os_error() -> None:
    assert issubclass(StoreError, OSError)


async def test_emulator_fixture_resets(
    emulator_s3_store: Callable[..., ObjectStore], emulator: Emulator
) -> None:
    assert emulator.stats()["requests"] == 0 and emulator.stats()["faults"] == 0
