"""The interpreters engines run in: the project's own, and a venv per peer that needs
packages the project's environment does not have (the newest zarr-python needs Python
3.12; zarrista is installed apart so it never changes the project's environment).

A peer's interpreter is, in order: the path in its environment variable, its venv under
`benchmarks/` when that exists, else that venv created with pip. Where none can be had,
`resolve` says why and returns None, and the suite leaves that peer's rows out.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


@dataclass(frozen=True)
class Interpreter:
    """A Python for some engines: how to find it and, when missing, how to make it."""

    name: str
    env_var: str  # names a Python to use instead of the venv
    venv: str  # folder under benchmarks/, created when missing
    python: str  # "3.12": the first working python3.12; "project": this interpreter's
    requirements: tuple[str, ...]  # pip arguments that make the venv
    probe: str  # code that must run in it (imports the engines need)


PROJECT = "project"
INTERPRETERS = {
    "newest-zarr": Interpreter(
        "newest-zarr",
        "AIOZARR_BENCH_PYTHON312",
        ".venv312",
        "3.12",
        # aiozarr's dependencies too: its Store and CodecPipeline run inside zarr there
        ("-e", f"{REPO}[zarr]", "zarr>=3.2", "obstore"),
        "import zarr, obstore, aiozarr.zarr",
    ),
    "zarrista": Interpreter(
        "zarrista",
        "AIOZARR_BENCH_PYTHON_ZARRISTA",
        ".venv-zarrista",
        "project",
        ("zarrista", "obstore", "numpy"),
        "import zarrista, obstore, numpy",
    ),
}

_resolved: dict[str, str | None] = {PROJECT: sys.executable}


def child_env() -> dict[str, str]:
    """The environment of a job: this checkout's `src/` first on the path, so every
    interpreter measures the aiozarr of this checkout, not one installed elsewhere."""
    env = dict(os.environ)
    paths = [str(REPO / "src"), str(REPO), *filter(None, env.get("PYTHONPATH", "").split(":"))]
    env["PYTHONPATH"] = ":".join(dict.fromkeys(paths))
    return env


def _runs(python: str, code: str = "pass") -> str | None:
    """None when `python -c code` succeeds, else the last line of its error."""
    try:
        done = subprocess.run(
            [python, "-c", code], capture_output=True, text=True, env=child_env(), timeout=120
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    if done.returncode == 0:
        return None
    return (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]


def _base_python(want: str) -> str | None:
    if want == PROJECT:
        return sys.executable
    candidates = [shutil.which(f"python{want}") or ""]
    pyenv = os.path.expanduser(f"~/.pyenv/versions/{want}*/bin/python{want}")
    candidates += sorted(glob.glob(pyenv))
    return next((p for p in filter(None, candidates) if _runs(p) is None), None)


def _create(spec: Interpreter, venv: Path) -> str | None:
    """Make the venv; None when it worked, else why not (pip's own words)."""
    base = _base_python(spec.python)
    if base is None:
        return f"no working python{spec.python}"
    print(f"creating {venv} with {base}: pip install {' '.join(spec.requirements)}", flush=True)
    made = subprocess.run([base, "-m", "venv", str(venv)], capture_output=True, text=True)
    if made.returncode == 0:
        made = subprocess.run(
            [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", *spec.requirements],
            capture_output=True,
            text=True,
        )
    if made.returncode != 0:
        shutil.rmtree(venv, ignore_errors=True)
        return (made.stderr or made.stdout).strip()[-600:]
    return None


def resolve(name: str) -> str | None:
    """The interpreter named `name`, made if need be; None (and why, printed) if none."""
    if name in _resolved:
        return _resolved[name]
    spec = INTERPRETERS[name]
    venv = HERE / spec.venv
    python = os.environ.get(spec.env_var) or str(venv / "bin" / "python")
    why = None
    if not os.environ.get(spec.env_var) and not Path(python).exists():
        why = _create(spec, venv)
    if why is None:
        why = _runs(python, spec.probe)
    if why is not None:
        print(f"skipping the engines of {name} ({python}): {why}", flush=True)
    _resolved[name] = None if why else python
    return _resolved[name]


_missing: dict[tuple[str, tuple[str, ...]], list[str]] = {}


def missing(name: str, modules: tuple[str, ...]) -> list[str]:
    """Those of `modules` the interpreter `name` cannot import (all, if it has none)."""
    python = resolve(name)
    if python is None:
        return list(modules)
    if (name, modules) not in _missing:
        code = (
            "import importlib.util, sys; "
            "print(' '.join(m for m in sys.argv[1:] if importlib.util.find_spec(m) is None))"
        )
        done = subprocess.run(
            [python, "-c", code, *modules], capture_output=True, text=True, env=child_env()
        )
        _missing[(name, modules)] = done.stdout.split() if done.returncode == 0 else list(modules)
    return _missing[(name, modules)]
