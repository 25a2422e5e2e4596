"""Reads of several variables started together, read as one plan.

`Dataset.load_async()` starts one read per variable at once: each joins the reads of the
others on the event loop (`aiozarr.batch(shared=True)`: one batch of shard indexes across
the variables, one stream of their chunks). A read that starts alone is read alone; where
the plan fails, each read is made again on its own, so an error is only the read's that
met it. xarray's blocking `load()` reads its variables one after another; `load` here
starts every variable's `load_async` on aiozarr's event loop at once instead (a
DataTree's groups' too: xarray's DataTree has no `load_async`).
"""

from __future__ import annotations

import asyncio
from typing import Any, TypeVar

import xarray as xr

from aiozarr.api import batch
from aiozarr.nodes.array import AsyncArray
from aiozarr.sync import run

Loadable = TypeVar("Loadable", xr.Dataset, xr.DataArray, xr.DataTree)


async def read_together(array: AsyncArray, selection: Any) -> Any:
    """`array.getitem(selection)`, read with every other read started at the same time."""
    with batch(shared=True):
        return await array.getitem(selection)


def load(obj: Loadable) -> Loadable:
    """`obj.load()` for a Dataset, DataArray or DataTree (every group's variables), its
    variables read as one plan (one batch of shard indexes, one stream of chunks), as
    `await ds.load_async()` reads a Dataset's. Blocking; returns `obj`, loaded in place.

    Dask-backed variables are computed here, in the calling thread, first: xarray's
    `load_async` computes them with a blocking `compute`, whose tasks read through
    aiozarr's loop, which would be the one blocked (a deadlock)."""
    variables = _variables(obj)
    chunked = [v for v in variables if v.chunks is not None]
    if chunked:  # in one compute, each variable given its values in place
        computed = xr.Dataset({str(i): v for i, v in enumerate(chunked)}).compute()
        for i, variable in enumerate(chunked):
            variable.data = computed.variables[str(i)].data
    run(_load_async, [v for v in variables if v.chunks is None])
    return obj


def _variables(obj: xr.Dataset | xr.DataArray | xr.DataTree) -> list[xr.Variable]:
    """The variables `obj` holds, each once (a DataTree's groups share the coordinates
    they inherit)."""
    if isinstance(obj, xr.DataArray):
        found = [obj.variable, *obj.coords.variables.values()]
    elif isinstance(obj, xr.DataTree):
        found = [v for node in obj.subtree for v in node.dataset.variables.values()]
    else:
        found = list(obj.variables.values())
    return list({id(v): v for v in found}.values())


async def _load_async(variables: list[xr.Variable]) -> None:
    """Load `variables` in place, their reads started together (`read_together`)."""
    await asyncio.gather(*(v.load_async() for v in variables))
