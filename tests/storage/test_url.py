"""`from_url`: which store a URL opens, and how storage options reach obstore."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
from tests.servers import MOTO_BUCKET

import aiozarr
from aiozarr.byte_range import ByteRange
from aiozarr.emulator import Emulator
from aiozarr.errors import ReadOnlyError, StoreError
from aiozarr.storage.backends.local import LocalStore
from aiozarr.storage.backends.memory import MemoryStore
from aiozarr.storage.backends.object_store import ObjectStore
from aiozarr.storage.opening.url import from_url

CREDENTIAL_ENV = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_ROLE_ARN",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "GOOGLE_SERVICE_ACCOUNT",
    "GOOGLE_SERVICE_ACCOUNT_PATH",
    "GOOGLE_SERVICE_ACCOUNT_KEY",
    "AZURE_STORAGE_ACCOUNT_KEY",
    "AZURE_STORAGE_SAS_KEY",
    "AZURE_CLIENT_ID",
)


@pytest.fixture
def no_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in CREDENTIAL_ENV:
        monkeypatch.delenv(name, raising=False)
    # Nor the AWS files of the machine running the tests, nor its instance role.
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


async def test_s3_on_the_emulator_rooted_at_the_path(emulator: Emulator) -> None:
    (emulator.root / "url-test" / "data.zarr").mkdir(parents=True, exist_ok=True)
    (emulator.root / "url-test" / "data.zarr" / "zarr.json").write_bytes(b"{}")
    store = from_url(
        emulator.s3_url("url-test/data.zarr"), storage_options=emulator.storage_options()
    )
    assert isinstance(store, ObjectStore) and store.writable
    assert bytes(await store.get("zarr.json")) == b"{}"
    await store.set("c/0", b"chunk")
    assert (emulator.root / "url-test" / "data.zarr" / "c" / "0").read_bytes() == b"chunk"
    assert sorted([k async for k in store.list()]) == ["c/0", "zarr.json"]
    assert "s3://bucket/url-test/data.zarr" in repr(store)
    clone = pickle.loads(pickle.dumps(store))
    assert bytes(await clone.get("c/0")) == b"chunk"


async def test_fsspec_spellings(emulator: Emulator, no_credentials: None) -> None:
    (emulator.root / "fsspec").mkdir(exist_ok=True)
    (emulator.root / "fsspec" / "k").write_bytes(b"v")
    for options in (
        {"anon": True, "endpoint_url": emulator.endpoint, "region_name": "us-east-1"},
        {"anon": True, "client_kwargs": {"endpoint_url": emulator.endpoint}},
        {"endpoint_url": emulator.endpoint},  # no credentials anywhere: anonymous
    ):
        store = from_url(emulator.s3_url("fsspec"), storage_options=options)
        assert bytes(await store.get("k")) == b"v", options
    # http:// endpoints are allowed without asking.
    assert store.obstore.client_options["allow_http"] in (True, "true")


async def test_s3_with_keys_on_moto(moto_server: str) -> None:
    store = from_url(
        f"s3://{MOTO_BUCKET}/via-url",
        storage_options={
            "key": "testing",
            "secret": "testing",
            "endpoint_url": moto_server,
            "region_name": "us-east-1",
        },
    )
    await store.set("k", b"signed")
    assert bytes(await store.get("k", ByteRange.last(6))) == b"signed"
    assert "testing" not in repr(store)
    assert store.obstore.config.get("skip_signature") in (None, False, "false")


async def test_http_is_read_only(emulator: Emulator) -> None:
    (emulator.root / "web").mkdir(exist_ok=True)
    (emulator.root / "web" / "k").write_bytes(b"0123456789")
    store = from_url(emulator.http_url("web"))
    assert isinstance(store, ObjectStore) and store.read_only
    assert bytes(await store.get("k", ByteRange.of(2, 3))) == b"234"
    with pytest.raises(ReadOnlyError):
        await store.set("k", b"x")


async def test_http_root_with_a_trailing_slash(emulator: Emulator) -> None:
    (emulator.root / "web").mkdir(exist_ok=True)
    (emulator.root / "web" / "k").write_bytes(b"0123456789")
    store = from_url(emulator.http_url("web") + "/")
    assert bytes(await store.get("k")) == b"0123456789"


def test_s3_endpoint_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    store = from_url("s3://bucket/data.zarr")
    assert store.obstore.config["endpoint"] == "http://127.0.0.1:9"
    assert store.obstore.client_options["allow_http"] in (True, "true")
    options = {"endpoint": "http://127.0.0.1:10"}  # an option still wins
    assert from_url("s3://b/x", storage_options=options).obstore.config["endpoint"] == (
        "http://127.0.0.1:10"
    )


async def test_memory_urls_share_data() -> None:
    first = from_url("memory://shared-test")
    second = from_url("memory://shared-test")
    other = from_url("memory://other-test")
    assert isinstance(first, MemoryStore)
    await first.set("k", b"v")
    assert bytes(await second.get("k")) == b"v"
    assert await other.get("k") is None
    read_only = from_url("memory://shared-test", read_only=True)
    assert read_only.read_only and bytes(await read_only.get("k")) == b"v"


@pytest.mark.parametrize("form", ["plain", "file-url", "pathlike"])
async def test_local_paths(tmp_path: Path, form: str) -> None:
    url = {"plain": str(tmp_path), "file-url": tmp_path.as_uri(), "pathlike": tmp_path}[form]
    store = from_url(url)
    assert isinstance(store, LocalStore) and store.root == tmp_path.resolve()
    await store.set("a/b", b"x")
    assert (tmp_path / "a" / "b").read_bytes() == b"x"
    assert from_url(url, read_only=True).read_only


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("gs://public-bucket/data.zarr", "gs://public-bucket/data.zarr"),
        ("gcs://public-bucket/data.zarr", "gs://public-bucket/data.zarr"),
        ("s3://public-bucket/data.zarr", "s3://public-bucket/data.zarr"),
    ],
)
def test_public_buckets_need_no_credentials(url: str, expected: str, no_credentials: None) -> None:
    store = from_url(url)  # builds without network access or credentials
    assert isinstance(store, ObjectStore)
    assert repr(store).startswith(f"ObjectStore('{expected}")
    assert store.obstore.config["skip_signature"] in (True, "true")


def test_azure_url(no_credentials: None) -> None:
    store = from_url("az://container/data.zarr", storage_options={"account_name": "acct"})
    assert isinstance(store, ObjectStore)
    assert "az://acct/container" in repr(store)


def test_anon_false_keeps_the_credential_chain(no_credentials: None) -> None:
    # With keys it signs with them; with nothing to sign with it is refused at open
    # (tests/storage/test_aws_credentials.py: the instance role's probe).
    options = {"anon": False, "region": "us-east-1", "key": "K", "secret": "S"}
    store = from_url("s3://bucket/x", storage_options=options)
    assert store.obstore.config.get("skip_signature") in (False, "false")
    with pytest.raises(StoreError, match="anon=False asks for signed requests"):
        from_url("s3://bucket/x", storage_options={"anon": False, "region": "us-east-1"})


def test_obstore_clients_are_built_once_per_bucket_options_and_credentials(
    no_credentials: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    options = {"region": "us-east-1", "endpoint": "http://127.0.0.1:9"}
    first = from_url("s3://bucket/a.zarr", storage_options=options)
    again = from_url("s3://bucket/a.zarr", storage_options=dict(options))
    assert again.obstore is first.obstore and again.runtime is first.runtime
    sibling = from_url("s3://bucket/b.zarr", storage_options=options)
    assert sibling.obstore is first.obstore and sibling != first
    assert from_url("s3://other/a.zarr", storage_options=options).obstore is not first.obstore
    other = {**options, "region": "eu-west-1"}
    assert from_url("s3://bucket/a.zarr", storage_options=other).obstore is not first.obstore
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDNEW")  # new credentials: a new client
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    signed = from_url("s3://bucket/a.zarr", storage_options=options)
    assert signed.obstore is not first.obstore
    assert "skip_signature" not in signed.obstore.config


def test_explicit_credentials_are_used_not_shown(no_credentials: None) -> None:
    store = from_url(
        "s3://bucket/x",
        storage_options={
            "access_key_id": "AKIDSECRET",
            "secret_access_key": "hunter2",
            "region": "us-east-1",
        },
    )
    assert "skip_signature" not in store.obstore.config
    assert "hunter2" not in repr(store) and "AKIDSECRET" not in repr(store)


@pytest.mark.parametrize(
    ("url", "options", "message"),
    [
        ("ftp://host/data", None, "unknown URL scheme 'ftp'"),
        ("s3://bucket/x", {"no_such_option": 1}, "no_such_option"),
        ("https://example.org/x", {"region": "us-east-1"}, "only client options"),
        ("/tmp/x", {"anon": True}, "takes no storage options"),
        # a misspelled option: the one meant is named (obstore names only the wrong one)
        ("s3://bucket/x", {"endpont": "http://x"}, "'endpont' .*did you mean 'endpoint'"),
        ("s3://bucket/x", {"skip_signatur": True}, "did you mean 'skip_signature'"),
        ("gs://bucket/x", {"service_acount": "a"}, "did you mean 'service_account'"),
        ("s3://bucket/x", {"client_options": {"alow_http": True}}, "did you mean 'allow_http'"),
        # an fsspec spelling is named as given, not as the obstore name it became
        ("https://b.s3.amazonaws.com/x", {"anon": True}, r"got \['anon'\]"),
        ("https://h/x", {"client_kwargs": {"region_name": "r"}}, r"got \['region_name'\]"),
        ("gs://bucket/x", {"region_name": "r"}, "'region' .*given as 'region_name'"),
        ("az://c/x", {"account_name": "a", "region_name": "r"}, "given as 'region_name'"),
        # one slash: obstore says only "Unable to recognise URL"
        ("s3:/bucket/x", None, "no bucket or host after 's3:'.*did you mean 's3://bucket/x'"),
        ("https:/host/x", None, "no bucket or host after 'https:'"),
    ],
)
def test_bad_urls_and_options(url: str, options: dict[str, object] | None, message: str) -> None:
    with pytest.raises(StoreError, match=message):
        from_url(url, storage_options=options)


@pytest.mark.parametrize(
    ("url", "options", "message"),
    [
        (
            "s3://bucket/deep/x.zarr",
            {"endpont": "http://x"},
            "'s3://bucket/deep/x.zarr': .*endp",
        ),
        ("s3://bucket/deep/x.zarr", {"endpoint": "ftp://x"}, "'s3://bucket/deep/x.zarr': .*ftp"),
        ("gs://bucket/deep/x.zarr", {"region_name": "r"}, "'gs://bucket/deep/x.zarr': "),
        (
            "az://cont/deep/x.zarr",
            {},
            "'az://cont/deep/x.zarr': .*account_name",
        ),
        ("s3://bucket/deep/x.zarr", {"anon": True, "requester_pays": True}, "'s3://bucket/deep"),
        ("s3://", None, r"'s3://': no bucket or host after 's3:' \(URLs are s3://BUCKET/PATH\)$"),
    ],
)
def test_an_error_at_open_names_the_url_opened(
    url: str, options: dict[str, object] | None, message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Not the bucket's root ('s3://bucket'), which the store is built for; nor "did you
    # mean 's3://'?" for 's3://'.
    monkeypatch.delenv("AZURE_STORAGE_ACCOUNT_NAME", raising=False)
    with pytest.raises(StoreError, match=f"^cannot open {message}"):
        from_url(url, storage_options=options)


@pytest.mark.parametrize(
    ("options", "names"),
    [
        ({"endpoint": "http://127.0.0.1:1", "endpoint_url": "http://127.0.0.1:2"}, "'endpoint'"),
        ({"client_kwargs": {"region_name": "eu-west-1"}, "region": "us-east-1"}, "'region'"),
        ({"key": "AKID1", "access_key_id": "AKID2", "secret": "s"}, "'key' and 'access_key_id'"),
        ({"anon": True, "skip_signature": False, "key": "K", "secret": "S"}, "'anon' and"),
        ({"anon": "false", "skip_signature": "true"}, "'anon' and 'skip_signature'"),
    ],
)
def test_two_spellings_of_one_option_that_disagree_are_refused(
    options: dict[str, object], names: str
) -> None:
    # One was dropped, which depended on their order and on which client was built
    # first: another server or region, or requests signed that anon=True asked unsigned.
    with pytest.raises(StoreError, match=f"{names}.*different values") as raised:
        from_url("s3://bucket/x", storage_options=options)
    assert "AKID" not in str(raised.value)


def test_two_spellings_that_agree_are_taken() -> None:
    options = {"endpoint": "http://127.0.0.1:1", "endpoint_url": "http://127.0.0.1:1"}
    options |= {"anon": True, "skip_signature": "true"}
    store = from_url("s3://bucket/x", storage_options=options)
    assert store.obstore.config["endpoint"] == "http://127.0.0.1:1"


async def test_retry_settings_come_from_config(closed_port: int) -> None:
    from aiozarr import config

    with config.set(retry_attempts=1, retry_base_delay_s=0.01, retry_max_delay_s=0.02):
        store = from_url(
            "s3://bucket/x",
            storage_options={"endpoint": f"http://127.0.0.1:{closed_port}", "anon": True},
        )
    assert store.obstore.retry_config["max_retries"] == 0  # aiozarr retries, not obstore
    with pytest.raises(StoreError, match=f"127.0.0.1:{closed_port}"):
        await store.get("k")


def test_urls_of_one_bucket_send_through_one_client_and_its_connections(
    tmp_path: Path,
) -> None:
    # Each client keeps its connections for the next request: ten URLs with a client
    # each held ten pools (thirty arrays of 64 chunks: more than the emulator's 1,000).
    with Emulator(tmp_path, max_connections=1000).running_in_thread() as emulator:
        for i in range(10):
            local = LocalStore(emulator.root / f"a{i}")
            aiozarr.create_array(local, shape=(8,), chunks=(1,), dtype="i2")[:] = i
        options = emulator.storage_options()
        with aiozarr.config.set(max_concurrency=2):
            for i in range(10):
                array = aiozarr.open_array(emulator.s3_url(f"a{i}"), storage_options=options)
                assert (array[:] == i).all()
        assert emulator.connections <= 2


@pytest.mark.parametrize(
    ("path", "prefix"),
    [
        ("a/", "a"),
        ("./a/./b", "a/b"),
        ("a/../b", "b"),
        ("a/..", ""),
        ("", ""),
        ("a b/%41", "a b/%41"),
    ],
)
def test_object_store_url_paths_are_read_as_obstore_reads_them(path: str, prefix: str) -> None:
    store = from_url(f"s3://bucket/{path}", storage_options={"region": "us-east-1"})
    assert isinstance(store, ObjectStore)
    assert store.prefix == (prefix + "/" if prefix else "")


@pytest.mark.parametrize("path", ["a//b", "/a", "a//"])
def test_object_store_url_paths_with_an_empty_segment_are_refused(path: str) -> None:
    with pytest.raises(StoreError, match="empty segment"):
        from_url(f"s3://bucket/{path}", storage_options={"region": "us-east-1"})


async def test_stores_of_one_bucket_keep_their_own_keys(emulator: Emulator) -> None:
    options = emulator.storage_options()
    first = from_url(emulator.s3_url("prefixes/a"), storage_options=options)
    second = from_url(emulator.s3_url("prefixes/ab"), storage_options=options)
    root = from_url(emulator.s3_url(""), storage_options=options)
    assert first.obstore is second.obstore is root.obstore
    await first.set("zarr.json", b"a")
    await second.set("zarr.json", b"ab")
    await second.set("c/0", b"0")
    assert bytes(await first.get("zarr.json")) == b"a"
    assert [k async for k in first.list()] == ["zarr.json"]
    assert sorted([k async for k in second.list_prefix("")]) == ["c/0", "zarr.json"]
    assert sorted([k async for k in second.list_dir("")]) == ["c", "zarr.json"]
    assert sorted([k async for k in root.list_dir("prefixes")]) == ["a", "ab"]
    assert await second.getsize("c/0") == 1 and await first.getsize("c/0") is None
    await first.delete("zarr.json")
    assert bytes(await second.get("zarr.json")) == b"ab"
    assert not (emulator.root / "prefixes" / "a" / "zarr.json").exists()
    assert "s3://bucket/prefixes/ab" in repr(second) and second != first
    clone = pickle.loads(pickle.dumps(second))
    assert clone == second and bytes(await clone.get("c/0")) == b"0"


def test_stores_of_one_bucket_unpickle_onto_one_client(no_credentials: None) -> None:
    options = {"region": "us-east-1", "endpoint": "http://127.0.0.1:9"}
    first, second = (from_url(f"s3://bucket/{n}", storage_options=options) for n in "ab")
    copies = [pickle.loads(pickle.dumps(store)) for store in (first, second, first)]
    assert copies[0] == first and copies[1] == second and copies[0] != copies[1]
    assert copies[0].obstore is copies[1].obstore is copies[2].obstore
    other = from_url("s3://bucket/a", storage_options={**options, "region": "eu-west-1"})
    assert pickle.loads(pickle.dumps(other)).obstore is not copies[0].obstore
