"""A pytest plugin for running zarr-python's own tests with `aiozarr.zarr.CodecPipeline`.

Loaded into that run (`-p aiozarr_zarr_suite_plugin`) by
tests/bridge/test_codec_pipeline_zarr_suite.py, which sets `ZARR_CODEC_PIPELINE__PATH`
(zarr-python's tests reset its config to the environment's before each test). It checks
that the pipeline is the one in force, counts the reads and writes the engine ran and
the batches left to zarr-python's default pipeline (with why), and writes them as JSON
to the file `AIOZARR_SUITE_REPORT` names, so the outer test can tell the suite really
went through aiozarr.
"""

from __future__ import annotations

import collections
import json
import logging
import os
from typing import Any

import zarr
from hypothesis import HealthCheck, settings
from zarr.registry import get_pipeline_class

from aiozarr.engine import entry as engine
from aiozarr.zarr import CodecPipeline

_counts: collections.Counter[str] = collections.Counter()
_reasons: collections.Counter[str] = collections.Counter()


class _Fallbacks(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if "falls back" in message:
            _counts["fallback"] += 1
            _reasons[message.partition(": ")[2][:80]] += 1


def _counted(name: str, run: Any) -> Any:
    async def counted(*args: Any, **kwargs: Any) -> Any:
        _counts[name] += 1
        return await run(*args, **kwargs)

    return counted


#: zarr-python's property tests (`test_properties.py`) under a budget CI can afford:
#: the same examples every run (derandomized), no example database.
SUITE_PROFILE = "aiozarr-zarr-suite"
settings.register_profile(
    SUITE_PROFILE,
    max_examples=int(os.environ.get("AIOZARR_ZARR_SUITE_EXAMPLES", "30")),
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow],
)


def pytest_configure(config: Any) -> None:
    # after zarr-python's conftest loaded its own profile
    settings.load_profile(SUITE_PROFILE)
    zarr.config.reset()
    found = get_pipeline_class()
    if found is not CodecPipeline:
        raise RuntimeError(f"zarr-python's codec pipeline is {found!r}, not aiozarr's")
    logger = logging.getLogger("aiozarr.zarr")
    logger.setLevel(logging.DEBUG)
    logger.addHandler(_Fallbacks())
    logger.propagate = False  # zarr's tests log at INFO: keep these out of their output
    # The pipeline reaches the engine through its one door (`engine/entry.py`).
    engine.read = _counted("engine_reads", engine.read)
    engine.write = _counted("engine_writes", engine.write)


def pytest_unconfigure(config: Any) -> None:
    path = os.environ.get("AIOZARR_SUITE_REPORT")
    if path:
        with open(path, "w") as f:
            json.dump({"counts": dict(_counts), "fallbacks": dict(_reasons)}, f, indent=1)
