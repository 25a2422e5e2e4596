"""`aiozarr --version`, and what `aiozarr info` shows of an array it cannot decode."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import subprocess
import sys
from html import escape
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import aiozarr
from aiozarr.cli import main
from aiozarr.errors import UnsupportedError


def test_version_is_the_package_version(capsys) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"aiozarr {aiozarr.__version__}\n"
    # the installed distribution says the same: one version, read from one place
    assert importlib.metadata.version("aiozarr") == aiozarr.__version__


def test_version_from_the_console() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "aiozarr", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"aiozarr {aiozarr.__version__}"


def _rows(table: str) -> dict[str, str]:
    return {k.strip(): v.strip() for k, v in (line.split(" : ", 1) for line in table.splitlines())}


def _sharded_zfpy_array(path: Path) -> Path:
    """A v3 array of 2 x 2 shards of 5 x 5 chunks whose chunks are zfpy-compressed, as
    zarr-python 3 writes `numcodecs.zfpy`; one shard stored."""
    sharding = {
        "chunk_shape": [5, 5],
        "codecs": [
            {"name": "bytes", "configuration": {"endian": "little"}},
            {"name": "numcodecs.zfpy", "configuration": {"mode": 4, "tolerance": 0.01}},
        ],
        "index_codecs": [
            {"name": "bytes", "configuration": {"endian": "little"}},
            {"name": "crc32c"},
        ],
        "index_location": "end",
    }
    document = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": [20, 20],
        "data_type": "float32",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [10, 10]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": "NaN",
        "codecs": [{"name": "sharding_indexed", "configuration": sharding}],
        "attributes": {"units": "K"},
        "dimension_names": ["y", "x"],
    }
    path.mkdir()
    (path / "zarr.json").write_text(json.dumps(document))
    (path / "c" / "0").mkdir(parents=True)
    (path / "c" / "0" / "0").write_bytes(bytes(100))
    return path


def test_info_shows_an_array_whose_codec_package_is_missing(tmp_path: Path, capsys) -> None:
    if importlib.util.find_spec("zfpy") is not None:
        pytest.skip("zfpy is installed here: nothing is missing")
    path = _sharded_zfpy_array(tmp_path / "t.zarr")
    with pytest.raises(UnsupportedError, match="pip install zfpy"):
        aiozarr.open_array(path, mode="r")  # what info cannot do either, and says why

    assert main(["info", str(path)]) == 0
    rows = _rows(capsys.readouterr().out)
    assert rows["Type"] == "Array (Zarr v3)"
    assert rows["Shape"] == "(20, 20)"
    assert rows["Data type"] == "float32"
    assert rows["Chunk shape"] == "(5, 5)"
    assert rows["Shard shape"] == "(10, 10)"
    assert rows["Grid"] == "(2, 2) = 4 shards"
    assert (
        rows["Codecs"]
        == "sharding_indexed[bytes(endian=little) -> numcodecs.zfpy(mode=4,tolerance=0.01)]"
    )
    assert rows["Fill value"] == "NaN"
    assert rows["Dimension names"] == "y, x"
    stored = 100 + (path / "zarr.json").stat().st_size  # the shard and the metadata
    assert rows["Stored size"].startswith(f"{stored} B in 2 objects (ratio ")
    assert "codec 'zfpy' needs the zfpy package: pip install zfpy" in rows["Cannot read"]

    assert main(["info", str(path), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["shape"] == [20, 20] and shown["shards"] == [10, 10]
    assert [c["name"] for c in shown["codecs"][0]["configuration"]["codecs"]] == [
        "bytes",
        "numcodecs.zfpy",
    ]
    assert "pip install zfpy" in shown["problem"]


def test_info_of_a_v2_array_names_the_imagecodecs_call(tmp_path: Path, capsys) -> None:
    path = tmp_path / "img.zarr"
    path.mkdir()
    zarray = {
        "zarr_format": 2,
        "shape": [8],
        "chunks": [4],
        "dtype": "|u1",
        "compressor": {"id": "imagecodecs_jpeg2k", "level": 4},
        "fill_value": 0,
        "order": "C",
        "filters": None,
    }
    (path / ".zarray").write_text(json.dumps(zarray))
    assert main(["info", str(path)]) == 0
    rows = _rows(capsys.readouterr().out)
    assert rows["Shape"] == "(8,)" and rows["Codecs"] == "imagecodecs_jpeg2k(level=4)"
    assert "imagecodecs.numcodecs.register_codecs()" in rows["Cannot read"]


def test_a_group_or_nothing_is_not_described_as_an_array(tmp_path: Path, capsys) -> None:
    assert main(["info", str(tmp_path / "missing.zarr")]) == 1
    assert "no Zarr array or group" in capsys.readouterr().err


def test_arr_info_and_the_cli_render_the_same_rows(tmp_path: Path, capsys) -> None:
    """One description, rendered alike: shapes as tuples, fill values as Zarr spells them."""
    arr = aiozarr.create_array(
        tmp_path / "t.zarr",
        shape=(48, 73, 144),
        dtype="f4",
        chunks=(1, 73, 144),
        shards=(24, 73, 144),
        fill_value=np.nan,
        dimension_names=["time", "lat", "lon"],
    )
    assert main(["info", str(tmp_path / "t.zarr")]) == 0
    cli = _rows(capsys.readouterr().out)
    shown = _rows(arr.info)
    assert shown["Shape"] == cli["Shape"] == "(48, 73, 144)"
    assert shown["Fill value"] == cli["Fill value"] == "NaN"
    assert shown["Dimension names"] == cli["Dimension names"] == "time, lat, lon"
    html = arr._repr_html_()
    for label, value in shown.items():
        if label not in ("Name", "Store"):  # the CLI opens it read-only, by the URL
            assert cli[label] == value, label
        assert f"<td style='text-align:left'>{escape(value)}</td>" in html


DRAFT = Path(__file__).parents[1] / "formats" / "data" / "v3draft.zarr"


def test_info_and_tree_name_the_2020_draft_format(tmp_path: Path, capsys) -> None:
    # its zarr_format says 2 (as zarr-python 2 reported it): it is not Zarr v2
    assert main(["info", str(DRAFT)]) == 0
    assert _rows(capsys.readouterr().out)["Type"] == "Group (2020 Zarr v3 draft)"
    assert main(["info", str(DRAFT), "--path", "grp/ints"]) == 0
    assert _rows(capsys.readouterr().out)["Type"] == "Array (2020 Zarr v3 draft)"
    assert main(["info", str(DRAFT), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert (shown["zarr_format"], shown["format"]) == (2, "2020 Zarr v3 draft")
    assert main(["tree", str(DRAFT)]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "/ (2020 Zarr v3 draft)"
    assert main(["tree", str(DRAFT), "--json"]) == 0
    tree = json.loads(capsys.readouterr().out)
    assert tree["format"] == tree["members"][0]["format"] == "2020 Zarr v3 draft"
    group = aiozarr.open_group(DRAFT, mode="r")  # and the handles' own info
    assert "Group (2020 Zarr v3 draft)" in str(group.info)
    assert "Array (2020 Zarr v3 draft)" in str(group["grp/ints"].info)
    # a real v2 hierarchy still says so
    aiozarr.create_group(tmp_path / "v2.zarr", zarr_format=2).create_array(
        "a", shape=(2,), dtype="u1"
    )
    assert main(["tree", str(tmp_path / "v2.zarr")]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "/ (Zarr v2)"
    assert main(["info", str(tmp_path / "v2.zarr"), "--path", "a"]) == 0
    assert _rows(capsys.readouterr().out)["Type"] == "Array (Zarr v2)"


@pytest.mark.parametrize(
    ("fill", "text", "stored"),
    [
        (np.datetime64("NaT", "s"), "NaT", np.iinfo("i8").min),
        (np.datetime64("2020-01-01T00:00:00", "s"), "2020-01-01T00:00:00", 1577836800),
        (np.timedelta64(5, "us"), "5 microseconds", 5),
    ],
)
def test_time_fill_values_are_described_as_numpy_writes_them(
    fill: Any, text: str, stored: int
) -> None:
    """`.item()` made NaT None ("no fill value") and other times a Python datetime or a
    bare integer, by unit."""
    from aiozarr.nodes import description

    assert description.fill_value_text(fill) == text
    assert description._json_value(fill) == stored
