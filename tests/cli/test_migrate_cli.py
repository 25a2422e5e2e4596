"""`aiozarr migrate` through `subprocess`: local and emulator stores, summaries, errors."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
import zarr
from test_cli import _cli_options, aiozarr_cli

import aiozarr
from aiozarr.emulator import Emulator

DRAFT = Path(__file__).parents[1] / "formats" / "data" / "v3draft.zarr"
INTS = np.arange(35).reshape(5, 7)


def test_draft_hierarchy_to_v3_on_s3(emulator: Emulator, prefix: str) -> None:
    url = emulator.s3_url(f"{prefix}/v3.zarr")
    out = aiozarr_cli("migrate", str(DRAFT), url, "--json", *_cli_options(emulator)).stdout
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["node"] == "group" and summary["zarr_format"] == 3
    assert (summary["arrays"], summary["groups"]) == (3, 2)
    assert (summary["chunks_copied"], summary["chunks_reencoded"]) == (6, 9)
    root = aiozarr.open_group(url, mode="r", storage_options=emulator.storage_options())
    assert root.zarr_format == 3 and root.attrs == {"title": "draft fixture"}
    np.testing.assert_array_equal(root["grp/ints"][...], INTS)
    assert root["grp/ints"].attrs == {"units": "m"}


def test_to_v2_consolidated_with_plain_progress(tmp_path: Path) -> None:
    result = aiozarr_cli(
        "migrate",
        str(DRAFT),
        str(tmp_path / "v2.zarr"),
        "--zarr-format",
        "2",
        "--consolidate",
        "--progress",
        "plain",
    )
    assert result.stdout.startswith("migrated 3 arrays, 2 groups to Zarr v2: 15 chunks copied")
    assert "migrate: 100.0%" in result.stderr and "done" in result.stderr
    assert (tmp_path / "v2.zarr" / ".zmetadata").exists()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        group = zarr.open_consolidated(tmp_path / "v2.zarr", zarr_format=2)
        np.testing.assert_array_equal(group["grp/ints"][...], INTS)


def test_one_array_by_path(tmp_path: Path) -> None:
    aiozarr_cli(
        "migrate",
        str(DRAFT),
        str(tmp_path / "out.zarr"),
        "--src-path",
        "grp/ints",
        "--dst-path",
        "ints",
        "--progress",
        "off",
    )
    arr = aiozarr.open_array(tmp_path / "out.zarr", "ints", mode="r")
    np.testing.assert_array_equal(arr[...], INTS)


@pytest.mark.parametrize(
    ("make_args", "message"),
    [
        (lambda tmp: [str(tmp / "missing.zarr"), str(tmp / "out")], "no Zarr array or group"),
        (lambda tmp: [str(DRAFT), str(DRAFT)], "onto itself"),
        (lambda tmp: [str(DRAFT), str(tmp), "--zarr-format", "4"], "invalid choice"),
    ],
)
def test_errors_are_one_line(tmp_path: Path, make_args, message: str) -> None:  # type: ignore[no-untyped-def]
    result = aiozarr_cli("migrate", *make_args(tmp_path), check=False)
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("aiozarr migrate: error:"), result.stderr
    assert message in lines[0]


def test_existing_destination_needs_overwrite(tmp_path: Path) -> None:
    out = str(tmp_path / "out.zarr")
    aiozarr_cli("migrate", str(DRAFT), out, "--progress", "off")
    again = aiozarr_cli("migrate", str(DRAFT), out, "--progress", "off", check=False)
    assert again.returncode == 1 and "already exists" in again.stderr
    assert "Traceback" not in again.stderr
    aiozarr_cli("migrate", str(DRAFT), out, "--overwrite", "--progress", "off")
