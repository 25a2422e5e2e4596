"""S3 credentials found where the AWS tools find them: profiles of the shared files
(static keys, and through boto3 a role assumed with moto's STS or a
`credential_process`), the environment, an instance role (a metadata service on
127.0.0.1); requester-pays requests signed; fsspec's `profile` and `use_ssl`; and what a
refusal says.

A small recording S3 server, started here, answers like S3 and keeps the headers of
each request: unsigned requests, and those signed with a refused key, get 403
AccessDenied. moto checks no signature, so what is asserted is what reached the server.
"""

from __future__ import annotations

import json
import pickle
import shlex
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from aiohttp import web
from tests.servers import MOTO_BUCKET, in_background, serving

import aiozarr
from aiozarr import config
from aiozarr.cli.storage_options import parse_storage_options
from aiozarr.errors import StoreError
from aiozarr.storage.backends.credentials import ProfileCredentials
from aiozarr.storage.opening.url import from_url

ENVIRONMENT = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_ROLE_ARN",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_S3",
    "AWS_ENDPOINT",
    "AWS_METADATA_ENDPOINT",
    "AWS_CONFIG_FILE",
    "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_REQUEST_PAYER",
    "AWS_SKIP_SIGNATURE",
)
DENIED_KEY = "AKDENIED"
DENIED = (
    b'<?xml version="1.0"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>'
)


@dataclass
class Recorder:
    """An S3-like server on 127.0.0.1 that keeps each request's headers, and an EC2
    metadata service at the same address (its role only when `role` is set; 503
    Service Unavailable to everything when `unavailable`)."""

    url: str = ""
    requests: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)
    role: str = ""
    unavailable: bool = False

    def headers(self) -> dict[str, str]:
        """The headers of the last S3 request."""
        s3 = [r for r in self.requests if not r[1].startswith("/latest/")]
        assert s3, self.requests
        return s3[-1][2]

    def credential(self) -> str:
        """The access key the last S3 request was signed with."""
        authorization = self.headers().get("Authorization", "")
        assert "Credential=" in authorization, self.headers()
        return authorization.split("Credential=")[1].split("/")[0]

    def scope(self) -> str:
        """The region of the last S3 request's signature."""
        return self.headers()["Authorization"].split("Credential=")[1].split("/")[2]


async def _answer(recorder: Recorder, request: web.Request) -> web.Response:
    recorder.requests.append((request.method, request.path, dict(request.headers)))
    if request.path.startswith("/latest/"):
        return _metadata(recorder, request)
    authorization = request.headers.get("Authorization", "")
    if not authorization or f"Credential={DENIED_KEY}/" in authorization:
        return web.Response(status=403, body=DENIED, content_type="application/xml")
    body = b'{"answer": 42}'
    headers = {"ETag": '"e1"', "Last-Modified": "Mon, 01 Jan 2024 00:00:00 GMT"}
    if request.method == "HEAD":
        return web.Response(headers={**headers, "Content-Length": str(len(body))})
    return web.Response(body=body, headers=headers)


def _metadata(recorder: Recorder, request: web.Request) -> web.Response:
    """IMDSv2: a session token, the role's name, the role's credentials."""
    roles = "/latest/meta-data/iam/security-credentials/"
    if recorder.unavailable:
        return web.Response(status=503)
    if request.path == "/latest/api/token" and request.method == "PUT":
        return web.Response(text="imds-token")
    if request.headers.get("X-aws-ec2-metadata-token") != "imds-token":
        return web.Response(status=401)
    if request.path == roles and recorder.role:
        return web.Response(text=recorder.role)
    if request.path == roles + recorder.role and recorder.role:
        expires = (datetime.now(UTC) + timedelta(hours=6)).strftime("%Y-%m-%dT%H:%M:%SZ")
        return web.json_response(
            {
                "Code": "Success",
                "AccessKeyId": "ASIAINSTANCE",
                "SecretAccessKey": "s",
                "Token": "instance-token",
                "Expiration": expires,
            }
        )
    return web.Response(status=404)


@pytest.fixture(scope="module")
def recorder_server() -> Iterator[Recorder]:
    recorder = Recorder()

    async def handle(request: web.Request) -> web.Response:
        return await _answer(recorder, request)

    with in_background(serving(handle)) as recorder.url:
        yield recorder


@pytest.fixture
def recorder(recorder_server: Recorder) -> Recorder:
    recorder_server.requests.clear()
    recorder_server.role = ""
    recorder_server.unavailable = False
    return recorder_server


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A HOME of the test's own, without AWS settings in it or in the environment, and
    no instance metadata asked for."""
    for name in ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    (tmp_path / ".aws").mkdir()
    return tmp_path


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def s3(recorder: Recorder, **options: Any) -> Any:
    return from_url("s3://bucket/data.zarr", storage_options={"endpoint": recorder.url, **options})


async def read(store: Any) -> bytes:
    return bytes(await store.get("zarr.json"))


KEYS = """
[default]
aws_access_key_id = AKDEFAULT
aws_secret_access_key = default-secret
[analysis]
aws_access_key_id = AKANALYSIS
aws_secret_access_key = analysis-secret
"""


# -- profiles ---------------------------------------------------------------------------


async def test_aws_profile_signs_with_its_keys_and_region(
    home: Path, recorder: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(home / ".aws" / "credentials", KEYS)
    write(home / ".aws" / "config", "[profile analysis]\nregion = eu-west-3\n")
    monkeypatch.setenv("AWS_PROFILE", "analysis")
    assert await read(s3(recorder)) == b'{"answer": 42}'
    assert (recorder.credential(), recorder.scope()) == ("AKANALYSIS", "eu-west-3")


async def test_the_default_profile_is_used_without_aws_profile(
    home: Path, recorder: Recorder
) -> None:
    write(home / ".aws" / "credentials", KEYS)
    await read(s3(recorder))
    assert (recorder.credential(), recorder.scope()) == ("AKDEFAULT", "us-east-1")
    # A region of the options or the environment wins over the profile's.
    write(home / ".aws" / "config", "[default]\nregion = ap-south-1\n")
    await read(s3(recorder))
    assert recorder.scope() == "ap-south-1"
    await read(s3(recorder, region="sa-east-1"))
    assert recorder.scope() == "sa-east-1"


async def test_config_file_keys_with_a_session_token(
    home: Path, recorder: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = write(
        home / "elsewhere.ini",
        (
            "[profile temp]\naws_access_key_id = ASIATEMP\naws_secret_access_key = t\n"
            "aws_session_token = session-token-1\n"
        ),
    )
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(home / "missing"))
    await read(s3(recorder, profile="temp"))
    assert recorder.credential() == "ASIATEMP"
    assert recorder.headers()["x-amz-security-token"] == "session-token-1"


async def test_environment_keys_win_over_aws_profile_but_not_over_the_profile_option(
    home: Path, recorder: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(home / ".aws" / "credentials", KEYS)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKENV")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "env-secret")
    monkeypatch.setenv("AWS_PROFILE", "analysis")
    await read(s3(recorder))
    assert recorder.credential() == "AKENV"  # as boto3: AWS_PROFILE does not hide them
    await read(s3(recorder, profile="analysis"))
    assert recorder.credential() == "AKANALYSIS"  # boto3's Session(profile_name=...)
    await read(s3(recorder, profile="analysis", key="AKOPTION", secret="o"))
    assert recorder.credential() == "AKOPTION"  # the options' keys first


def test_a_missing_profile_is_named_with_the_files(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(home / ".aws" / "credentials", KEYS)
    with pytest.raises(StoreError, match=r"no AWS profile 'nope' in .*config.*credentials"):
        from_url("s3://bucket/x", storage_options={"profile": "nope"})
    monkeypatch.setenv("AWS_PROFILE", "gone")
    with pytest.raises(StoreError, match=r"no AWS profile 'gone'"):
        from_url("s3://bucket/x")
    with pytest.raises(StoreError, match=r"'profile' must be a profile's name"):
        from_url("s3://bucket/x", storage_options={"profile": ""})


def test_an_unreadable_file_is_named_without_its_lines(home: Path) -> None:
    write(home / ".aws" / "credentials", "aws_secret_access_key = hunter2\n[default]\n")
    with pytest.raises(StoreError, match=r"credentials file .* line 1 comes before") as info:
        from_url("s3://bucket/x")
    assert "hunter2" not in str(info.value)


def test_a_store_opened_by_profile_pickles_without_its_keys(
    home: Path, moto_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(home / ".aws" / "credentials", KEYS)
    monkeypatch.setenv("AWS_PROFILE", "analysis")
    url = f"s3://{MOTO_BUCKET}/profile-{home.name}.zarr"
    store = from_url(url, storage_options={"endpoint": moto_server, "region": "us-east-1"})
    assert store.obstore.credential_provider == ProfileCredentials("analysis")
    arr = aiozarr.create_array(store, shape=(6,), dtype="i4", chunks=(3,))
    arr[:] = np.arange(6)
    blob = pickle.dumps(arr)
    assert b"analysis-secret" not in blob and b"AKANALYSIS" not in blob
    assert pickle.loads(blob)[:].tolist() == [0, 1, 2, 3, 4, 5]


# -- profiles that boto3 serves ----------------------------------------------------------


async def test_a_role_profile_is_assumed_through_boto3_with_stss_answer(
    home: Path, recorder: Recorder, moto_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("boto3")
    write(home / ".aws" / "credentials", KEYS)
    write(
        home / ".aws" / "config",
        (
            "[profile reader]\nrole_arn = arn:aws:iam::123456789012:role/reader\n"
            "source_profile = analysis\nregion = eu-north-1\n"
        ),
    )
    monkeypatch.setenv("AWS_ENDPOINT_URL_STS", moto_server)  # boto3 asks moto's STS
    monkeypatch.setenv("AWS_PROFILE", "reader")
    await read(s3(recorder))
    key = recorder.credential()
    assert key.startswith("ASIA") and key not in ("AKANALYSIS", "AKDEFAULT"), key
    assert recorder.headers()["x-amz-security-token"]
    assert recorder.scope() == "eu-north-1"
    assert b"ASIA" not in pickle.dumps(s3(recorder))


async def test_a_credential_process_profile_through_boto3(home: Path, recorder: Recorder) -> None:
    pytest.importorskip("boto3")
    answer = {"Version": 1, "AccessKeyId": "AKPROCESS", "SecretAccessKey": "p"}
    script = write(home / "creds.py", f"print({json.dumps(answer)!r})\n")
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}"
    write(home / ".aws" / "config", f"[default]\ncredential_process = {command}\n")
    await read(s3(recorder))
    assert recorder.credential() == "AKPROCESS"


def test_without_boto3_a_role_profile_says_which_extra_to_install(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(
        home / ".aws" / "config",
        ("[profile sso]\nsso_session = corp\nsso_account_id = 1\nsso_role_name = r\n"),
    )
    monkeypatch.setitem(sys.modules, "boto3", None)  # an environment without boto3
    with pytest.raises(StoreError, match=r"profile 'sso' .* sso_session.*'aiozarr\[aws\]'"):
        from_url("s3://bucket/x", storage_options={"profile": "sso"})


# -- the environment's other sources -----------------------------------------------------


async def test_an_instance_role_is_left_to_obstore(
    home: Path, recorder: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AWS_EC2_METADATA_DISABLED")
    monkeypatch.setenv("AWS_METADATA_ENDPOINT", recorder.url)
    store = s3(recorder, region="us-east-2")  # the service lists no role: unsigned
    assert store.obstore.config["skip_signature"] in (True, "true")
    recorder.role = "reader-role"
    for options in ({}, {"anon": False}):  # anon=False: the probe finds the role
        recorder.requests.clear()
        await read(s3(recorder, **options))
        assert recorder.credential() == "ASIAINSTANCE"
        assert recorder.headers()["x-amz-security-token"] == "instance-token"


@pytest.mark.parametrize("service", ["closed", "no role"])
async def test_anon_false_with_nothing_to_sign_with_is_refused_at_open_after_one_probe(
    home: Path,
    recorder: Recorder,
    closed_port: int,
    service: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # anon=False left signing to obstore's chain, whose last source is the metadata
    # service: asked again on each of aiozarr's retries of each request (~7 s against a
    # refused port) before "no credentials". It is probed once, at open.
    monkeypatch.delenv("AWS_EC2_METADATA_DISABLED")
    metadata = recorder.url if service != "closed" else f"http://127.0.0.1:{closed_port}"
    with pytest.raises(StoreError) as raised:
        await read(s3(recorder, anon=False, metadata_endpoint=metadata))
    message = str(raised.value)
    assert message.startswith("cannot open 's3://bucket/data.zarr': anon=False asks for signed")
    assert f"the instance metadata service at {metadata} lists no role" in message
    assert "AWS_PROFILE=NAME" in message and "anon=True" in message
    asked = [(method, path) for method, path, _ in recorder.requests]
    roles = "/latest/meta-data/iam/security-credentials/"
    expected = {"closed": [], "no role": [("PUT", "/latest/api/token"), ("GET", roles)]}
    assert asked == expected[service]


def test_anon_false_with_a_busy_metadata_service_is_left_to_obstore(
    home: Path, recorder: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A service answering 503 is there but throttled (EC2's rate-limits a host's
    # requests): the open is not refused on one busy answer; obstore's chain asks again.
    monkeypatch.delenv("AWS_EC2_METADATA_DISABLED")
    recorder.unavailable = True
    store = s3(recorder, anon=False, metadata_endpoint=recorder.url)
    assert store.obstore.config.get("skip_signature") in (None, False, "false")
    assert [(m, p) for m, p, _ in recorder.requests] == [("PUT", "/latest/api/token")]


def test_anon_false_with_the_metadata_service_disabled_asks_nothing(
    home: Path, recorder: Recorder
) -> None:
    with pytest.raises(StoreError, match=r"was not asked \(AWS_EC2_METADATA_DISABLED=true\)"):
        s3(recorder, anon=False, metadata_endpoint=recorder.url)
    assert recorder.requests == []


async def test_anon_false_with_a_setting_the_probe_cannot_judge_is_left_to_obstore(
    home: Path, recorder: Recorder, closed_port: int
) -> None:
    """A container's credentials (or IMDSv1) are obstore's to fetch: no refusal at open,
    and the failure, when it comes, is told as no credentials, not as the bucket's."""
    options = {"anon": False, "container_credentials_relative_uri": "/v2/credentials/x"}
    store = s3(recorder, **options, metadata_endpoint=f"http://127.0.0.1:{closed_port}")
    with config.set(retry_attempts=1), pytest.raises(StoreError) as raised:
        await read(store)
    message = str(raised.value)
    assert "no credentials to sign with: none were given or found, so obstore asked" in message
    assert "nothing listens" not in message and "bucket refused" not in message
    assert not [r for r in recorder.requests if not r[1].startswith("/latest/")]


def test_nothing_found_is_unsigned_and_a_new_profile_is_seen(home: Path) -> None:
    store = from_url("s3://bucket/x", storage_options={"region": "us-east-1"})
    assert store.obstore.config["skip_signature"] in (True, "true")
    write(home / ".aws" / "credentials", KEYS)
    store = from_url("s3://bucket/x", storage_options={"region": "us-east-1"})
    assert "skip_signature" not in store.obstore.config
    assert store.obstore.credential_provider == ProfileCredentials("default")


# -- requester pays ----------------------------------------------------------------------


async def test_requester_pays_requests_are_signed(home: Path, recorder: Recorder) -> None:
    write(home / ".aws" / "credentials", KEYS)
    await read(s3(recorder, requester_pays=True))
    headers = recorder.headers()
    assert headers["x-amz-request-payer"] == "requester"
    assert "x-amz-request-payer" in headers["Authorization"]  # a signed header
    assert recorder.credential() == "AKDEFAULT"


def test_requester_pays_without_credentials_is_refused_at_open(home: Path) -> None:
    with pytest.raises(StoreError, match=r"requester_pays=True needs signed requests") as info:
        from_url("s3://bucket/x", storage_options={"requester_pays": True})
    for way in ("AWS_PROFILE", "AWS_ACCESS_KEY_ID", "key and secret"):
        assert way in str(info.value)
    write(home / ".aws" / "credentials", KEYS)
    with pytest.raises(StoreError, match=r"anon=True sends them unsigned"):
        from_url("s3://bucket/x", storage_options={"requester_pays": True, "anon": True})


# -- fsspec's options --------------------------------------------------------------------


def test_use_ssl_false_sends_requests_over_http(home: Path) -> None:
    store = from_url("s3://bucket/x", storage_options={"use_ssl": False, "region": "eu-west-1"})
    assert store.obstore.config["endpoint"] == "http://s3.eu-west-1.amazonaws.com"
    assert store.obstore.client_options["allow_http"] in (True, "true")
    # As for boto3, an endpoint given keeps its scheme; use_ssl=True changes nothing.
    kept = from_url(
        "s3://bucket/x",
        storage_options={"use_ssl": False, "endpoint_url": "https://minio.example:9000"},
    )
    assert kept.obstore.config["endpoint"] == "https://minio.example:9000"
    default = from_url("s3://bucket/x", storage_options={"use_ssl": True})
    assert "endpoint" not in default.obstore.config
    with pytest.raises(StoreError, match=r"'use_ssl' must be true or false"):
        from_url("s3://bucket/x", storage_options={"use_ssl": "sometimes"})


async def test_the_command_lines_spellings_reach_the_store(home: Path, recorder: Recorder) -> None:
    write(home / ".aws" / "credentials", KEYS)
    options = parse_storage_options(
        ["profile=analysis", "requester_pays=true", "use_ssl=false", f"endpoint_url={recorder.url}"]
    )
    await read(from_url("s3://bucket/data.zarr", storage_options=options))
    assert recorder.credential() == "AKANALYSIS"
    assert recorder.headers()["x-amz-request-payer"] == "requester"


# -- refusals ----------------------------------------------------------------------------


async def test_an_anonymous_refusal_says_so_and_names_the_ways_to_give_credentials(
    home: Path, recorder: Recorder
) -> None:
    store = s3(recorder)
    with pytest.raises(StoreError) as info:
        await read(store)
    message = str(info.value)
    assert "Authorization" not in recorder.headers()
    assert "cannot read 'zarr.json' in s3://bucket/data.zarr" in message
    assert "refused an anonymous request (403 Forbidden, AccessDenied)" in message
    for way in ("AWS_PROFILE", "profile=", "AWS_ACCESS_KEY_ID", "key and secret", "anon=True"):
        assert way in message, way


async def test_a_signed_refusal_names_where_the_credentials_came_from(
    home: Path, recorder: Recorder
) -> None:
    write(
        home / ".aws" / "credentials",
        f"[default]\naws_access_key_id = {DENIED_KEY}\naws_secret_access_key = d\n",
    )
    with pytest.raises(StoreError) as info:
        await read(s3(recorder))
    message = str(info.value)
    assert recorder.credential() == DENIED_KEY
    assert "signed with the credentials of AWS profile 'default'" in message
    assert "requester_pays=True" in message and "anon=True" in message
    with pytest.raises(StoreError, match="signed with the keys given in the storage options"):
        await read(s3(recorder, key=DENIED_KEY, secret="d"))


def test_profile_credentials_read_the_files_of_the_process_asking(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    provider: Callable[[], dict[str, Any]] = ProfileCredentials("analysis")
    with pytest.raises(StoreError, match="no AWS profile 'analysis'"):
        provider()
    write(home / ".aws" / "credentials", KEYS)
    answer = provider()
    assert (answer["access_key_id"], answer["secret_access_key"]) == (
        "AKANALYSIS",
        "analysis-secret",
    )
    assert answer["expires_at"] > datetime.now(UTC)
    write(home / ".aws" / "credentials", "[analysis]\nregion = x\n")
    with pytest.raises(StoreError, match="holds no credentials"):
        provider()


async def test_a_reader_without_the_profile_is_told_which_one_it_lacks(
    home: Path, recorder: Recorder
) -> None:
    credentials = write(home / ".aws" / "credentials", KEYS)
    store = s3(recorder, profile="analysis", region="eu-west-2")
    credentials.unlink()  # a worker whose HOME holds no such profile
    with pytest.raises(StoreError, match=r"cannot read 'zarr.json' .*no AWS profile 'analysis'"):
        await read(store)
    assert not recorder.requests  # nothing sent unsigned instead
