"""A passing test run leaves nothing in the temporary directory (it left ~56 MB a run).

pytest removes its directories when every test passed (`tmp_path_retention_policy =
"failed"` in pyproject.toml), and this suite's conftest puts dask's scratch space, which
every `LocalCluster` leaves behind, inside them. A small session with the suite's settings
and conftest checks both in a private TMPDIR. (The examples clean up after themselves:
tests/integrations/test_install.py runs each with a private TMPDIR that must stay empty.)
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

PROBE = """
import pytest

distributed = pytest.importorskip("distributed")  # imported while collecting, as here


def test_files(tmp_path, tmp_path_factory):
    (tmp_path / "data").write_bytes(bytes(1000))
    (tmp_path_factory.mktemp("shared") / "data").write_bytes(bytes(1000))


def test_cluster():
    with distributed.LocalCluster(
        n_workers=1, processes=False, dashboard_address=None
    ) as cluster, distributed.Client(cluster) as client:
        assert client.submit(int, 1).result() == 1
"""


def test_a_passing_session_leaves_nothing_behind(tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    session, tmp = tmp_path / "session", tmp_path / "tmp"
    session.mkdir()
    tmp.mkdir()
    shutil.copy(ROOT / "tests" / "conftest.py", session / "conftest.py")
    (session / "test_probe.py").write_text(PROBE)
    settings = ["-c", str(ROOT / "pyproject.toml"), "--rootdir", str(session)]
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *settings, str(session)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "TMPDIR": str(tmp)},
    )
    assert result.returncode == 0, result.stdout[-3000:]
    assert "2 passed" in result.stdout
    # pytest's empty per-user folder may stay; no file, link or other folder may
    left = [p for p in tmp.rglob("*") if not (p.is_dir() and not any(p.iterdir()))]
    assert left == [], f"left behind: {left}"
