"""A repository icechunk wrote to S3 (moto's server), read by aiozarr over S3: native
chunks (plain and sharded), inline chunks, and virtual chunks of objects in the same
bucket carrying their ETags, every value as icechunk's own reader gives it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import icechunk
import numpy as np
import obstore
import pytest
import zarr
from obstore.store import S3Store
from tests.servers import MOTO_BUCKET, unique_prefix

import aiozarr
from aiozarr.errors import ReferenceTargetError, SourceChangedError
from aiozarr.storage.references.icechunk import IcechunkStore

CHUNK = (8, 8)  # float64: 512 bytes each, raw in the source objects
ROWS = 4  # virtual: 4 source objects, each one row of 5 chunks, one after another


def _s3(moto_server: str) -> dict[str, Any]:
    return {
        "region": "us-east-1",
        "endpoint_url": moto_server,
        "allow_http": True,
        "force_path_style": True,
    }


def _credentials() -> Any:
    return icechunk.s3_static_credentials(access_key_id="testing", secret_access_key="testing")


def _repository(moto_server: str, prefix: str, source_url: str) -> icechunk.Repository:
    """A new repository at `<prefix>/repo` whose virtual chunks may lie under
    `source_url` (a container, authorized with moto's credentials)."""
    config = icechunk.RepositoryConfig.default()
    container = icechunk.s3_store(**_s3(moto_server), s3_compatible=True)
    config.set_virtual_chunk_container(icechunk.VirtualChunkContainer(source_url, container))
    storage = icechunk.s3_storage(
        bucket=MOTO_BUCKET,
        prefix=f"{prefix}/repo",
        access_key_id="testing",
        secret_access_key="testing",
        **_s3(moto_server),
    )
    return icechunk.Repository.create(
        storage,
        config=config,
        authorize_virtual_chunk_access=icechunk.containers_credentials(
            {source_url: _credentials()}
        ),
    )


def _write(moto_server: str, prefix: str, sources: S3Store) -> tuple[str, icechunk.Repository]:
    """The repository at `s3://aiozarr-test/<prefix>/repo`, its virtual chunks in
    `<prefix>/sources/`; returns the sources' URL prefix and the repository."""
    source_url = f"s3://{MOTO_BUCKET}/{prefix}/sources/"
    repo = _repository(moto_server, prefix, source_url)
    session = repo.writable_session("main")
    root = zarr.group(store=session.store, attributes={"on": "s3"})
    rng = np.random.default_rng(5)
    plain = root.create_array("native", shape=(30, 20), chunks=(10, 10), dtype="float64")
    plain[...] = rng.normal(size=(30, 20))
    sharded = root.create_array(
        "sharded", shape=(40, 24), chunks=(5, 6), shards=(20, 12), dtype="int32"
    )
    sharded[...] = rng.integers(-1000, 1000, size=(40, 24))
    small = root.create_array("inline", shape=(6,), chunks=(3,), dtype="uint8")
    small[...] = np.arange(6)
    virtual = root.create_array(
        "virtual", shape=(ROWS * 8, 40), chunks=CHUNK, dtype="float64", compressors=None
    )
    specs = []
    for n in range(ROWS):
        row = rng.normal(size=(8, 40))
        parts = [row[:, j * 8 : (j + 1) * 8].tobytes() for j in range(5)]
        etag = obstore.put(sources, f"part{n}.bin", b"".join(parts))["e_tag"]
        specs += [
            icechunk.VirtualChunkSpec(
                index=[n, j],
                location=f"{source_url}part{n}.bin",
                offset=j * 512,
                length=512,
                etag_checksum=etag,
            )
            for j in range(5)
        ]
    session.store.set_virtual_refs(virtual.path, specs, validate_containers=False)
    session.commit("on moto")
    return source_url, repo


@pytest.fixture
def on_moto(moto_server: str, moto_s3_options: dict[str, Any]) -> dict[str, Any]:
    prefix = unique_prefix()
    sources = S3Store(MOTO_BUCKET, prefix=f"{prefix}/sources", **moto_s3_options)
    source_url, repo = _write(moto_server, prefix, sources)
    session = repo.readonly_session("main")
    group = zarr.open_group(store=session.store, mode="r")
    expected = {name: group[name][...] for name in ("native", "sharded", "inline", "virtual")}
    return {
        "url": f"s3://{MOTO_BUCKET}/{prefix}/repo",
        "options": moto_s3_options,
        "expected": expected,
        "sources": sources,
        "source_url": source_url,
    }


def test_a_repository_on_s3_reads_as_icechunk_reads_it(on_moto: dict[str, Any]) -> None:
    group = aiozarr.open_group(on_moto["url"], mode="r", storage_options=on_moto["options"])
    assert isinstance(group.store, IcechunkStore)  # found by its layout
    assert group.attrs["on"] == "s3"
    for name, values in on_moto["expected"].items():
        got = group[name][...]
        assert got.dtype == values.dtype
        np.testing.assert_array_equal(got, values, err_msg=name)
    np.testing.assert_array_equal(
        group["sharded"][3:27, 5:19], on_moto["expected"]["sharded"][3:27, 5:19]
    )


def test_a_changed_source_on_s3_is_refused(on_moto: dict[str, Any]) -> None:
    options = {**on_moto["options"], "branch": "main"}
    arr = aiozarr.open_array(on_moto["url"], "virtual", mode="r", storage_options=options)
    expected = on_moto["expected"]["virtual"]
    np.testing.assert_array_equal(arr[...], expected)
    obstore.put(on_moto["sources"], "part2.bin", b"\0" * (5 * 512))  # rewritten: other ETag
    np.testing.assert_array_equal(arr[0:16], expected[0:16])  # part0, part1: unchanged
    # refused by S3 (412): the error names the chunks read and the repository too
    with pytest.raises(SourceChangedError, match=r"'virtual/c/2/0'.*IcechunkStore.*part2\.bin"):
        arr[16:24]


def _small_virtual_repo(
    moto_server: str, prefix: str, refs: list[tuple[str, int, str | None]]
) -> str:
    """A repository at `<prefix>/repo` of one float32 array `a`, chunks of 2, chunk `i`
    virtual: `refs[i]` = (name in `<prefix>/sources/` as icechunk writes it, offset,
    checksum); returns its URL."""
    source_url = f"s3://{MOTO_BUCKET}/{prefix}/sources/"
    repo = _repository(moto_server, prefix, source_url)
    session = repo.writable_session("main")
    root = zarr.group(store=session.store)
    root.create_array("a", shape=(2 * len(refs),), chunks=(2,), dtype="<f4", compressors=None)
    for i, (name, offset, checksum) in enumerate(refs):
        session.store.set_virtual_ref(
            f"a/c/{i}",
            source_url + name,
            offset=offset,
            length=8,
            checksum=checksum,
            validate_container=False,
        )
    session.commit("virtual")
    return f"s3://{MOTO_BUCKET}/{prefix}/repo"


def test_a_location_is_percent_decoded_as_icechunk_reads_it(
    moto_server: str, moto_s3_options: dict[str, Any]
) -> None:
    # icechunk's locations are URLs: `sp%20ace.bin` names the object `sp ace.bin`, and
    # `%25` a percent sign; an object literally named `sp%20ace.bin` is another one.
    prefix = unique_prefix()
    sources = S3Store(MOTO_BUCKET, prefix=f"{prefix}/sources", **moto_s3_options)
    obstore.put(sources, "sp ace.bin", np.full(2, 1, "<f4").tobytes())
    obstore.put(sources, "sp%20ace.bin", np.full(2, 2, "<f4").tobytes())
    url = _small_virtual_repo(
        moto_server, prefix, [("sp%20ace.bin", 0, None), ("sp%2520ace.bin", 0, None)]
    )
    arr = aiozarr.open_array(url, "a", mode="r", storage_options=moto_s3_options)
    np.testing.assert_array_equal(arr[...], [1, 1, 2, 2])
    url = _small_virtual_repo(moto_server, unique_prefix(), [("nul%00.bin", 0, None)])
    arr = aiozarr.open_array(url, "a", mode="r", storage_options=moto_s3_options)
    with pytest.raises(ReferenceTargetError, match="control character"):
        arr[...]  # decoded, no object name holds one


def test_each_virtual_chunk_of_one_object_is_read_under_its_own_checksum(
    moto_server: str, moto_s3_options: dict[str, Any]
) -> None:
    prefix = unique_prefix()
    sources = S3Store(MOTO_BUCKET, prefix=f"{prefix}/sources", **moto_s3_options)
    etag = obstore.put(sources, "src.bin", np.arange(4, dtype="<f4").tobytes())["e_tag"]
    url = _small_virtual_repo(moto_server, prefix, [("src.bin", 0, "stale"), ("src.bin", 8, etag)])
    arr = aiozarr.open_array(url, "a", mode="r", storage_options=moto_s3_options)
    with pytest.raises(SourceChangedError, match=r"src\.bin"):
        arr[0:2]  # referenced under another ETag than the object has now
    np.testing.assert_array_equal(arr[2:4], [2, 3])  # its own ETag: read, on the same handle


def test_a_repository_on_s3_is_copied(on_moto: dict[str, Any], tmp_path: Path) -> None:
    """`copy` looked for a Zarr node at the URL only, where `open` finds the repository
    by its layout: a remote repository could be opened but not copied."""
    aiozarr.copy(
        on_moto["url"],
        tmp_path / "copy.zarr",
        storage_options=on_moto["options"],
        dst_storage_options={},
    )
    copied = aiozarr.open_group(tmp_path / "copy.zarr")
    for name, values in on_moto["expected"].items():
        np.testing.assert_array_equal(copied[name][...], values, err_msg=name)
