"""xarray's own zarr backend tests, every read through `engine="aiozarr"`.

xarray's wheel ships its tests (`xarray.tests.test_backends`); test_xarray_backends.py
imports its zarr test classes and functions and runs them as they are, writes through
xarray's `to_zarr` (zarr-python), with one change: xarray's backend lookup hands out
aiozarr's backend wherever a test asks for the zarr engine (`engine="zarr"`, `open_zarr`,
`open_datatree`, `open_dataarray`). `AIOZARR_XARRAY_SUITE_ENGINE=zarr` runs the same
selection on xarray's own engine, to compare.

This file also does what xarray's own root conftest does for these tests (it is not in
the wheel): registers xarray's markers and honours `skip_if_param`. The tests whose
difference from xarray's engine is by design are expected to fail, strictly, one by
one with the reason (`EXPECTED_DIFFERENCES`, and docs/decisions/xarray-backend-suite.md).
Which tests run by default and which are `slow` is said in `DEFAULT_SELECTION`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ENGINE = os.environ.get("AIOZARR_XARRAY_SUITE_ENGINE", "aiozarr")
HERE = Path(__file__).parent

# Markers xarray's tests use (its own configuration registers them; ours is strict).
_MARKERS = ("flaky", "network", "skip_if_param", "skip_with_dask_array", "slow_hypothesis")

_UNSTABLE_DTYPE = ".*does not have a Zarr V3 specification"

_MOCKS_ZARR = (
    "counts calls to zarr-python's array classes' getitem (unittest.mock); aiozarr reads "
    "without zarr-python's arrays, so they are never called (its own tests count requests)"
)
_FILL_VALUE_MASK = (
    "asks for use_zarr_fill_value_as_mask=False and expects the v2 fill_value as _FillValue "
    "anyway: xarray's zarr entrypoint passes None on to its store, ignoring the argument; "
    "aiozarr does what the argument says (the values read are the same)"
)

# Test function name -> (the parametrization ids it applies to, or None for all; reason).
EXPECTED_DIFFERENCES: dict[str, tuple[tuple[str, ...] | None, str]] = {
    "test_indexing": (None, _MOCKS_ZARR),
    "test_concurrent_load_multiple_objects": (None, _MOCKS_ZARR),
    "test_async_load_multiple_variables": (None, _MOCKS_ZARR),
    "test_zarr_fill_value_setting": (("2-int", "2-float"), _FILL_VALUE_MASK),
}

# The default run (the README's test command, on two cores in about a minute): every
# test of the local-directory store class in both formats, the module's functions and
# DataArray / region classes, and from the other store classes the tests of what makes
# them different (a dict store, a store that cannot consolidate). `-m slow` runs the
# rest: every test of every class, about four minutes.
DEFAULT_SELECTION: dict[str, tuple[str, ...] | None] = {
    "TestZarrDirectoryStore": None,
    "TestDataArrayToZarr": None,
    "TestZarrRegionAuto": None,
    "TestZarrRectilinearChunksRead": None,
    "TestZarrNoConsolidatedMetadataSupport": (
        "test_roundtrip_consolidated",
        "test_read_non_consolidated_warning",
        "test_write_region",
        "test_non_existent_store",
    ),
    "TestZarrDictStore": ("test_roundtrip_None_variable", "test_compressor_encoding"),
    "": None,  # the module's test functions
}


def pytest_configure(config: pytest.Config) -> None:
    for name in _MARKERS:
        config.addinivalue_line("markers", f"{name}: used by xarray's own tests")


def _params_match(item: pytest.Item, marker: pytest.Mark) -> bool:
    """xarray's `skip_if_param(name=value, ..., reason=, condition=True)`: the item's
    parameters (fixture parameters included) have every value named."""
    if not marker.kwargs.get("condition", True):
        return False
    params = getattr(getattr(item, "callspec", None), "params", {})
    wanted = {k: v for k, v in marker.kwargs.items() if k not in ("reason", "condition")}
    return all(k in params and params[k] == v for k, v in wanted.items())


def _param_id(item: pytest.Item) -> str:
    callspec = getattr(item, "callspec", None)
    return "" if callspec is None else str(callspec.id)


def _is_default(item: pytest.Item) -> bool:
    cls = item.cls.__name__ if getattr(item, "cls", None) else ""
    if cls not in DEFAULT_SELECTION:
        return False
    names = DEFAULT_SELECTION[cls]
    return names is None or item.originalname in names  # type: ignore[attr-defined]


_XARRAY_WARNINGS = (
    "Failed to open Zarr store with consolidated metadata",
    "variable None will be stored as signed integers",
)


@pytest.hookimpl(tryfirst=True)  # before `-m 'not slow'` deselects
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if HERE not in Path(str(item.path)).parents:
            continue
        # zarr-python's warning when it writes a data type v3 has no spec for (a writer's
        # warning, not a reader's; xarray's own tests ignore it in places)
        item.add_marker(pytest.mark.filterwarnings(f"ignore:{_UNSTABLE_DTYPE}"))
        # Warnings xarray's own engine gives in the same tests: its fallback from missing
        # consolidated metadata (aiozarr's says the same), and its encoder's about a
        # variable's _FillValue. A test that expects one still sees it (pytest.warns).
        for text in _XARRAY_WARNINGS:
            item.add_marker(pytest.mark.filterwarnings(f"ignore:{text}"))
        for marker in item.iter_markers("skip_if_param"):
            if _params_match(item, marker):
                item.add_marker(pytest.mark.skip(reason=marker.kwargs.get("reason", "")))
        if not _is_default(item):
            item.add_marker(pytest.mark.slow)
        name = getattr(item, "originalname", item.name)
        if ENGINE == "aiozarr" and name in EXPECTED_DIFFERENCES:
            ids, reason = EXPECTED_DIFFERENCES[name]
            if ids is None or any(_param_id(item).endswith(i) for i in ids):
                item.add_marker(pytest.mark.xfail(reason=reason, strict=True))


def _aiozarr_get_backend(original: Any) -> Any:
    from xarray.backends.zarr import ZarrBackendEntrypoint

    from aiozarr.xarray import AiozarrBackendEntrypoint

    def get_backend(engine: Any) -> Any:
        if engine == "zarr" or engine is ZarrBackendEntrypoint:
            return AiozarrBackendEntrypoint()
        return original(engine)

    return get_backend


@pytest.fixture(autouse=True)
def _reads_through_aiozarr(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """Every zarr read goes to aiozarr's backend; the working directory is the test's
    own (some of xarray's tests write relative paths such as "tmp.zarr.zip")."""
    from xarray.backends import plugins

    monkeypatch.chdir(tmp_path)
    if ENGINE == "aiozarr":
        monkeypatch.setattr(plugins, "get_backend", _aiozarr_get_backend(plugins.get_backend))
    yield
