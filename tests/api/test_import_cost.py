"""`import aiozarr` loads only what every session needs: the packages of the doors
few sessions use (the HTTP client for reference targets, the peers' libraries) load
when first used, so a notebook's first cell does not wait for them."""

from __future__ import annotations

import subprocess
import sys

# aiohttp: ~0.2 s with its TLS roots, needed only for plain-HTTP reference targets,
# the emulator and `serve`.
NOT_AT_IMPORT = ("aiohttp", "yarl", "zarr", "xarray", "dask", "tensorstore", "icechunk")


def test_import_loads_no_optional_door() -> None:
    code = f"import sys, aiozarr\nprint(sorted(m for m in {NOT_AT_IMPORT!r} if m in sys.modules))"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert result.stdout.strip() == "[]", result.stdout
