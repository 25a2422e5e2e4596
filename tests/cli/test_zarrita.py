"""A client aiozarr did not write reads what `aiozarr serve` serves: zarrita.js in node.

`.ci/install-emulators.sh` installs zarrita (npm) into `$AIOZARR_CI_CACHE` (default
`~/.cache/aiozarr-ci`); `zarrita_read.mjs` opens arrays over HTTP with zarrita's
`FetchStore` and prints their values as JSON. Without node or zarrita the test is
skipped, saying why (it fails instead when `CI` is set: CI installs them).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import aiozarr

SCRIPT = Path(__file__).with_name("zarrita_read.mjs")


def _node_modules() -> Path | None:
    """The `node_modules` folder holding zarrita, or None when node or zarrita is missing."""
    if shutil.which("node") is None:
        return None
    cache = Path(os.environ.get("AIOZARR_CI_CACHE") or Path.home() / ".cache" / "aiozarr-ci")
    modules = cache / "node_modules"
    return modules if (modules / "zarrita" / "package.json").is_file() else None


@pytest.fixture(scope="module")
def node_modules() -> Path:
    modules = _node_modules()
    if modules is None:
        reason = "node or zarrita not installed (run .ci/install-emulators.sh)"
        if os.environ.get("CI"):  # CI installs them: a skip there would hide a broken install
            pytest.fail(reason)
        pytest.skip(reason)
    return modules


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """`aiozarr serve DIR --port 0` in a subprocess; yields (DIR, its HTTP base URL)."""
    root = tmp_path / "data"
    root.mkdir()
    process = subprocess.Popen(
        [sys.executable, "-m", "aiozarr", "serve", str(root), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert process.stdout is not None
        lines = []
        for line in process.stdout:  # the banner: "  HTTP: http://127.0.0.1:PORT/data/"
            lines.append(line)
            if line.strip().startswith("HTTP:"):
                url = line.split("HTTP:", 1)[1].strip()
                break
        else:
            raise AssertionError("aiozarr serve exited:\n" + "".join(lines))
        yield root, url
    finally:
        process.terminate()
        process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()


def _zarrita_read(node_modules: Path, workdir: Path, base_url: str, *specs: str) -> dict:
    # ESM resolves bare imports from the script's folder: put the script next to a link
    # to the cache's node_modules.
    workdir.mkdir()
    (workdir / "node_modules").symlink_to(node_modules, target_is_directory=True)
    script = workdir / SCRIPT.name
    shutil.copyfile(SCRIPT, script)
    result = subprocess.run(
        ["node", str(script), base_url, *specs], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _values(read: dict, dtype: str) -> np.ndarray:
    return np.asarray(read["data"]).astype(dtype).reshape(read["shape"])


def test_zarrita_reads_v2_and_v3_arrays(
    node_modules: Path, served: tuple[Path, str], tmp_path: Path
) -> None:
    root, url = served
    rng = np.random.default_rng(3)
    cases = {
        # path: (zarr format, values, options)
        "v2_gzip": (
            2,
            rng.normal(size=(30, 20)).astype("f4"),
            {"chunks": (7, 6), "compressors": [{"id": "gzip", "level": 1}]},
        ),
        "v2_plain": (2, np.arange(-50, 50, dtype="i2").reshape(10, 10), {"chunks": (4, 4)}),
        "v3_zstd": (
            3,
            rng.integers(0, 1000, size=(25, 16)).astype("u4"),
            {"chunks": (5, 5), "compressors": "auto"},
        ),
        "v3_sharded": (
            3,
            np.arange(24 * 18, dtype="f8").reshape(24, 18) / 7,
            {"chunks": (4, 3), "shards": (8, 9)},
        ),
        "v3_int64": (3, np.arange(-(2**40), -(2**40) + 60, dtype="i8"), {"chunks": (16,)}),
    }
    for path, (zarr_format, data, options) in cases.items():
        arr = aiozarr.create_array(
            root / path, shape=data.shape, dtype=data.dtype, zarr_format=zarr_format, **options
        )
        arr[...] = data
    specs = [f"v{fmt}:{path}" for path, (fmt, _, _) in cases.items()]
    read = _zarrita_read(node_modules, tmp_path / "node", url, *specs)
    for path, (_, data, _) in cases.items():
        assert read[path]["shape"] == list(data.shape), path
        np.testing.assert_array_equal(_values(read[path], data.dtype.str), data, err_msg=path)
