"""xarray writes a dataset through an icechunk session; `engine="aiozarr"` reads it back."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

icechunk = pytest.importorskip("icechunk")
xr = pytest.importorskip("xarray")


def test_a_dataset_written_through_icechunk_reads_back(tmp_path: Path) -> None:
    repo = icechunk.Repository.create(icechunk.local_filesystem_storage(str(tmp_path / "r")))
    ds = xr.Dataset(
        {"t": (("y", "x"), np.random.default_rng(0).normal(size=(40, 30)))},
        coords={"y": np.arange(40), "x": np.arange(30.0)},
        attrs={"title": "t"},
    )
    session = repo.writable_session("main")
    ds.to_zarr(
        session.store, consolidated=False, zarr_format=3, encoding={"t": {"chunks": (10, 10)}}
    )
    first = session.commit("one")
    session = repo.writable_session("main")
    ds.assign(t=ds.t * 2).to_zarr(session.store, mode="a")
    session.commit("two")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning about consolidated metadata
        latest = xr.open_dataset(tmp_path / "r", engine="aiozarr")
        older = xr.open_dataset(
            tmp_path / "r", engine="aiozarr", storage_options={"snapshot": first}
        )
    xr.testing.assert_identical(latest.load(), ds.assign(t=ds.t * 2))
    xr.testing.assert_identical(older.load(), ds)
