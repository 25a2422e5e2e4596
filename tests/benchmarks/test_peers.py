"""The newest peers in the suite: a peer whose interpreter cannot be had is left out with
its reason (the rest still runs), and the table against stock zarr judges its targets."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks import __main__ as suite  # noqa: E402
from benchmarks import interpreters, peers, report  # noqa: E402


def test_a_peer_without_its_interpreter_is_skipped_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    monkeypatch.setenv("AIOZARR_BENCH_PYTHON_ZARRISTA", str(tmp_path / "no-such-python"))
    monkeypatch.setattr(interpreters, "_resolved", {interpreters.PROJECT: sys.executable})
    out = tmp_path / "results.json"
    status = suite.main(
        [
            "--mode",
            "tiny",
            "--engines",
            "aiozarr-async,zarrista",
            "--workloads",
            "drill",
            "--data-dir",
            str(tmp_path / "data"),
            "--out",
            str(out),
            "--no-readme",
        ]
    )
    printed = capsys.readouterr().out
    assert "skipping the engines of zarrista" in printed and "no-such-python" in printed
    document = json.loads(out.read_text())
    assert [(r["row"], r["engine"], r["ok"]) for r in document["results"]] == [
        ("drill", "aiozarr-async", True)
    ]
    assert status == 0


def test_an_engine_without_its_module_is_skipped_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    monkeypatch.setitem(suite.REQUIRES, "probe-decode", ("numcodecs", "no_such_module_here"))
    out = tmp_path / "results.json"
    status = suite.main(
        [
            "--mode",
            "tiny",
            "--engines",
            "aiozarr-async,probe-decode",
            "--workloads",
            "drill",
            "--data-dir",
            str(tmp_path / "data"),
            "--out",
            str(out),
            "--no-readme",
        ]
    )
    assert "skipping probe-decode: no module no_such_module_here" in capsys.readouterr().out
    document = json.loads(out.read_text())
    assert [r["engine"] for r in document["results"]] == ["aiozarr-async"]
    assert status == 0


def test_jobs_measure_this_checkout() -> None:
    paths = interpreters.child_env()["PYTHONPATH"].split(":")
    assert paths[:2] == [str(REPO / "src"), str(REPO)]


def _row(profile: str, row: str, engine: str, time_s: float, requests: int) -> dict:
    return {
        "profile": profile,
        "row": row,
        "engine": engine,
        "ok": True,
        "median_s": time_s,
        "median_cpu_s": time_s,
        "rss_mb": 100.0,
        "stats": [{"requests": requests}],
        "versions": {"zarr": "3.4.2"} if engine.startswith("zarr") else {},
    }


def test_ratios_against_stock_zarr_and_their_targets() -> None:
    document = {
        "mode": "quick",
        "profiles": [{"name": "20ms", "latency_ms": 20.0}, {"name": "cloud", "latency_ms": 20.0}],
        "nbytes": 64 << 20,
        "repeats": 3,
        "manifest": {"written_by": {"zarr": "3.1.6"}},
        "results": [
            _row("20ms", "slab", "zarr-newest-obstore", 0.12, 12),
            _row("20ms", "slab", "zarr-newest+pipeline", 0.17, 60),
            _row("20ms", "slab", "aiozarr-async", 0.10, 60),
            _row("20ms", "slab", "zarrista", 0.20, 800),
            _row("cloud", "slab", "zarr-newest-obstore", 0.30, 12),
            _row("cloud", "slab", "zarr-newest+pipeline", 0.15, 60),
            _row("cloud", "slab", "aiozarr-async", 0.15, 60),
            _row("cloud", "slab", "zarrista", 0.14, 800),
        ],
    }
    table = peers.table(document)
    assert "| 20ms | slab | 120 ms, 12 req | " in table
    assert "| 0.71x, 60 req | " in table  # the pipeline: 0.12 s / 0.17 s
    checks = dict(peers.targets(document))
    assert checks["zarr-newest+pipeline: never slower than stock zarr (>= 0.95x, every row)"] == (
        "**not met**: slab on 20ms 0.71x"
    )
    assert checks["zarr-newest+pipeline: slab on cloud >= 1.5x stock zarr"] == "2.00x: met"
    assert checks["aiozarr-async: never slower than stock zarr (>= 0.95x, every row)"] == "met"
    assert checks["aiozarr-async ahead of zarrista on every row"] == (
        "**not met**: slab on cloud 0.93x"
    )
    assert "### Against zarr-python 3.4.2" in report.results_section(document)


def test_slab_requests_counts_each_shape_on_the_emulator() -> None:
    from benchmarks import slab_requests

    rows = slab_requests.run("tiny", ["0ms"], ["slab", "drill"], 1, echo=False)
    readers = {r["reader"] for r in rows}
    assert set(slab_requests.SETTINGS) <= readers  # zarr-python's rows too, by version
    assert len(readers) == len(slab_requests.SETTINGS) + 2
    for row in rows:  # each read was checked against what was written
        assert row["gets"] > 0 and row["mb"] > 0 and row["seconds"] > 0
