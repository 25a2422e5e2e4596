"""Fixed-length unicode (`U`, 4-byte code points) written as v3 names its byte order in
the `bytes` codec, as zarr-python writes it; zarr-python 3.4 refuses such an array
without one."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import zarr

import aiozarr

# zarr-python warns that fixed-length strings have no v3 specification yet.
pytestmark = pytest.mark.filterwarnings("ignore:The data type .* Zarr V3 specification")

WORDS = np.array(["Zürich", "", "北京"], dtype=">U6")


def _bytes_codec(path: Path) -> dict[str, object]:
    return json.loads((path / "zarr.json").read_text())["codecs"][0]


def test_created_like_zarr_python(tmp_path: Path) -> None:
    ours = aiozarr.create_array(str(tmp_path / "a.zarr"), shape=(3,), dtype="U6", zarr_format=3)
    ours[:] = WORDS
    theirs = zarr.create_array(str(tmp_path / "z.zarr"), shape=(3,), dtype="U6", zarr_format=3)
    assert _bytes_codec(tmp_path / "a.zarr") == _bytes_codec(tmp_path / "z.zarr")
    assert _bytes_codec(tmp_path / "a.zarr") == {
        "name": "bytes",
        "configuration": {"endian": "little"},
    }
    assert zarr.open_array(str(tmp_path / "a.zarr"))[:].tolist() == WORDS.tolist()
    assert theirs.shape == (3,)


def test_migrated_big_endian_strings_keep_their_bytes(tmp_path: Path) -> None:
    v2 = aiozarr.create_array(str(tmp_path / "v2.zarr"), shape=(3,), dtype=">U6", zarr_format=2)
    v2[:] = WORDS
    aiozarr.migrate(str(tmp_path / "v2.zarr"), str(tmp_path / "v3.zarr"), zarr_format=3)
    assert _bytes_codec(tmp_path / "v3.zarr") == {
        "name": "bytes",
        "configuration": {"endian": "big"},
    }
    assert zarr.open_array(str(tmp_path / "v3.zarr"))[:].tolist() == WORDS.tolist()
