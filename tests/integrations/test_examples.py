"""Smoke tests: each example runs with one command on the emulator and says it worked."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run_example(name: str, *args: str) -> str:
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def test_web_service_answers_50_concurrent_clients() -> None:
    pytest.importorskip("aiohttp")
    out = run_example("web_service.py", "--self-test", "--clients", "50")
    assert "50 concurrent clients: all values correct" in out
    assert "/health while they ran" in out


def test_public_s3_local_copy() -> None:
    out = run_example("public_s3.py", "--local")
    assert "analysed_sst (2, 17999, 36000) int16" in out
    assert "mean 13.00 °C" in out


def test_public_s3_names_the_real_public_url() -> None:
    text = (EXAMPLES / "public_s3.py").read_text()
    assert 'PUBLIC_URL = "s3://mur-sst/zarr-v1"' in text


def test_convert_v2_to_v3() -> None:
    out = run_example("convert_v2_to_v3.py")
    assert "shards (1000, 1000)" in out
    assert "values equal: v2 -> sharded v3 conversion is exact" in out
