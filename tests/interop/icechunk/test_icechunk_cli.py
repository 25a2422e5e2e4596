"""`aiozarr info` and `aiozarr tree` on a repository, at a branch, a tag or a snapshot."""

from __future__ import annotations

import json

import pytest
from tests.interop.icechunk.generate import Written, open_repository

from aiozarr.cli import info, tree


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
