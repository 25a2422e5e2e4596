"""Secrets stay out of what aiozarr shows: reprs, error messages, log records and the
command line's output.

A presigned or SAS URL carries its signature in its query string and a URL with
`user:password@` its password: both are shown as `?<redacted>` and `***@`. Storage options
are named in messages, never their values. Served by the emulator over plain HTTP (which
ignores the query and the userinfo, so the URLs read as a real presigned one would).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import aiozarr
from aiozarr import config
from aiozarr.cli import info as info_cli
from aiozarr.emulator import Emulator
from aiozarr.errors import AiozarrError, StoreError
from aiozarr.storage.backends.redaction import redact_text, redact_url
from aiozarr.storage.opening.url import from_url

SECRET = "Zk9SEKRET0sig0Value"
PRESIGNED = (
    f"?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA{SECRET}CRED%2F20250101"
    f"&X-Amz-Expires=3600&X-Amz-Signature={SECRET}"
)
SAS = f"?sv=2022-11-02&ss=b&srt=co&sp=rl&se=2030-01-01T00%3A00%3A00Z&sig={SECRET}%3D"


@pytest.fixture
def served(emulator: Emulator, request: pytest.FixtureRequest) -> str:
    """The plain-HTTP URL of a small array on the emulator (no query, no userinfo)."""
    name = f"secrets-{request.node.name}-{id(request)}".replace("[", "-").replace("]", "")
    arr = aiozarr.create_array(
        emulator.s3_url(f"{name}.zarr"),
        shape=(8,),
        dtype="i4",
        chunks=(4,),
        storage_options=emulator.storage_options(),
    )
    arr[:] = np.arange(8, dtype="i4")
    return emulator.http_url(f"{name}.zarr")


def _with_secret(url: str, form: str) -> str:
    if form == "userinfo":
        scheme, _, rest = url.partition("://")
        return f"{scheme}://reader:{SECRET}@{rest}"
    return url + (PRESIGNED if form == "presigned" else SAS)


def _assert_hidden(*texts: Any) -> None:
    for text in texts:
        assert SECRET not in str(text), text


@pytest.mark.parametrize("form", ["presigned", "sas", "userinfo"])
def test_secret_urls_are_redacted_everywhere_they_are_shown(
    served: str,
    emulator: Emulator,
    form: str,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    caplog.set_level(logging.DEBUG, logger="aiozarr")
    url = _with_secret(served, form)
    store = from_url(url)
    arr = aiozarr.open_array(url, mode="r")
    assert arr[:].tolist() == list(range(8))  # the URL still works as given
    shown = [repr(store), str(store), repr(arr), str(arr), arr.info, arr.description.store]
    _assert_hidden(*shown)
    host = served.split("://")[1].split("/")[0]
    expected = "?<redacted>" if form != "userinfo" else f"://***@{host}"
    assert expected in repr(store)
    assert served.split("://", 1)[1] in repr(store)  # the rest of the URL reads as it was

    # A failing read: the message quotes obstore's, which names the URL it asked for.
    emulator.inject("status", status=500, methods=["GET"])
    with (
        config.set(retry_attempts=2, retry_base_delay_s=0.001),
        pytest.raises(StoreError) as failed,
    ):
        aiozarr.open_array(url, mode="r")[:]
    emulator.clear_faults()
    emulator.inject("reset", methods=["GET"])
    with (
        config.set(retry_attempts=1, retry_base_delay_s=0.001),
        pytest.raises(StoreError) as reset,
    ):
        aiozarr.open_array(url, mode="r")
    emulator.clear_faults()
    missing = url.replace(".zarr", "-missing.zarr", 1)
    with pytest.raises(AiozarrError) as not_found:
        aiozarr.open_array(missing, mode="r")
    errors = [failed.value, reset.value, not_found.value]
    for error in errors:
        _assert_hidden(str(error), repr(error), *getattr(error, "__notes__", []))
    assert "500" in str(failed.value)
    assert any(r.levelno == logging.DEBUG for r in caplog.records)
    _assert_hidden(caplog.text, *(r.getMessage() for r in caplog.records))

    # `aiozarr info`, as a table and as JSON, and its one-line error.
    capsys.readouterr()
    assert info_cli.main([url]) == 0
    table = capsys.readouterr().out
    _assert_hidden(table)
    name = served.rstrip("/").rsplit("/", 1)[1]
    assert f": {name}\n" in table  # the array's name: the URL's last path segment
    assert info_cli.main([url, "--json"]) == 0
    _assert_hidden(capsys.readouterr().out)
    assert info_cli.main([missing]) == 1
    out = capsys.readouterr()
    assert "error" in out.err
    _assert_hidden(out.out, out.err)


def test_storage_option_values_never_appear_in_errors(tmp_path: Path) -> None:
    options = {"aws_secret_access_key": SECRET, "aws_access_key_id": "AKIA" + SECRET}
    with pytest.raises(StoreError) as local:
        from_url(str(tmp_path / "local.zarr"), storage_options=options)
    with pytest.raises(StoreError) as through_api:
        aiozarr.open_array(tmp_path / "local.zarr", storage_options=options)
    with pytest.raises(StoreError) as http:
        from_url("https://example.invalid/data.zarr", storage_options={"password": SECRET})
    for error in (local.value, through_api.value, http.value):
        _assert_hidden(str(error), repr(error))
    assert "aws_secret_access_key" in str(local.value)
    assert "password" in str(http.value)


def test_unknown_scheme_error_redacts_the_url() -> None:
    with pytest.raises(StoreError) as info:
        from_url(f"ftp://user:{SECRET}@host/data.zarr{PRESIGNED}")
    _assert_hidden(str(info.value))
    assert "ftp://***@host/data.zarr?<redacted>" in str(info.value)


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://host/a/b.zarr?sig=abc&se=1", "https://host/a/b.zarr?<redacted>"),
        ("https://u:p@host:8443/a", "https://***@host:8443/a"),
        ("https://token@host/a#frag", "https://***@host/a#<redacted>"),
        ("s3://bucket/path.zarr", "s3://bucket/path.zarr"),
        ("https://host/a", "https://host/a"),
        ("/tmp/a?b#c", "/tmp/a?b#c"),  # a local path: nothing to hide
        ("relative/path", "relative/path"),
        ("http://[::1/x?sig=abc", "http://<redacted>"),  # malformed: all after the scheme
        # abfs's user is its container (hadoop's form), shown; a password is not
        ("abfs://c@acc.dfs.core.windows.net/p", "abfs://c@acc.dfs.core.windows.net/p"),
        ("ABFSS://c@acc.dfs.core.windows.net/p", "abfss://c@acc.dfs.core.windows.net/p"),
        ("abfss://c:key@acc.dfs.core.windows.net/p", "abfss://***@acc.dfs.core.windows.net/p"),
    ],
)
def test_redact_url(url: str, shown: str) -> None:
    assert redact_url(url) == shown


def test_redact_text_finds_every_url() -> None:
    text = (
        f"Error performing GET https://h/p/c/0{PRESIGNED} in 1ms - 'http://a:{SECRET}@h/x' "
        "and s3://bucket/key stay"
    )
    redacted = redact_text(text)
    _assert_hidden(redacted)
    assert "https://h/p/c/0?<redacted> in 1ms" in redacted
    assert "'http://***@h/x'" in redacted and "s3://bucket/key stay" in redacted
