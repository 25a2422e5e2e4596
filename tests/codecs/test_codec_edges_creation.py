"""Codecs written as dicts for `create_array` are stored complete, so other readers open them.

zarr-python and TensorStore refuse a codec without its `configuration`, blosc without
`typesize`, a member they do not know, or sharding without `index_codecs`: what the
caller typed is built and stored as the codec writes itself (`creation._typed_codec`).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

import aiozarr
from aiozarr.errors import AiozarrWarning, MetadataError

zarr = pytest.importorskip("zarr")
ts = pytest.importorskip("tensorstore")

VALUES = np.arange(10, dtype="i4")
BLOSC = {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 1, "shuffle": "shuffle"}}
SHARDING = {"name": "sharding_indexed", "configuration": {"chunk_shape": [5]}}
LITTLE = {"name": "bytes", "configuration": {"endian": "little"}}
SHARDING_OF_BARE_BYTES = {
    "name": "sharding_indexed",
    "configuration": {
        "chunk_shape": [5],
        "codecs": [{"name": "bytes"}],
        "index_codecs": [{"name": "bytes"}, {"name": "crc32c"}],
    },
}

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
    # zarr-python 3.1 takes a `bytes` without `endian` as little endian (3.4 refuses it)
    ({"serializer": {"name": "bytes"}, "compressors": None}, LITTLE),
    ({"serializer": {"name": "bytes", "configuration": {}}, "compressors": None}, LITTLE),
    (
        {"serializer": SHARDING_OF_BARE_BYTES, "compressors": None},
        {
            "name": "sharding_indexed",
            "configuration": {
                "chunk_shape": [5],
                "codecs": [LITTLE],
                "index_codecs": [LITTLE, {"name": "crc32c"}],
                "index_location": "end",
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


def _sharding_with(**chains: object) -> dict[str, object]:
    return {"name": "sharding_indexed", "configuration": {"chunk_shape": [5], **chains}}


@pytest.mark.parametrize(
    "codecs",
    [
        {"compressors": {"name": "gzip", "configuration": {"level": 1, "bogus": 2}}},
        {"compressors": {"name": "zstd", "configuration": {"bogus": 2}}},
        {"serializer": {"name": "bytes", "configuration": {"endian": "little", "bogus": 2}}},
        # inside a sharding codec's chains, as at the top level
        {"serializer": _sharding_with(codecs=[{**LITTLE, "configuration": {"bogus": 2}}])},
        {
            "serializer": _sharding_with(
                index_codecs=[LITTLE, {"name": "crc32c", "configuration": {"bogus": 2}}]
            )
        },
        {
            "serializer": _sharding_with(
                codecs=[LITTLE, {"name": "gzip", "configuration": {"level": 1, "bogus": 2}}]
            )
        },
    ],
)
def test_an_unknown_member_of_a_codec_dict_is_refused_by_name(tmp_path, codecs):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # refused, never only warned
        with pytest.raises(MetadataError, match=r"codec '[a-z0-9]+'.*'bogus'"):
            _create(str(tmp_path / "a.zarr"), **codecs)
    assert not (tmp_path / "a.zarr" / "zarr.json").exists()


def _stored_with_bare_bytes(path: Path, data_type: str, chunk: bytes) -> Path:
    """A v3 array of 4 elements whose `bytes` codec has no configuration."""
    document = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": [4],
        "data_type": data_type,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0,
        "codecs": [{"name": "bytes"}],
    }
    (path / "c").mkdir(parents=True)
    (path / "zarr.json").write_text(json.dumps(document))
    (path / "c" / "0").write_bytes(chunk)
    return path


def test_a_stored_bytes_codec_without_endian_reads_little_endian_with_a_warning(
    tmp_path: Path,
) -> None:
    # the spec requires `endian` here (zarr-python 3.4 and TensorStore refuse the array);
    # zarr-python 3.1 reads it as little endian: a writer quirk, read so and said
    values = np.array([1, -2, 300, 70000], dtype="<i4")
    path = _stored_with_bare_bytes(tmp_path / "a.zarr", "int32", values.tobytes())
    with pytest.warns(AiozarrWarning, match="'endian' is missing for data type int32"):
        read = aiozarr.open_array(path, mode="r")[...]
    np.testing.assert_array_equal(read, values)
    # one byte per element: no byte order to give, nothing to say
    path = _stored_with_bare_bytes(tmp_path / "b.zarr", "uint8", bytes([1, 2, 3, 4]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert aiozarr.open_array(path, mode="r")[...].tolist() == [1, 2, 3, 4]
