"""zarr-python's own array, indexing, codec (sharding included) and v2 tests pass with
`aiozarr.zarr.CodecPipeline` configured, and most of their reads and writes go through
aiozarr's engine.

The tests are those of the zarr-python release installed, from its source distribution
(its wheel has none): downloaded once with pip, checked against a pinned SHA-256 and
kept in `~/.cache/aiozarr-ci` (`AIOZARR_ZARR_SDIST_CACHE` names another folder). They run
in a child pytest with `ZARR_CODEC_PIPELINE__PATH` set, and
tests/bridge/aiozarr_zarr_suite_plugin.py counting what the engine ran.

About a minute on two cores: marked slow (`-m slow`), run by .ci/run after the suite.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import pytest

zarr = pytest.importorskip("zarr")

pytestmark = pytest.mark.slow

#: zarr-python releases whose tests this runs: the SHA-256 of each one's sdist.
PINNED = {"3.1.6": "d95e72cbea4b90e9a70679468b8266400331756232576ae2b43400ac5108d0eb"}
#: The part of zarr-python's suite that meets a codec pipeline.
SUITE = ["tests/test_array.py", "tests/test_indexing.py", "tests/test_codecs", "tests/test_v2.py"]
#: zarr-python's tests of what its own pipeline does, which aiozarr's does otherwise (why).
DESELECTED = {
    # one store `get` per shard written whole ("not actually needed", its comment says):
    # the engine writes a whole shard without reading it (tests/bridge/test_codec_pipeline.py)
    "tests/test_array.py::test_create_array_with_data_num_gets": "no read of whole shards",
}
PLUGIN_DIR = Path(__file__).resolve().parent


def _cache() -> Path:
    folder = os.environ.get("AIOZARR_ZARR_SDIST_CACHE")
    return Path(folder) if folder else Path.home() / ".cache" / "aiozarr-ci" / "zarr-sdist"


def _sources(version: str) -> Path:
    """The unpacked source distribution of zarr `version` (downloaded once)."""
    root = _cache() / f"zarr-{version}"
    if (root / "tests" / "conftest.py").exists():
        return root
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                f"zarr=={version}",
                "--no-binary",
                ":all:",
                "--no-deps",
                "--quiet",
                "-d",
                tmp,
            ],
            check=True,
            timeout=300,
        )
        (sdist,) = Path(tmp).glob("zarr-*.tar.gz")
        digest = hashlib.sha256(sdist.read_bytes()).hexdigest()
        assert digest == PINNED[version], f"zarr {version} sdist: sha256 {digest}"
        root.parent.mkdir(parents=True, exist_ok=True)
        with tarfile.open(sdist) as archive:
            archive.extractall(root.parent, filter="data")
    return root


def test_zarr_pythons_tests_pass_with_the_pipeline(tmp_path: Path) -> None:
    version = zarr.__version__
    if version not in PINNED:
        pytest.skip(f"zarr {version}: no pinned source distribution (pinned: {list(PINNED)})")
    root = _sources(version)
    report = tmp_path / "report.json"
    env = {
        **os.environ,
        "ZARR_CODEC_PIPELINE__PATH": "aiozarr.zarr.CodecPipeline",
        "AIOZARR_SUITE_REPORT": str(report),
        "PYTHONPATH": os.pathsep.join(
            p for p in [str(PLUGIN_DIR), os.environ.get("PYTHONPATH", "")] if p
        ),
    }
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "aiozarr_zarr_suite_plugin",
            "-o",
            "addopts=",
            "--timeout",
            "300",
            *SUITE,
            *(f"--deselect={test}" for test in DESELECTED),
        ],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-3000:]
    found = json.loads(report.read_text())
    counts = found["counts"]
    # Most batches ran on the engine; those left to zarr-python are of stores, data types
    # and buffers the pipeline leaves to it.
    assert counts["engine_reads"] > 1000 and counts["engine_writes"] > 1000, found
    assert counts.get("fallback", 0) < counts["engine_reads"] / 3, found
