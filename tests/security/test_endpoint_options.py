"""An endpoint that is not a URL is refused with a `StoreError` naming the option, before
obstore sees it: obstore takes any text and panics on the first request (a Rust panic
printed on stderr, then `pyo3_async_runtimes.RustPanic`, which is no `Exception`)."""

from __future__ import annotations

import numpy as np
import pytest

import aiozarr
from aiozarr.emulator import Emulator
from aiozarr.errors import StoreError
from aiozarr.storage.backends.redaction import redact_url
from aiozarr.storage.opening.url import from_url

BAD = [
    ("not a url", "white space"),
    ("localhost:9000", "scheme"),
    ("ftp://host", "scheme"),
    ("http://", "no host"),
    ("http://host:99999", "out of range"),
    ("http://host/path?x=1", "query"),
    ("", "empty"),
]


@pytest.mark.parametrize(("endpoint", "problem"), BAD)
@pytest.mark.parametrize("option", ["endpoint", "endpoint_url", "aws_endpoint"])
def test_an_endpoint_that_is_no_url_is_refused(
    capfd: pytest.CaptureFixture[str], endpoint: str, problem: str, option: str
) -> None:
    with pytest.raises(StoreError) as info:
        aiozarr.open_array("s3://bucket/data.zarr", storage_options={option: endpoint})
    message = str(info.value)
    assert f"storage option {option!r}" in message and problem in message, message
    assert repr(redact_url(endpoint)) in message  # the value, its query hidden
    captured = capfd.readouterr()
    assert captured.err == "" and captured.out == ""


def test_an_endpoint_in_client_kwargs_is_checked_too(capfd: pytest.CaptureFixture[str]) -> None:
    options = {"client_kwargs": {"endpoint_url": "not a url"}}
    with pytest.raises(StoreError, match="'endpoint_url'"):
        from_url("s3://bucket/data.zarr", storage_options=options)
    assert capfd.readouterr().err == ""


def test_a_password_in_an_endpoint_is_refused_and_not_shown() -> None:
    with pytest.raises(StoreError) as info:
        from_url("s3://b/p", storage_options={"endpoint": "http://me:hunter2pw@host:9000"})
    assert "hunter2pw" not in str(info.value) and "***@host:9000" in str(info.value)


def test_an_endpoint_from_the_environment_is_checked(
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    for name in ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ENDPOINT_URL", "minio:9000")
    with pytest.raises(StoreError, match="environment variable AWS_ENDPOINT_URL"):
        aiozarr.open_array("s3://bucket/env-endpoint.zarr")
    assert capfd.readouterr().err == ""


def test_a_good_endpoint_still_works(emulator: Emulator) -> None:
    options = emulator.storage_options()
    url = emulator.s3_url("endpoint-ok.zarr")
    arr = aiozarr.create_array(url, shape=(4,), dtype="u2", storage_options=options)
    arr[:] = np.arange(4)
    options["endpoint_url"] = options.pop("endpoint") + "/"
    assert aiozarr.open_array(url, storage_options=options)[:].tolist() == [0, 1, 2, 3]
