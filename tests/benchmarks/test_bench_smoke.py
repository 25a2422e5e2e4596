"""The benchmark suite starts, runs its jobs and checks their values (tiny dataset)."""

from __future__ import annotations

import argparse
import json
import sys
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.server import EmulatorProcess  # noqa: E402

from benchmarks import __main__ as suite  # noqa: E402
from benchmarks import datasets, report, runner, server, spec, timeline  # noqa: E402


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


def test_cloud_profile_and_the_large_shard(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    suite.main(
        [
            "--mode",
            "tiny",
            "--profiles",
            "0ms,cloud",
            "--engines",
            "aiozarr-async,probe-network",
            "--workloads",
            "large-shard,random",
            "--data-dir",
            str(tmp_path / "data"),
            "--out",
            str(out),
            "--no-readme",
        ]
    )
    document = json.loads(out.read_text())
    assert [p["name"] for p in document["profiles"]] == ["0ms", "cloud"]
    cloud = spec.PROFILES["cloud"]
    assert (cloud.latency_ms, cloud.bandwidth_mbps, cloud.tail_rate, cloud.tail_ms) == (
        20.0,
        90.0,
        0.02,
        200.0,
    )
    by = {(r["profile"], r["row"], r["engine"]): r for r in document["results"]}
    assert set(by) == {
        (p, row, "aiozarr-async") for p in ("0ms", "cloud") for row in ("large-shard", "random")
    } | {(p, "large-shard", "probe-network") for p in ("0ms", "cloud")}
    for r in document["results"]:
        assert r["ok"], r
    # One time step of the large-shard dataset is one shard: the probe fetches exactly
    # that shard's chunks, and aiozarr reads nothing of the other shard.
    mode = spec.MODES["tiny"]
    shard_file = tmp_path / "data" / "tiny" / spec.ARRAYS["big_shard"] / "c" / "1" / "0" / "0"
    shard_size = shard_file.stat().st_size
    probe = by[("cloud", "large-shard", "probe-network")]["stats"][-1]
    assert 0 < probe["bytes_read"] <= shard_size
    mine = by[("cloud", "large-shard", "aiozarr-async")]["stats"][-1]
    assert mine["bytes_read"] < shard_size + 4096  # the shard, metadata and index
    assert document["large_shard_nbytes"] == mode.big_shard_nbytes
    random = by[("cloud", "random", "aiozarr-async")]
    assert len(random["per_read_s"]) == random["reads_per_repeat"] * document["repeats"]
    section = report.results_section(document)
    assert "### cloud: 20 ms first byte, 90 MB/s per response, 2% of responses +200 ms" in section
    assert "### Targets on the cloud profile" in section
    assert "| random | aiozarr-async | p50 " in section and ", p99 " in section
    assert "| large-shard on cloud: >= 3.0x tensorstore | not measured |" in section


def test_probe_parts_are_small_where_bandwidth_is_capped(tmp_path: Path) -> None:
    mode = spec.MODES["tiny"]
    root = tmp_path / "tiny"
    manifest = datasets.ensure(mode, root)
    variant = next(v for v in suite.VARIANTS if v.name == "probe-network")
    row = next(r for r in suite.WORKLOADS if r[0] == "large-shard")
    with EmulatorProcess(root) as emu:
        capped = suite._job(variant, row, mode, root, manifest, emu, 1, spec.PROFILES["cloud"])
        plain = suite._job(variant, row, mode, root, manifest, emu, 1, spec.PROFILES["20ms"])
    assert capped["part_bytes"] == 1 << 20
    assert "part_bytes" not in plain
    assert manifest["expected"]["large_shard"]


def test_timeline_of_a_read_from_the_debug_log(tmp_path: Path, capsys: Any) -> None:
    timeline.main(["--mode", "tiny", "--workload", "full", "--data-dir", str(tmp_path)])
    printed = capsys.readouterr().out
    rows = [line.split()[0] for line in printed.splitlines()[2:-1]]
    # The tiny sharded array has 8 shards, each smaller than a part: one request each.
    # How the decodes group depends on when the answers land (on a busy machine, all
    # at once: one group), so only their presence is asserted.
    assert rows.count("read") == 8 and rows.count("decode") >= 1, printed
    assert "8 requests" in printed and "The read ended at" in printed


def test_profiles_with_a_slow_tail_repeat_more() -> None:
    quick = argparse.Namespace(repeats=None)
    cloud, loopback = spec.PROFILES["cloud"], spec.PROFILES["0ms"]
    assert suite._repeats(quick, 3, cloud) == suite.TAIL_REPEATS == 5
    assert suite._repeats(quick, 3, loopback) == 3
    assert suite._repeats(quick, 1, cloud) == 1  # tiny mode stays a smoke test
    assert suite._repeats(argparse.Namespace(repeats=2), 2, cloud) == 2  # as asked


def test_emulator_processes_share_a_port_and_add_up_their_counters(tmp_path: Path) -> None:
    (tmp_path / "obj").write_bytes(b"x" * 100)  # the folder is the bucket
    with EmulatorProcess(tmp_path, workers=2) as emu:
        assert len(set(emu.pids)) == 2 and len(set(emu.controls)) == 2
        emu.set_profile(spec.PROFILES["20ms"])
        assert all(server.stats(c)["latency_ms"] == 20.0 for c in emu.controls)
        for _ in range(12):  # urllib opens a connection per request
            with urllib.request.urlopen(f"{emu.endpoint}/{spec.BUCKET}/obj") as answer:
                assert answer.read() == b"x" * 100
        counted = emu.stats()
        assert counted["by_method"] == {"GET": 12} and counted["bytes_read"] == 1200
        emu.reset()
        assert emu.stats()["requests"] == 0


def _reads_through(endpoint: str, controls: list[str]) -> tuple[int, int]:
    """From another interpreter: one GET through `endpoint`; this process's id and the
    emulator's request count after it, read through a handle attached to it."""
    import os

    emu = EmulatorProcess.attach(endpoint, controls)
    with urllib.request.urlopen(f"{endpoint}/{spec.BUCKET}/obj") as answer:
        assert answer.read() == b"x" * 10
    return os.getpid(), emu.stats()["requests"]


def test_a_profile_runs_in_a_fresh_interpreter_attached_to_the_emulator(tmp_path: Path) -> None:
    import os

    from benchmarks.fresh import in_fresh_process

    (tmp_path / "obj").write_bytes(b"x" * 10)
    with EmulatorProcess(tmp_path) as emu:
        emu.reset()
        pid, requests = in_fresh_process(_reads_through, emu.endpoint, emu.controls)
        assert pid != os.getpid() and requests == 1
        assert emu.stats()["requests"] == 1  # the parent's handle counts the same server
