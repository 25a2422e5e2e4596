"""GCS and Azure credentials in any spelling obstore takes, and gcsfs's and adlfs's own,
sign the requests; without one the store reads unsigned (public data). A server on
127.0.0.1 records what each request carried."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from aiohttp import web
from tests.servers import in_background, serving

from aiozarr.errors import StoreError
from aiozarr.storage.opening import cloud_credentials
from aiozarr.storage.opening.url import from_url
from aiozarr.sync import run

# azurite's well-known development key (public, documented by Microsoft)
KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="


class Recorder:
    """An HTTP server answering 404 to everything, keeping each request's signature."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.url = ""

    async def record(self, request: web.Request) -> web.Response:
        auth = request.headers.get("Authorization", "")
        self.seen.append(auth.split(" ")[0] if auth else f"query:{request.query_string}")
        return web.Response(status=404)


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    found = Recorder()
    with in_background(serving(found.record)) as found.url:
        yield found


def _signature(recorder: Recorder, scheme: str, options: dict[str, Any]) -> str:
    where = (
        {"account_name": "acc", "endpoint": f"{recorder.url}/acc"}
        if scheme == "az"
        else {"base_url": recorder.url}
    )
    recorder.seen.clear()
    store = from_url(f"{scheme}://c/p", storage_options={**options, **where})
    assert run(store.get, "zarr.json") is None
    return recorder.seen[0]


@pytest.mark.parametrize(
    ("scheme", "options", "signed"),
    [
        ("az", {"account_key": KEY}, "SharedKey"),
        ("az", {"azure_storage_account_key": KEY}, "SharedKey"),
        ("az", {"master_key": KEY}, "SharedKey"),
        ("az", {"azure_storage_token": "t"}, "Bearer"),
        ("az", {"token": "t"}, "Bearer"),  # not S3's session token
        ("az", {"azure_storage_sas_token": "sv=1&sig=x"}, "query:sv=1&sig=x"),
        ("az", {"account_key": KEY, "anon": "False"}, "SharedKey"),  # `-o anon=False`
        ("az", {"account_key": KEY, "anon": "true"}, "query:"),
        ("az", {"connection_string": f"AccountName=acc;AccountKey={KEY}"}, "SharedKey"),
        ("az", {}, "query:"),  # public data: unsigned
        ("gs", {"google_bearer_token": "t"}, "Bearer"),
        ("gs", {"token": "anon"}, "query:"),  # gcsfs's anonymous
        ("gs", {}, "query:"),
    ],
)
def test_each_spelling_of_a_credential_signs(
    recorder: Recorder, scheme: str, options: dict[str, Any], signed: str
) -> None:
    assert _signature(recorder, scheme, options) == signed


def test_a_credential_in_the_environment_signs(
    recorder: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AZURE_STORAGE_MASTER_KEY", KEY)
    assert _signature(recorder, "az", {}) == "SharedKey"


def test_gcsfs_tokens_are_obstores_options(tmp_path: Any) -> None:
    key = tmp_path / "sa.json"
    key.write_text("{}")
    assert cloud_credentials.gcsfs_token(str(key)) == {"service_account_path": str(key)}
    assert cloud_credentials.gcsfs_token({"type": "service_account"}) == {
        "service_account_key": '{"type": "service_account"}'
    }
    assert cloud_credentials.gcsfs_token("google_default") == {"skip_signature": False}
    with pytest.raises(StoreError, match="gcsfs's values"):
        cloud_credentials.gcsfs_token("/no/such/file.json")


def test_a_connection_string_part_with_no_counterpart_is_refused() -> None:
    with pytest.raises(StoreError, match="'QueueEndpoint' has no obstore counterpart"):
        from_url("az://c/p", storage_options={"connection_string": "QueueEndpoint=http://x"})


async def test_gcsfs_endpoint_url_names_the_gcs_server(recorder: Recorder) -> None:
    # gcsfs's spelling; obstore's GCS calls it base_url, and refused the `endpoint` it
    # was turned into with "did you mean 'endpoint_url'?", the name given.
    store = from_url("gs://c/p", storage_options={"endpoint_url": recorder.url, "anon": True})
    assert await store.get("zarr.json") is None
    assert recorder.seen == ["query:"]


@pytest.mark.parametrize("options", [{"anon": True}, {"token": "anon"}])
def test_anonymous_gcs_failing_over_the_environments_credentials_says_which(
    options: dict[str, Any], tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # obstore reads GOOGLE_APPLICATION_CREDENTIALS even for an unsigned store; gcsfs's
    # token='anon' does not, so the user is told which variable to fix or unset.
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "gone.json"))
    with pytest.raises(StoreError, match="fix or unset GOOGLE_APPLICATION_CREDENTIALS"):
        from_url("gs://c/p", storage_options={**options, "base_url": "http://127.0.0.1:1"})


@pytest.mark.parametrize(
    "options",
    [
        {"account_name": "acc"},
        {"AZURE_STORAGE_ACCOUNT_NAME": "acc"},
        {"connection_string": "AccountName=acc;AccountKey=a2V5"},
    ],
)
def test_an_abfs_url_s_account_may_be_given_again(options: dict[str, Any]) -> None:
    """adlfs takes `abfs://C@ACCOUNT.dfs.core.windows.net/...` with the account given in
    the options too; obstore refused it twice, even the same ("Duplicate key
    azure_storage_account_name provided")."""
    store = from_url("abfs://c@acc.dfs.core.windows.net/p", storage_options=options)
    assert store.obstore.config["account_name"] == "acc"


def test_an_abfs_url_and_an_option_naming_two_accounts_is_an_error() -> None:
    with pytest.raises(StoreError, match=r"'acc'.*'other'"):
        from_url("abfs://c@acc.dfs.core.windows.net/p", storage_options={"account_name": "other"})
