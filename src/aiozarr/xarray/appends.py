"""Growing a dataset's arrays for `to_zarr(append_dim=...)` without losing another
appender's rows, and keeping every variable's rows at one offset.

Each array grows from its shape as stored, through `update_node` (as `AsyncArray.append`
does), never to a shape computed from the metadata read when the write began. The
dataset's offset along the append dimension is the one the first variable (`leader`:
the dimension's coordinate when the dataset has it) commits, growing from whatever
length is stored; every other variable then grows only from that same offset. When
another appender took the rows before this one's, a variable still shorter than the
offset waits (with the chunk writes' backoff, up to `retry_deadline_s`) for that
appender to grow it; one already longer was grown out of step, and the append raises
`VersionConflictError` for it: its rows are never written at another appender's
offset. An append that fails takes back the growths it made (`Growths`).
docs/decisions/failure-model.md ("Metadata writes") says what a reader sees.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Iterable, Mapping

import anyio

from aiozarr.engine.entry import WriteSettings
from aiozarr.errors import VersionConflictError
from aiozarr.metadata.model import ArrayMetadata
from aiozarr.nodes import node_updates, shape_changes
from aiozarr.nodes.array import AsyncArray, undo_growth
from aiozarr.storage.protocol import Store
from aiozarr.xarray.variables import dimensions

__all__ = ["Growths", "grow_at", "grow_first", "leader"]


def leader(
    append_dim: str | None, names: Iterable[str], existing: Mapping[str, ArrayMetadata]
) -> str | None:
    """The variable whose growth sets the append's offset, among `names` stored along
    `append_dim` (`existing`): the dimension's coordinate when it is one, else the first
    in sorted order; None when there are none. Every appender of the same variables
    picks the same one."""
    if append_dim is None:
        return None
    names = sorted(n for n in names if n in existing and append_dim in dimensions(n, existing[n]))
    if append_dim in names:
        return append_dim
    return names[0] if names else None


async def grow_first(
    store: Store, key: str, meta: ArrayMetadata, rows: tuple[int, ...], axis: int, name: str
) -> tuple[ArrayMetadata, int]:
    """Grow the array at `key` along `axis` by values of shape `rows`, from its shape as
    stored; its metadata as committed and the offset the values go to."""
    with anyio.CancelScope(shield=True):  # landed or not: a cancel cannot know (undone after)
        change = await node_updates.update_node(
            store, key, meta, lambda m: shape_changes.grown(m, rows, axis, name), claim=True
        )
    return change.after, change.before.shape[axis]


async def grow_at(
    store: Store,
    key: str,
    meta: ArrayMetadata,
    rows: tuple[int, ...],
    axis: int,
    name: str,
    offset: int,
) -> ArrayMetadata:
    """Grow the array at `key` along `axis` by values of shape `rows` when its stored
    length there is `offset`; its metadata as committed. Shorter: another appender has
    not grown it yet, so wait for it; longer: `VersionConflictError`."""

    def at_offset(stored: ArrayMetadata) -> ArrayMetadata:
        have = stored.shape[axis]
        if have < offset:
            return stored  # not yet: nothing is written, and the caller waits
        if have > offset:
            raise VersionConflictError(
                f"variable {name!r} has {have} rows along axis {axis}, past the offset "
                f"{offset} where this append's rows go: another writer grew it out of "
                "step with the other variables of the dataset"
            )
        return shape_changes.grown(stored, rows, axis, name)

    settings = WriteSettings.of()
    started = time.monotonic()
    attempt = 0
    while True:
        with anyio.CancelScope(shield=True):  # as `grow_first`'s
            change = await node_updates.update_node(store, key, meta, at_offset)
        if change.before.shape[axis] == offset:
            return change.after
        if time.monotonic() - started > settings.retry_deadline_s:
            raise VersionConflictError(
                f"variable {name!r} still has {change.before.shape[axis]} rows along axis "
                f"{axis} after {time.monotonic() - started:.1f} s, short of the offset "
                f"{offset} where this append's rows go: the append that took the rows "
                "before them has not grown it (it may have failed)"
            )
        await settings.back_off(attempt)
        attempt += 1


class Growths:
    """The arrays one append grew, each taken back (`nodes.array.undo_growth`) when the
    append fails: else the group was left with its variables of different lengths
    (which xarray refuses to open), and every later append waited for the short ones
    and failed, growing the others again."""

    def __init__(self) -> None:
        self.grown: list[tuple[AsyncArray, shape_changes.Growth]] = []

    def add(self, array: AsyncArray, axis: int, offset: int) -> AsyncArray:
        """`array`, grown along `axis` from `offset` rows by this append."""
        before = tuple(offset if i == axis else n for i, n in enumerate(array.shape))
        self.grown.append((array, (before, array.shape)))
        return array

    @contextlib.asynccontextmanager
    async def taken_back_on_error(self) -> AsyncIterator[None]:
        """Take every growth back if the block raises (the last first)."""
        try:
            yield
        except BaseException as error:
            for array, shapes in reversed(self.grown):
                await undo_growth(array, shapes, error)
            raise
