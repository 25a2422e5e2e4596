"""A virtual chunk read as the span of it a selection needs is checked against its
reference's length, as a whole read of it is: a reference a byte too short or too long
is refused, one of the chunk's length moves only the span's bytes."""

from __future__ import annotations

from pathlib import Path

import icechunk
import numpy as np
import pytest
import zarr
from tests.interop.icechunk.generate import NO_AUTH

import aiozarr
from aiozarr.errors import CodecError, ValueTooLargeError
from aiozarr.storage.backends.counting import CountingStore
from aiozarr.storage.references.icechunk import IcechunkStore

VALUES = np.arange(512, dtype="<i8")


def _repository(tmp_path: Path, length: int) -> CountingStore:
    """A repository whose array `v` is one uncompressed virtual chunk, `length` bytes at
    offset 6 of a file that holds more than the chunk on both sides; opened counted."""
    sources = tmp_path / "src"
    sources.mkdir()
    data = sources / "data.bin"
    data.write_bytes(b"header" + VALUES.tobytes() + b"trailer--")
    prefix = f"file://{sources}/"
    config = icechunk.RepositoryConfig.default()
    store = icechunk.local_filesystem_store(str(sources))
    config.set_virtual_chunk_container(icechunk.VirtualChunkContainer(prefix, store))
    repo = icechunk.Repository.create(
        icechunk.local_filesystem_storage(str(tmp_path / "repo")),
        config=config,
        authorize_virtual_chunk_access={prefix: NO_AUTH},
    )
    session = repo.writable_session("main")
    zarr.create_array(session.store, name="v", shape=(512,), chunks=(512,), dtype="<i8",
                      compressors=None)  # fmt: skip
    spec = icechunk.VirtualChunkSpec(index=[0], location=f"file://{data}", offset=6, length=length)
    assert not session.store.set_virtual_refs("v", [spec], validate_containers=False)
    session.commit("virtual")
    return CountingStore(IcechunkStore(tmp_path / "repo", allowed_targets=[f"{sources}/"]))


@pytest.mark.parametrize("wrong", [-1, 1])
def test_a_span_inside_a_virtual_chunk_of_the_wrong_length_is_refused(
    tmp_path: Path, wrong: int
) -> None:
    arr = aiozarr.open_array(_repository(tmp_path, VALUES.nbytes + wrong), "v", mode="r")
    with pytest.raises(CodecError, match=f"'v/c/0' is stored as {VALUES.nbytes + wrong} bytes"):
        arr[100]
    with pytest.raises((CodecError, ValueTooLargeError), match="'v/c/0'"):
        arr[...]


def test_a_virtual_chunk_of_the_chunk_s_length_is_read_as_a_span(tmp_path: Path) -> None:
    counted = _repository(tmp_path, VALUES.nbytes)
    arr = aiozarr.open_array(counted, "v", mode="r")
    counted.reset()
    assert arr[100] == VALUES[100]
    np.testing.assert_array_equal(arr[10:20], VALUES[10:20])
    assert counted.bytes_read == 8 + 80
