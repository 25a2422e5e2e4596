"""Listings as S3 clients page and decode them: ListObjects (v1: `marker`, `NextMarker`),
`encoding-type=url`, a start inside a folder under `delimiter=/`, ListBuckets."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from xml.etree import ElementTree

import aiohttp
import pytest

from aiozarr.emulator import Emulator

NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"


@pytest.fixture
async def emu(tmp_path: Path) -> AsyncIterator[Emulator]:
    for key in ("k0", "k1", "k2", "k3", "k4", "x/a", "x/y/z", "z"):
        (tmp_path / key).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / key).write_bytes(b"1")
    async with Emulator(tmp_path) as emu:
        yield emu


async def listing(emu: Emulator, **params: str) -> tuple[int, ElementTree.Element]:
    async with (
        aiohttp.ClientSession() as http,
        http.get(emu.http_url(""), params=params) as resp,
    ):
        return resp.status, ElementTree.fromstring(await resp.read())


def texts(root: ElementTree.Element, path: str) -> list[str]:
    return [e.text or "" for e in root.iterfind(path.replace("{}", NS))]


async def test_list_objects_v1_pages_by_marker(emu: Emulator) -> None:
    keys: list[str] = []
    marker = ""
    for _ in range(10):
        status, page = await listing(emu, marker=marker, **{"max-keys": "3"})
        assert status == 200  # was 501: `marker` refused
        assert page.findtext(f"{NS}Marker") == marker
        assert page.find(f"{NS}KeyCount") is None
        assert page.find(f"{NS}NextContinuationToken") is None
        keys += texts(page, "{}Contents/{}Key")
        if page.findtext(f"{NS}IsTruncated") == "false":
            break
        marker = page.findtext(f"{NS}NextMarker") or ""
    assert keys == ["k0", "k1", "k2", "k3", "k4", "x/a", "x/y/z", "z"]


async def test_list_objects_v1_next_marker_is_a_common_prefix(emu: Emulator) -> None:
    status, page = await listing(emu, delimiter="/", **{"max-keys": "6"})
    assert texts(page, "{}CommonPrefixes/{}Prefix") == ["x/"]
    assert page.findtext(f"{NS}NextMarker") == "x/"
    status, page = await listing(emu, delimiter="/", marker="x/")
    assert (status, texts(page, "{}Contents/{}Key")) == (200, ["z"])
    assert texts(page, "{}CommonPrefixes/{}Prefix") == []  # not listed twice


@pytest.mark.parametrize("version", ["1", "2"])
async def test_encoding_type_url_percent_encodes_keys(tmp_path: Path, version: str) -> None:
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "a+b c%").write_bytes(b"1")
    (tmp_path / "p" / "d+e").mkdir()
    (tmp_path / "p" / "d+e" / "f").write_bytes(b"1")
    params = {"prefix": "p/", "delimiter": "/", "encoding-type": "url", "start-after": "p/+"}
    if version == "2":
        params["list-type"] = "2"
    else:
        params["marker"] = params.pop("start-after")
    async with Emulator(tmp_path) as emu:
        status, page = await listing(emu, **params)
    assert status == 200
    # boto3 asks for this by default and decodes what it gets: a raw `+` came back a space.
    assert texts(page, "{}Contents/{}Key") == ["p/a%2Bb%20c%25"]
    assert texts(page, "{}CommonPrefixes/{}Prefix") == ["p/d%2Be/"]
    assert page.findtext(f"{NS}EncodingType") == "url"
    assert page.findtext(f"{NS}StartAfter" if version == "2" else f"{NS}Marker") == "p/%2B"


async def test_an_unknown_encoding_type_is_refused(emu: Emulator) -> None:
    status, page = await listing(emu, **{"list-type": "2", "encoding-type": "base64"})
    assert (status, page.findtext("Code")) == (400, "InvalidArgument")


@pytest.mark.parametrize("version", ["1", "2"])
async def test_a_start_inside_a_folder_keeps_its_common_prefix(emu: Emulator, version: str) -> None:
    # S3: keys after the start that roll up into x/ are listed as x/.
    params = {"delimiter": "/", "prefix": "x", "marker": "x/a"}
    if version == "2":
        params.update({"list-type": "2", "start-after": params.pop("marker")})
    status, page = await listing(emu, **params)
    assert status == 200
    assert texts(page, "{}CommonPrefixes/{}Prefix") == ["x/"]  # was dropped
    params["prefix"] = ""
    _, page = await listing(emu, **params)
    assert texts(page, "{}CommonPrefixes/{}Prefix") == ["x/"]
    assert texts(page, "{}Contents/{}Key") == ["z"]
    params["marker" if version == "1" else "start-after"] = "x/y/z"  # nothing after it in x/
    _, page = await listing(emu, **params)
    assert texts(page, "{}CommonPrefixes/{}Prefix") == []


@pytest.mark.parametrize("version", ["1", "2"])
async def test_a_prefix_ending_in_a_dot_lists_the_names_it_starts(
    tmp_path: Path, version: str
) -> None:
    # "v2/." is the start of ".zarray" and ".zattrs", not a folder: it was a 400.
    for key in ("v2/.zarray", "v2/.zattrs", "v2/0", "v2/..x", "top"):
        (tmp_path / key).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / key).write_bytes(b"1")
    async with Emulator(tmp_path) as emu:
        params = {"list-type": "2"} if version == "2" else {}
        expected = {"v2/.": ["v2/..x", "v2/.zarray", "v2/.zattrs"], "v2/..": ["v2/..x"]}
        for prefix, keys in expected.items():
            status, page = await listing(emu, prefix=prefix, **params)
            assert (status, texts(page, "{}Contents/{}Key")) == (200, keys)
        for prefix in ("v2/../", "v2/./", "../"):  # a folder of its own: still refused
            status, page = await listing(emu, prefix=prefix, **params)
            assert (status, page.findtext("Code")) == (400, "InvalidArgument")


async def test_list_buckets_names_the_one_bucket(emu: Emulator) -> None:
    async with aiohttp.ClientSession() as http, http.get(emu.endpoint + "/") as resp:
        status, root = resp.status, ElementTree.fromstring(await resp.read())
    assert status == 200  # was 404 NoSuchBucket
    assert root.tag == f"{NS}ListAllMyBucketsResult"
    assert texts(root, "{}Buckets/{}Bucket/{}Name") == [emu.bucket]


@pytest.mark.parametrize("encoding", [None, "url"])
async def test_keys_are_written_once_escaped(tmp_path: Path, encoding: str | None) -> None:
    (tmp_path / "a&b<c").write_bytes(b"1")
    params = {"list-type": "2"} | ({"encoding-type": encoding} if encoding else {})
    async with Emulator(tmp_path) as emu:
        status, page = await listing(emu, **params)
    expected = "a%26b%3Cc" if encoding else "a&b<c"
    assert (status, texts(page, "{}Contents/{}Key")) == (200, [expected])
