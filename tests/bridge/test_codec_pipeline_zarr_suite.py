"""zarr-python's own tests pass with `aiozarr.zarr.CodecPipeline` configured, and most of
their reads and writes go through aiozarr's engine.

The tests are those of the zarr-python release installed, from its source distribution
on PyPI (its wheel has none): downloaded once with pip, checked against a pinned SHA-256
and kept in `~/.cache/aiozarr-ci` (`AIOZARR_ZARR_SDIST_CACHE` names another folder). They
run in a child pytest with `ZARR_CODEC_PIPELINE__PATH` set (zarr-python's tests reset its
config to the environment's before each test, so a fixture could not set it), and
tests/bridge/aiozarr_zarr_suite_plugin.py counting what the engine ran and fixing the
hypothesis profile of zarr-python's property tests.

zarr-python 3.1.6 (Python 3.11) runs its array, indexing, codec and v2 tests, about a
minute on two cores. zarr-python 3.4.2 (Python 3.12) adds its group, API, property and
pipeline-parity tests and `CodecPipelineTests`, the suite it asks of every pipeline
(subclassed for aiozarr's in a module written next to them), about four minutes. Both
are marked slow (`-m slow`) and run by .ci/run after the suite.
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

# the child run has its own per-test timeout; this one bounds the whole of it
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]

#: zarr-python releases whose tests this runs: the SHA-256 of each one's sdist.
PINNED = {
    "3.1.6": "d95e72cbea4b90e9a70679468b8266400331756232576ae2b43400ac5108d0eb",
    "3.4.2": "645d64f292f457120fc0ca18dbe38f665b4c21aaea38a2a88b5eead8f06f3d28",
}
#: The part of each release's suite that meets a codec pipeline.
SUITES = {
    "3.1.6": [
        "tests/test_array.py",
        "tests/test_indexing.py",
        "tests/test_codecs",
        "tests/test_v2.py",
    ],
    "3.4.2": [
        "tests/test_array.py",
        "tests/test_indexing.py",
        "tests/test_codecs",
        "tests/test_group.py",
        "tests/test_v2.py",
        "tests/test_api.py",
        "tests/test_properties.py",
        "tests/test_pipeline_parity.py",
        "tests/test_aiozarr_codec_pipeline.py",  # written by `_pipeline_suite`
    ],
}
#: Tests left out, and why. This one counts zarr-python's own store `get`s: one per shard
#: written whole ("not actually needed", its comment says); the engine writes a whole
#: shard without reading it (tests/bridge/test_codec_pipeline.py).
NUM_GETS = "tests/test_array.py::test_create_array_with_data_num_gets"
#: The others each replace a piece of zarr-python's own sharding codec
#: (monkeypatch: `_ShardIndex.get_chunk_slice` answers None) to see what its read path
#: does then; aiozarr's pipeline reads shards with its own code, which the patch does
#: not reach, and reads the values stored.
DESELECTED = {
    "3.1.6": [NUM_GETS],
    "3.4.2": [
        NUM_GETS,
        *(
            f"tests/test_codecs/test_sharding.py::"
            f"test_sharding_partial_shard_read__index_chunk_slice_fails[{store}-{where}]"
            for store in ("local", "memory", "zip")
            for where in ("start", "end")
        ),
    ],
}
#: zarr-python's `CodecPipelineTests` (tests/test_codec_pipeline_suite.py) run for
#: aiozarr's pipeline, as zarr-python runs them for each of its own.
PIPELINE_SUITE = """from tests.test_codec_pipeline_suite import CodecPipelineTests


class TestAiozarrPipeline(CodecPipelineTests):
    pipeline_path = "aiozarr.zarr.CodecPipeline"
"""
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


def _pipeline_suite(root: Path) -> None:
    """Write the module that runs zarr-python's `CodecPipelineTests` for aiozarr's."""
    if (root / "tests" / "test_codec_pipeline_suite.py").exists():
        (root / "tests" / "test_aiozarr_codec_pipeline.py").write_text(PIPELINE_SUITE)


def test_zarr_pythons_tests_pass_with_the_pipeline(tmp_path: Path) -> None:
    version = zarr.__version__
    if version not in PINNED:
        pytest.skip(f"zarr {version}: no pinned source distribution (pinned: {list(PINNED)})")
    root = _sources(version)
    _pipeline_suite(root)
    deselected = [arg for test in DESELECTED.get(version, []) for arg in ("--deselect", test)]
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
            # its own temporary folder: other pytest runs prune the shared numbered ones
            "--basetemp",
            str(tmp_path / "basetemp"),
            *deselected,
            *SUITES[version],
        ],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-3000:]
    found = json.loads(report.read_text())
    counts = found["counts"]
    # Most batches ran on the engine; those left to zarr-python are of stores, data types
    # and buffers the pipeline leaves to it (zarr's ZipStore, in most of zarr's store
    # parametrizations, aside).
    assert counts["engine_reads"] > 1000 and counts["engine_writes"] > 1000, found
    zip_store = found["fallbacks"].get("store ZipStore is not one aiozarr reads", 0)
    assert counts.get("fallback", 0) - zip_store < counts["engine_reads"] / 3, found
