"""`copy` / `aiozarr cp` read the source as stored, never a stale consolidated snapshot;
the summary says what it counted; `aiozarr info --json` is strict JSON."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
from tests.cli.test_cli import aiozarr_cli

import aiozarr
from aiozarr.errors import InvalidKeyError
from aiozarr.tools.copying import copy
from aiozarr.tools.migration import migrate


def _stale_source(path: Path, zarr_format: int) -> None:
    """A consolidated group changed since: rows appended, an attribute set, an array
    created, one deleted, and a subgroup (consolidated on its own) given a member."""
    group = aiozarr.open_group(path, mode="w", zarr_format=zarr_format)
    group.create_array("a", shape=(4,), chunks=(2,), dtype="i4", fill_value=0)[:] = [1, 2, 3, 4]
    group.create_array("gone", shape=(2,), dtype="i4")[:] = 9
    group.create_group("sub").create_array("x", shape=(2,), dtype="i4")[:] = 1
    aiozarr.consolidate_metadata(path, "sub")
    aiozarr.consolidate_metadata(path)
    a = aiozarr.open_array(path, path="a", mode="r+")
    a.append(np.array([5, 6], "i4"))
    a.attrs["late"] = 1
    aiozarr.open_group(path, mode="r+").create_array("b", shape=(2,), dtype="i4")[:] = 7
    shutil.rmtree(path / "gone")  # as another tool deletes: the snapshot still lists it
    aiozarr.open_group(path, path="sub", mode="r+").create_array("y", shape=(1,), dtype="i4")


def _check_copied(path: Path) -> None:
    copied = aiozarr.open_group(path, mode="r")
    assert copied.keys() == ["a", "b", "sub"]
    np.testing.assert_array_equal(copied["a"][:], [1, 2, 3, 4, 5, 6])
    assert dict(copied["a"].attrs) == {"late": 1}
    np.testing.assert_array_equal(copied["b"][:], [7, 7])
    assert copied["sub"].keys() == ["x", "y"]


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_copy_reads_the_hierarchy_as_stored(tmp_path: Path, zarr_format: int) -> None:
    _stale_source(tmp_path / "src.zarr", zarr_format)
    report = copy(tmp_path / "src.zarr", tmp_path / "dst.zarr")
    assert (report.arrays, report.groups) == (4, 2)
    _check_copied(tmp_path / "dst.zarr")
    # the source was consolidated: the copy is, of what was copied
    fresh = aiozarr.open_group(tmp_path / "dst.zarr", mode="r").metadata.consolidated
    assert fresh is not None and sorted(fresh) == ["a", "b", "sub", "sub/x", "sub/y"]


def test_cp_reads_the_hierarchy_as_stored(tmp_path: Path) -> None:
    _stale_source(tmp_path / "src.zarr", 3)
    aiozarr_cli("cp", str(tmp_path / "src.zarr"), str(tmp_path / "dst.zarr"), "--progress", "off")
    _check_copied(tmp_path / "dst.zarr")


def test_migrate_lists_a_consolidated_subgroup_too(tmp_path: Path) -> None:
    _stale_source(tmp_path / "src.zarr", 2)
    migrate(tmp_path / "src.zarr", tmp_path / "dst.zarr", zarr_format=3)
    _check_copied(tmp_path / "dst.zarr")


def test_a_copy_refuses_a_reserved_name_before_writing(tmp_path: Path) -> None:
    group = aiozarr.open_group(tmp_path / "src.zarr", mode="w")
    group.create_array("a", shape=(1,), dtype="i1")
    group.create_group("renamed")  # a v3 group named ".zattrs", as another tool may write
    (tmp_path / "src.zarr" / "renamed").rename(tmp_path / "src.zarr" / ".zattrs")
    with pytest.raises(InvalidKeyError, match=r"'\.zattrs'"):
        copy(tmp_path / "src.zarr", tmp_path / "dst.zarr")
    assert not (tmp_path / "dst.zarr").exists() or not any((tmp_path / "dst.zarr").iterdir())
    with pytest.raises(InvalidKeyError, match=r"'\.zattrs'"):
        migrate(tmp_path / "src.zarr", tmp_path / "m.zarr", zarr_format=2)
    assert not (tmp_path / "m.zarr" / ".zattrs").exists()


def test_cp_summary_counts_objects_stored(tmp_path: Path) -> None:
    arr = aiozarr.create_array(
        tmp_path / "src.zarr", shape=(8,), chunks=(2,), dtype="i4", fill_value=0
    )
    arr[:4] = 1  # 2 chunks of values, 2 of fill value (not stored)
    out = aiozarr_cli("cp", str(tmp_path / "src.zarr"), str(tmp_path / "dst.zarr"), "--json")
    summary = json.loads(out.stdout.strip().splitlines()[-1])
    assert (summary["chunks_written"], summary["chunks_empty"]) == (2, 2)
    assert len(list((tmp_path / "dst.zarr" / "c").iterdir())) == 2
    text = aiozarr_cli(
        "cp", str(tmp_path / "src.zarr"), str(tmp_path / "txt.zarr"), "--progress", "off"
    ).stdout
    assert "2 objects written (shards or chunks), 2 left out (all fill value)" in text
    assert "32 B of values (decoded)" in text


def test_info_json_is_strict(tmp_path: Path) -> None:
    group = aiozarr.open_group(tmp_path / "g.zarr", mode="w")
    group.attrs.update({"nan": math.nan, "deep": [1.5, {"inf": -math.inf}]})
    group.create_array("a", shape=(1,), dtype="f4", fill_value=math.nan, attributes={"m": math.inf})

    def strict(text: str) -> dict:
        def refuse(token: str) -> None:
            raise ValueError(f"bare {token} in --json output")

        return json.loads(text, parse_constant=refuse)

    info = strict(aiozarr_cli("info", str(tmp_path / "g.zarr"), "--json").stdout)
    assert info["attributes"] == {"nan": "NaN", "deep": [1.5, {"inf": "-Infinity"}]}
    info = strict(aiozarr_cli("info", str(tmp_path / "g.zarr"), "--path", "a", "--json").stdout)
    assert info["attributes"] == {"m": "Infinity"} and info["fill_value"] == "NaN"
