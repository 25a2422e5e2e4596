"""Every code block of README.md runs as written.

The Python blocks run in order as the cells of one notebook (top-level `await`, a running
event loop, one namespace) in a directory that `aiozarr serve` serves as the bucket
`bucket`, with `AWS_ENDPOINT_URL` pointing at it, as the README tells users to. Then each
`$ aiozarr ...` line of the console block runs there too, and prints what the README shows
(figures that change from run to run, times and rates, are compared as numbers only).
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"

# Runs the cells the way Jupyter does: each one compiled with top-level await allowed and
# run as a task of the one event loop, which stays running for the sync calls too.
RUNNER = """
import ast, asyncio, inspect, sys
cells = eval(sys.stdin.read())
namespace = {"__name__": "__main__"}

async def run(cell):
    result = eval(compile(cell, "README.md", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT),
                  namespace)
    if inspect.iscoroutine(result):
        await result

loop = asyncio.new_event_loop()
for cell in cells:
    loop.run_until_complete(run(cell))
print("all cells ran")
"""


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README.read_text(), flags=re.DOTALL)


def console_examples() -> list[tuple[str, str]]:
    """`(command, output shown)` for each `$ ` line of the console blocks."""
    examples = []
    for block in blocks("console"):
        for chunk in re.split(r"\n(?=\$ )", block.strip()):
            command, _, output = chunk.partition("\n")
            examples.append((command.removeprefix("$ "), output.strip()))
    return examples


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def bucket(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, str]]]:
    """A directory served as `s3://bucket/`, and the environment that reaches it."""
    root = tmp_path_factory.mktemp("bucket")
    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "aiozarr",
            "serve",
            str(root),
            "--bucket",
            "bucket",
            "--allow-writes",
            "--port",
            str(port),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        assert server.stdout.readline().startswith("Serving"), "aiozarr serve did not start"
        env = {**os.environ, "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}"}
        yield root, env
    finally:
        server.terminate()
        server.wait(timeout=10)


@pytest.fixture(scope="module")
def notebook(bucket: tuple[Path, dict[str, str]]) -> tuple[Path, dict[str, str]]:
    """The bucket after every Python block of the README ran in it."""
    root, env = bucket
    result = subprocess.run(
        [sys.executable, "-c", RUNNER],
        input=repr(blocks("python")),
        capture_output=True,
        text=True,
        cwd=root,
        # a crash prints every thread's Python stack
        env={**env, "PYTHONFAULTHANDLER": "1"},
        timeout=300,
    )
    assert result.returncode == 0, failure_report(result, root.parent / "notebook-stderr.txt")
    assert result.stdout.rstrip().endswith("all cells ran")
    return root, env


def failure_report(result: subprocess.CompletedProcess[str], keep: Path) -> str:
    """How the notebook's process ended, and what it said besides the README's own logging
    (its DEBUG cell makes the store log every request); the whole stderr is kept in `keep`,
    which pytest keeps after a failing run."""
    keep.write_text(result.stderr)
    code = result.returncode
    ended = f"killed by {signal.Signals(-code).name}" if code < 0 else f"exit status {code}"
    said = [line for line in result.stderr.splitlines() if not line.startswith("DEBUG:")]
    return (
        f"the notebook {ended}; all of its stderr is in {keep}; besides DEBUG lines:\n"
        + ("\n".join(said)[-8000:])
    )


# The two commands a new user runs first (issue #19: they stay as they are). The first is
# the quickstart example, run by test_install.py in a fresh base environment; the second is
# this suite.
COMMANDS = [
    "python3.11 -m venv .venv && .venv/bin/pip install -q -e . "
    "&& .venv/bin/python examples/quickstart.py",
    'python3.11 -m venv .venv && .venv/bin/pip install -q -e ".[test]" '
    "&& bash .ci/install-emulators.sh && .venv/bin/python -m pytest -q",
]


def test_the_first_two_commands_and_how_long_they_take() -> None:
    [block] = blocks("bash")
    assert [line for line in block.splitlines() if line and not line.startswith("#")] == COMMANDS
    text = " ".join(README.read_text().split())
    assert re.search(r"Command 1 takes about \d+ s", text)
    assert re.search(r"command 2 about \d+ minutes", text)


def test_a_crash_of_the_notebook_is_reported_with_its_cause(tmp_path: Path) -> None:
    crash = "import os, sys\nfor i in range(200): print('DEBUG:store:read', i, file=sys.stderr)\n"
    result = subprocess.run(
        [sys.executable, "-c", crash + "os.abort()"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONFAULTHANDLER": "1"},
        timeout=120,
    )
    report = failure_report(result, tmp_path / "stderr.txt")
    assert "killed by SIGABRT" in report
    assert "Fatal Python error: Aborted" in report and "DEBUG:" not in report
    assert "DEBUG:store:read 199" in (tmp_path / "stderr.txt").read_text()


def test_the_readme_has_blocks_to_run() -> None:
    assert len(blocks("python")) >= 4 and len(console_examples()) >= 4


def test_python_blocks_run_as_notebook_cells(notebook) -> None:
    root, _ = notebook
    assert (root / "data.zarr" / "zarr.json").exists()
    assert (root / "era.zarr" / "zarr.json").exists()


def _numbers_masked(text: str) -> str:
    return re.sub(r"\d+(\.\d+)?", "N", text)


@pytest.mark.parametrize("index", range(len(console_examples())))
def test_console_examples_print_what_the_readme_shows(notebook, index: int) -> None:
    root, env = notebook
    command, shown = console_examples()[index]
    words = shlex.split(command)
    assert words[0] == "aiozarr"
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "aiozarr", *words[1:]],
        capture_output=True,
        text=True,
        cwd=root,
        env=env,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    printed = result.stdout.strip().replace(str(root), "/home/me")  # as the README shows it
    if re.search(r"\d+(\.\d+)? (s|MiB/s)\b", shown):  # timed: compare the shape only
        assert _numbers_masked(printed) == _numbers_masked(shown), (
            command,
            time.perf_counter() - started,
        )
    else:
        assert printed == shown, command
