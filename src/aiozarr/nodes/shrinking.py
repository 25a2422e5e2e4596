"""What a shrink leaves behind, cleared before the smaller shape is stored: the stored
objects (shards, else chunks) wholly outside it are deleted (but those reaching past the
old shape's end, whose cut part is filled instead), and the part it cuts off inside those
it keeps is filled, so that a later grow shows the fill value there and
never the values from before (as HDF5 prunes a shrunk dataset's edge chunks; zarr-python
and TensorStore show the old values again)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from aiozarr.engine import entry as engine
from aiozarr.engine.entry import StoredArray
from aiozarr.metadata.model import ArrayMetadata
from aiozarr.nodes import selection_plans, shape_changes
from aiozarr.nodes.write_values import as_value
from aiozarr.selection.indexing import basic_indexer


async def clear_cut(
    stored: StoredArray,
    before: ArrayMetadata,
    after: ArrayMetadata,
    name: str,
    what: Callable[[], str],
) -> None:
    """Delete and fill what resizing array `name` (`stored`) from `before` to `after`
    cuts off; `what()` names the array and its store in messages."""
    _, outside = shape_changes.resized(before, after.shape, name)
    # An object reaching past `before`'s end is filled, not deleted: past that end it
    # may hold rows another writer appended after `before` was read (this is done before
    # the shape is committed, which may then find that append and keep the shape).
    parts = [shape_changes.past_end_part(before, coords) for coords in outside]
    stale = [stored.key(c) for c, part in zip(outside, parts, strict=True) if part is None]
    try:
        await stored.store.delete_many(stale)
    finally:  # a failed delete may have deleted some still
        stored.forget(*stale, written=True)
    old = dataclasses.replace(stored, meta=before)  # the cut parts are inside `before`
    cut = shape_changes.cut_regions(before, after.shape)
    for region in cut + [part for part in parts if part is not None]:
        indexer = selection_plans.plan(
            basic_indexer, region, before.shape, before.dtype, old.read_grid, what
        )
        fill = as_value(old.fill_value, indexer.shape, before.dtype, name=name, what=what)
        await engine.write(old, list(indexer), fill, None)
