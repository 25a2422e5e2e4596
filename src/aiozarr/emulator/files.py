"""The emulator's bucket on disk: one file per object, read as one version (stat and
bytes from one open file), written by renaming a temp file into place, and conditional
PUTs checked and renamed under one lock."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import threading
import uuid
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeAlias

from aiozarr.emulator.paths import TMP_DIR, is_inside
from aiozarr.emulator.preconditions import NOT_MODIFIED, range_to_serve
from aiozarr.emulator.s3 import S3Error, parse_range

__all__ = [
    "PUT_CONDITIONS",
    "STREAM_BYTES",
    "TMP_DIR",
    "FileSlice",
    "FolderLock",
    "Version",
    "WriteLock",
    "check_put_condition",
    "claim_temp_folder",
    "delete_if_match",
    "delete_object",
    "etag_of",
    "generation_of",
    "move_into_place",
    "new_temp_file",
    "open_object",
    "path_error",
    "read_version",
    "remove_empty_parents",
    "remove_temp_files",
    "share_temp_folder",
    "version_headers",
    "write_atomic",
    "write_error",
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


@dataclass
class Version:
    """One version of an object as a GET or HEAD serves it: its stat, the range served
    (None: all of it) and those bytes; `not_modified`: the client's copy is this version
    (a 304, no bytes read)."""

    st: os.stat_result
    bounds: tuple[int, int] | None
    body: bytes | FileSlice
    not_modified: bool = False


# Errors that mean "no object there" for a read: a path through a file, a symlink loop,
# a name too long for the file system, a socket.
_ABSENT = (errno.ENOENT, errno.ENOTDIR, errno.EISDIR, errno.ELOOP, errno.ENAMETOOLONG, errno.ENXIO)


def open_object(path: Path) -> int | None:
    """A read-only descriptor of the regular file at `path`, None when there is none.
    Opened without blocking (a named pipe would wait for a writer forever) and checked
    on the open descriptor, so a swap between check and open changes nothing."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno in _ABSENT:
            return None
        if exc.errno == errno.EACCES:
            raise S3Error(403, f"the file is not readable: {exc.strerror}") from None
        raise S3Error(500, f"the file cannot be opened: {exc.strerror}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    os.set_blocking(fd, True)
    return fd


def read_version(
    path: Path, headers: Mapping[str, str], *, body: bool = True, root: Path | None = None
) -> Version | None:
    """One version of the object at `path`, as the request's `headers` ask for it (its
    conditions, `Range` and `If-Range`: see preconditions.py).

    The file is opened once and both the stat and the bytes come from the open file, so
    they belong to one version even while a PUT renames a new file over `path`. None: no
    such object. `body=False` reads no bytes (HEAD). `root`: the served folder, which the
    open file must lie in (403), whatever `path` was swapped for since it was checked.
    """
    fd = open_object(path)
    if fd is None:
        return None
    if root is not None and not _opened_inside(fd, root):
        os.close(fd)
        raise S3Error(403, "the key leads outside the served folder", code="AccessDenied")
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        wanted = range_to_serve(etag_of(st), int(st.st_mtime), headers)
        if wanted is NOT_MODIFIED:
            return Version(st, None, b"", not_modified=True)
        assert wanted is None or isinstance(wanted, str)
        bounds = None if wanted is None else parse_range(wanted, st.st_size)
        if not body:
            return Version(st, bounds, b"")
        start, stop = bounds or (0, st.st_size)
        if stop - start > STREAM_BYTES:
            return Version(st, bounds, FileSlice(os.dup(f.fileno()), start, stop))
        f.seek(start)
        return Version(st, bounds, f.read(stop - start))


def _opened_inside(fd: int, root: Path) -> bool:
    """Whether the file open as `fd` lies in `root`: the key's path was checked before it
    was opened (paths.py), and a link out swapped in between would be followed. Told by
    the path the system keeps for the descriptor (Linux's /proc); True where there is
    none to ask."""
    try:
        real = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return True
    return is_inside(root, real.removesuffix(" (deleted)"))


def etag_of(st: os.stat_result) -> str:
    """A version's ETag: a rename-into-place makes a new inode, so a new tag; ctime as
    well, which a copy that keeps mtime (`cp -p`) still changes."""
    return f'"{st.st_ino:x}-{st.st_mtime_ns:x}-{st.st_ctime_ns:x}-{st.st_size:x}"'


def generation_of(st: os.stat_result) -> int:
    """A version's GCS generation number (GCS's counterpart of the ETag)."""
    return st.st_mtime_ns


def _regular_stat(path: Path) -> os.stat_result | None:
    """The stat of the object at `path`; None where there is none (no file, a folder, a
    pipe, a path the file system refuses)."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st if stat.S_ISREG(st.st_mode) else None


def check_put_condition(path: Path, headers: Mapping[str, str]) -> None:
    """Raise a 412 unless the object at `path` is what the PUT's condition asks for:
    S3's `If-Match: <etag>` / `If-None-Match: *`, or GCS's
    `x-goog-if-generation-match: <generation>` (0: no object)."""
    st = _regular_stat(path)
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


def remove_empty_parents(path: Path, root: Path) -> None:
    """Remove the folders above `path` that a delete left empty, up to (not including)
    `root`: a folder holds no object once its last key is gone, as on S3, and must not
    stand in the way of a later object of that name. A folder a writer has just put a
    file in is not empty and stays (the writer retries one removed under it)."""
    parent = path.parent
    while parent != root and parent.is_relative_to(root):
        try:
            os.rmdir(parent)
        except OSError:  # not empty, gone already, or not ours to remove
            return
        parent = parent.parent


def delete_object(path: Path, root: Path, lock: WriteLock | None = None) -> None:
    """Delete the object at `path` (nothing there: no error, as S3) and the folders it
    leaves empty. Only a file or a link is removed: a folder or a pipe is no object.
    `lock`: the one conditional writes hold between their check and their rename, so a
    delete never lands between the two."""
    with _key_locked(lock, path) as (name, folder):
        try:
            mode = os.lstat(name, dir_fd=folder).st_mode
        except OSError:
            return
        if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
            return
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=folder)
    remove_empty_parents(path, root)


def delete_if_match(path: Path, root: Path, if_match: str, lock: WriteLock) -> None:
    """Delete the object at `path` if it is the version `if_match` names (an ETag, or `*`:
    any), as S3's conditional DeleteObject: 412 when it is another, 404 when there is
    none. Checked and deleted under `lock`, the one conditional PUTs take."""
    with _key_locked(lock, path) as (name, folder):
        st = _regular_stat(path)
        if st is None:
            raise S3Error(404, "The specified key does not exist.")
        tags = [tag.strip().strip('"') for tag in if_match.split(",")]
        if "*" not in tags and etag_of(st).strip('"') not in tags:
            raise S3Error(412, "At least one of the pre-conditions you specified did not hold")
        os.unlink(name, dir_fd=folder)
    remove_empty_parents(path, root)


def version_headers(st: os.stat_result) -> dict[str, str]:
    return {"ETag": etag_of(st), "x-goog-generation": str(generation_of(st))}


#: Request headers that make a PUT conditional.
PUT_CONDITIONS = ("If-Match", "If-None-Match", "x-goog-if-generation-match")


#: What an object's rename or unlink is made under: a `FolderLock`, or a thread lock.
WriteLock: TypeAlias = AbstractContextManager[Any]


class FolderLock:
    """The lock a conditional write holds between its check and its rename (and every
    other rename or unlink of an object): a thread lock, and an exclusive `flock` of
    `folder` (the served folder), so the servers of one folder in other processes take
    turns too, and so do aiozarr's `LocalStore` writes of keys at its top (it takes the
    same lock of a key's folder around a conditional write)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._lock = threading.Lock()
        self._fd: int | None = None

    def __enter__(self) -> None:
        self._lock.acquire()
        try:
            self._fd = _folder_locked(self.folder)
        except BaseException:
            self._lock.release()
            raise

    def __exit__(self, *exc: object) -> None:
        fd, self._fd = self._fd, None
        try:
            if fd is not None:
                os.close(fd)  # closing drops the flock
        finally:
            self._lock.release()


def _folder_locked(folder: Path, *, make: bool = True) -> int | None:
    """A descriptor of `folder` holding an exclusive `flock` on it; None where there are
    no such locks (Windows, a file system without them, a folder that cannot be made,
    or is missing and not to be made)."""
    try:
        import fcntl
    except ImportError:
        return None
    try:
        if make:
            folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except OSError:
        os.close(fd)
        return None
    return fd


@contextlib.contextmanager
def _key_locked(lock: WriteLock | None, path: Path) -> Iterator[tuple[str | Path, int | None]]:
    """`lock`, then an exclusive `flock` of the folder `path` is in: aiozarr's
    `LocalStore` holds that one between the check of a conditional write (or delete) of a
    key there and its rename, so a local writer of the served folder and this server's
    writes take turns on every key. Not taken twice: the folder a `FolderLock` locks
    already is (two descriptors' flocks of one folder exclude each other, even in one
    thread).

    Yields how to reach the key: its name and its folder's descriptor, or `(path,
    None)`. With a `FolderLock` (of the served folder) the folder opened must lie in it
    (403): renames and unlinks go through that descriptor, so a folder on the key's way
    swapped for a link out after its check (paths.py) is never written through."""
    with lock or contextlib.nullcontext():
        root = lock.folder if isinstance(lock, FolderLock) else None
        held = root is not None and root == path.parent
        fd = None if held else _folder_locked(path.parent, make=False)
        try:
            if fd is not None and root is not None and not _opened_inside(fd, root):
                raise S3Error(403, "the key leads outside the served folder", code="AccessDenied")
            yield (path, None) if fd is None else (path.name, fd)
        finally:
            if fd is not None:
                os.close(fd)


def claim_temp_folder(root: Path, *, make: bool = True) -> tuple[int | None, bool]:
    """`(descriptor, alone)`: a descriptor holding a lock on the served folder's temp
    folder (flock on the temp folder itself) for this server's life (close it to let
    go), and whether no other live server serves the folder (then the caller clears the
    temp folder, and calls `share_temp_folder`). Every server holds the lock, shared
    once started: a server that starts while another serves the folder, even one
    started after the first holder left, finds it held and leaves the temp folder
    alone. (None, False) where locks are not available, or with `make=False` (a
    read-only server, which makes no temp folder) where there is none.

    Not a lock of the served folder: aiozarr's `LocalStore` takes an exclusive flock of
    a key's folder around a conditional write, and its writes at the top of the served
    folder (a root group's `zarr.json`) waited for the server to stop."""
    try:
        import fcntl
    except ImportError:  # Windows: no flock
        return None, False
    try:
        if make:
            (root / TMP_DIR).mkdir(exist_ok=True)
        fd = os.open(root / TMP_DIR, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None, False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return fd, True
    except OSError:
        pass
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)  # waits out a server clearing the folder now
    except OSError:
        os.close(fd)
        return None, False
    return fd, False


def share_temp_folder(fd: int) -> None:
    """Turn `claim_temp_folder`'s exclusive lock into a shared one, once the temp folder
    is cleared: later servers serve beside this one without clearing it."""
    import fcntl

    fcntl.flock(fd, fcntl.LOCK_SH)


def remove_temp_files(tmp_dir: Path) -> None:
    """Remove what a server stopped before (killed, or with uploads in progress) left in
    the temp folder: bodies on their way in and multipart parts, whose uploads ended
    with it. Only by the server that holds `claim_temp_folder`'s lock."""
    with contextlib.suppress(OSError):
        for entry in os.scandir(tmp_dir):
            with contextlib.suppress(OSError):
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path)
                else:
                    os.unlink(entry.path)


def new_temp_file(tmp_dir: Path) -> Path:
    """A fresh name in the temp folder (made if missing), for a body on its way in."""
    tmp_dir.mkdir(parents=True, exist_ok=True)
    return tmp_dir / uuid.uuid4().hex


def write_atomic(
    path: Path,
    tmp_dir: Path,
    chunks: list[Path] | bytes,
    condition: tuple[WriteLock, Mapping[str, str]] | None = None,
) -> os.stat_result:
    """Write `chunks` (bytes, or files whose contents are joined) to a temp file and
    rename it to `path`; with `condition`, see `move_into_place`. Returns the stat of
    what was written (see `move_into_place`)."""
    tmp = new_temp_file(tmp_dir)
    try:
        with open(tmp, "wb") as f:
            if isinstance(chunks, bytes):
                f.write(chunks)
            else:
                for part in chunks:
                    with open(part, "rb") as source:
                        shutil.copyfileobj(source, f, 1 << 20)
    except BaseException:  # a full disk: what was written so far must not stay
        tmp.unlink(missing_ok=True)
        raise
    return move_into_place(tmp, path, condition)


def _renamed(
    tmp: Path,
    path: Path,
    lock: WriteLock | None = None,
    headers: Mapping[str, str] | None = None,
) -> os.stat_result:
    """Rename `tmp` to `path`; with `lock`, the rename (and the check of the conditions
    among `headers`) holds it."""
    fd = os.open(tmp, os.O_RDONLY)
    try:
        with _key_locked(lock, path) as (name, folder):
            if headers and any(h in headers for h in PUT_CONDITIONS):
                check_put_condition(path, headers)
            _modified_after(fd, path)
            os.replace(tmp, name, dst_dir_fd=folder)
        return os.fstat(fd)
    finally:
        os.close(fd)


def _modified_after(fd: int, path: Path) -> None:
    """Give the file open as `fd` a modification time after that of the object at `path`
    it is about to replace. A version's tag is its inode, times and size (`etag_of`): the
    new file may get the inode the last rename freed, and on a file system with coarse
    times (one tick of 1-10 ms, or a second) the same times, so two versions of a key
    had one ETag and a stale If-Match or If-None-Match matched the newer one."""
    old = _regular_stat(path)
    if old is None:
        return
    for step in _TIME_STEPS:
        new = os.fstat(fd)
        if new.st_mtime_ns > old.st_mtime_ns:
            return
        os.utime(fd, ns=(new.st_atime_ns, old.st_mtime_ns + step))


# Moves past the last version's time, until the file system keeps one that differs.
_TIME_STEPS = (1, 1_000, 1_000_000, 10_000_000, 1_000_000_000, 2_000_000_000)


def move_into_place(
    tmp: Path,
    path: Path,
    condition: tuple[WriteLock, Mapping[str, str]] | None = None,
) -> os.stat_result:
    """Rename the temp file `tmp` to `path` (its folders made); with `condition` (a lock
    and the request's headers), check it and rename as one step under the lock. The
    temp file is gone afterwards, whatever happened.

    Returns the stat of the file this PUT wrote, taken through a descriptor opened
    before the rename: its version after the rename (which changes its ctime), even
    where `path` was deleted or replaced by a racing PUT since.

    Objects are files, so a key cannot be an object and the folder of others at once
    (`a` and `a/b`), as it can on S3: such a PUT is a 400, never retried, saying so. A
    folder that holds no object is no object: it is removed to make way."""
    try:
        for _ in range(_PLACE_TRIES):
            try:
                return _place(tmp, path, condition)
            except FileNotFoundError:
                if not tmp.exists():
                    raise
                # A delete removed a folder it had emptied between its making and the
                # rename: make it again.
        raise S3Error(503, f"{path.name!r}: its folder kept being removed", code="SlowDown")
    except (FileExistsError, NotADirectoryError, IsADirectoryError):
        raise S3Error(
            400,
            "this emulator keeps objects as files: a key cannot be both an object and a "
            "prefix of other objects (as 'a' and 'a/b')",
            code="InvalidArgument",
        ) from None
    except OSError as exc:
        raise write_error(exc) from None
    finally:
        tmp.unlink(missing_ok=True)


_PLACE_TRIES = 8


def _place(
    tmp: Path, path: Path, condition: tuple[WriteLock, Mapping[str, str]] | None
) -> os.stat_result:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_dir() and not path.is_symlink():
        _remove_empty_tree(path)  # one that holds a file stays, and the rename refuses
    try:
        return _renamed(tmp, path, *(condition or ()))
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
    return _place_across(tmp, path, condition)


def _place_across(
    tmp: Path, path: Path, condition: tuple[WriteLock, Mapping[str, str]] | None
) -> os.stat_result:
    """Put `tmp` at `path` on another file system (a disk mounted inside the served
    folder), where no rename reaches: copied beside `path` first, under a name no key
    can have (a control character: never listed, served or written), then renamed."""
    beside = path.parent / f"\x01aiozarr-tmp-{uuid.uuid4().hex}"
    try:
        shutil.copyfile(tmp, beside)
        return _renamed(beside, path, *(condition or ()))
    finally:
        beside.unlink(missing_ok=True)


def _remove_empty_tree(top: Path) -> None:
    """Remove the folders under `top` and `top` itself, bottom up, where they hold no
    file; a folder a writer fills meanwhile is not empty, so stays."""
    for directory, _, _ in os.walk(top, topdown=False):
        with contextlib.suppress(OSError):
            os.rmdir(directory)


def path_error(exc: OSError, method: str) -> S3Error:
    """The S3 error for a request on a path the file system refused: no object for a
    read, else as `write_error` (an answer, never a traceback)."""
    if method in ("GET", "HEAD") and exc.errno in _ABSENT:
        return S3Error(404, "The specified key does not exist.")
    return write_error(exc)


def write_error(exc: OSError) -> S3Error:
    """The S3 error for a write the file system refused."""
    if exc.errno == errno.ENAMETOOLONG:
        return S3Error(400, "a key segment is too long for the file system", code="KeyTooLongError")
    if exc.errno == errno.ELOOP:
        return S3Error(400, "the key leads through a symlink loop", code="InvalidArgument")
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return S3Error(403, f"the served folder refused the write: {exc.strerror}")
    return S3Error(500, f"the served folder refused the write: {exc.strerror}")
