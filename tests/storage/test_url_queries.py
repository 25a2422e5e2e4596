"""An http(s) URL with a query (a signed URL): keys go before the query, one slash
after the root however the root ends, and a node missing there is `NodeNotFoundError`
(the icechunk probe answers "no repository" for such a URL: its objects could not be
named)."""

from __future__ import annotations

from http.server import BaseHTTPRequestHandler
from pathlib import Path

import numpy as np
import pytest
from tests.storage.http_server import FolderServer

import aiozarr
from aiozarr.errors import NodeNotFoundError
from aiozarr.storage.opening.url import without_trailing_slash


def _strict(handler: BaseHTTPRequestHandler, path: str) -> bool:
    """As S3 and most object stores: "a//b" is not "a/b"; and the query is required."""
    if "//" in path or not handler.path.endswith("?sig=1"):
        handler.send(404, b"", {})
        return True
    return False


@pytest.fixture
def server(tmp_path: Path) -> FolderServer:
    aiozarr.create_array(str(tmp_path / "plain.zarr"), shape=(4,), dtype="i2")[:] = [1, 2, 3, 4]
    with FolderServer(tmp_path) as serving:
        serving.answer = _strict
        yield serving


@pytest.mark.parametrize("root", ["plain.zarr", "plain.zarr/", "plain.zarr//"])
def test_a_signed_url_root_ending_in_a_slash_reads_its_keys(
    server: FolderServer, root: str
) -> None:
    array = aiozarr.open_array(f"{server.url}/{root}?sig=1")
    np.testing.assert_array_equal(array[:], [1, 2, 3, 4])
    assert all("//" not in path.partition("?")[0] for _, path, _ in server.requests)


def test_a_missing_node_at_a_signed_url_is_not_found(server: FolderServer) -> None:
    with pytest.raises(NodeNotFoundError):
        aiozarr.open_array(f"{server.url}/missing.zarr?sig=1")


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://h/a.zarr/?sig=1", "http://h/a.zarr?sig=1"),
        ("http://h/a.zarr//#x", "http://h/a.zarr#x"),
        ("http://h/a.zarr/", "http://h/a.zarr"),
        ("http://h/a.zarr?next=/b/", "http://h/a.zarr?next=/b/"),
    ],
)
def test_only_the_path_loses_its_trailing_slashes(url: str, expected: str) -> None:
    assert without_trailing_slash(url) == expected
