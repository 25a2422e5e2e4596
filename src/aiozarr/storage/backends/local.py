"""`LocalStore`: Zarr keys as files under a directory on local disk.

Key `a/b/c` is the file `root/a/b/c`. Writes go to a temporary file in the
same directory and are renamed into place (`os.replace`), so a reader sees the
old value or the new one, never half of one. File I/O runs on worker threads;
all the ranges of one key are read with one open and one thread hop.

A value's version is its file's inode, mtime and size, taken from the open file the
bytes are read from (a rename-into-place makes a new inode). A conditional write
(`set_if`) checks the version and renames under an exclusive `flock` of the
directory, so writers in any process on the machine take turns there.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import shutil
import socket
import stat
import threading
import time
from collections.abc import AsyncIterator, Callable, Hashable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import anyio.to_thread

from aiozarr.byte_range import ByteRange
from aiozarr.errors import InvalidKeyError, StoreError, ValueTooLargeError, VersionConflictError
from aiozarr.storage.policy.backend import FileVersion
from aiozarr.storage.protocol import Buffer, Capabilities, Store, Version, Versioned
from aiozarr.storage.protocol import check_key as base_check_key

try:
    import fcntl
except ImportError:  # Windows: no flock, so no conditional writes
    fcntl = None  # type: ignore[assignment]

__all__ = ["LocalStore"]

T = TypeVar("T")

#: Temporary files end with this; listings skip them (a key may not end with it).
TEMP_SUFFIX = ".aiozarr-tmp"
# A temporary file is named `.<key name>.<host>-<pid>-<random>.aiozarr-tmp`: a writer
# killed mid-write leaves it behind, and the name says whose it was. One left by a dead
# process of this host is removed when this process first writes into its directory;
# one of another host (a shared file system), or unnamed, once it is this old.
_HOST = re.sub(r"[^A-Za-z0-9]", "", socket.gethostname())[:32] or "host"
# The characters of a key's name a temporary name keeps: at most 4 bytes each in UTF-8,
# so the whole name stays under the 255 bytes file systems allow.
_TEMP_NAME_CHARS = 32
_STALE_S = 3600
_TEMP_OWNER = re.compile(r"\.([A-Za-z0-9]+)-(\d+)-[0-9a-f]+" + re.escape(TEMP_SUFFIX) + "$")

# A missing file, or a path through something that is not a directory: no value there.
_MISSING = (FileNotFoundError, NotADirectoryError, IsADirectoryError)
# What a removal racing a writer (a file created in a directory being removed) or
# another deleter (a file removed first) meets; `_RMTREE_TRIES` removals at most.
_RACED_REMOVAL = frozenset({errno.ENOTEMPTY, errno.EEXIST, errno.ENOENT})
_RMTREE_TRIES = 10


def check_key(key: str, *, prefix: bool = False) -> None:
    """`base.check_key`, and no segment of a key may end with the temp-file suffix:
    listings skip such files and directories, and the sweep removes them."""
    base_check_key(key, prefix=prefix)
    if key.endswith(TEMP_SUFFIX) or f"{TEMP_SUFFIX}/" in key:
        raise InvalidKeyError(
            f"invalid key {key!r}: no part of a key may end with {TEMP_SUFFIX!r} "
            "(reserved for temporary files)"
        )


async def _off_loop(fn: Callable[..., T], *args: Any) -> T:
    """`fn(*args)` on a worker thread; on this one where no thread can start any more
    (Python 3.12+, once the main thread has returned): a write at exit still completes."""
    try:
        return await anyio.to_thread.run_sync(fn, *args)
    except RuntimeError as error:
        if "at interpreter shutdown" not in str(error):
            raise
    return fn(*args)


def _version(st: os.stat_result) -> Version:
    return FileVersion(st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size)


def _read_ranges(
    path: Path, byte_ranges: Sequence[ByteRange | None], max_bytes: int | None = None
) -> tuple[list[bytes], Version] | None:
    """Read ranges of one file with one open, and its version; None if it is missing.

    A whole-file read (range None) of a file over `max_bytes` raises
    `ValueTooLargeError` before reading it (the size is the open file's)."""
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            out: list[bytes] = []
            for byte_range in byte_ranges:
                if byte_range is None:
                    if max_bytes is not None and st.st_size > max_bytes:
                        raise ValueTooLargeError(
                            f"the file is {st.st_size} bytes, more than the {max_bytes} "
                            "allowed for it; it was not read"
                        )
                    f.seek(0)
                    out.append(f.read())
                    continue
                start, stop = byte_range.resolve(st.st_size)
                f.seek(start)
                out.append(f.read(stop - start))
            return out, _version(st)
    except _MISSING:
        return None


def _file_size(path: Path) -> int | None:
    """The size of the file at `path`; None where there is none (or a directory is).
    Other failures (no permission, a symlink loop) are raised, not taken as missing."""
    try:
        st = os.stat(path)
    except _MISSING:
        return None
    return st.st_size if stat.S_ISREG(st.st_mode) else None


def _current_version(path: Path) -> Version | None:
    try:
        st = os.stat(path)
    except _MISSING:
        return None
    return _version(st)


# The descriptors of the directory locks this process holds or waits for. A flock
# belongs to the open file description, which a forked child shares: the child closes
# its copies at once, or the lock would stay held while the child lives.
_LOCK_FDS: set[int] = set()
# Held while a descriptor is opened and recorded, or forgotten and closed, and across a
# fork: a child never inherits one the set does not name.
_LOCK_FDS_LOCK = threading.Lock()


def _close_inherited_locks() -> None:
    global _LOCK_FDS_LOCK
    # Never LOCK_UN here: that would release the parent's lock too.
    for fd in _LOCK_FDS:
        with contextlib.suppress(OSError):
            os.close(fd)
    _LOCK_FDS.clear()
    _LOCK_FDS_LOCK = threading.Lock()


os.register_at_fork(
    before=lambda: _LOCK_FDS_LOCK.acquire(),
    after_in_parent=lambda: _LOCK_FDS_LOCK.release(),
    after_in_child=_close_inherited_locks,
)


@contextlib.contextmanager
def _directory_locked(directory: Path) -> Iterator[None]:
    """Hold an exclusive `flock` on `directory` (every process on this machine)."""
    with _LOCK_FDS_LOCK:
        fd = os.open(directory, os.O_RDONLY)
        _LOCK_FDS.add(fd)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        with _LOCK_FDS_LOCK:
            _LOCK_FDS.discard(fd)
            os.close(fd)  # closing drops the lock


def _replace_if(path: Path, value: Buffer | None, expected: Version | None) -> None:
    """Put `value` at `path` (None: remove it) only if its version is still `expected`
    (None: only if there is no file), as one step for every process on the machine."""
    for attempt in range(10):
        try:
            return _replace_once(path, value, expected)
        except FileNotFoundError:  # a delete removed the directory (and the temp file)
            if expected is not None:  # and with it the version expected
                raise VersionConflictError(f"{path.name!r} is gone") from None
            if attempt == 9:
                raise


def _replace_once(path: Path, value: Buffer | None, expected: Version | None) -> None:
    temp = None if value is None else _write_temp(path, value)
    try:
        with _directory_locked(path.parent):
            if _current_version(path) != expected:
                raise VersionConflictError(f"{path.name!r} is no longer the version read")
            if temp is None:
                path.unlink()
            else:
                os.replace(temp, path)
                temp = None
    finally:
        if temp is not None:
            with contextlib.suppress(OSError):
                os.unlink(temp)


class LocalStore(Store):
    """A directory on local disk; the store used for plain paths.

    Range reads read only the bytes asked for; ranges are never coalesced (a seek is
    free). Keys that would leave the root (`..`, absolute keys, backslashes, NUL bytes,
    empty segments) raise `InvalidKeyError`.
    """

    CAPABILITIES = Capabilities(
        # flock makes a check and a rename one step for every process on the machine.
        conditional_writes=fcntl is not None,
        conditional_deletes=fcntl is not None,
        # One open serves every range of a file: `read_ranges`, in one thread hop.
        batched_reads=True,
        coalesce_gap_bytes=0,  # reading a gap costs more than a seek; no request cost
        sized_versions=True,  # a file's version holds its size (`FileVersion`)
    )

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        read_only: bool = False,
        max_concurrency: int | None = None,
    ) -> None:
        super().__init__(read_only=read_only, max_concurrency=max_concurrency)
        self._root = Path(root).expanduser().resolve()
        self._swept: set[Path] = set()  # directories whose stale temporary files are gone

    @property
    def root(self) -> Path:
        """The directory holding the keys (absolute)."""
        return self._root

    def key_space(self) -> tuple[Hashable, str]:
        """The file system, and this store's directory in it."""
        return type(self), self._root.as_posix().rstrip("/") + "/"

    def with_read_only(self, read_only: bool = True) -> LocalStore:
        """A store over the same directory with another read-only flag."""
        return type(self)(self._root, read_only=read_only, max_concurrency=self._max_concurrency)

    def _path(self, key: str) -> Path:
        check_key(key)
        return self._root / key

    # -- reads -------------------------------------------------------------------------

    async def read(
        self, key: str, byte_range: ByteRange | None, max_bytes: int | None
    ) -> Versioned | None:
        """One range (or all) of the file at `key`; a whole file over `max_bytes` is
        refused from its size, unread."""
        path = self._path(key)
        answer = await _off_loop(
            self._guarded, "read", key, _read_ranges, path, [byte_range], max_bytes
        )
        return None if answer is None else (answer[0][0], answer[1])

    async def read_ranges(
        self, key: str, byte_ranges: Sequence[ByteRange], max_bytes: int | None
    ) -> tuple[list[Buffer], Version | None] | None:
        """All ranges of `key` with one open, in one thread hop."""
        path = self._path(key)
        return await _off_loop(
            self._guarded, "read", key, _read_ranges, path, byte_ranges, max_bytes
        )

    async def exists(self, key: str) -> bool:
        """Whether a file is stored at `key`."""
        return await _off_loop(self._guarded, "stat", key, _file_size, self._path(key)) is not None

    async def getsize(self, key: str) -> int | None:
        """Size of the file at `key` in bytes, or None if missing."""
        return await _off_loop(self._guarded, "stat", key, _file_size, self._path(key))

    # -- writes ------------------------------------------------------------------------

    async def set(self, key: str, value: Buffer) -> None:
        """Write `value` to `key` atomically: temporary file, then rename over the old one."""
        self._check_writable(key)
        path = self._path(key)
        await _off_loop(self._guarded, "write", key, self._write, path, value)

    def _write(self, path: Path, value: Buffer) -> None:
        self._sweep_once(path.parent)
        _write_atomic(path, value)

    def _sweep_once(self, directory: Path) -> None:
        """Remove what killed writers left in `directory`, the first time this store
        writes into it (one `scandir` per directory)."""
        if directory not in self._swept:
            self._swept.add(directory)
            sweep_temporary_files(directory)

    async def set_if(
        self, key: str, value: Buffer, expected: Version | None, *, claim: bool = False
    ) -> None:
        """`set`, only if the file at `key` is still version `expected` (None: absent)."""
        self._check_writable(key)
        path = self._path(key)

        def replace() -> None:
            self._sweep_once(path.parent)
            _replace_if(path, value, expected)

        await _off_loop(self._guarded, "write", key, replace)

    async def delete_if(self, key: str, expected: Version) -> None:
        """`delete`, only if the file at `key` is still version `expected`."""
        self._check_writable(key)
        path = self._path(key)

        def remove() -> None:
            try:
                _replace_if(path, None, expected)
            except _MISSING as exc:  # the directory went with the file: not ours any more
                raise VersionConflictError(f"{key!r} is no longer the version read") from exc
            self._remove_empty_parents(path)

        await _off_loop(self._guarded, "delete", key, remove)

    async def delete(self, key: str) -> None:
        """Remove `key` and any parent directories left empty; a missing key is fine."""
        self._check_writable(key)
        path = self._path(key)
        await _off_loop(self._guarded, "delete", key, self._remove, path)

    async def delete_prefix(self, prefix: str) -> None:
        """Remove every key starting with `prefix` (a whole directory at once for `dir/`)."""
        self._check_writable(prefix)
        check_key(prefix, prefix=True)
        if prefix.endswith("/"):
            path = self._root / prefix
            await _off_loop(self._guarded, "delete", prefix, self._rmtree, path)
            return
        await super().delete_prefix(prefix)

    def _rmtree(self, path: Path) -> None:
        # The directory is first renamed aside, in one step: readers and listings see
        # the whole prefix gone at once (never its metadata gone and its chunks still
        # there), and a writer racing the delete recreates its directory afresh instead
        # of adding files to the one being removed. What still lands in the one being
        # removed (a file already on its way in) is taken by `_remove_tree`'s retries.
        _remove_tree(_set_aside(path) or path)
        self._remove_empty_parents(path)

    def _remove(self, path: Path) -> None:
        with contextlib.suppress(*_MISSING):
            path.unlink()
        self._remove_empty_parents(path)

    def _remove_empty_parents(self, path: Path) -> None:
        # Empty directories would show up in `list_dir`; `_write_atomic` retries when a
        # concurrent delete removes a directory it has just made.
        parent = path.parent
        while parent != self._root and self._root in parent.parents:
            try:
                parent.rmdir()
            except OSError:
                break
            parent = parent.parent

    def _guarded(self, action: str, key: str, fn: Any, *args: Any) -> Any:
        """Run `fn(*args)`, turning OS errors other than a missing file into `StoreError`."""
        try:
            return fn(*args)
        except VersionConflictError as exc:
            raise VersionConflictError(f"cannot {action} {key!r} in {self!r}: {exc}") from None
        except ValueTooLargeError as exc:
            raise ValueTooLargeError(f"cannot {action} {key!r} in {self!r}: {exc}") from None
        except _MISSING as exc:
            if action == "delete":
                return None
            raise StoreError(f"cannot {action} {key!r} in {self!r}: {exc}") from exc
        except OSError as exc:
            raise StoreError(f"cannot {action} {key!r} in {self!r}: {exc}") from exc

    # -- listing -----------------------------------------------------------------------

    async def list_prefix(self, prefix: str) -> AsyncIterator[str]:
        """Every key starting with `prefix`, sorted."""
        check_key(prefix, prefix=True)
        base = prefix.rsplit("/", 1)[0] if "/" in prefix else ""
        root = self._root

        def walk() -> list[str]:
            found: list[str] = []
            for dirpath, dirnames, filenames in os.walk(root / base, onerror=_raise_unless_missing):
                # A directory set aside by a delete under way holds no keys any more.
                dirnames[:] = [d for d in dirnames if not d.endswith(TEMP_SUFFIX)]
                rel = Path(dirpath).relative_to(root).as_posix()
                head = "" if rel == "." else rel + "/"
                found.extend(head + name for name in filenames if not name.endswith(TEMP_SUFFIX))
            return sorted(key for key in found if key.startswith(prefix))

        for key in await _off_loop(self._guarded, "list", prefix, walk):
            yield key

    async def list_dir(self, prefix: str) -> AsyncIterator[str]:
        """Names of the files and directories directly under `prefix`, sorted."""
        check_key(prefix, prefix=True)
        path = self._root / prefix.rstrip("/")

        def scan() -> list[str]:
            try:
                with os.scandir(path) as entries:
                    return sorted(e.name for e in entries if not e.name.endswith(TEMP_SUFFIX))
            except _MISSING:
                return []

        for name in await _off_loop(self._guarded, "list", prefix, scan):
            yield name

    async def list_dir_entries(self, prefix: str) -> AsyncIterator[tuple[str, bool | None]]:
        """`(name, is_directory)` directly under `prefix`, sorted. A directory counts when
        a file lies somewhere below it; one the OS cannot tell (a symlink loop) is None."""
        check_key(prefix, prefix=True)
        path = self._root / prefix.rstrip("/")

        def scan() -> list[tuple[str, bool | None]]:
            try:
                with os.scandir(path) as listed:
                    entries = [e for e in listed if not e.name.endswith(TEMP_SUFFIX)]
            except _MISSING:
                return []
            return sorted((e.name, _kind(e)) for e in entries)

        for entry in await _off_loop(self._guarded, "list", prefix, scan):
            yield entry

    # -- identity ----------------------------------------------------------------------

    def __repr__(self) -> str:
        flag = ", read_only=True" if self._read_only else ""
        return f"LocalStore({str(self._root)!r}{flag})"

    def __eq__(self, other: object) -> bool:
        return (
            type(other) is type(self)
            and isinstance(other, LocalStore)
            and (other._root, other._read_only) == (self._root, self._read_only)
        )

    def __hash__(self) -> int:
        return hash((type(self), self._root, self._read_only))


def _raise_unless_missing(error: OSError) -> None:
    """`os.walk`'s error handler: a directory that is gone lists as empty; any other
    failure (a symlink loop, no permission) must not silently hide its keys."""
    if not isinstance(error, _MISSING):
        raise error


def _set_aside(path: Path) -> Path | None:
    """Rename the directory `path` to a temporary name beside it (skipped by listings,
    swept if this process dies before removing it) and return that name; None where
    it is not a directory, or cannot be renamed (Windows, with a file open inside):
    then it is removed where it is."""
    if path.is_symlink() or not path.is_dir():
        return None
    aside = _temporary_path(path)
    try:
        os.rename(path, aside)
    except OSError:
        return None
    return aside


def _remove_tree(path: Path) -> None:
    """`shutil.rmtree(path)`, again while a writer's file created during the removal
    leaves a directory not empty (or one removed by another deleter goes missing mid-walk).
    A writer creating files without end gets `_RMTREE_TRIES` removals, then the error."""
    for attempt in range(_RMTREE_TRIES):
        try:
            shutil.rmtree(path)
            return
        except OSError as exc:
            if not os.path.lexists(path):
                return  # gone: another deleter finished it
            if exc.errno not in _RACED_REMOVAL or attempt == _RMTREE_TRIES - 1:
                raise


def _write_atomic(path: Path, value: Buffer) -> None:
    """Write `value` to a temporary file beside `path`, then rename it into place."""
    temp = _write_temp(path, value)
    try:
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def _is_stale(entry: os.DirEntry[str]) -> bool:
    """Whether the temporary file `entry` belongs to no running writer."""
    match = _TEMP_OWNER.search(entry.name)
    if match is not None and match.group(1) == _HOST:
        try:
            os.kill(int(match.group(2)), 0)
        except ProcessLookupError:
            return True
        except (PermissionError, OverflowError):  # another user's process: it lives
            return False
        return False
    try:
        return time.time() - entry.stat().st_mtime > _STALE_S
    except FileNotFoundError:
        return False


def sweep_temporary_files(directory: Path) -> int:
    """Remove the temporary files in `directory` that no running writer owns (left by
    writers killed mid-write); return how many."""
    removed = 0
    try:
        with os.scandir(directory) as entries:
            stale = [e.path for e in entries if e.name.endswith(TEMP_SUFFIX) and _is_stale(e)]
    except _MISSING:
        return 0
    for path in stale:
        with contextlib.suppress(FileNotFoundError):
            if os.path.isdir(path) and not os.path.islink(path):  # a killed delete's
                shutil.rmtree(path)
            else:
                os.unlink(path)
            removed += 1
    return removed


def _temporary_path(path: Path) -> Path:
    """A new temporary name beside `path`, within the file system's name limit whatever
    the length of `path`'s own name (only its start is kept)."""
    return path.with_name(
        f".{path.name[:_TEMP_NAME_CHARS]}.{_HOST}-{os.getpid()}-{secrets.token_hex(6)}{TEMP_SUFFIX}"
    )


def _write_temp(path: Path, value: Buffer) -> Path:
    """Write `value` to a new temporary file beside `path` (its directory made if
    needed) and return its path."""
    data = memoryview(value).cast("B")
    # Not `tempfile.mkstemp`: its files are private (0600); these get the umask's mode.
    temp = _temporary_path(path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    for attempt in range(10):
        try:
            # Both can fail when a concurrent delete removes a directory left empty
            # between (or during) making it and creating the file in it: pathlib then
            # says the directory is missing, or that it exists but is not a directory.
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(temp, flags, 0o666)
            break
        except (FileNotFoundError, FileExistsError):
            if attempt == 9:
                raise
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    return temp


def _kind(entry: os.DirEntry[str]) -> bool | None:
    """True: a directory with a file below it; False: a file (or a directory holding no
    file, hence no key); None: the OS cannot say (a symlink loop, no permission). Stops
    at the first file found, without reading the rest of a large directory."""
    try:
        if not entry.is_dir():
            return False
        below = [entry.path]
        while below:
            with os.scandir(below.pop()) as listed:
                for child in listed:
                    if child.is_dir(follow_symlinks=False):
                        if not child.name.endswith(TEMP_SUFFIX):  # not one set aside
                            below.append(child.path)
                    elif not child.name.endswith(TEMP_SUFFIX):
                        return True
    except FileNotFoundError:
        return False
    except OSError:
        return None
    return False
