"""`aiozarr info` and `aiozarr tree` on a repository, at a branch, a tag or a snapshot."""

from __future__ import annotations

import json

import pytest
from tests.interop.icechunk.generate import Written

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
