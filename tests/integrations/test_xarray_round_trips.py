"""The round trips and requests the README promises for `engine="aiozarr"`, exactly:
opening takes 2 round trips with consolidated metadata and 3 without (whatever
`consolidated=` says, in a process that has never seen the store), and `load_async` of
several variables is one batch of requests. Counted on the emulator (20 ms) through a
`RoundTripStore`: requests sent together count as one round trip."""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

xr = pytest.importorskip("xarray")
pytest.importorskip("zarr")

from aiozarr.xarray.tree import UNCONSOLIDATED_WARNING  # noqa: E402

N_VARS = 6
COORDS = ("time", "level", "y", "x")  # one chunk each


def dataset() -> xr.Dataset:
    """N_VARS data variables of 2 chunks each, 4 dimension coordinates of 1 chunk each."""
    coords = {
        "time": pd.date_range("2021-01-01", periods=4),
        "level": np.arange(2.0),
        "y": np.arange(3.0),
        "x": np.arange(5.0),
    }
    shape = (4, 2, 3, 5)
    data = {f"v{i}": (COORDS, np.full(shape, float(i))) for i in range(N_VARS)}
    return xr.Dataset(data, coords=coords)


def write(local: Path, zarr_format: int, consolidated: bool) -> None:
    encoding = {f"v{i}": {"chunks": (2, 2, 3, 5)} for i in range(N_VARS)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dataset().to_zarr(
            local, zarr_format=zarr_format, consolidated=consolidated, encoding=encoding
        )


def gets(store: Any) -> list[str]:
    return sorted(key for op, key, _ in store.requests if op == "get")


def chunk_keys(zarr_format: int, names: Any, nchunks: int) -> list[str]:
    sep = "c/" if zarr_format == 3 else ""
    dot = "/" if zarr_format == 3 else "."
    out = []
    for name in names:
        for i in range(nchunks):
            ndim = 1 if name in COORDS else 4
            out.append(f"{name}/{sep}" + dot.join([str(i)] + ["0"] * (ndim - 1)))
    return sorted(out)


def member_documents(zarr_format: int) -> list[str]:
    names = [*COORDS, *(f"v{i}" for i in range(N_VARS))]
    if zarr_format == 3:
        return [f"{n}/zarr.json" for n in names]
    # a v2 member: its array documents, and the group documents it might be instead
    return [f"{n}/{k}" for n in names for k in (".zarray", ".zattrs", ".zgroup", ".zmetadata")]


GROUP_DOCUMENTS = ["zarr.json", ".zgroup", ".zattrs", ".zmetadata"]  # v3 and v2 at once


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("consolidated", [None, True])
def test_open_with_consolidated_metadata_is_2_round_trips(
    local_path: Callable[[str], Path],
    emulator_store: Callable[[str], Any],
    zarr_format: int,
    consolidated: bool | None,
) -> None:
    path = f"rt-c-{uuid.uuid4().hex[:8]}.zarr"
    write(local_path(path), zarr_format, consolidated=True)
    store = emulator_store(path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback warning: consolidated metadata answers
        ds = xr.open_dataset(store, engine="aiozarr", consolidated=consolidated)
    assert store.depth == 2
    # 1: the group's documents (and, unless consolidated=True, its listing beside them);
    # 2: the 4 dimension coordinates. No member document, no data variable.
    assert gets(store) == sorted(GROUP_DOCUMENTS + chunk_keys(zarr_format, COORDS, 1))
    assert store.counts["list"] == (0 if consolidated else 1)
    assert set(ds.data_vars) == {f"v{i}" for i in range(N_VARS)}


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("consolidated", [None, False])
def test_open_without_consolidated_metadata_is_3_round_trips(
    local_path: Callable[[str], Path],
    emulator_store: Callable[[str], Any],
    zarr_format: int,
    consolidated: bool | None,
) -> None:
    path = f"rt-u-{uuid.uuid4().hex[:8]}.zarr"
    write(local_path(path), zarr_format, consolidated=False)
    store = emulator_store(path)
    if consolidated is None:  # xarray's engine warns here too
        with pytest.warns(RuntimeWarning, match="Failed to open Zarr store with consolidated"):
            ds = xr.open_dataset(store, engine="aiozarr")
    else:
        ds = xr.open_dataset(store, engine="aiozarr", consolidated=False)
    assert store.depth == 3
    # 1: the group's documents and its listing; 2: every member's documents in one batch;
    # 3: the 4 dimension coordinates
    group = GROUP_DOCUMENTS if consolidated is None else GROUP_DOCUMENTS[:3]
    expected = group + member_documents(zarr_format) + chunk_keys(zarr_format, COORDS, 1)
    assert gets(store) == sorted(expected)
    assert store.counts["list"] == 1
    xr.testing.assert_identical(ds.load(), dataset())


def test_the_fallback_warning_is_xarrays() -> None:
    assert UNCONSOLIDATED_WARNING.startswith(
        "Failed to open Zarr store with consolidated metadata, but successfully read with "
        "non-consolidated metadata."
    )


@pytest.mark.parametrize("zarr_format", [2, 3])
async def test_load_async_of_several_variables_is_one_round_trip(
    local_path: Callable[[str], Path], emulator_store: Callable[[str], Any], zarr_format: int
) -> None:
    path = f"rt-l-{uuid.uuid4().hex[:8]}.zarr"
    write(local_path(path), zarr_format, consolidated=True)
    store = emulator_store(path)
    ds = xr.open_dataset(store, engine="aiozarr")
    names = [f"v{i}" for i in range(4)]
    store.reset()
    loaded = await ds[names].load_async()
    assert store.depth == 1
    assert gets(store) == chunk_keys(zarr_format, names, 2)  # every chunk once, at once
    assert store.counts["list"] == 0
    for i, name in enumerate(names):
        np.testing.assert_array_equal(loaded[name].values, float(i))
