"""A fresh install does what the README and the examples promise.

Each virtual environment is built from this checkout with one extra only (what a user
installs), so a missing dependency or a warning on import shows here, not on a user's
machine. Every example runs in the environment of the extra its docstring names, with a
private temporary directory that must be empty again when it ends.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"

# A pip install into a fresh environment (minutes on a busy 2-core machine), then a run.
# A test that may build an environment (the fixture is shared: the first test of an extra
# builds it) carries a timeout that covers both: pytest-timeout's global 120 s counts the
# fixture's install too, and would cut it before pip's own limit could say what hung.
INSTALL_TIMEOUT_S = 900
RUN_TIMEOUT_S = 300
installs = pytest.mark.timeout(INSTALL_TIMEOUT_S + RUN_TIMEOUT_S + 60)

# example (and its arguments) -> what its output must say
RUNS: dict[str, tuple[list[str], str]] = {
    "quickstart.py": ([], "values match what was written"),
    "public_s3.py": (["--local"], "mean 13.00 °C"),
    "web_service.py": (["--self-test", "--clients", "20"], "all values correct"),
    "convert_v2_to_v3.py": ([], "values equal: v2 -> sharded v3 conversion is exact"),
    "xarray_demo.py": ([], "identical: True"),
    "dask_distributed.py": ([], "verified"),
}


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[str], Path]]:
    """`venv(extra)`: the python of a fresh environment with aiozarr[extra] ("" = base).
    The environments are removed when the module ends, whatever the outcome."""
    made: dict[str, Path] = {}

    def make(extra: str) -> Path:
        if extra not in made:
            path = tmp_path_factory.mktemp(f"venv-{extra or 'base'}")
            subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
            python = path / "bin" / "python"
            target = f"{ROOT}[{extra}]" if extra else str(ROOT)
            subprocess.run(
                [python, "-m", "pip", "install", "-q", "--disable-pip-version-check", target],
                check=True,
                timeout=INSTALL_TIMEOUT_S,
            )
            made[extra] = python
        return made[extra]

    yield make
    # ~250 MB each, and of no use to debug a failure: pytest would keep them with the
    # directories of a failed run.
    for python in made.values():
        shutil.rmtree(python.parents[1], ignore_errors=True)


def declared_extra(example: str) -> str:
    """The extra an example's docstring says it needs ("" for the base install)."""
    head = (EXAMPLES / example).read_text().split('"""')[1]
    if "Needs the base install only" in head:
        return ""
    found = re.search(r'Needs the `(\w+)` extra: `pip install -e "\.\[(\w+)\]"`', head)
    assert found, f"{example} does not say in its first lines which extra it needs"
    assert found.group(1) == found.group(2)
    return found.group(1)


@installs
def test_base_install_imports_and_runs_the_cli_without_warnings(venv) -> None:
    python = venv("")
    for command in (["-c", "import aiozarr"], ["-m", "aiozarr", "--help"]):
        result = subprocess.run(
            [python, "-W", "error", *command],
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_S,
        )
        assert result.returncode == 0, result.stderr
        assert result.stderr == ""


def test_every_example_is_run_here() -> None:
    assert sorted(RUNS) == sorted(p.name for p in EXAMPLES.glob("*.py"))


@installs
@pytest.mark.parametrize("example", sorted(RUNS))
def test_example_runs_with_only_its_extra(example: str, venv, tmp_path: Path) -> None:
    args, expected = RUNS[example]
    python = venv(declared_extra(example))
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    env.pop("PYTHONPATH", None)  # the installed package, not this checkout's sources
    result = subprocess.run(
        [python, str(EXAMPLES / example), *args],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        env=env,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert expected in result.stdout
    assert list(tmp_path.iterdir()) == [], "the example left files behind"


def test_examples_install_from_the_checkout() -> None:
    # aiozarr is not on the package index yet: `pip install aiozarr` would fail
    for example in sorted(RUNS):
        head = (EXAMPLES / example).read_text().split('"""')[1]
        assert "pip install aiozarr" not in head and "in a checkout of aiozarr" in head, example


def test_public_s3_names_the_real_public_url() -> None:
    text = (EXAMPLES / "public_s3.py").read_text()
    assert 'PUBLIC_URL = "s3://mur-sst/zarr-v1"' in text


def test_packaging_declares_what_users_need() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = {
        name: {re.split(r"[<>=\[;]", spec)[0] for spec in specs}
        for name, specs in project["optional-dependencies"].items()
    }
    # the license pyproject names is shipped beside it
    assert project["license"] == "MIT"
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
    # Parquet references need pyarrow: an extra users install, not only the test one
    assert "pyarrow" in extras["references"]
    assert extras["dask"] >= {"dask", "distributed"}
    assert "xarray" in extras["xarray"]
    assert "zarr" in extras["zarr"]  # aiozarr.zarr
    assert project["optional-dependencies"]["all"] == [
        "aiozarr[xarray,zarr,dask,progress,references,legacy,aws]"
    ]
    assert "boto3" in extras["aws"]  # role and SSO profiles (storage/backends/credentials.py)
    # a linter is a developer's tool, not a test dependency
    assert "ruff" not in extras["test"] and "ruff" in extras["dev"]
    # numcodecs warns on import when it finds the deprecated `crc32c` binding
    base = {re.split(r"[<>=\[;]", spec)[0] for spec in project["dependencies"]}
    assert "google-crc32c" in base and "crc32c" not in base
