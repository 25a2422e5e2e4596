"""A metadata format is one `Format` and one line in `metadata/formats.py`: a format
defined here, and registered, is detected after the others, read, and refused for
writing, with nothing else taught about it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pytest

import aiozarr
from aiozarr.errors import MetadataError, NodeNotFoundError
from aiozarr.metadata import formats, v1, v2, v3, v3draft
from aiozarr.metadata.format_protocol import LAST, Fetch, Format, Node, Reading, ReadOptions, join
from aiozarr.metadata.model import ArrayMetadata, ChunkKeyEncoding
from aiozarr.storage import CountingStore, MemoryStore

TOY_KEY = "toy.json"


@dataclass(frozen=True)
class ToyKeys(ChunkKeyEncoding):
    """Chunk keys `i-j`, under `chunks/`."""

    def encode(self, chunk_coords: tuple[int, ...]) -> str:
        return "-".join(map(str, chunk_coords))


class ToyFormat(Format):
    """An array's shape, chunks and dtype in `toy.json`; raw C-order chunks."""

    name: ClassVar[str] = "toy"
    stage: ClassVar[int] = LAST + 1  # after every other format missed

    def read(self, path: str, options: ReadOptions) -> Reading:
        (doc,) = yield Fetch((join(path, TOY_KEY),))
        if doc is None:
            return None
        fields = doc.json()
        dtype = np.dtype(fields["dtype"])
        return ArrayMetadata(
            shape=tuple(fields["shape"]),
            dtype=dtype,
            chunk_shape=tuple(fields["chunks"]),
            fill_value=dtype.type(-1),
            zarr_format=2,
            chunk_key_encoding=ToyKeys("v2", "."),
        )

    def owns(self, meta: Node) -> bool:
        return isinstance(meta, ArrayMetadata) and isinstance(meta.chunk_key_encoding, ToyKeys)

    def node_keys(self, path: str) -> tuple[str, ...]:
        return (join(path, TOY_KEY),)

    def metadata_key(self, path: str, meta: ArrayMetadata) -> str:
        return join(path, TOY_KEY)

    def chunk_prefix(self, path: str, meta: ArrayMetadata) -> str:
        return join(path, "chunks/")

    def to_dict(self, meta: Node) -> dict[str, Any]:
        assert isinstance(meta, ArrayMetadata)
        return {"shape": list(meta.shape), "chunks": list(meta.chunk_shape)}


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(formats, "FORMATS", (ToyFormat(), *formats.FORMATS))


async def _toy_array(store: MemoryStore) -> np.ndarray:
    data = np.arange(12, dtype="<i2").reshape(3, 4)
    doc = {"shape": [3, 4], "chunks": [2, 4], "dtype": "<i2"}
    await store.set("a/toy.json", json.dumps(doc).encode())
    await store.set("a/chunks/0-0", data[:2].tobytes())  # the chunk 1-0 is missing
    return data


async def test_a_registered_format_is_detected_read_and_named(toy: None) -> None:
    store = MemoryStore()
    data = await _toy_array(store)
    counting = CountingStore(store)
    arr = await aiozarr.open_array_async(counting, "a", mode="r+")
    expected = data.copy()
    expected[2:] = -1  # the fill value
    np.testing.assert_array_equal(await arr.getitem(...), expected)
    keys = [key for _, key, _ in counting.requests]
    # probed after every other format missed: zarr.json, the v2 batch, v1 and the draft
    assert keys.index("a/toy.json") > keys.index("a/meta") > keys.index("a/.zarray")
    assert arr.metadata.to_dict() == {"shape": [3, 4], "chunks": [2, 4]}
    with pytest.raises(MetadataError, match="cannot write toy metadata"):
        await arr.update_attributes({"x": 1})


async def test_explicit_formats_never_probe_a_format_detected_only(toy: None) -> None:
    store = MemoryStore()
    await _toy_array(store)
    counting = CountingStore(store)
    with pytest.raises(NodeNotFoundError):
        await aiozarr.open_array_async(counting, "a", mode="r", zarr_format=2)
    assert "a/toy.json" not in [key for _, key, _ in counting.requests]


def test_every_metadata_value_has_one_format() -> None:
    """`formats.format_of`: the draft before v2 (its model is v2's), one per value."""
    v2_array = ArrayMetadata((4,), np.dtype("f4"), (2,), 0.0, zarr_format=2)
    cases = {
        v3.FORMAT: ArrayMetadata((4,), np.dtype("f4"), (2,), 0.0),
        v2.FORMAT: v2_array,
        v1.FORMAT: ArrayMetadata((4,), np.dtype("f4"), (2,), 0.0, zarr_format=1),
        v3draft.FORMAT: v3draft.parse_group(None, "meta/root.group.json"),
    }
    for fmt, meta in cases.items():
        assert formats.format_of(meta) is fmt
    assert v2.FORMAT.owns(cases[v3draft.FORMAT])  # so the draft is asked first
