"""Codecs written as dicts for `create_array` are stored complete, so other readers open them.

zarr-python and TensorStore refuse a codec without its `configuration`, blosc without
`typesize`, a member they do not know, or sharding without `index_codecs`: what the
caller typed is built and stored as the codec writes itself (`creation._typed_codec`).
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

import aiozarr
from aiozarr.errors import MetadataError

zarr = pytest.importorskip("zarr")
ts = pytest.importorskip("tensorstore")

VALUES = np.arange(10, dtype="i4")
BLOSC = {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 1, "shuffle": "shuffle"}}
SHARDING = {"name": "sharding_indexed", "configuration": {"chunk_shape": [5]}}

CASES = [
    # (create_array keywords, the codec stored at the end of the chain)
    (
        {"compressors": {"name": "zstd"}},
        {"name": "zstd", "configuration": {"level": 0, "checksum": False}},
    ),
    ({"compressors": {"name": "gzip"}}, {"name": "gzip", "configuration": {"level": 5}}),
    (
        {"compressors": BLOSC},
        {
            "name": "blosc",
            "configuration": {
                "cname": "lz4", "clevel": 1, "shuffle": "shuffle", "typesize": 4, "blocksize": 0
            },
        },
    ),
    (
        {"compressors": {"name": "blosc"}},  # zarr-python picks shuffle by the item size
        {
            "name": "blosc",
            "configuration": {
                "cname": "zstd", "clevel": 5, "shuffle": "shuffle", "typesize": 4, "blocksize": 0
            },
        },
    ),
    (
        {"serializer": SHARDING, "compressors": None},
        {
            "name": "sharding_indexed",
            "configuration": {
                "chunk_shape": [5],
                "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
                "index_codecs": [
                    {"name": "bytes", "configuration": {"endian": "little"}},
                    {"name": "crc32c"},
                ],
                "index_location": "end",
            },
        },
    ),
]  # fmt: skip


def _create(path: str, **codecs: object) -> None:
    arr = aiozarr.create_array(path, shape=(10,), chunks=(10,), dtype="i4", **codecs)
    arr[...] = VALUES


@pytest.mark.parametrize(("codecs", "stored"), CASES)
def test_a_codec_dict_is_stored_complete_and_read_by_others(tmp_path, codecs, stored):
    path = str(tmp_path / "a.zarr")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the caller's own input: no quirk warning either
        _create(path, **codecs)
    doc = json.loads((tmp_path / "a.zarr" / "zarr.json").read_text())
    assert doc["codecs"][-1] == stored
    np.testing.assert_array_equal(zarr.open_array(path, mode="r")[...], VALUES)
    spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": path}}
    np.testing.assert_array_equal(ts.open(spec).result().read().result(), VALUES)


def test_an_inner_blosc_of_a_sharding_dict_gets_its_typesize(tmp_path):
    path = str(tmp_path / "a.zarr")
    little = {"name": "bytes", "configuration": {"endian": "little"}}
    inner = {"chunk_shape": [5], "codecs": [little, BLOSC]}
    _create(path, serializer={"name": "sharding_indexed", "configuration": inner}, compressors=None)
    doc = json.loads((tmp_path / "a.zarr" / "zarr.json").read_text())
    blosc = doc["codecs"][-1]["configuration"]["codecs"][-1]["configuration"]
    assert (blosc["typesize"], blosc["blocksize"]) == (4, 0)
    spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": path}}
    np.testing.assert_array_equal(ts.open(spec).result().read().result(), VALUES)


@pytest.mark.parametrize(
    "codecs",
    [
        {"compressors": {"name": "gzip", "configuration": {"level": 1, "bogus": 2}}},
        {"compressors": {"name": "zstd", "configuration": {"bogus": 2}}},
        {"serializer": {"name": "bytes", "configuration": {"endian": "little", "bogus": 2}}},
    ],
)
def test_an_unknown_member_of_a_codec_dict_is_refused_by_name(tmp_path, codecs):
    with pytest.raises(MetadataError, match="'bogus'"):
        _create(str(tmp_path / "a.zarr"), **codecs)
    assert not (tmp_path / "a.zarr" / "zarr.json").exists()
