"""The benchmark suite starts, runs its jobs and checks their values (tiny dataset)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.server import EmulatorProcess  # noqa: E402

from benchmarks import __main__ as suite  # noqa: E402
from benchmarks import datasets, report, runner, spec  # noqa: E402


def test_quick_path_on_a_tiny_dataset(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    status = suite.main(
        [
            "--mode",
            "tiny",
            "--engines",
            "aiozarr-async,probe-decode",
            "--workloads",
            "full,drill,random,group-consolidated,write",
            "--data-dir",
            str(tmp_path / "data"),
            "--out",
            str(out),
            "--no-readme",
        ]
    )
    document = json.loads(out.read_text())
    rows = {(r["row"], r["engine"]) for r in document["results"]}
    assert rows == {
        ("full", "aiozarr-async"),
        ("full", "probe-decode"),
        ("drill", "aiozarr-async"),
        ("drill", "probe-decode"),
        ("random", "aiozarr-async"),
        ("group-consolidated", "aiozarr-async"),
        ("write", "aiozarr-async"),
    }
    for r in document["results"]:
        assert r["ok"], r
        assert r["median_s"] > 0
        assert r["median_cpu_s"] > 0  # the job's own CPU time per repeat
    full = next(r for r in document["results"] if r["row"] == "full")
    assert full["median_server_cpu_s"] > 0  # the emulator's, read from /proc
    expected = document["manifest"]["expected"]
    by_row = {r["row"]: r for r in document["results"] if r["engine"] == "aiozarr-async"}
    assert by_row["full"]["checksum"] == expected["full"]
    assert by_row["write"]["checksum"] == expected["full"]  # read back from disk
    assert by_row["random"]["stats"][0]["requests"] >= 1
    assert status == 0
    section = report.results_section(document)
    assert "| full | aiozarr-async |" in section and "### Targets" in section


def test_wrong_values_are_reported_not_timed(tmp_path: Path) -> None:
    mode = spec.MODES["tiny"]
    root = tmp_path / "tiny"
    manifest = datasets.ensure(mode, root)
    with EmulatorProcess(root) as emu:
        job = {
            "engine": "aiozarr-async",
            "workload": "slab",
            "mode": "tiny",
            "path": spec.ARRAYS["sharded"],
            "endpoint": emu.endpoint,
            "root": str(root),
            "repeats": 1,
            "expected": manifest["expected"]["drill"],
        }
        result = runner.run(job)
    assert not result["ok"]
    assert "wrong values" in result["error"]
