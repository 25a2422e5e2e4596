"""`from_url`: the path of a URL is the key (or file) as written, nothing parsed away.

An object store's key may hold `#`, `?`, `%`, spaces and any Unicode; a `file:` URL is
percent-decoded and names no host (`storage/opening/url.py`, `local_path`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import aiozarr
from aiozarr.emulator import Emulator
from aiozarr.errors import NodeNotFoundError, ReferenceTargetError, StoreError
from aiozarr.storage.backends.local import LocalStore
from aiozarr.storage.backends.object_store import ObjectStore
from aiozarr.storage.backends.zip import ZipStore
from aiozarr.storage.opening.url import (
    escapes_noted,
    from_url,
    local_path,
    names_zip,
    open_zip,
)
from aiozarr.storage.references.targets import locate

# Keys obstore's own URL parsing cut short or changed (a fragment, a query, an escape).
ODD_NAMES = ["run#1.zarr", "run#2.zarr", "q?x=1/arr.zarr", "s p.zarr", "ünï €.zarr", "s%20p.zarr"]


def test_arrays_at_keys_with_hash_and_query_hold_their_own_values(
    emulator: Emulator, prefix: str
) -> None:
    options = emulator.storage_options()
    for i, name in enumerate(ODD_NAMES):
        array = aiozarr.create_array(
            emulator.s3_url(f"{prefix}/{name}"), shape=(3,), dtype="i4", storage_options=options
        )
        array[:] = np.full(3, i, dtype="i4")
    for i, name in enumerate(ODD_NAMES):
        array = aiozarr.open_array(emulator.s3_url(f"{prefix}/{name}"), storage_options=options)
        np.testing.assert_array_equal(array[:], np.full(3, i, dtype="i4"))
        assert (emulator.root / prefix / name / "zarr.json").is_file()  # the full key
    # Nothing was written under a key cut at '#' or '?', nor under an unescaped '%20'.
    assert sorted(p.name for p in (emulator.root / prefix).iterdir()) == sorted(
        ["run#1.zarr", "run#2.zarr", "q?x=1", "s p.zarr", "ünï €.zarr", "s%20p.zarr"]
    )


@pytest.mark.parametrize("opener", [aiozarr.open_array, aiozarr.open_group, aiozarr.open])
def test_a_percent_escape_that_opens_nothing_names_the_decoded_path(
    emulator: Emulator, prefix: str, opener: Any
) -> None:
    """`%20` in an object store's URL is 3 characters of the key, as s3fs reads it: where
    such a URL opens nothing, the error says so and names the decoded path's URL, which
    opens the array; a URL without an escape is told nothing of escapes."""
    options = emulator.storage_options()
    decoded = emulator.s3_url(f"{prefix}/my data.zarr")
    aiozarr.create_array(decoded, shape=(3,), dtype="i4", storage_options=options)
    escaped = emulator.s3_url(f"{prefix}/my%20data.zarr")
    with pytest.raises(NodeNotFoundError, match=r"percent-escape.*taken as written") as caught:
        opener(escaped, mode="r", storage_options=options)
    assert str(caught.value).endswith(f"the decoded path is {decoded!r}")
    assert aiozarr.open(decoded, mode="r", storage_options=options).shape == (3,)
    with pytest.raises(NodeNotFoundError) as plain:
        opener(emulator.s3_url(f"{prefix}/other.zarr"), mode="r", storage_options=options)
    assert "escape" not in str(plain.value)


@pytest.mark.parametrize(
    ("url", "decoded"),
    [
        ("gs://b/a%2Fb/c%C3%BC.zarr", "gs://b/a/b/cü.zarr"),
        ("az://cont/x%20y", "az://cont/x y"),
        ("s3://b/100%.zarr", None),  # no escape: '%' and two characters that are not hex
        ("https://h/x%20y.zarr", None),  # an HTTP URL is decoded by its server
        ("file:///tmp/x%20y.zarr", None),  # a file URL is decoded
        ("/tmp/x%20y.zarr", None),  # a path is a name
    ],
)
def test_only_an_object_store_url_is_told_of_its_escapes(url: str, decoded: str | None) -> None:
    missing = NodeNotFoundError(f"no Zarr array or group at '/' in {url}")
    noted = escapes_noted(missing, url)
    if decoded is None:
        assert noted is missing
    else:
        assert type(noted) is NodeNotFoundError and str(noted).startswith(str(missing))
        assert str(noted).endswith(f"the decoded path is {decoded!r}")


def test_the_store_shows_and_caches_the_true_prefix(emulator: Emulator) -> None:
    options = emulator.storage_options()
    first = from_url(emulator.s3_url("v/run#1.zarr"), storage_options=options)
    second = from_url(emulator.s3_url("v/run#2.zarr"), storage_options=options)
    assert isinstance(first, ObjectStore) and isinstance(second, ObjectStore)
    assert first.prefix == "v/run#1.zarr/" and second.prefix == "v/run#2.zarr/"
    assert "s3://bucket/v/run#1.zarr" in repr(first) and first != second
    again = from_url(emulator.s3_url("v/run#1.zarr"), storage_options=dict(options))
    assert again.runtime is first.runtime  # one store per URL and options
    assert again.obstore is first.obstore is second.obstore  # one client per bucket
    query = from_url(emulator.s3_url("v/q?x=1/arr.zarr"), storage_options=options)
    assert query.prefix == "v/q?x=1/arr.zarr/"


@pytest.mark.parametrize(
    ("url", "options", "expected"),
    [
        ("gs://bk/v/run#1.zarr", {"anon": True}, "gs://bk/v/run#1.zarr"),
        ("gcs://bk/a b?c.zarr", {"anon": True}, "gs://bk/a b?c.zarr"),
        ("az://cont/v/x#1%20.zarr", {"account_name": "acct"}, "az://acct/cont/v/x#1%20.zarr"),
        ("s3a://bk/ü/€#.zarr", {"anon": True, "region": "us-east-1"}, "s3://bk/ü/€#.zarr"),
    ],
)
def test_gcs_and_azure_keys_as_written(url: str, options: dict, expected: str) -> None:
    store = from_url(url, storage_options=options)  # builds without network access
    assert repr(store).startswith(f"ObjectStore('{expected}")


def test_a_bucket_name_with_hash_or_query_is_refused() -> None:
    with pytest.raises(StoreError, match=r"bucket 'bk\?x' holds"):
        from_url("s3://bk?x/data.zarr", storage_options={"anon": True})


@pytest.mark.parametrize(
    "url",
    ["s3://AKID:s3cret@bk/data.zarr", "s3a://me@bk/x", "s3://bk:9000/x", "gs://AKID:s3cret@bk/x"],
)
def test_a_bucket_with_a_user_password_or_port_is_refused(url: str) -> None:
    # obstore drops them and opens bucket 'bk' signed otherwise, or unsigned.
    with pytest.raises(StoreError, match="a bucket name holds no '@' or ':'") as raised:
        from_url(url, storage_options={"anon": True})
    assert "s3cret" not in str(raised.value)


async def test_memory_names_keep_hash() -> None:
    one, two = from_url("memory://keys-run#1"), from_url("memory://keys-run#2")
    await one.set("k", b"1")
    assert await two.get("k") is None


async def test_remote_zip_with_hash_in_its_name(emulator: Emulator, prefix: str) -> None:
    import zipfile

    (emulator.root / prefix).mkdir()
    with zipfile.ZipFile(emulator.root / prefix / "a#1.zip", "w") as archive:
        archive.writestr("k", b"v")
    url = emulator.s3_url(f"{prefix}/a#1.zip")
    assert names_zip(url)
    store = from_url(url, storage_options=emulator.storage_options())
    assert isinstance(store, ZipStore) and bytes(await store.get("k")) == b"v"


# -- file: URLs -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "path"),
    [
        ("file:///tmp/d/x#1.zarr", "/tmp/d/x#1.zarr"),  # '#' and '?' are in the path
        ("file:///tmp/d/q?x=1.zarr", "/tmp/d/q?x=1.zarr"),
        ("file:///tmp/d/s%20p.zarr", "/tmp/d/s p.zarr"),  # percent-decoded
        ("file:///tmp/d/x%231.zarr", "/tmp/d/x#1.zarr"),  # as Path.as_uri() writes '#'
        ("file:///tmp/%C3%BC.zarr", "/tmp/ü.zarr"),
        ("file://localhost/tmp/d.zarr", "/tmp/d.zarr"),
        ("FILE://LOCALHOST/tmp/d.zarr", "/tmp/d.zarr"),
        ("file:/tmp/d.zarr", "/tmp/d.zarr"),
        ("/tmp/d/s%20p.zarr", "/tmp/d/s%20p.zarr"),  # a plain path is as it is
    ],
)
def test_file_url_paths(url: str, path: str) -> None:
    assert local_path(url) == path


@pytest.mark.parametrize("url", ["file://tmp/d/y.zarr", "file://tmp/x.zip", "file://host/x"])
def test_a_file_url_naming_a_host_is_refused(url: str) -> None:
    with pytest.raises(StoreError, match=r"a file URL names no host, got '(tmp|host)'"):
        from_url(url)
    with pytest.raises(StoreError, match="names no host"):
        open_zip(url, mode="a")
    with pytest.raises(ReferenceTargetError, match="naming a host"):
        locate(url)


async def test_a_local_name_with_a_colon_is_a_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As fsspec (and so zarr-python) reads it: no '://', so a path, not a URL of scheme
    # 'run' ("unknown URL scheme 'run'", even for a pathlib.Path).
    monkeypatch.chdir(tmp_path)
    for name, value in (("run:1.zarr", 1), ("T00:00.zarr", 2)):
        array = aiozarr.create_array(Path(name), shape=(2,), dtype="i4")
        array[:] = np.full(2, value, dtype="i4")
        np.testing.assert_array_equal(aiozarr.open_array(name)[:], [value, value])
        assert (tmp_path / name / "zarr.json").is_file()
    assert isinstance(from_url("ab:c.zarr.zip"), ZipStore) and names_zip("ab:c.zip")
    with pytest.raises(StoreError, match="no bucket or host after 's3:'"):
        from_url("s3:/bucket/x")  # a scheme from_url opens: a typo, not a path


async def test_file_urls_open_the_directory_named(tmp_path: Path) -> None:
    for name in ["x#1.zarr", "x#2.zarr", "s p.zarr", "ü?.zarr"]:
        aiozarr.create_array(tmp_path / name, shape=(2,), dtype="i1")[:] = len(name)
    hashed = from_url(f"file://{tmp_path}/x#1.zarr")
    assert isinstance(hashed, LocalStore) and hashed.root == tmp_path / "x#1.zarr"
    for url in [
        f"file://{tmp_path}/x#2.zarr",
        (tmp_path / "x#2.zarr").as_uri(),
        f"file://{tmp_path}/s%20p.zarr",
        (tmp_path / "s p.zarr").as_uri(),
        f"file://localhost{tmp_path}/ü?.zarr",
    ]:
        name = local_path(url).rpartition("/")[2]
        assert list(aiozarr.open_array(url, mode="r")[:]) == [len(name)] * 2, url
    assert not (tmp_path / "x").exists()


async def test_file_url_zips_follow_the_same_rule(tmp_path: Path) -> None:
    for name in ["s p.zip", "x#1.zip"]:
        with ZipStore(tmp_path / name, mode="w") as archive:
            await archive.set("k", name.encode())
    for url, name in [
        (f"file://{tmp_path}/s%20p.zip", "s p.zip"),
        ((tmp_path / "s p.zip").as_uri(), "s p.zip"),
        (f"file://{tmp_path}/x#1.zip", "x#1.zip"),
        (f"file://localhost{tmp_path}/x%231.zip", "x#1.zip"),
    ]:
        assert names_zip(url), url
        store = from_url(url, read_only=True)
        assert isinstance(store, ZipStore) and bytes(await store.get("k")) == name.encode()
