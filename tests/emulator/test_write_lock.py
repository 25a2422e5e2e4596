"""A conditional write's check and its rename are one step that no other write lands in.

Plain PUTs and DELETEs took no lock, so one landing between a conditional request's
check and its rename (or unlink) was lost: a create-only PUT or an If-Match PUT wrote
over an acknowledged PUT, an If-Match PUT brought a deleted object back, a DELETE with
If-Match removed a version it did not name. The rival request is sent from an audit
hook at the conditional request's rename or unlink (under the lock), on a thread given
a second to land: with the lock it lands after, as S3 would order it.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from aiozarr.emulator import Emulator, files
from aiozarr.emulator.files import TMP_DIR

_state: dict[str, Any] = {"event": None, "path": None, "then": None, "answers": [], "rival": None}


def _hook(event: str, args: tuple[Any, ...]) -> None:
    then = _state["then"]
    if then is None or event != _state["event"]:
        return
    path = args[1] if event == "os.rename" else args[0]
    if str(path) != str(_state["path"]):
        return
    _state["then"] = None
    rival = threading.Thread(target=lambda: _state["answers"].append(_send(*then)))
    rival.start()
    rival.join(1.0)
    _state["rival"] = rival


sys.addaudithook(_hook)


def _send(
    method: str, url: str, body: bytes | None = None, headers: dict[str, str] | None = None
) -> tuple[int, str | None, bytes]:
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, answer.headers.get("ETag"), answer.read()
    except urllib.error.HTTPError as exc:
        return exc.code, None, b""


@pytest.fixture
def emu(tmp_path: Path) -> Any:
    with Emulator(tmp_path / "bucket").running_in_thread() as emulator:
        _state.update(answers=[], rival=None)
        yield emulator
    _state["then"] = None


def _arm(emu: Emulator, event: str, key: str, *then: Any) -> None:
    _state.update(event=event, path=emu.root / key, then=then)


def _rival() -> tuple[int, str | None, bytes]:
    _state["rival"].join()
    return _state["answers"].pop()  # type: ignore[no-any-return]


def test_a_create_only_put_never_overwrites_a_put_that_landed(emu: Emulator) -> None:
    url = emu.http_url("k")
    _arm(emu, "os.rename", "k", "PUT", url, b"plain")
    assert _send("PUT", url, b"create-only", {"If-None-Match": "*"})[0] == 200
    assert _rival()[0] == 200
    assert _send("GET", url)[2] == b"plain"


@pytest.mark.parametrize(
    ("method", "body", "landed", "after"),
    [("PUT", b"v2", 200, (200, b"v2")), ("DELETE", None, 204, (404, b""))],
    ids=["overwrites-a-put", "brings-back-a-deleted-object"],
)
def test_a_compare_and_swap_never_undoes_a_write_that_landed(
    emu: Emulator, method: str, body: bytes | None, landed: int, after: tuple[int, bytes]
) -> None:
    url = emu.http_url("k")
    etag = _send("PUT", url, b"v1")[1]
    assert etag is not None
    _arm(emu, "os.rename", "k", method, url, body)
    assert _send("PUT", url, b"swapped", {"If-Match": etag})[0] == 200
    assert _rival()[0] == landed
    status, _, value = _send("GET", url)
    assert (status, value) == after


def test_two_servers_of_one_folder_never_both_swap_one_version(emu: Emulator) -> None:
    """A second server of the folder checked its If-Match under a lock of its own: a
    PUT on the same version landed between the first one's check and its rename, and
    both answered 200 (writers through two servers lost 2-3 of 200 updates)."""
    with Emulator(emu.root).running_in_thread() as other:
        url = emu.http_url("k")
        etag = _send("PUT", url, b"v1")[1]
        assert etag is not None
        _arm(emu, "os.rename", "k", "PUT", other.http_url("k"), b"theirs", {"If-Match": etag})
        assert _send("PUT", url, b"ours", {"If-Match": etag})[0] == 200
        assert _rival()[0] == 412
        assert _send("GET", url)[2] == b"ours"


def test_a_conditional_delete_never_deletes_a_version_it_did_not_name(emu: Emulator) -> None:
    url = emu.http_url("k")
    etag = _send("PUT", url, b"v1")[1]
    assert etag is not None
    _arm(emu, "os.remove", "k", "PUT", url, b"v2")
    assert _send("DELETE", url, headers={"If-Match": etag})[0] == 204
    assert _rival()[0] == 200
    assert _send("GET", url)[2] == b"v2"


@pytest.mark.parametrize(
    "condition",
    [{"If-None-Match": "*"}, {"X-Goog-If-Generation-Match": "0"}],
    ids=["if-none-match", "goog-generation-spelt-in-capitals"],
)
def test_a_multipart_complete_honours_a_create_only_condition(
    emu: Emulator, condition: dict[str, str]
) -> None:
    """Headers are named in any case: a capitalised x-goog condition was ignored."""
    url = emu.http_url("k")
    _send("PUT", url, b"first")
    complete, body = _upload_part(emu, "k")
    assert _send("POST", complete, body.encode(), condition)[0] == 412
    assert _send("GET", url)[2] == b"first"
    assert _send("DELETE", complete)[0] == 204  # the upload stayed open


def test_a_rename_held_up_stalls_no_read(emu: Emulator, monkeypatch: pytest.MonkeyPatch) -> None:
    """Writes waiting for the bucket's lock behind a slow rename (a stalled disk) held
    the threads reads use too: a GET of another object waited for the rename."""
    (emu.root / "other").write_bytes(b"there")
    release = threading.Event()
    rename = os.replace

    def slow(src: Any, dst: Any, **fds: Any) -> None:
        if Path(dst).name == "slow":
            release.wait(30)
        rename(src, dst, **fds)

    monkeypatch.setattr(files.os, "replace", slow)
    writers = [
        threading.Thread(target=_send, args=("PUT", emu.http_url(f"k{i}"), b"x")) for i in range(30)
    ]
    slow_put = threading.Thread(target=_send, args=("PUT", emu.http_url("slow"), b"x"))
    slow_put.start()
    for writer in writers:
        writer.start()
    try:
        assert _send("GET", emu.http_url("other"))[2] == b"there"  # while the rename waits
        assert not release.is_set() and slow_put.is_alive()
    finally:
        release.set()
        for thread in [slow_put, *writers]:
            thread.join(30)


def test_a_start_clears_what_a_killed_server_left_in_the_temp_folder(tmp_path: Path) -> None:
    tmp_dir = tmp_path / "bucket" / TMP_DIR
    tmp_dir.mkdir(parents=True)
    (tmp_dir / "0123abcd").write_bytes(b"a body on its way in")
    (tmp_dir / "upload.1.etag").write_bytes(b"a part of an upload that ended")
    with Emulator(tmp_path / "bucket").running_in_thread():
        assert list(tmp_dir.iterdir()) == []


def _upload_part(emu: Emulator, key: str) -> tuple[str, str]:
    """An upload of `key` begun, its one part sent: (its complete URL, its body)."""
    url = emu.http_url(key)
    created = _send("POST", url + "?uploads")[2]
    upload = created.split(b"<UploadId>")[1].split(b"</UploadId>")[0].decode()
    etag = _send("PUT", f"{url}?uploadId={upload}&partNumber=1", b"part")[1]
    body = (
        f"<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>{etag}</ETag>"
        "</Part></CompleteMultipartUpload>"
    )
    return f"{url}?uploadId={upload}", body


def test_a_second_server_of_the_folder_leaves_the_first_ones_uploads(emu: Emulator) -> None:
    """Starting another server of the folder (a read-only `aiozarr serve` for a viewer)
    cleared the temp folder under the first one: its upload's parts were gone."""
    complete, body = _upload_part(emu, "big")
    with Emulator(emu.root, read_only=True).running_in_thread():
        pass
    assert _send("POST", complete, body.encode())[0] == 200
    assert _send("GET", emu.http_url("big"))[2] == b"part"


def test_a_server_restarted_beside_another_leaves_its_uploads(tmp_path: Path) -> None:
    """Only the first server held the folder's lock: restarted, it found the lock free
    and cleared the temp folder under the second server's upload."""
    with contextlib.ExitStack() as serving:
        with Emulator(tmp_path / "bucket").running_in_thread():  # the first
            second = serving.enter_context(Emulator(tmp_path / "bucket").running_in_thread())
            complete, body = _upload_part(second, "big")
        with Emulator(tmp_path / "bucket").running_in_thread():  # again, the second serving
            assert _send("POST", complete, body.encode())[0] == 200
