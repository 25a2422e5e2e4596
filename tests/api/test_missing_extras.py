"""A part of aiozarr whose package is not installed says which extra installs it."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# what a user runs -> the package it needs -> the extra that installs it
NEEDS = {
    "import aiozarr.zarr": ("zarr", "zarr"),
    "import aiozarr.xarray": ("xarray", "xarray"),
    "import aiozarr.dask": ("dask", "dask"),
    "import aiozarr; aiozarr.to_dask": ("dask", "dask"),
    "import aiozarr; from aiozarr.storage.backends.memory import MemoryStore; "
    "aiozarr.create_array(MemoryStore(), shape=(2,), dtype='i1').getitem(..., progress=True)": (
        "tqdm",
        "progress",
    ),
}


def _without(package: str, code: str) -> subprocess.CompletedProcess[str]:
    """Run `code` where importing `package` fails as if it were not installed."""
    hide = f"import sys; sys.modules[{package!r}] = None\n"
    return subprocess.run(
        [sys.executable, "-c", hide + code], capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize("code", sorted(NEEDS))
def test_missing_package_names_its_extra(code: str) -> None:
    package, extra = NEEDS[code]
    result = _without(package, code)
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("aiozarr.errors.MissingExtraError: "), result.stderr
    assert package in last and f"pip install 'aiozarr[{extra}]'" in last
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert extra in extras["optional-dependencies"]


def test_missing_extra_is_a_module_not_found_error() -> None:
    result = _without(
        "zarr",
        "try:\n    import aiozarr.zarr\nexcept ModuleNotFoundError as e:\n    print(e.name)",
    )
    assert result.stdout.strip() == "zarr", result.stderr
