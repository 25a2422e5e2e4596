"""Turn a results document into the tables and target checks of `benchmarks/README.md`.

The README's hand-written part ends at `RESULTS_MARKER`; everything after it is rewritten
by each run that writes the README.
"""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

RESULTS_MARKER = "<!-- results: written by `python -m benchmarks`, do not edit below -->"
BASE = "aiozarr-async"
_READS = {"full", "full-unsharded", "full-v2", "slab", "drill", "big-read"}


def _index(results: list[dict[str, Any]]) -> dict[tuple[float, str, str], dict[str, Any]]:
    return {(r["latency_ms"], r["row"], r["engine"]): r for r in results}


def _last_stats(r: dict[str, Any]) -> dict[str, Any]:
    stats = r.get("stats") or [{}]
    return stats[-1]  # type: ignore[no-any-return]


def _decoded_mb(row: str, nbytes: int) -> float | None:
    fractions = {"full": 1.0, "full-unsharded": 1.0, "full-v2": 1.0, "big-read": 1.0, "slab": 1 / 8}
    return nbytes * fractions[row] / 1e6 if row in fractions else None


def _time_cell(r: dict[str, Any]) -> str:
    if "median_s" not in r:
        return "-"
    if r.get("per_read_s"):
        per = r["per_read_s"]
        mean, p95 = statistics.mean(per), sorted(per)[int(0.95 * (len(per) - 1))]
        if r["row"] == "memory-point":
            return f"{mean * 1e6:.0f} µs per read"
        return f"{mean * 1e3:.1f} ms mean, {p95 * 1e3:.1f} ms p95 per read"
    return f"{r['median_s'] * 1e3:.0f} ms" if r["median_s"] < 10 else f"{r['median_s']:.1f} s"


def _cpu_cell(r: dict[str, Any]) -> str:
    """Median CPU time per repeat of the engine's process and of the emulator's."""
    if "median_cpu_s" not in r:
        return ""
    engine = f"{r['median_cpu_s'] * 1e3:.0f}"
    server = r.get("median_server_cpu_s")
    return engine if server is None else f"{engine} / {server * 1e3:.0f}"


def _row_cells(r: dict[str, Any], base: dict[str, Any] | None, nbytes: int) -> list[str]:
    s = _last_stats(r)
    mb = _decoded_mb(r["row"], nbytes)
    rate = f"{mb / r['median_s']:.0f}" if mb and r.get("median_s") else ""
    speedup = ""
    if base and base is not r and base.get("median_s") and r.get("median_s"):
        speedup = f"{r['median_s'] / base['median_s']:.2f}x"
    moved = (s.get("bytes_read", 0) + s.get("bytes_written", 0)) / 1e6
    check = "ok" if r.get("ok") else f"**FAILED**: {r.get('error', '')}"[:120]
    return [
        r["engine"],
        _time_cell(r),
        rate,
        str(s.get("requests", "")),
        f"{moved:.1f}",
        str(s.get("peak_inflight", "")),
        f"{r.get('rss_mb', 0):.0f}",
        _cpu_cell(r),
        speedup,
        check.replace("|", "/"),
    ]


def tables(document: dict[str, Any]) -> str:
    """One table per latency: a block of rows per workload."""
    results, nbytes = document["results"], document["nbytes"]
    head = (
        "| workload | engine | median time | decoded MB/s | requests | MB moved | "
        "peak in-flight | peak RSS MiB | CPU ms: engine / emulator | aiozarr speedup | check |\n"
        "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|---|\n"
    )
    out = []
    for latency in document["latencies"]:
        lines = []
        rows = dict.fromkeys(r["row"] for r in results if r["latency_ms"] == latency)
        for row in rows:
            here = [r for r in results if r["latency_ms"] == latency and r["row"] == row]
            base = next((r for r in here if r["engine"] == BASE), None)
            for r in here:
                lines.append("| " + " | ".join([row, *_row_cells(r, base, nbytes)]) + " |")
        out.append(f"### {latency:g} ms latency\n\n{head}" + "\n".join(lines) + "\n")
    return "\n".join(out)


# -- targets ----------------------------------------------------------------------------------


def _t(
    ix: dict[tuple[float, str, str], dict[str, Any]], lat: float, row: str, engine: str
) -> float | None:
    r = ix.get((lat, row, engine))
    return r["median_s"] if r and r.get("ok") and r.get("median_s") else None


def _ratio_check(
    ix: dict[tuple[float, str, str], dict[str, Any]], lat: float, row: str, peer: str, want: float
) -> tuple[str, str]:
    a, p = _t(ix, lat, row, BASE), _t(ix, lat, row, peer)
    if a is None or p is None:
        return f"{row} at {lat:g} ms: >= {want}x {peer}", "not measured"
    got = p / a
    return f"{row} at {lat:g} ms: >= {want}x {peer}", f"{got:.2f}x: " + (
        "met" if got >= want else "**not met**"
    )


def _round_trips(
    ix: dict[tuple[float, str, str], dict[str, Any]], row: str
) -> tuple[float, str] | None:
    """Round trips on aiozarr's critical path for `row`, and how they were estimated.

    The time 20 ms of latency adds, divided by 20 ms: CPU work (decoding, the emulator
    on the same cores, building the client) costs the same at 0 and 20 ms and drops
    out, so what is left counts sequential waits. Without a 0 ms run: time / latency.
    """
    t20, t0 = _t(ix, 20.0, row, BASE), _t(ix, 0.0, row, BASE)
    if t20 is None:
        return None
    if t0 is None:
        return t20 / 0.020, "time / latency"
    return (t20 - t0) / 0.020, "(time at 20 ms - time at 0 ms) / 20 ms"


def targets(document: dict[str, Any]) -> list[tuple[str, str]]:
    """Each target of issue 7 with the measured value and met / not met."""
    ix = _index(document["results"])
    lats = document["latencies"]
    checks: list[tuple[str, str]] = []
    for lat in (x for x in lats if x in (0.0, 20.0)):
        a = _t(ix, lat, "full", BASE)
        probes = [_t(ix, lat, "full", p) for p in ("probe-network", "probe-decode")]
        if a is not None and all(p is not None for p in probes):
            limit = max(p for p in probes if p is not None)
            frac = limit / a
            checks.append(
                (
                    f"full at {lat:g} ms: >= 90 % of the limit ({limit * 1e3:.0f} ms)",
                    f"{frac:.0%}: " + ("met" if frac >= 0.9 else "**not met**"),
                )
            )
        checks.append(_ratio_check(ix, lat, "full", "tensorstore", 1.2))
        checks.append(_ratio_check(ix, lat, "full", "zarr-obstore", 2.0))
    if 20.0 in lats:
        checks.append(_ratio_check(ix, 20.0, "slab", "tensorstore", 1.3))
        checks.append(_ratio_check(ix, 20.0, "slab", "zarr-obstore", 5.0))
        checks.append(_ratio_check(ix, 20.0, "slab", "zarr-newest-obstore", 2.0))
        trips = _round_trips(ix, "drill")
        if trips is not None:
            checks.append(
                (
                    f"drill at 20 ms cold: <= 3 round trips ({trips[1]})",
                    f"{trips[0]:.1f}: " + ("met" if trips[0] < 3.5 else "**not met**"),
                )
            )
        checks.append(_ratio_check(ix, 20.0, "drill", "tensorstore", 1.1))
        checks.append(_ratio_check(ix, 20.0, "random", "tensorstore", 1.8))
        trips = _round_trips(ix, "group")
        if trips is not None:
            checks.append(
                (
                    f"group (unconsolidated) at 20 ms: <= 3 round trips ({trips[1]})",
                    f"{trips[0]:.1f}: " + ("met" if trips[0] < 3.5 else "**not met**"),
                )
            )
        r = ix.get((20.0, "group-consolidated", BASE))
        if r and r.get("ok"):
            n = _last_stats(r).get("requests", 0)
            checks.append(
                (
                    "group-consolidated at 20 ms: 1 request",
                    f"{n}: " + ("met" if n == 1 else "**not met**"),
                )
            )
        checks.append(_ratio_check(ix, 20.0, "write", "tensorstore", 1.5))
        checks.append(_ratio_check(ix, 20.0, "write", "zarr-obstore", 5.0))
    for lat in lats:
        r = ix.get((lat, "random", BASE))
        if r and r.get("ok"):
            per = _last_stats(r).get("requests", 0) / max(len(r.get("per_read_s", [1])), 1)
            checks.append(
                (
                    f"random at {lat:g} ms, warm index: 1 request per read",
                    f"{per:.2f}: " + ("met" if per <= 1.0 else "**not met**"),
                )
            )
    over = []
    for (lat, row, engine), r in ix.items():
        mine, ts = ix.get((lat, row, BASE)), r
        if engine == "tensorstore" and mine and mine.get("ok") and ts.get("ok"):
            a, b = _last_stats(mine).get("requests", 0), _last_stats(ts).get("requests", 0)
            if a > b:
                over.append(f"{row} at {lat:g} ms ({a} > {b})")
    checks.append(
        (
            "requests never more than TensorStore's",
            "met" if not over else "**not met**: " + "; ".join(over),
        )
    )
    for lat in lats:
        r = ix.get((lat, "full", BASE))
        if r and r.get("ok"):
            limit_mb = document["nbytes"] / 2**20 + 128
            first = r.get("first_rss_mb", r["rss_mb"])
            checks.append(
                (
                    f"full at {lat:g} ms: peak RSS of one full read in a fresh process "
                    f"<= output + 128 MiB ({limit_mb:.0f} MiB)",
                    f"{first:.0f} MiB (all {len(r.get('times', []))} repeats: "
                    f"{r['rss_mb']:.0f} MiB): " + ("met" if first <= limit_mb else "**not met**"),
                )
            )
    r = ix.get((0.0, "memory-point", "aiozarr-sync"))
    if r and r.get("ok"):
        us = r["per_read_s"][0] * 1e6
        checks.append(
            (
                "memory store, sync facade: <= 50 µs per one-element read",
                f"{us:.0f} µs: " + ("met" if us <= 50 else "**not met**"),
            )
        )
    return checks


# -- the README -------------------------------------------------------------------------------


def _commit() -> str:
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "src"], capture_output=True, text=True
        ).stdout.strip()
        return sha + (" (with uncommitted changes in src/)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def results_section(document: dict[str, Any]) -> str:
    """The generated part of the README."""
    versions: dict[str, str] = {}
    pythons = set()
    for r in document["results"]:
        pythons.add(r.get("python", "?"))
        for k, v in (r.get("versions") or {}).items():
            label = f"{k} (Python {r.get('python')})" if k == "zarr" else k
            versions[label] = v
    lines = [
        RESULTS_MARKER,
        "",
        f"## Results: {document['mode']} mode",
        "",
        f"- commit measured: `{_commit()}`, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        f"- machine: {os.cpu_count()} cores ({_cpu()}), {platform.system()}; the emulator, "
        "the engine and the probes share these cores",
        f"- data: {document['nbytes'] / 2**20:.0f} MiB float32 per array dataset, written by "
        f"zarr-python {document['manifest']['written_by'].get('zarr')}; median of "
        f"{document['repeats']} repeats, each job in a fresh process",
        "- versions: " + ", ".join(f"{k} {v}" for k, v in sorted(versions.items())),
        "- aiozarr speedup = peer time / aiozarr-async time (above 1: aiozarr is faster; "
        "for a probe: the fraction of the limit aiozarr reaches)",
        "",
        "### Targets (issue 7)",
        "",
        "| target | measured |",
        "|---|---|",
        *(f"| {name} | {value} |" for name, value in targets(document)),
        "",
        tables(document),
    ]
    return "\n".join(lines)


def write_readme(document: dict[str, Any], path: Path) -> None:
    """Replace the generated part of the README at `path` (keeping the text above it)."""
    text = path.read_text() if path.exists() else ""
    head = text.split(RESULTS_MARKER)[0].rstrip() + "\n\n" if text else ""
    path.write_text(head + results_section(document))
