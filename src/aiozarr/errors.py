"""The exceptions aiozarr raises. Every one names the key (or field) and the problem."""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Iterator


class AiozarrError(Exception):
    """Base of every error aiozarr raises on bad input or a failing store."""


class AiozarrWarning(UserWarning):
    """Data was read leniently: a writer quirk was tolerated."""


class NodeNotFoundError(AiozarrError, KeyError, FileNotFoundError):
    """No array or group exists at the given path.

    A `KeyError` (a missing member of a group) and a `FileNotFoundError` (a missing node
    in a store), which is what zarr-python raises there.
    """

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class RefNotFoundError(NodeNotFoundError):
    """A version history (an icechunk repository) has no branch, tag or snapshot of the
    name a store was opened at."""


class GroupNotFoundError(NodeNotFoundError, FileNotFoundError):
    """No group exists where one was to be opened (also a `FileNotFoundError`, as
    xarray's own engines raise for a missing store)."""


class NodeExistsError(AiozarrError, FileExistsError):
    """An array or group already exists where one was to be created."""


class NodeTypeError(AiozarrError, TypeError):
    """A node is not the one required (`require_array`, `require_group`): a group where
    an array is asked for or the reverse, or an array of another shape or data type.
    Also a `TypeError`, as zarr-python raises there."""


class MetadataError(AiozarrError, ValueError):
    """A metadata document is malformed, contradictory or invalid."""


class UnfinishedNodeError(MetadataError):
    """The node's document is the placeholder a copy writes before the array's chunks:
    the copy stopped part way, and what it did not write would read as fill values.
    `metadata` is the document the placeholder stands for (None when unreadable)."""

    def __init__(self, message: str, metadata: dict[str, object] | None = None) -> None:
        super().__init__(message)
        self.metadata = metadata


class DimensionNamesError(MetadataError, KeyError):
    """An array opened as an xarray variable has no name for each of its dimensions
    (also a `KeyError`, as xarray's zarr engine raises there)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class UnsupportedError(AiozarrError, ValueError):
    """An unknown codec, data type, chunk grid or extension."""


class IrregularGridError(UnsupportedError, AttributeError, NotImplementedError):
    """An array on a rectilinear grid has no one chunk (or shard) shape.

    Also an `AttributeError`, so tools that probe `chunks` with `getattr(x, "chunks",
    None)` (dask's `from_array`) see none, and a `NotImplementedError`, which is what
    zarr-python raises there.
    """


class DeleteUnsupportedError(UnsupportedError, NotImplementedError):
    """A store that cannot delete (a zip archive) was asked to delete a stored key; a
    missing key is nothing to delete. Also a `NotImplementedError`, what zarr-python's
    `ZipStore` raises there."""


class CodecError(AiozarrError, ValueError):
    """A chunk could not be encoded or decoded (corrupt or truncated bytes)."""


class ChecksumError(CodecError):
    """A stored checksum does not match the bytes it protects."""


class InvalidValueError(AiozarrError, TypeError):
    """A value cannot be stored in an array (wrong data type or shape)."""


class ValueShapeError(InvalidValueError, ValueError):
    """A value's shape does not fit where it goes (it does not broadcast to the
    selection, or an append's other dimensions differ from the array's). Also a
    `ValueError`, which is what zarr-python (numpy's broadcasting) raises."""


class ValueOutOfRangeError(InvalidValueError, OverflowError):
    """An integer value does not fit the array's integer data type (300 into `uint8`,
    -1 into `uint64`): numpy would wrap it silently. Also an `OverflowError`, which is
    what numpy raises for a Python int it cannot hold. The message names the value (or
    an array's least and greatest values) and the data type's range."""


class StoreError(AiozarrError, OSError):
    """A store operation failed; carries the key and the backend's message."""


class ValueTooLargeError(StoreError):
    """A stored value is larger than its reader allows: the bound its metadata implies
    (a chunk's codecs, a shard's inner chunks and index), a setting
    (`max_metadata_bytes`), or the memory of the process. The size is learnt from the
    answer's headers or the file's size and the value is refused *before* its bytes are
    read. The message names the key, the size and the bound. Not retried."""


class ReferenceTargetError(StoreError):
    """A kerchunk reference names a target outside the locations its reference file may
    read (by default the file's own bucket or host, or its own directory for a local
    file), or a URL that could mean two places (`http://allowed@evil/`, encoded `..`).
    The message names the target and the `allowed_targets` prefix that would admit it.
    Not retried."""


class SourceChangedError(StoreError):
    """The object a virtual chunk reference points into is no longer the one referenced:
    its ETag, or its time of last change, differs from the checksum stored with the
    reference (an icechunk virtual chunk over a NetCDF file since rewritten). Its bytes
    are not used. The message names the key, the object and what differs. Not retried."""


class VersionConflictError(StoreError):
    """A conditional write found another version of the value than the one it was based
    on (another writer changed it first): re-read, merge again and retry. Raised by a
    metadata change (`append`, `resize`, attributes) that other writers kept changing
    under it, or that no longer fits what another writer stored."""


class WriteOutcomeUnknownError(VersionConflictError):
    """A conditional write retried after a try whose answer was lost found the value
    changed: that try may have landed, and another writer changed the value since, or
    not. Data writes merge again (writing the same values twice is writing them once);
    a metadata change (an append, a resize, attributes) is not applied again, since
    applied twice it would grow the array twice or undo the other writer's change: read
    the node to see what it holds. An append's growth found holding what it sent is
    this too: another append growing the array by as much sends the same bytes."""


class ConditionalWriteUnsupportedError(StoreError):
    """A read-modify-write (part of a chunk or shard) cannot be written on a condition
    the store is known to honour: its server (or a proxy before it) ignores `If-Match` /
    `If-None-Match`, or its reads carry no version (ETag). Written anyway, another
    process's update could be lost. Nothing was written. The message names the keys,
    the store and what the server did; set `single_writer=True` (`AIOZARR_SINGLE_WRITER=1`)
    where no other process writes. Not retried."""


class ReadOnlyError(StoreError, PermissionError):
    """A write was attempted on a store or array opened read-only."""


class InvalidKeyError(StoreError, ValueError):
    """A store key is malformed or would escape the store's root."""


class SelectionError(AiozarrError, IndexError):
    """A selection is malformed for the array it indexes."""


class AxisError(SelectionError, ValueError):
    """An axis number out of the array's dimensions (an append's `axis`). Also a
    `ValueError`, as zarr-python's and numpy's (`numpy.exceptions.AxisError`) are."""


class InvalidSliceError(SelectionError, ValueError, TypeError):
    """A slice numpy refuses: a step of 0 (numpy's and zarr-python's `ValueError`) or a
    start, stop or step that is no integer (their `TypeError`); both, so code written for
    either catches it."""


class BoundsCheckError(SelectionError):
    """A selection lies outside the array's bounds."""


class SelectionTooLargeError(AiozarrError, MemoryError):
    """A read asks for more memory than the machine has (the message names the array and
    the bytes asked for): read it in parts."""


class SyncInLoopError(AiozarrError, RuntimeError):
    """The sync API was called from aiozarr's own event loop thread."""


class SyncDeadlockError(SyncInLoopError):
    """A sync call made on the thread of a running event loop would wait for a lock or
    budget that a task of that loop holds: it can never run while the call blocks it."""


class SyncTimeoutError(AiozarrError, TimeoutError):
    """A sync call did not finish within the `sync_timeout_s` setting; it was cancelled
    (the message names the call and the setting)."""


class MissingExtraError(AiozarrError, ModuleNotFoundError):
    """A part of aiozarr needs a package that is not installed; the message names the
    extra that installs it (`pip install 'aiozarr[zarr]'`)."""


def require_extra(feature: str, package: str, extra: str) -> None:
    """Import `package`, or raise `MissingExtraError`: `feature` needs the `extra`.

    A package that is installed but fails to import raises its own error, unchanged.
    """
    try:
        importlib.import_module(package)
    except ModuleNotFoundError as error:
        if error.name is None or error.name.partition(".")[0] != package.partition(".")[0]:
            raise
        raise MissingExtraError(
            f"{feature} needs {package}, which is not installed: pip install 'aiozarr[{extra}]'",
            name=package,
        ) from None


def _leaves(group: BaseExceptionGroup) -> list[BaseException]:
    out: list[BaseException] = []
    for exc in group.exceptions:
        out.extend(_leaves(exc) if isinstance(exc, BaseExceptionGroup) else [exc])
    return out


@contextlib.contextmanager
def unwrap_group() -> Iterator[None]:
    """Raise a task group's failure as itself, not wrapped in an `ExceptionGroup`.

    Callers expect `StoreError`, `CodecError`, ... from a read, not a group. When several
    tasks failed, the first failure is raised and the others are listed in its notes.
    Cancellation and interrupts (base exceptions) keep the group as it is.
    """
    try:
        yield
    except BaseExceptionGroup as group:
        leaves = _leaves(group)
        if not all(isinstance(leaf, Exception) for leaf in leaves):
            raise
        first = leaves[0]
        if len(leaves) > 1:
            others = "; ".join(f"{type(e).__name__}: {e}" for e in leaves[1:6])
            first.add_note(f"{len(leaves) - 1} more failure(s) in the same call: {others}")
        try:
            raise first from first.__cause__
        finally:
            # Raised here, its context is the group that holds it: a cycle that tblib's
            # pickling (dask's workers) follows until the recursion limit.
            first.__context__ = None


class OverlappingWriteError(AiozarrError, ValueError):
    """Two dask blocks would write the same shard or chunk (one write would be lost)."""


class InPlaceWriteError(OverlappingWriteError):
    """A dask array reads values its own write replaces: one block reads where another
    block writes (in any order), or `overwrite=True` deletes what it reads."""
