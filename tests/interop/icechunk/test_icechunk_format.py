"""What icechunk wrote is what the format module reads: refs, snapshots, manifests."""

from __future__ import annotations

import struct
from pathlib import Path

import icechunk
import numpy as np
import pytest
import zarr
import zstandard
from tests.interop.icechunk.conftest import SPEC_VERSIONS
from tests.interop.icechunk.generate import Written

import aiozarr
from aiozarr.errors import MetadataError, UnsupportedError
from aiozarr.storage.references.icechunk.format import (
    _T,
    HEADER_SIZE,
    object_id,
    parse_manifest,
    parse_ref_json,
    parse_repo_info,
    parse_snapshot,
)


def _snapshot(written: Written, snapshot: str):
    path = written.path / "snapshots" / snapshot
    return parse_snapshot(path.read_bytes(), str(path))


def _manifests(written: Written, snapshot: str, array: str) -> list:
    node = _snapshot(written, snapshot).nodes[f"/{array}"]
    return [
        parse_manifest((written.path / "manifests" / m.manifest_id).read_bytes(), m.manifest_id)
        for m in node.manifests
    ]


def test_refs_name_the_snapshots_written(written: Written) -> None:
    if written.spec_version == 2:
        info = parse_repo_info((written.path / "repo").read_bytes())
        assert info.branches == {
            "main": written.refs["branch:main"],
            "dev": written.refs["branch:dev"],
        }
        assert info.tags == {"v1": written.refs["tag:v1"]}
        assert set(written.snapshots) <= info.snapshots
    else:
        for ref, snapshot in written.refs.items():
            kind, name = ref.split(":")
            path = written.path / "refs" / f"{kind}.{name}" / "ref.json"
            assert parse_ref_json(path.read_bytes(), str(path)) == snapshot


def test_snapshots_hold_every_node_and_the_split_manifests(written: Written) -> None:
    main = written.refs["branch:main"]
    snapshot = _snapshot(written, main)
    assert snapshot.id == main
    arrays = {p.lstrip("/") for p, n in snapshot.nodes.items() if n.is_array}
    assert arrays == set(written.snapshots[main])
    assert not snapshot.nodes["/group/sub"].is_array
    # "split": 8 x 4 chunks, a manifest per 2 x 2 block of them
    split = snapshot.nodes["/split"].manifests
    assert len(split) == 8
    assert sorted(m.extents for m in split)[0] == ((0, 2), (0, 2))


def test_manifests_hold_native_inline_and_virtual_chunks(written: Written) -> None:
    main = written.refs["branch:main"]
    (f8,) = _manifests(written, main, "native/f8")
    f8_id = _snapshot(written, main).nodes["/native/f8"].node_id
    coords = f8.coords(f8_id)
    assert sorted(coords) == [(i, j) for i in range(3) for j in range(2)]
    assert all(c.chunk_id and c.length for c in f8.get_many(f8_id, coords))
    assert f8.get(f8_id, (3, 0)) is None and f8.get("NOSUCHNODE0000", (0, 0)) is None
    (inline,) = _manifests(written, main, "group/sub/inline")
    inline_id = _snapshot(written, main).nodes["/group/sub/inline"].node_id
    assert all(c.inline is not None for c in inline.get_many(inline_id, [(0,), (1,), (2,)]))
    (virtual,) = _manifests(written, main, "virtual")
    virtual_id = _snapshot(written, main).nodes["/virtual"].node_id
    assert len(virtual.coords(virtual_id)) == 125
    first = virtual.get(virtual_id, (0, 0))
    assert first.location == f"file://{written.sources}/part0.h5"
    assert first.last_modified is not None and first.etag is None


def test_object_ids_are_crockford_base32() -> None:
    raw = bytes.fromhex("0b1cc8d6787580f0e33a6534")
    assert object_id(raw) == "1CECHNKREP0F1RSTCMT0"  # the spec's example
    assert len(object_id(bytes(8))) == 13


def test_bad_files_are_named(tmp_path: Path, written: Written) -> None:
    snapshot = (written.path / "snapshots" / written.refs["tag:v1"]).read_bytes()
    with pytest.raises(MetadataError, match="not an icechunk file"):
        parse_snapshot(b"PAR1" + snapshot, "snapshots/X")
    with pytest.raises(MetadataError, match="a snapshot file, expected a manifest"):
        parse_manifest(snapshot, "manifests/X")
    with pytest.raises(UnsupportedError, match="spec version 9"):
        parse_snapshot(snapshot[:36] + b"\x09" + snapshot[37:], "snapshots/X")
    with pytest.raises(MetadataError, match="snapshots/X"):
        parse_snapshot(snapshot[:60], "snapshots/X")


def test_a_vector_declared_past_the_buffer_is_refused_unread() -> None:
    import flatbuffers

    from aiozarr.storage.references.icechunk.format import _T, _manifest_ref, _parse

    builder = flatbuffers.Builder(0)
    builder.StartVector(8, 1, 4)
    builder.PrependUint32(1)
    builder.PrependUint32(0)
    extents = builder.EndVector()
    builder.StartObject(2)
    builder.PrependUOffsetTRelativeSlot(1, extents, 0)
    builder.Finish(builder.EndObject())
    buf = bytearray(builder.Output())
    table = _T.root(bytes(buf))
    start = table.t.Vector(table._off(1))
    struct.pack_into("<I", buf, start - 4, 20_000_000)  # 20 million extents in 32 bytes
    with pytest.raises(MetadataError, match="runs past the end"):
        _parse("manifest ref", _manifest_ref, _T.root(bytes(buf)))
    # a [uint8] vector (an inline chunk, a zarr.json) declared past the end, too
    with pytest.raises(MetadataError, match="runs past the end"):
        _parse("inline chunk", lambda t: t.raw(1), _T.root(bytes(buf)))


def test_every_store_version_shape_is_compared_with_a_checksum() -> None:
    import datetime

    from aiozarr.storage.policy.backend import FileVersion, ObjectVersion
    from aiozarr.storage.references.icechunk.checksums import checksum_problem
    from aiozarr.storage.references.icechunk.format import ChunkRef

    by_etag = ChunkRef(None, None, "http://h/a", 0, 1, etag='"abc"', last_modified=None)
    assert checksum_problem(by_etag, '"abc"') is None  # GuardedHTTPStore: the header
    assert checksum_problem(by_etag, 'W/"abc"') is None  # weak: its opaque value
    assert "ETag 'other'" in (checksum_problem(by_etag, '"other"') or "")
    assert "ETag 'other'" in (checksum_problem(by_etag, ObjectVersion('"other"', None)) or "")
    by_time = ChunkRef(None, None, "s3://b/a", 0, 1, etag=None, last_modified=1000)
    later = datetime.datetime.fromtimestamp(2000, datetime.UTC)
    # an answer with no ETag and no version id still carries its Last-Modified
    assert "modified at 2000" in (checksum_problem(by_time, ObjectVersion(None, None, later)) or "")
    local = FileVersion(1, 2, 2000 * 10**9, 2001 * 10**9, 5)  # a LocalStore answer's
    assert "modified at 2000" in (checksum_problem(by_time, local) or "")
    # a local file's object_store ETag: inode 2, mtime 2000 s in microseconds, size 5
    by_file = ChunkRef(None, None, "file:///a", 0, 1, etag=f"2-{2000 * 10**6:x}-5")
    assert checksum_problem(by_file, local) is None
    grown = FileVersion(1, 2, 2000 * 10**9, 2001 * 10**9, 6)
    assert "referenced with '2-" in (checksum_problem(by_file, grown) or "")
    # object_store gives inode 0 where the system has none (Windows): not compared
    no_inode = ChunkRef(None, None, "file:///a", 0, 1, etag=f"0-{2000 * 10**6:x}-5")
    assert checksum_problem(no_inode, local) is None


def test_a_conditional_read_answer_with_no_etag_keeps_its_time() -> None:
    import datetime

    from aiozarr.storage.references.conditional_reads import ConditionalReads

    when = datetime.datetime.fromtimestamp(2000, datetime.UTC)
    version = ConditionalReads._version_of({"e_tag": None, "version": None, "last_modified": when})
    assert version is not None and version.last_modified == when


@pytest.mark.parametrize("spec_version", SPEC_VERSIONS)
def test_a_manifest_with_no_extents_holds_every_chunk(
    tmp_path: Path, spec_version: int | None
) -> None:
    """No extents are icechunk's sentinel for "every chunk" (its reader zips them with
    the coordinates): every chunk read as the fill value, silently."""
    storage = icechunk.local_filesystem_storage(str(tmp_path / "r"))
    extra = {} if spec_version is None else {"spec_version": spec_version}
    session = icechunk.Repository.create(storage, **extra).writable_session("main")
    arr = zarr.create_array(session.store, name="a", shape=(6, 4), chunks=(2, 2), dtype="i4")
    arr[...] = values = np.arange(24, dtype="i4").reshape(6, 4)
    snapshot = session.commit("a")
    path = tmp_path / "r" / "snapshots" / snapshot
    data = path.read_bytes()
    body = bytearray(zstandard.ZstdDecompressor().stream_reader(data[HEADER_SIZE:]).read())
    for node in _T.root(bytes(body)).tables(2):  # Snapshot.nodes
        kind, array = node.union(3)  # NodeSnapshot.node_data
        for ref in array.tables(2) if kind == 1 and array else ():  # ArrayNodeData.manifests
            start, _ = ref._vector(ref._off(1), 8)  # ManifestRef.extents
            struct.pack_into("<I", body, start - 4, 0)  # its length: none
    path.write_bytes(data[:HEADER_SIZE] + zstandard.ZstdCompressor().compress(bytes(body)))
    theirs = icechunk.Repository.open(storage).readonly_session(snapshot_id=snapshot)
    np.testing.assert_array_equal(zarr.open_array(theirs.store, path="a", mode="r")[...], values)
    ours = aiozarr.open_array(tmp_path / "r", "a", mode="r", storage_options={"snapshot": snapshot})
    np.testing.assert_array_equal(ours[...], values)
