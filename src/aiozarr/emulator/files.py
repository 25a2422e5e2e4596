"""The emulator's bucket on disk: one file per object, read as one version (stat and
bytes from one open file), written by renaming a temp file into place, and conditional
PUTs checked and renamed under one lock."""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import threading
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from pathlib import Path

from aiozarr.emulator.paths import TMP_DIR
from aiozarr.emulator.s3 import S3Error, parse_range

__all__ = [
    "PUT_CONDITIONS",
    "STREAM_BYTES",
    "TMP_DIR",
    "FileSlice",
    "check_put_condition",
    "delete_if_match",
    "etag_of",
    "generation_of",
    "move_into_place",
    "new_temp_file",
    "not_modified",
    "read_version",
    "version_headers",
    "write_atomic",
]

# Bodies larger than this are streamed from the open file in pieces (the server paces),
# not read into memory first: a (sparse) 2 GiB object costs the emulator no 2 GiB, and
# a client that refuses it after the headers stops the transfer.
STREAM_BYTES = 16 << 20


@dataclass
class FileSlice:
    """A body too large to hold: bytes `start..stop` of an open file (a duplicated fd of
    the same version the stat came from), streamed by the handler, which closes it."""

    fd: int
    start: int
    stop: int


def read_version(
    path: Path, range_header: str | None, *, body: bool = True
) -> tuple[os.stat_result, tuple[int, int] | None, bytes | FileSlice] | None:
    """One version of the object at `path`: its stat, the range served and those bytes.

    The file is opened once and both the stat and the bytes come from the open file, so
    they belong to one version even while a PUT renames a new file over `path`. None: no
    such object. `range_header`: the request's `Range` (None: everything); `body=False`
    reads no bytes (HEAD).
    """
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed below, after the stat and the read
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None
    with f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            return None
        bounds = None if range_header is None else parse_range(range_header, st.st_size)
        if not body:
            return st, bounds, b""
        start, stop = bounds or (0, st.st_size)
        if stop - start > STREAM_BYTES:
            return st, bounds, FileSlice(os.dup(f.fileno()), start, stop)
        f.seek(start)
        return st, bounds, f.read(stop - start)


def etag_of(st: os.stat_result) -> str:
    """A version's ETag: a rename-into-place makes a new inode, so a new tag; ctime as
    well, which a copy that keeps mtime (`cp -p`) still changes."""
    return f'"{st.st_ino:x}-{st.st_mtime_ns:x}-{st.st_ctime_ns:x}-{st.st_size:x}"'


def generation_of(st: os.stat_result) -> int:
    """A version's GCS generation number (GCS's counterpart of the ETag)."""
    return st.st_mtime_ns


def check_put_condition(path: Path, headers: Mapping[str, str]) -> None:
    """Raise a 412 unless the object at `path` is what the PUT's condition asks for:
    S3's `If-Match: <etag>` / `If-None-Match: *`, or GCS's
    `x-goog-if-generation-match: <generation>` (0: no object)."""
    try:
        st: os.stat_result | None = path.stat()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        st = None
    if_match, if_none_match = headers.get("If-Match"), headers.get("If-None-Match")
    generation = headers.get("x-goog-if-generation-match")
    if generation is not None and not generation.strip().isdigit():
        raise S3Error(400, f"x-goog-if-generation-match is not a number: {generation!r}")
    held = (
        (if_none_match is None or if_none_match.strip() != "*" or st is None)
        and (
            if_match is None or (st is not None and if_match.strip('" ') == etag_of(st).strip('"'))
        )
        and (generation is None or int(generation) == (0 if st is None else generation_of(st)))
    )
    if not held:
        raise S3Error(412, "At least one of the pre-conditions you specified did not hold")


def delete_if_match(path: Path, if_match: str, lock: threading.Lock) -> None:
    """Delete the object at `path` if it is the version `if_match` names (an ETag, or `*`:
    any), as S3's conditional DeleteObject: 412 when it is another, 404 when there is
    none. Checked and deleted under `lock`, the one conditional PUTs take."""
    with lock:
        try:
            st = path.stat()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            st = None
        if st is None or not stat.S_ISREG(st.st_mode):
            raise S3Error(404, "The specified key does not exist.")
        tags = [tag.strip().strip('"') for tag in if_match.split(",")]
        if "*" not in tags and etag_of(st).strip('"') not in tags:
            raise S3Error(412, "At least one of the pre-conditions you specified did not hold")
        path.unlink()


def check_get_condition(st: os.stat_result, headers: Mapping[str, str]) -> None:
    """Raise a 412 unless the version read is what the GET's condition asks for: S3's
    `If-Match: <etag>` and `If-Unmodified-Since: <HTTP date>` (whole seconds)."""
    if_match, since = headers.get("If-Match"), headers.get("If-Unmodified-Since")
    held = if_match is None or if_match.strip('" ') == etag_of(st).strip('"')
    if since is not None:
        with contextlib.suppress(TypeError, ValueError):  # an unreadable date: ignored
            held = held and int(st.st_mtime) <= parsedate_to_datetime(since).timestamp()
    if not held:
        raise S3Error(412, "At least one of the pre-conditions you specified did not hold")


def not_modified(st: os.stat_result, headers: Mapping[str, str]) -> bool:
    """Whether a GET's `If-None-Match` names the version there (or is `*`): S3 then
    answers 304 Not Modified, no body."""
    tags = headers.get("If-None-Match")
    if tags is None:
        return False
    current = etag_of(st).strip('"')
    return any(
        tag.strip().removeprefix("W/").strip('"') in (current, "*") for tag in tags.split(",")
    )


def version_headers(st: os.stat_result) -> dict[str, str]:
    return {"ETag": etag_of(st), "x-goog-generation": str(generation_of(st))}


#: Request headers that make a PUT conditional.
PUT_CONDITIONS = ("If-Match", "If-None-Match", "x-goog-if-generation-match")


def new_temp_file(tmp_dir: Path) -> Path:
    """A fresh name in the temp folder (made if missing), for a body on its way in."""
    tmp_dir.mkdir(parents=True, exist_ok=True)
    return tmp_dir / uuid.uuid4().hex


def write_atomic(
    path: Path,
    tmp_dir: Path,
    chunks: list[Path] | bytes,
    condition: tuple[threading.Lock, Mapping[str, str]] | None = None,
) -> os.stat_result:
    """Write `chunks` (bytes, or files whose contents are joined) to a temp file and
    rename it to `path`; with `condition`, see `move_into_place`. Returns the stat of
    what was written (see `move_into_place`)."""
    tmp = new_temp_file(tmp_dir)
    with open(tmp, "wb") as f:
        if isinstance(chunks, bytes):
            f.write(chunks)
        else:
            for part in chunks:
                with open(part, "rb") as source:
                    shutil.copyfileobj(source, f, 1 << 20)
    return move_into_place(tmp, path, condition)


def _renamed(tmp: Path, path: Path) -> os.stat_result:
    fd = os.open(tmp, os.O_RDONLY)
    try:
        os.replace(tmp, path)
        return os.fstat(fd)
    finally:
        os.close(fd)


def move_into_place(
    tmp: Path,
    path: Path,
    condition: tuple[threading.Lock, Mapping[str, str]] | None = None,
) -> os.stat_result:
    """Rename the temp file `tmp` to `path` (its folders made); with `condition` (a lock
    and the request's headers), check it and rename as one step under the lock. The
    temp file is gone afterwards, whatever happened.

    Returns the stat of the file this PUT wrote, taken through a descriptor opened
    before the rename: its version after the rename (which changes its ctime), even
    where `path` was deleted or replaced by a racing PUT since.

    Objects are files, so a key cannot be an object and the folder of others at once
    (`a` and `a/b`), as it can on S3: such a PUT is a 400, never retried, saying so."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if condition is None:
            return _renamed(tmp, path)
        lock, headers = condition
        with lock:
            check_put_condition(path, headers)
            return _renamed(tmp, path)
    except (FileExistsError, NotADirectoryError, IsADirectoryError):
        raise S3Error(
            400,
            "this emulator keeps objects as files: a key cannot be both an object and a "
            "prefix of other objects (as 'a' and 'a/b')",
            code="InvalidArgument",
        ) from None
    finally:
        tmp.unlink(missing_ok=True)
