"""`aiozarr --version`, and what `aiozarr info` shows of an array it cannot decode."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys

import aiozarr
from aiozarr.cli import main


def test_version_is_the_package_version(capsys) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"aiozarr {aiozarr.__version__}\n"
    # the installed distribution says the same: one version, read from one place
    assert importlib.metadata.version("aiozarr") == aiozarr.__version__


def test_version_from_the_console() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "aiozarr", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"aiozarr {aiozarr.__version__}"
