"""An obstore store's key space names its data (kind, bucket or container, server), not
how its requests are signed: two handles on one bucket share what the chunk cache
holds, so a write through one drops what the other cached."""

from __future__ import annotations

from typing import Any

import pytest
from obstore.store import AzureStore, GCSStore, S3Store

from aiozarr.storage.backends.object_store import ObjectStore

ENDPOINT = "http://127.0.0.1:9000"


def _s3(bucket: str = "b", **config: Any) -> ObjectStore:
    options = {"endpoint": ENDPOINT, "skip_signature": True, "region": "us-east-1"} | config
    return ObjectStore(S3Store(bucket, **options))


@pytest.mark.parametrize(
    "other",
    [
        {"endpoint": ENDPOINT + "/"},
        {"endpoint": "HTTP://127.0.0.1:9000"},
        {"skip_signature": False, "access_key_id": "x", "secret_access_key": "y"},
        {"region": "eu-west-1"},
    ],
    ids=["trailing-slash", "scheme-case", "credentials", "region"],
)
def test_equivalent_configurations_are_one_space(other: dict[str, Any]) -> None:
    assert _s3(**other).key_space() == _s3().key_space()


def test_a_default_port_is_the_port_it_means() -> None:
    plain = _s3(endpoint="https://s3.example.com")
    assert _s3(endpoint="https://S3.Example.com:443/").key_space() == plain.key_space()


@pytest.mark.parametrize(
    "other",
    [
        {"bucket": "c"},
        {"endpoint": "http://127.0.0.1:9001"},
        {"endpoint": "https://127.0.0.1:9000"},
        {"endpoint": "http://localhost:9000"},  # names are not resolved
    ],
    ids=["bucket", "port", "scheme", "host-name"],
)
def test_other_data_is_another_space(other: dict[str, Any]) -> None:
    assert _s3(**other).key_space() != _s3().key_space()


def test_gcs_and_azure_name_their_bucket_and_container() -> None:
    gcs = ObjectStore(GCSStore("b", skip_signature=True)).key_space()
    assert gcs != _s3().key_space()
    assert ObjectStore(GCSStore("c", skip_signature=True)).key_space() != gcs
    endpoint = "http://127.0.0.1:10000/acc"
    azure = ObjectStore(AzureStore("c", account_name="acc", endpoint=endpoint)).key_space()
    signed = AzureStore("c", account_name="acc", endpoint=endpoint + "/", skip_signature=True)
    assert ObjectStore(signed).key_space() == azure
    assert ObjectStore(AzureStore("d", account_name="acc", endpoint=endpoint)).key_space() != azure


def test_onelake_and_azure_storage_are_two_spaces() -> None:
    """`abfs://C@A.dfs.fabric.microsoft.com` is OneLake, another service than
    `abfs://C@A.dfs.core.windows.net` (Azure Storage): one account and container name
    on both named one space, and dask merged the blocks of arrays at one path on both."""
    fabric = AzureStore("c", account_name="acc", use_fabric_endpoint=True, skip_signature=True)
    storage = AzureStore("c", account_name="acc", skip_signature=True)
    assert ObjectStore(fabric).key_space() != ObjectStore(storage).key_space()
