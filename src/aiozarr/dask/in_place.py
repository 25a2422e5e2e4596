"""What a dask write must not read: values its own blocks replace (`check_not_in_place`:
a block reading what another block writes) or a node its creation deletes first
(`check_not_overwritten`). The target array is found in the source's graph (the
arguments of its tasks, through xarray's lazy arrays), and each block's reads of it as
a box (docs/decisions/integrations.md)."""

from __future__ import annotations

import itertools
from typing import Any

import dask.array as da
import numpy as np
from dask._task_spec import Task, convert_legacy_graph
from dask.blockwise import Blockwise

from aiozarr.errors import InPlaceWriteError
from aiozarr.nodes.array import AsyncArray
from aiozarr.storage.protocol import Store
from aiozarr.sync import Array

__all__ = ["check_not_in_place", "check_not_overwritten"]


#: A box: per axis, the range [start, stop) of the elements of an array a task reads.
Box = tuple[tuple[int, int], ...]


def _place(array: Array | AsyncArray) -> tuple[object, str]:
    """Where `array`'s data is: its store's key space and its full path there (two
    handles on one array, one opened at its group, give one place)."""
    space, prefix = array.store.key_space()
    return space, "/".join(part for part in f"{prefix}/{array.path}".split("/") if part)


def _span(selector: Any, n: int) -> tuple[int, int]:
    """The range along an axis of length `n` that `selector` reads (all of it when not
    known: a boolean mask, anything else)."""
    if isinstance(selector, slice):
        picked = range(*selector.indices(n))
        return (min(picked), max(picked) + 1) if picked else (0, 0)
    if isinstance(selector, int | np.integer) and n:
        return int(selector) % n, int(selector) % n + 1
    picked = np.asarray(selector)
    if picked.dtype.kind in "iu" and picked.size and n:
        picked = picked % n
        return int(picked.min()), int(picked.max()) + 1
    return 0, n


def _box(index: Any, shape: tuple[int, ...]) -> Box | None:
    """The box of `shape` that a getter's `index` reads (None: nothing)."""
    index = index if isinstance(index, tuple) else (index,)
    if len(index) > len(shape) or any(i is Ellipsis or i is None for i in index):
        index = ()
    spans = tuple(
        _span(index[axis] if axis < len(index) else slice(None), n) for axis, n in enumerate(shape)
    )
    return None if any(start >= stop for start, stop in spans) else spans


def _union(a: Box | None, b: Box | None) -> Box | None:
    if a is None or b is None:
        return a or b
    return tuple((min(x[0], y[0]), max(x[1], y[1])) for x, y in zip(a, b, strict=True))


def _trivial(key: Any, shape: Any) -> bool:
    """Whether an xarray lazy key (`BasicIndexer`, ...) takes every element in order."""
    parts = getattr(key, "tuple", None)
    if not isinstance(parts, tuple) or not isinstance(shape, tuple) or len(parts) != len(shape):
        return False
    return all(
        isinstance(s, slice) and s.indices(n) == (0, n, 1)
        for s, n in zip(parts, shape, strict=True)
    )


def _leaf(value: Any) -> tuple[Array | AsyncArray | None, bool]:
    """The aiozarr array `value` is, or wraps (xarray's lazy arrays, through their
    `.array` down to the backend's `async_array`), and whether indexing `value` indexes
    it alike: every wrapper of its shape, and any lazy key of theirs takes all of it."""
    value = getattr(value, "value", value)  # dask's DataNode
    shape, alike = getattr(value, "shape", None), True
    for _ in range(16):  # xarray stacks a few wrappers; a loop of them ends here
        if isinstance(value, Array | AsyncArray):
            return value, alike and value.shape == shape
        key = getattr(value, "key", None)
        if getattr(value, "shape", None) != shape or (key is not None and not _trivial(key, shape)):
            alike = False
        inner = getattr(value, "async_array", None)
        value = inner if inner is not None else getattr(value, "array", None)
        if value is None:
            break
    return None, False


def _holds(value: Any, reads: Any) -> bool:
    """Whether a graph node (or a value in one) holds an array `reads` picks: itself,
    wrapped (`_leaf`), as data, or as an argument of a task, however nested."""
    value = getattr(value, "value", value)  # dask's DataNode
    found, _ = _leaf(value)
    if found is not None:
        return bool(reads(found))
    if isinstance(value, tuple | list):
        return any(_holds(item, reads) for item in value)
    if isinstance(value, dict):
        return any(_holds(item, reads) for item in value.values())
    if not isinstance(value, Task):  # only dask's tasks are looked into
        return False
    return any(_holds(arg, reads) for arg in value.args) or _holds(dict(value.kwargs), reads)


def _alike(value: Any) -> bool:
    """Whether a getter's array is an aiozarr array or a wrapper indexed alike."""
    return _leaf(value)[1]


#: dask's `from_array` tasks: `getter(array, index)` reads `array[index]`.
_GETTERS = (da.core.getter, da.core.getter_nofancy, da.core.getter_inline)


def _direct_read(
    node: Any, holders: dict[Any, bool], reads: Any, shape: tuple[int, ...]
) -> Box | None:
    """The box a task reads itself of the arrays `reads` picks, held by a key of
    `holders` (with whether it is indexed alike) or given inline: the index of a
    `from_array` getter, else all of it (a wrapper that indexes it otherwise too)."""
    args = getattr(node, "args", ())
    if getattr(node, "func", None) in _GETTERS and len(args) > 1:
        held = holders.get(getattr(args[0], "key", None))
        alike = held if held is not None else _holds(args[0], reads) and _alike(args[0])
        if alike:
            return _box(getattr(args[1], "value", args[1]), shape)
    if holders.keys() & set(getattr(node, "dependencies", ())) or _holds(node, reads):
        return tuple((0, n) for n in shape)
    return None


def _may_read(source: da.Array, reads: Any) -> bool:
    """Whether a layer of `source`'s graph may hold an array `reads` picks, looked for
    without building the tasks of dask's blockwise layers (their arguments and task)."""
    for layer in source.__dask_graph__().layers.values():
        if isinstance(layer, Blockwise):
            constants = [value for value, index in layer.indices if index is None]
            if _holds(constants, reads) or _holds(getattr(layer, "task", None), reads):
                return True
        elif any(_holds(node, reads) for node in layer.values()):
            return True
    return False


def _readers(source: da.Array, reads: Any) -> tuple[dict[Any, Any], dict[Any, bool]] | None:
    """`source`'s graph and the keys holding an array `reads` picks (with whether it is
    indexed alike), or None where no task reads one (held by a key, as dask's
    `from_array` does, or given inline)."""
    if not _may_read(source, reads):
        return None
    graph = convert_legacy_graph(dict(source.__dask_graph__()))
    holders = {
        key: _alike(node)
        for key, node in graph.items()
        if _leaf(node)[0] is not None and _holds(node, reads)
    }
    found = holders or any(_holds(node, reads) for node in graph.values())
    return (graph, holders) if found else None


def _reads(source: da.Array, reads: Any, shape: tuple[int, ...]) -> dict[Any, Box | None] | None:
    """For each key of `source`'s graph, the box of the arrays `reads` picks (all of one
    shape) that computing it reads; None where the graph reads none of them."""
    found = _readers(source, reads)
    if found is None:
        return None
    graph, holders = found
    boxes: dict[Any, Box | None] = {key: None for key in holders}
    for key in graph:  # depth first, without recursion (graphs are deep)
        stack = [key]
        while stack:
            top = stack[-1]
            if top in boxes:
                stack.pop()
                continue
            deps = [d for d in getattr(graph[top], "dependencies", ()) if d in graph]
            todo = [d for d in deps if d not in boxes]
            if todo:
                stack.extend(todo)
                continue
            stack.pop()
            box = _direct_read(graph[top], holders, reads, shape)
            for dep in deps:
                box = _union(box, boxes[dep])
            boxes[top] = box
    return boxes


def check_not_in_place(source: da.Array, target: Array, region: tuple[slice, ...] | None) -> None:
    """`InPlaceWriteError` where a block of `source` reads values of `target` that another
    block writes: tasks run in any order, so it would read them before or after they
    are replaced (numpy's `a[:] = a[::-1]` copies first; a dask graph cannot)."""
    place = _place(target)
    boxes = _reads(source, lambda array: _place(array) == place, target.shape)
    if boxes is None:
        return
    whole = region or tuple(slice(0, n) for n in target.shape)
    edges = [
        [whole[axis].start, *(whole[axis].start + int(e) for e in itertools.accumulate(sizes))]
        for axis, sizes in enumerate(source.chunks)
    ]
    for index in itertools.product(*(range(len(sizes)) for sizes in source.chunks)):
        read = boxes.get((source.name, *index))
        written = tuple((edges[axis][i], edges[axis][i + 1]) for axis, i in enumerate(index))
        clipped = read and tuple(
            (max(lo, w.start), min(hi, w.stop)) for (lo, hi), w in zip(read, whole, strict=True)
        )
        if not clipped or any(lo >= hi for lo, hi in clipped):
            continue
        if any(
            lo < w_lo or hi > w_hi for (lo, hi), (w_lo, w_hi) in zip(clipped, written, strict=True)
        ):
            raise InPlaceWriteError(
                f"block {index} of the dask array reads {_text(clipped)} of {target!r} "
                f"and writes {_text(written)}: other blocks replace what it reads, before "
                "or after it reads it (values would be silently wrong). Write to a new "
                "array, or compute the values first (`source.persist()`); safe=False "
                "skips this check"
            )


def check_not_overwritten(source: da.Array, target: Store, path: str) -> None:
    """`InPlaceWriteError` where `source` reads an array that replacing the node at `path`
    of `target` deletes first (`overwrite=True`, xarray's mode "w"): it would read fill
    values (the data lost)."""
    space, prefix = target.key_space()
    place = "/".join(part for part in f"{prefix}/{path}".split("/") if part)

    def deleted(array: Array | AsyncArray) -> bool:
        where, name = _place(array)
        return where == space and (not place or name == place or name.startswith(place + "/"))

    if _readers(source, deleted) is not None:
        raise InPlaceWriteError(
            f"the dask array reads an array at or under {path or '/'!r} of {target!r}, "
            "which overwriting deletes before the values are written: the data would be "
            "lost and fill values written. Write to another path, or compute the values "
            "first (dask's `.persist()`, xarray's `.load()`)"
        )


def _text(box: Box) -> str:
    return "[" + ", ".join(f"{lo}:{hi}" for lo, hi in box) + "]"
