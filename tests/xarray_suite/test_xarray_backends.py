"""xarray's zarr backend tests (xarray.tests.test_backends, shipped in xarray's wheel),
zarr formats 2 and 3, with every read through `engine="aiozarr"` (conftest.py).

The classes are xarray's own, renamed only by being imported here; nothing of them is
copied. Left out: `TestInstrumentedZarrStore` (it counts zarr-python's store calls),
`TestNCZarr` and `test_chunking_consistency` (they write netCDF files, which needs
netCDF4, h5netcdf or scipy), and the fsspec tests (they read a netCDF example first).
"""

from __future__ import annotations

import pytest

pytest.importorskip("zarr")
pytest.importorskip("dask")
xtb = pytest.importorskip("xarray.tests.test_backends")
xconftest = pytest.importorskip("xarray.tests.conftest")

# xarray's fixtures, for the tests below
handle_numpy_1_warnings = xconftest.handle_numpy_1_warnings
time_unit = xconftest.time_unit
use_dask = xconftest.use_dask
use_cftime = xconftest.use_cftime
default_zarr_format = xtb.default_zarr_format
tmp_store = xtb.tmp_store
chunks = xtb.chunks

TestZarrDictStore = xtb.TestZarrDictStore
TestZarrDirectoryStore = xtb.TestZarrDirectoryStore
TestZarrWriteEmpty = xtb.TestZarrWriteEmpty
TestZarrNoConsolidatedMetadataSupport = xtb.TestZarrNoConsolidatedMetadataSupport
TestDataArrayToZarr = xtb.TestDataArrayToZarr
TestZarrRegionAuto = xtb.TestZarrRegionAuto
TestZarrRectilinearChunksRead = xtb.TestZarrRectilinearChunksRead

test_roundtrip_stringdtype_zarr_v3 = xtb.test_roundtrip_stringdtype_zarr_v3
test_open_dataset_chunking_zarr = xtb.test_open_dataset_chunking_zarr
test_zarr_closing_internal_zip_store = xtb.test_zarr_closing_internal_zip_store
test_zarr_create_default_indexes = xtb.test_zarr_create_default_indexes
test_raises_key_error_on_invalid_zarr_store = xtb.test_raises_key_error_on_invalid_zarr_store
