"""What the command line says: counts in words, the node's name, what progress counts."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

import aiozarr
from aiozarr.cli import main
from aiozarr.cli.progress import ProgressDisplay, plural


def test_plural() -> None:
    assert [plural(n, "array") for n in (0, 1, 2)] == ["0 arrays", "1 array", "2 arrays"]


def _rows(table: str) -> dict[str, str]:
    return {k.strip(): v.strip() for k, v in (line.split(" : ", 1) for line in table.splitlines())}


def test_info_names_the_node_the_url_points_at(tmp_path: Path, capsys) -> None:
    group = aiozarr.open_group(tmp_path / "demo.zarr", mode="w")
    group.create_array("temperature", shape=(4,), dtype="f4", chunks=(2,))
    assert main(["info", str(tmp_path / "demo.zarr" / "temperature")]) == 0
    rows = _rows(capsys.readouterr().out)
    assert rows["Name"] == "temperature"
    assert main(["info", str(tmp_path / "demo.zarr"), "--path", "temperature"]) == 0
    rows = _rows(capsys.readouterr().out)
    assert rows["Name"] == "/temperature"


def test_cp_counts_objects_in_words(tmp_path: Path, capsys) -> None:
    src = aiozarr.create_array(tmp_path / "a.zarr", shape=(8, 8), dtype="i2", chunks=(4, 4))
    src[...] = np.arange(64).reshape(8, 8)
    dst = tmp_path / "b.zarr"
    assert main(["cp", str(tmp_path / "a.zarr"), str(dst), "--shards", "8,8"]) == 0
    out = capsys.readouterr().out
    assert "copied 1 array, 0 groups: 1 object written (shards or chunks)" in out


def test_progress_lines_name_what_they_count() -> None:
    stream = io.StringIO()
    with ProgressDisplay("copy", mode="plain", stream=stream, pieces="objects") as show:
        show.update(50, 100, 1, 2)
        show.update(100, 100, 2, 2)
    assert "2/2 objects" in stream.getvalue()
