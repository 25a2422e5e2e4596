"""Branches, tags and snapshot ids as icechunk names them: a deleted tag, names its local
storage percent-encodes on disk, and snapshot arguments that name no snapshot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import icechunk
import numpy as np
import pytest
import zarr

import aiozarr
from aiozarr.errors import NodeNotFoundError, StoreError

#: Spec versions the installed icechunk writes (1.x: spec 1; 2.x: spec 2 and, asked, 1).
SPECS = [None, 1] if int(icechunk.__version__.split(".")[0]) >= 2 else [None]
#: Names icechunk's local storage writes percent-encoded (and some it keeps as they are).
NAMES = ["ü", "q?x", "a%b", "a#b", "a~b", "é€", 'x{y}[z]^|"<>*\\`', "a b", "a:b=c&d@e$f!g"]


def _repository(path: Path, spec_version: int | None) -> tuple[Any, str]:
    """A repository whose `main` holds `t` = [1, 1]; the id of that commit."""
    extra = {} if spec_version is None else {"spec_version": spec_version}
    repo = icechunk.Repository.create(icechunk.local_filesystem_storage(str(path)), **extra)
    session = repo.writable_session("main")
    zarr.create_array(session.store, name="t", shape=(2,), chunks=(2,), dtype="i4")[:] = 1
    return repo, session.commit("one")


def _spec(repo: Any) -> int:
    return int(getattr(repo, "spec_version", 1))


@pytest.mark.parametrize("spec_version", SPECS, ids=lambda v: f"spec-{v or 'default'}")
def test_a_deleted_tag_is_not_found(tmp_path: Path, spec_version: int | None) -> None:
    repo, snapshot = _repository(tmp_path / "repo", spec_version)
    repo.create_tag("v1", snapshot)
    repo.create_tag("kept", snapshot)
    repo.delete_tag("v1")
    with pytest.raises(Exception):  # noqa: B017 (icechunk's own error types differ by version)
        repo.readonly_session(tag="v1")
    with pytest.raises(NodeNotFoundError, match="no tag 'v1'"):
        aiozarr.open_array(tmp_path / "repo", "t", mode="r", storage_options={"tag": "v1"})
    kept = aiozarr.open_array(tmp_path / "repo", "t", mode="r", storage_options={"tag": "kept"})
    assert kept[:].tolist() == [1, 1]


@pytest.mark.parametrize("spec_version", SPECS, ids=lambda v: f"spec-{v or 'default'}")
def test_branches_and_tags_named_with_any_characters_open(
    tmp_path: Path, spec_version: int | None
) -> None:
    repo, snapshot = _repository(tmp_path / "repo", spec_version)
    for name in NAMES:
        repo.create_branch(name, snapshot)
        repo.create_tag(f"t{name}", snapshot)
    for name in NAMES:
        theirs = zarr.open_array(repo.readonly_session(branch=name).store, path="t", mode="r")
        for kind, ref in (("branch", name), ("tag", f"t{name}")):
            ours = aiozarr.open_array(tmp_path / "repo", "t", mode="r", storage_options={kind: ref})
            np.testing.assert_array_equal(ours[:], theirs[:], err_msg=f"{kind} {ref!r}")


def test_local_ref_folders_are_named_as_icechunk_writes_them(tmp_path: Path) -> None:
    from aiozarr.storage.references.icechunk.store import local_ref_segment

    repo, snapshot = _repository(tmp_path / "repo", 1 if SPECS[-1] == 1 else None)
    assert _spec(repo) == 1
    for name in [*NAMES, "a\tb", "a\x7fb", "plain-name_1.2"]:
        repo.create_branch(name, snapshot)
        assert (tmp_path / "repo" / "refs" / f"branch.{local_ref_segment(name)}").is_dir(), name
    assert local_ref_segment("ü?") == "%C3%BC%3F"


def test_a_snapshot_argument_that_names_no_snapshot_says_so(tmp_path: Path) -> None:
    _, snapshot = _repository(tmp_path / "repo", None)
    for bad in ("zzz", "", "0123456789ABCDEFGHJU"):  # U: not a Crockford digit
        with pytest.raises(StoreError, match="snapshot") as raised:
            aiozarr.open_group(tmp_path / "repo", mode="r", storage_options={"snapshot": bad})
        assert "implicit" not in str(raised.value)
    with pytest.raises(NodeNotFoundError, match="no snapshot '0123456789ABCDEFGHJK'"):
        aiozarr.open_array(
            tmp_path / "repo", "t", mode="r", storage_options={"snapshot": "0123456789ABCDEFGHJK"}
        )
    lower = {"snapshot": snapshot.lower()}  # read in either case, as icechunk does
    assert aiozarr.open_array(tmp_path / "repo", "t", mode="r", storage_options=lower)[
        :
    ].tolist() == [1, 1]
    with pytest.raises(StoreError, match="branch must be a non-empty name"):
        aiozarr.open_group(tmp_path / "repo", mode="r", storage_options={"branch": ""})
