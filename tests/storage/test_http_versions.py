"""What a plain HTTP(S) server's answer counts as a version (docs/decisions/storage.md,
"Versions of plain HTTP answers"): only a strong validator. A weak ETag, or an ETag
beside a Last-Modified too close to the answer's Date (or to now, where no Date is
seen), is no version that lasts, so a shard index read from it is not kept for later
reads (such an ETag still shows a rewrite within one read).

nginx's ETag is "<mtime seconds hex>-<size hex>": a shard rewritten to the same size
within the second keeps it. The server here plays the worst of that, one ETag for every
content, so the test does not depend on when the rewrite happens.
"""

from __future__ import annotations

import asyncio
import os
import time
import zlib
from email.utils import formatdate
from pathlib import Path
from typing import NoReturn

import numpy as np
import pytest
from tests.storage.http_server import FolderServer

import aiozarr
from aiozarr.byte_range import ByteRange
from aiozarr.storage.backends.guarded_http import GuardedHTTPStore
from aiozarr.storage.opening.url import from_url
from aiozarr.storage.protocol import lasting, stored_size

OLD = formatdate(1e9, usegmt=True)  # 2001


def _modified(path: Path) -> str:
    return formatdate(path.stat().st_mtime, usegmt=True)


@pytest.fixture
def server(tmp_path: Path) -> FolderServer:
    with FolderServer(tmp_path) as serving:
        yield serving


def _write_shard(root: Path, first: bool) -> None:
    array = aiozarr.open_array(str(root / "a.zarr"), mode="r+")
    array[:] = 0
    if first:
        array[:20] = np.arange(1, 21)  # inner chunks 0 and 1 stored
    else:
        array[10:30] = np.arange(101, 121)  # chunks 1 and 2: a shard of the same size


def _nginx(root: Path, path: str) -> dict[str, str]:
    """nginx's ETag (its Last-Modified left out: the ETag alone says the time)."""
    st = (root / path.lstrip("/")).stat()
    return {"ETag": f'"{int(st.st_mtime):x}-{st.st_size:x}"'}


def _one_etag(root: Path, path: str) -> dict[str, str]:
    """One ETag for every content, the file's own Last-Modified."""
    return {"ETag": '"5f0c1a2b-84"', "Last-Modified": _modified(root / path.lstrip("/"))}


@pytest.mark.parametrize("tags", [_nginx, _one_etag])
def test_a_shard_rewritten_under_the_same_etag_reads_its_new_values(
    tmp_path: Path, server: FolderServer, tags
) -> None:
    aiozarr.create_array(
        str(tmp_path / "a.zarr"),
        shape=(30,),
        dtype="i4",
        chunks=(10,),
        shards=(30,),
        compressors=None,
        fill_value=0,
    )
    server.headers = lambda path, body: tags(tmp_path, path)
    second = int(time.time())  # both versions of the shard: modified in this second
    shard = tmp_path / "a.zarr" / "c" / "0"
    _write_shard(tmp_path, first=True)
    os.utime(shard, (second, second))
    size = shard.stat().st_size
    reader = aiozarr.open_array(f"{server.url}/a.zarr")
    np.testing.assert_array_equal(reader[:], [*range(1, 21), *[0] * 10])
    _write_shard(tmp_path, first=False)
    os.utime(shard, (second, second))
    assert shard.stat().st_size == size
    np.testing.assert_array_equal(reader[:], [*[0] * 10, *range(101, 121)])


def _no_redirect(source: str, location: str) -> NoReturn:
    raise AssertionError(f"{source} redirected to {location}")


@pytest.mark.parametrize("guarded", [False, True], ids=["obstore", "guarded"])
@pytest.mark.parametrize(
    ("etag", "modified", "versioned"),
    [
        ('"abc"', OLD, True),  # strong, and modified long ago
        ('"abc"', None, False),  # no Last-Modified: nothing shows the ETag strong
        ('W/"abc"', OLD, False),  # weak
        # modified just now: may not change within the second (guarded: less than a
        # second before the answer's Date)
        ('"abc"', "now", False),
    ],
)
def test_an_http_answer_is_versioned_only_by_a_strong_validator(
    tmp_path: Path,
    server: FolderServer,
    etag: str,
    modified: str | None,
    versioned: bool,
    guarded: bool,
) -> None:
    (tmp_path / "x").write_bytes(b"0123456789")

    def headers(path: str, body: bytes) -> dict[str, str]:
        said = {"ETag": etag}
        if modified is not None:
            said["Last-Modified"] = _modified(tmp_path / "x") if modified == "now" else modified
        return said

    server.headers = headers
    if not guarded:
        data, version = asyncio.run(from_url(server.url).get_versioned("x"))
        assert bytes(data) == b"0123456789"
        assert lasting(version) is versioned
        # a strong ETag of an object modified just now still tells a change within a read
        assert version[0] == (etag if versioned or modified == "now" else None)
        assert stored_size(version) == 10  # told either way
        return
    store = GuardedHTTPStore(server.url, check_redirect=_no_redirect)
    for byte_range in (None, ByteRange.of(2, 3)):
        answer = asyncio.run(store.read("x", byte_range, None))
        assert answer is not None
        assert answer[1][0] == (etag if versioned else None)
        assert lasting(answer[1]) is versioned
        assert stored_size(answer[1]) == 10


def test_versions_that_change_without_the_content_are_named_in_the_error(
    tmp_path: Path, server: FolderServer
) -> None:
    """Two servers behind one name tag the same file differently, and answers alternate
    between them: each range comes with another ETag than its shard's index did. The
    read is not taken as unversioned (a rewrite keeping the layout looks the same, and
    a read without the check can read a rewrite at old offsets): it fails, saying why,
    and a store that tells no versions reads it."""
    values = np.arange(40 * 40, dtype="i4").reshape(40, 40)
    array = aiozarr.create_array(
        str(tmp_path / "b.zarr"), shape=(40, 40), dtype="i4", chunks=(10, 10), shards=(40, 40)
    )
    array[:] = values
    answers = iter(range(10**6))
    server.headers = lambda path, body: {
        "ETag": f'"backend{next(answers) % 2}-{len(body)}"',
        "Last-Modified": OLD,
    }
    reader = aiozarr.open_array(f"{server.url}/b.zarr")
    with pytest.raises(aiozarr.errors.StoreError, match=r"versions \(ETags\) change"):
        reader[3:25, 12:31]


def test_a_shard_rewritten_between_its_index_and_its_chunks_is_read_again(
    tmp_path: Path, server: FolderServer
) -> None:
    """An object modified within the last minute has no version that lasts, but its
    ETag still shows a rewrite within one read: a shard rewritten after its index was
    read (its chunks moved) is read again, never decoded at the old index's offsets."""
    values = [np.arange(40, dtype="i8") * 7, np.arange(40, dtype="i8") ** 3]
    shards = []
    for i, data in enumerate(values):  # two versions of one shard, chunks of other sizes
        where = str(tmp_path / f"v{i}.zarr")
        aiozarr.create_array(where, shape=(40,), dtype="i8", chunks=(5,), shards=(40,))[:] = data
        shards.append((tmp_path / f"v{i}.zarr" / "c" / "0").read_bytes())
    (tmp_path / "v0.zarr").rename(tmp_path / "a.zarr")
    shard = tmp_path / "a.zarr" / "c" / "0"
    rewritten: list[str] = []

    def headers(path: str, body: bytes) -> dict[str, str]:
        if path == "/a.zarr/c/0" and not rewritten:  # the index: the shard changes after it
            shard.write_bytes(shards[1])
            rewritten.append(path)
        return {"ETag": f'"{zlib.crc32(body):x}"', "Last-Modified": formatdate(usegmt=True)}

    reader = aiozarr.open_array(f"{server.url}/a.zarr", mode="r")
    server.headers = headers
    np.testing.assert_array_equal(reader[3:17], values[1][3:17])
    assert rewritten
    assert server.gets("/a.zarr/c/0") > 2  # its index and chunks again, after the rewrite
