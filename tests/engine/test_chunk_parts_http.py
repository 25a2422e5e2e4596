"""A span of an uncompressed chunk over plain HTTP: read alone where the answer tells the
object's size (a range's `Content-Range` total, a whole answer's length), checked against
it as a whole read checks the chunk; an answer that tells none (`bytes a-b/*`) is never
decoded unchecked: the chunk is read whole. Both HTTP stores: obstore's (`from_url`) and
the guarded one (`from_url(..., check_redirect=...)`, what reference targets are read by).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from aiohttp import web
from tests.security.test_serve import serve
from tests.servers import in_background, serving
from tests.storage.http_server import FolderServer

import aiozarr
from aiozarr.emulator import Emulator
from aiozarr.errors import CodecError, ValueTooLargeError
from aiozarr.storage.backends.counting import CountingStore
from aiozarr.storage.opening.url import from_url

BIG = np.arange(512 * 512, dtype="<i8").reshape(512, 512)  # 512 KiB chunks of 256 x 256
SMALL = np.arange(64 * 64, dtype="<i8").reshape(64, 64)  # one chunk of 32 KiB


def _any_redirect(source: str, location: str) -> str:
    return location


def _open(url: str, guarded: bool) -> tuple[Any, CountingStore]:
    kw = {"check_redirect": _any_redirect} if guarded else {}
    counted = CountingStore(from_url(url, **kw))
    return aiozarr.open_array(counted, mode="r"), counted


def _write(folder: Path, values: np.ndarray, chunks: tuple[int, ...], zarr_format: int) -> str:
    """An uncompressed array `a.zarr` in `folder`; the key of its chunk (0, 0)."""
    aiozarr.create_array(
        str(folder / "a.zarr"), shape=values.shape, chunks=chunks, dtype=values.dtype,
        compressors=None, zarr_format=zarr_format,
    )[...] = values  # fmt: skip
    return "c/0/0" if zarr_format == 3 else "0.0"


def _resize(folder: Path, key: str, extra: int) -> None:
    """Chunk `key` stored `extra` bytes longer (or shorter) than its values."""
    chunk = folder / "a.zarr" / key
    stored = chunk.read_bytes()
    chunk.write_bytes(stored + bytes(extra) if extra >= 0 else stored[:extra])


@pytest.mark.parametrize("guarded", [False, True], ids=["obstore", "guarded"])
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_one_element_over_http_moves_its_bytes(
    emulator: Emulator, prefix: str, zarr_format: int, guarded: bool
) -> None:
    folder = emulator.root / prefix
    folder.mkdir()
    _write(folder, BIG, (256, 256), zarr_format)
    arr, counted = _open(emulator.http_url(f"{prefix}/a.zarr"), guarded)
    counted.reset()
    emulator.reset_stats()
    assert arr[300, 7] == BIG[300, 7]
    assert counted.bytes_read == 8  # was the whole 512 KiB chunk (guarded)
    assert emulator.stats()["bytes_read"] == 8
    np.testing.assert_array_equal(arr[3:5, 100:104], BIG[3:5, 100:104])


@pytest.mark.parametrize("guarded", [False, True], ids=["obstore", "guarded"])
@pytest.mark.parametrize("extra", [1, -1])
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_a_chunk_of_another_size_over_http_is_refused_as_a_whole_read_refuses_it(
    emulator: Emulator, prefix: str, zarr_format: int, extra: int, guarded: bool
) -> None:
    folder = emulator.root / prefix
    folder.mkdir()
    key = _write(folder, SMALL, (64, 64), zarr_format)
    _resize(folder, key, extra)
    arr, counted = _open(emulator.http_url(f"{prefix}/a.zarr"), guarded)
    with pytest.raises((CodecError, ValueTooLargeError), match=f"'{key}'") as whole:
        arr[...]  # too long: over its bound before it is read
    counted.reset()
    # a span is refused by the size its answer told: "stored as N bytes" either way
    with pytest.raises(CodecError if extra > 0 else type(whole.value), match=f"'{key}'"):
        arr[3, 5]
    assert counted.bytes_read == 8


@pytest.mark.parametrize("guarded", [False, True], ids=["obstore", "guarded"])
def test_aiozarr_serve_reads_one_element_as_its_bytes(tmp_path: Path, guarded: bool) -> None:
    served = tmp_path / "data"  # served as the bucket `data`
    served.mkdir()
    _write(served, BIG, (256, 256), 3)
    with serve(served) as (port, _):
        arr, counted = _open(f"http://127.0.0.1:{port}/data/a.zarr", guarded)
        counted.reset()
        assert arr[511, 0] == BIG[511, 0]
        assert counted.bytes_read == 8


@pytest.mark.parametrize("guarded", [False, True], ids=["obstore", "guarded"])
@pytest.mark.parametrize("extra", [0, 8, -8])
def test_a_server_without_etags_tells_the_size_all_the_same(
    tmp_path: Path, extra: int, guarded: bool
) -> None:
    """`python -m http.server` sends no ETag: its answers are no version that lasts,
    but they tell the size, and a span is checked by it."""
    key = _write(tmp_path, SMALL, (64, 64), 3)
    _resize(tmp_path, key, extra)
    with FolderServer(tmp_path) as server:
        arr, counted = _open(f"{server.url}/a.zarr", guarded)
        counted.reset()
        if extra:
            with pytest.raises((CodecError, ValueTooLargeError), match=f"'{key}'"):
                arr[3, 5]
        else:
            assert arr[3, 5] == SMALL[3, 5]
        assert counted.bytes_read == 8


@contextlib.contextmanager
def _unknown_totals(root: Path, chunked: bool = True) -> Iterator[str]:
    """A server of the files under `root` that answers a range as `206` with
    `Content-Range: bytes a-b/*` (the total unknown, as RFC 9110 allows), and a whole
    file `chunked`, with no Content-Length: no answer of a range tells a file's size."""

    async def handle(request: web.Request) -> web.StreamResponse:
        file = root / request.match_info["path"]
        if not file.is_file():
            return web.Response(status=404)
        body = file.read_bytes()
        asked = re.fullmatch(r"bytes=(\d+)-(\d+)", request.headers.get("Range", ""))
        if asked is None and not chunked:
            return web.Response(body=body)
        if asked is None:
            response = web.StreamResponse(status=200)
            response.enable_chunked_encoding()
            await response.prepare(request)
            await response.write(body)
            await response.write_eof()
            return response
        start, last = int(asked[1]), min(int(asked[2]), len(body) - 1)
        headers = {"Content-Range": f"bytes {start}-{last}/*"}
        return web.Response(status=206, body=body[start : last + 1], headers=headers)

    with in_background(serving(handle, "/{path:.*}")) as url:
        yield url


@pytest.mark.parametrize("extra", [0, 8, -8])
def test_a_span_whose_answer_tells_no_size_is_read_whole(tmp_path: Path, extra: int) -> None:
    """The guarded store takes `bytes a-b/*`: such an answer's version tells no size, so
    its span is not decoded; the chunk is read whole, and checked as a whole read is."""
    key = _write(tmp_path, SMALL, (64, 64), 3)
    _resize(tmp_path, key, extra)
    with _unknown_totals(tmp_path) as url:
        arr, counted = _open(f"{url}/a.zarr", guarded=True)
        counted.reset()
        if extra:
            with pytest.raises((CodecError, ValueTooLargeError), match=f"'{key}'"):
                arr[3, 5]
            return
        assert arr[3, 5] == SMALL[3, 5]
        assert counted.bytes_read == 8 + SMALL.nbytes  # the span, then the chunk whole
        counted.reset()
        assert arr[60, 1] == SMALL[60, 1]
        assert counted.bytes_read == SMALL.nbytes  # whole from then on


def test_obstore_refuses_an_answer_that_tells_no_total(tmp_path: Path) -> None:
    """obstore's HTTP client cannot read `bytes a-b/*`: a `StoreError` naming the key."""
    _write(tmp_path, SMALL, (64, 64), 3)
    with _unknown_totals(tmp_path, chunked=False) as url:  # obstore reads no chunked body
        arr, _ = _open(f"{url}/a.zarr", guarded=False)
        with pytest.raises(aiozarr.errors.StoreError, match=r"'c/0/0'.*CONTENT_RANGE"):
            arr[3, 5]
