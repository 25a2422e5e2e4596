"""Virtual chunk sources checked against their `last_updated_at` checksums to the
sub-second, local and over a plain http(s) server that ignores conditions; a
repository's sizes and `aiozarr info` need no access to its sources."""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import time
from email.utils import formatdate
from pathlib import Path
from typing import Any

import icechunk
import numpy as np
import pytest
import zarr
from tests.interop.icechunk.generate import NO_AUTH
from tests.storage.http_server import FolderServer

import aiozarr
from aiozarr.cli import info
from aiozarr.cli.storage_options import options_for, transfer_storage_options
from aiozarr.errors import SourceChangedError
from aiozarr.storage.backends.guarded_http import GuardedHTTPStore
from aiozarr.storage.protocol import lasting
from aiozarr.storage.references.icechunk.checksums import checksum_problem
from aiozarr.storage.references.icechunk.format import ChunkRef

VALUES = np.arange(4, dtype="<i4")


def _virtual_repository(
    path: Path, prefix: str, store: Any, location: str, stamp: int | None, etag: str | None = None
) -> None:
    """A repository whose array `v` is one virtual chunk: 16 bytes of `location`,
    referenced as last modified at or before second `stamp` (or with ETag `etag`)."""
    config = icechunk.RepositoryConfig.default()
    config.set_virtual_chunk_container(icechunk.VirtualChunkContainer(prefix, store))
    auth = (
        NO_AUTH
        if prefix.startswith("file:")
        else getattr(getattr(icechunk, "credentials", None), "HttpAccess", None)
    )
    repo = icechunk.Repository.create(
        icechunk.local_filesystem_storage(str(path)),
        config=config,
        authorize_virtual_chunk_access={prefix: auth},
    )
    session = repo.writable_session("main")
    zarr.create_array(
        session.store, name="v", shape=(4,), chunks=(4,), dtype="<i4", compressors=None
    )
    when = None if stamp is None else datetime.datetime.fromtimestamp(stamp, datetime.UTC)
    spec = icechunk.VirtualChunkSpec(
        index=[0],
        location=location,
        offset=0,
        length=16,
        last_updated_at_checksum=when,
        etag_checksum=etag,
    )
    # icechunk 1.x checks an http container's prefix by its own rules: not checked here
    assert not session.store.set_virtual_refs("v", [spec], validate_containers=False)
    session.commit("virtual")


def _local(tmp_path: Path) -> tuple[Path, Path, int]:
    """A repository over `src/data.bin` (outside it), its file and the checksum's second."""
    sources = tmp_path / "src"
    sources.mkdir()
    data = sources / "data.bin"
    VALUES.tofile(data)
    stamp = int(time.time()) - 100
    os.utime(data, ns=(stamp * 10**9 - 10**8,) * 2)  # written before the stamp
    store = icechunk.local_filesystem_store(str(sources))
    _virtual_repository(tmp_path / "repo", f"file://{sources}/", store, f"file://{data}", stamp)
    return tmp_path / "repo", data, stamp


def test_a_local_source_changed_within_the_second_after_its_checksum_is_refused(
    tmp_path: Path,
) -> None:
    repo, data, stamp = _local(tmp_path)
    options = {"allowed_targets": [f"{data.parent}/"]}
    os.utime(data, ns=(stamp * 10**9,) * 2)  # at the recorded second: unchanged
    assert aiozarr.open_array(repo, "v", mode="r", storage_options=options)[:].tolist() == [
        0,
        1,
        2,
        3,
    ]
    (VALUES + 100).tofile(data)
    os.utime(data, ns=(stamp * 10**9 + 5 * 10**8,) * 2)  # half a second later
    with pytest.raises(SourceChangedError, match=r"modified at \d+\.5, after") as refused:
        aiozarr.open_array(repo, "v", mode="r", storage_options=options)[:]
    assert str(refused.value).count("cannot read") == 1  # seen on the answer: named once


def test_a_local_source_changed_after_its_object_store_etag_is_refused(tmp_path: Path) -> None:
    """A local file's ETag, as object_store (icechunk 1.x's reader, obstore) gives it,
    is its inode, mtime and size: the chunk was read unchecked, the new bytes served."""
    obstore = pytest.importorskip("obstore")
    sources = tmp_path / "src"
    sources.mkdir()
    data = sources / "data.bin"
    VALUES.tofile(data)
    etag = obstore.head(obstore.store.LocalStore(str(sources)), "data.bin")["e_tag"]
    store = icechunk.local_filesystem_store(str(sources))
    location = f"file://{data}"
    _virtual_repository(tmp_path / "repo", f"file://{sources}/", store, location, None, etag)
    options = {"allowed_targets": [f"{sources}/"]}
    read = aiozarr.open_array(tmp_path / "repo", "v", mode="r", storage_options=options)
    assert read[:].tolist() == [0, 1, 2, 3]
    (VALUES + 100).tofile(data)  # the same size, rewritten in place
    os.utime(data, ns=(data.stat().st_mtime_ns + 1000,) * 2)  # a later microsecond
    with pytest.raises(SourceChangedError, match=r"'v/c/0'.*\(inode, mtime, size\)"):
        aiozarr.open_array(tmp_path / "repo", "v", mode="r", storage_options=options)[:]
    # an ETag no file has (not object_store's shape) cannot be compared: read as it is
    _virtual_repository(tmp_path / "other", f"file://{sources}/", store, location, None, "abc")
    read = aiozarr.open_array(tmp_path / "other", "v", mode="r", storage_options=options)
    assert read[:].tolist() == [100, 101, 102, 103]


def test_an_http_answer_read_under_a_checksum_carries_its_last_modified(tmp_path: Path) -> None:
    (tmp_path / "data.bin").write_bytes(VALUES.tobytes())
    with FolderServer(tmp_path) as server:  # answers every GET, conditions or not
        server.headers = lambda path, body: {"Last-Modified": formatdate(2000, usegmt=True)}
        plain = GuardedHTTPStore(server.url, check_redirect=lambda here, there: there)
        _, version = asyncio.run(plain.conditioned(modified_by=1000).get_versioned("data.bin"))
    chunk = ChunkRef(location=f"{server.url}/data.bin", length=16, last_modified=1000)
    assert checksum_problem(chunk, version) == "modified at 2000, after 1000"
    assert not lasting(version)  # no ETag: nothing a later read may rely on


@pytest.mark.skipif(
    int(icechunk.__version__.split(".")[0]) < 2,
    reason="icechunk 1.x drops the port of an http(s) virtual chunk location it writes",
)
def test_a_server_ignoring_if_unmodified_since_is_caught_by_its_last_modified(
    tmp_path: Path,
) -> None:
    sources = tmp_path / "src"
    sources.mkdir()
    data = sources / "data.bin"
    VALUES.tofile(data)
    stamp = int(time.time()) - 1800
    os.utime(data, (stamp - 1800,) * 2)
    with FolderServer(sources) as server:  # answers every GET, conditions or not
        server.headers = lambda path, body: {
            "Last-Modified": formatdate(data.stat().st_mtime, usegmt=True)
        }
        prefix = f"{server.url}/"
        _virtual_repository(
            tmp_path / "repo", prefix, icechunk.http_store(), f"{prefix}data.bin", stamp
        )
        options = {"allowed_targets": [prefix]}
        read = aiozarr.open_array(tmp_path / "repo", "v", mode="r", storage_options=options)
        assert read[:].tolist() == [0, 1, 2, 3]
        (VALUES + 50).tofile(data)
        os.utime(data, (stamp + 600,) * 2)  # rewritten after the stamp
        sent = server.requests[-1][2]
        assert "If-Unmodified-Since" in sent
        with pytest.raises(SourceChangedError, match="modified at"):
            aiozarr.open_array(tmp_path / "repo", "v", mode="r", storage_options=options)[:]


def test_info_sizes_a_repository_whose_sources_lie_outside_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo, data, _ = _local(tmp_path)
    assert info.main([str(repo), "--path", "v", "--json"]) == 0
    described = json.loads(capsys.readouterr().out)
    assert described["shape"] == [4]
    assert info.main([str(repo), "--path", "v", "-o", f'allowed_targets=["{data.parent}/"]']) == 0
    assert "Stored size" in capsys.readouterr().out
    # a local repository takes which snapshot and its targets, nothing else
    assert options_for(str(repo), {"allowed_targets": ["/x/"], "branch": "main"}) is not None
    with pytest.raises(ValueError, match="region: local paths take no storage options"):
        options_for(str(repo), {"allowed_targets": ["/x/"], "region": "us-east-1"})
    with pytest.raises(ValueError, match="allowed_targets: local paths"):
        options_for(str(tmp_path / "src"), {"allowed_targets": ["/x/"]})


def test_a_copy_gives_a_local_repository_its_options_and_the_remote_end_the_rest(
    tmp_path: Path,
) -> None:
    repo, _, _ = _local(tmp_path)
    given = ['allowed_targets=["/x/"]', "region=us-east-1"]
    args = argparse.Namespace(
        src=str(repo), dst="s3://b/out.zarr", storage_option=given, dst_storage_option=None
    )
    src, dst = transfer_storage_options(args)
    assert src == {"allowed_targets": ["/x/"]}
    assert dst == {"region": "us-east-1"}  # S3 refuses an option it does not know
