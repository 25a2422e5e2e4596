"""`ObjectStore` over obstore's AzureStore (on azurite) and GCSStore (on the emulator).

The shared `StoreContract` runs on both; the tests below it open the same data through
`from_url` (`az://`, `abfs://`, `gs://`) and check the failures particular to Azure.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import dask.array as da
import numpy as np
import pytest
from aiohttp import web
from obstore.store import GCSStore
from tests.servers import AZURE_CONTAINER, AZURITE_ACCOUNT, FAST_RETRY, serving, unique_prefix

import aiozarr
from aiozarr.byte_range import ByteRange
from aiozarr.emulator import Emulator
from aiozarr.errors import StoreError
from aiozarr.storage.backends.object_store import ObjectStore
from aiozarr.storage.opening.url import from_url
from aiozarr.storage.policy.shaping import RequestShape
from aiozarr.storage.protocol import Store
from aiozarr.testing.store_contract import StoreContract


class TestAzurite(StoreContract):
    @pytest.fixture
    def store(self, azure_store: Callable[..., ObjectStore]) -> Store:
        return azure_store()


class TestGCSOnEmulator(StoreContract):
    @pytest.fixture
    def store(self, gcs_store: Callable[..., ObjectStore]) -> Store:
        return gcs_store()


def _url_options(options: dict[str, Any]) -> dict[str, Any]:
    """The fixture's obstore settings as a user would pass them to `from_url`."""
    options = dict(options)
    options.pop("client_options")  # an http:// endpoint / base_url turns on allow_http
    return options


# -- Azure -------------------------------------------------------------------------------


@pytest.mark.parametrize("scheme", ["az", "abfs"])
async def test_azure_url_is_rooted_at_its_path(
    scheme: str, azure_options: dict[str, Any], azure_store: Callable[..., ObjectStore]
) -> None:
    prefix = unique_prefix()
    store = from_url(
        f"{scheme}://{AZURE_CONTAINER}/{prefix}/data.zarr",
        storage_options=_url_options(azure_options),
    )
    assert isinstance(store, ObjectStore)
    await store.set("c/0", b"chunk")
    assert bytes(await store.get("c/0", ByteRange.last(3))) == b"unk"
    assert [k async for k in store.list_prefix("")] == ["c/0"]
    # The same blob, seen from the container's root.
    plain = azure_store(prefix=prefix)
    assert bytes(await plain.get("data.zarr/c/0")) == b"chunk"


async def test_azure_url_read_only(
    azure_options: dict[str, Any], azure_store: Callable[..., ObjectStore]
) -> None:
    prefix = unique_prefix()
    await azure_store(prefix=prefix).set("k", b"v")
    store = from_url(
        f"az://{AZURE_CONTAINER}/{prefix}",
        storage_options=_url_options(azure_options),
        read_only=True,
    )
    assert store.read_only
    assert bytes(await store.get("k")) == b"v"


async def test_azure_missing_container_is_an_error(azure_store: Callable[..., ObjectStore]) -> None:
    store = azure_store(container="no-such-container")
    with pytest.raises(StoreError, match="no-such-container"):
        await store.get("k")
    with pytest.raises(StoreError, match="no-such-container"):
        await store.set("k", b"v")


async def test_azure_wrong_key_is_an_error(azure_options: dict[str, Any]) -> None:
    options = dict(azure_options, account_key="d3Jvbmcga2V5")  # base64 of "wrong key"
    store = from_url(
        f"az://{AZURE_CONTAINER}/{unique_prefix()}", storage_options=_url_options(options)
    )
    with pytest.raises(StoreError) as caught:
        await store.get("some/key")
    assert "some/key" in str(caught.value)
    assert "d3Jvbmcga2V5" not in str(caught.value)  # no credentials in messages
    assert "d3Jvbmcga2V5" not in repr(store)


async def test_azure_repr_names_account_and_container(
    azure_store: Callable[..., ObjectStore],
) -> None:
    text = repr(azure_store(prefix="p/q"))
    assert f"{AZURITE_ACCOUNT}/{AZURE_CONTAINER}/p/q" in text
    assert "Eby8vdM02" not in text


# -- GCS ---------------------------------------------------------------------------------


@pytest.mark.parametrize("scheme", ["gs", "gcs"])
async def test_gcs_url_is_rooted_at_its_path(
    scheme: str, emulator: Emulator, gcs_options: dict[str, Any]
) -> None:
    prefix = unique_prefix()
    store = from_url(
        f"{scheme}://{emulator.bucket}/{prefix}/data.zarr",
        storage_options=_url_options(gcs_options),
    )
    await store.set("c/0", b"chunk")
    assert bytes(await store.get("c/0", ByteRange.of(1, 2))) == b"hu"
    assert [k async for k in store.list_prefix("")] == ["c/0"]
    assert (emulator.root / prefix / "data.zarr" / "c" / "0").read_bytes() == b"chunk"


async def test_gcs_public_read_needs_no_credentials(emulator: Emulator) -> None:
    prefix = unique_prefix()
    (emulator.root / prefix).mkdir()
    (emulator.root / prefix / "zarr.json").write_bytes(b"{}")
    store = from_url(
        f"gs://{emulator.bucket}/{prefix}", storage_options={"base_url": emulator.endpoint}
    )
    assert bytes(await store.get("zarr.json")) == b"{}"
    assert await store.get("missing") is None


async def test_gcs_url_with_a_token_signs_reads() -> None:
    # A bearer token is a credential: reads must carry it, not go out anonymous.
    seen: list[str | None] = []

    async def record(request: web.Request) -> web.Response:
        seen.append(request.headers.get("Authorization"))
        return web.Response(status=404)

    async with serving(record) as url:
        store = from_url(
            "gs://bucket/data.zarr",
            storage_options={
                "base_url": url,
                "bearer_token": "secret-token",
                "client_options": {"allow_http": True},
            },
        )
        assert await store.get("zarr.json") is None
        assert seen == ["Bearer secret-token"]


async def test_an_azure_suffix_read_never_mixes_two_versions(
    azure_store: Callable[..., ObjectStore],
) -> None:
    """Azure takes no suffix ranges: the size, then the range. A blob rewritten between
    the two gave the new blob's bytes at the old size's offsets (a shard index read from
    chunk data); now it is asked again."""
    plain = azure_store()
    old, new = b"a" * 100 + b"OLD-TAIL", b"b" * 1000 + b"NEW-TAIL"
    await plain.set("k", old)

    class RewrittenAfterItsSize(ObjectStore):
        rewrites = 0

        async def _fetch(self, key, byte_range, max_bytes=None):  # type: ignore[no-untyped-def]
            if byte_range is not None and byte_range.length is not None and not self.rewrites:
                self.rewrites += 1
                await plain.set("k", new)  # after the HEAD, before the GET
            return await super()._fetch(key, byte_range, max_bytes)

    store = RewrittenAfterItsSize(plain.obstore)
    data, _ = await store.get_versioned("k", ByteRange.last(8))
    assert bytes(data) == b"NEW-TAIL" and store.rewrites == 1


async def test_an_azure_batch_delete_with_missing_keys_deletes_the_rest_at_once(
    azure_store: Callable[..., ObjectStore],
) -> None:
    """A batch with a missing key is refused whole: the rest go one by one, together."""
    store = azure_store()
    keys = [f"c/{i}" for i in range(40)]
    for key in keys:
        await store.set(key, b"x")
    await store.delete_many([*keys, "c/missing"])
    assert [key async for key in store.list_prefix("c/")] == []
    assert store.runtime.requests.peak_inflight > 1  # not one after another


def test_two_gcs_servers_are_two_key_spaces(
    tmp_path: Path, emulator: Emulator, gcs_options: dict[str, Any]
) -> None:
    """One bucket name on two GCS servers (an emulator beside GCS itself) is two buckets:
    their stores named one key space (GCS's server is `base_url`, not `endpoint`), so
    dask merged the blocks of arrays at one path on both into one."""
    path = unique_prefix() + "/a.zarr"
    with Emulator(tmp_path, bucket=emulator.bucket).running_in_thread() as other:
        stores = [
            from_url(
                f"gs://{emulator.bucket}/{path}",
                storage_options={**_url_options(gcs_options), "base_url": server.endpoint},
            )
            for server in (emulator, other)
        ]
        assert stores[0].key_space() != stores[1].key_space()
        for n, store in enumerate(stores):
            aiozarr.create_array(store, shape=(8,), dtype="i4", chunks=(4,))[:] = np.full(8, n)
        arrays = [aiozarr.to_dask(aiozarr.open_array(store, mode="r")) for store in stores]
        got = da.concatenate(arrays).compute(scheduler="sync")
        np.testing.assert_array_equal(got, np.repeat([0, 1], 8))


async def test_gcs_errors_name_its_server(gcs_options: dict[str, Any]) -> None:
    """A GCS store's server is its `base_url`: a refused connection and a missing bucket
    name it (they named the bucket's gs:// URL, as if Google's servers had refused)."""
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    nowhere = f"http://127.0.0.1:{port}"
    store = ObjectStore(
        GCSStore("b", retry_config=FAST_RETRY, **{**gcs_options, "base_url": nowhere})
    )
    with pytest.raises(StoreError, match=f"nothing listens at {nowhere}"):
        await store.get("k")
    missing = ObjectStore(GCSStore("no-such-bucket", **gcs_options))
    with pytest.raises(StoreError, match=f"does not exist at {gcs_options['base_url']}"):
        await missing.get("k")


async def test_azure_concurrent_block_uploads_of_one_blob_both_land(
    azure_store: Callable[..., ObjectStore],
) -> None:
    """Azure discards a blob's uncommitted blocks when any upload of it commits: of two
    block uploads of one blob at once, the later commit was refused (400 InvalidBlockList)
    and its `set` failed. It is uploaded again; the blob holds one value whole."""
    store = azure_store()
    size = 2 * RequestShape.of(store.capabilities).upload_part_bytes + 5
    values = [bytes([n]) * size for n in range(3)]
    async with anyio.create_task_group() as tg:
        for value in values:
            tg.start_soon(store.set, "big", value)
    assert bytes(await store.get("big")) in values
