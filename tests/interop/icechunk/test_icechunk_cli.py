"""`aiozarr info` and `aiozarr tree` on a repository, at a branch, a tag or a snapshot."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.interop.icechunk.generate import Written, open_repository

import aiozarr
from aiozarr.cli import cp, info, tree


def test_tree_and_info_at_a_tag_and_a_snapshot(
    written: Written, capsys: pytest.CaptureFixture[str]
) -> None:
    assert tree.main([str(written.path), "--json"]) == 0
    names = [m["name"] for m in json.loads(capsys.readouterr().out)["members"]]
    assert "late" in names  # main: the second commit
    assert tree.main([str(written.path), "--tag", "v1", "--json"]) == 0
    names = [m["name"] for m in json.loads(capsys.readouterr().out)["members"]]
    assert "late" not in names and "virtual" in names
    first = written.refs["tag:v1"]
    assert info.main([str(written.path), "--path", "late", "--snapshot", first]) == 1
    assert "'late'" in capsys.readouterr().err
    assert info.main([str(written.path), "--path", "native/f8", "--branch", "dev", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["shape"] == [30, 40]
    with pytest.raises(SystemExit):  # one of them only
        tree.main([str(written.path), "--tag", "v1", "--branch", "dev"])


def test_tree_as_of_a_time(written: Written, capsys: pytest.CaptureFixture[str]) -> None:
    if written.spec_version == 1:
        pytest.skip("as_of reads spec-2 repositories")
    history = list(open_repository(written).ancestry(branch="main"))
    between = history[1].written_at + (history[0].written_at - history[1].written_at) / 2
    assert tree.main([str(written.path), "--as-of", between.isoformat(), "--json"]) == 0
    names = [m["name"] for m in json.loads(capsys.readouterr().out)["members"]]
    assert "late" not in names and "virtual" in names  # the first commit


def test_cp_of_a_tag_to_a_local_path(written: Written, tmp_path: Path) -> None:
    """The tag option was given to the destination too, which a ref option makes "a
    repository" whatever its layout: a tag could not be copied to a local path."""
    out = tmp_path / "v1.zarr"
    source = str(written.path)
    sources = json.dumps([str(written.path.parent / "sources")])
    options = ["-o", "tag=v1", "-o", f"allowed_targets={sources}"]
    assert cp.main([source, str(out), *options, "--progress", "off"]) == 0
    names = aiozarr.open_group(out).member_names()
    assert "late" not in names and "native" in names  # the tag's snapshot, not main's
