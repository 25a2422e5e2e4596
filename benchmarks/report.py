"""Turn a results document into the tables and target checks of `benchmarks/README.md`.

The README's hand-written part ends at `RESULTS_MARKER`; everything after it is rewritten
by each run that writes the README.
"""

from __future__ import annotations

import math
import os
import platform
import re
import statistics
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks import peers

RESULTS_MARKER = "<!-- results: written by `python -m benchmarks`, do not edit below -->"
BASE = "aiozarr-async"
_BULK = ("full", "full-unsharded", "full-v2", "slab", "large-shard")  # bytes <= 1.05x TS
_SMALL = ("drill", "random")  # requests <= TensorStore's
_Index = dict[tuple[str, str, str], dict[str, Any]]


def _profile_name(r: dict[str, Any]) -> str:
    return r.get("profile") or f"{r['latency_ms']:g}ms"  # documents before profiles


def _profiles(document: dict[str, Any]) -> list[dict[str, Any]]:
    if "profiles" in document:
        return document["profiles"]  # type: ignore[no-any-return]
    return [{"name": f"{ms:g}ms", "latency_ms": ms} for ms in document["latencies"]]


def _describe(profile: dict[str, Any]) -> str:
    parts = [f"{profile['latency_ms']:g} ms latency"]
    if profile.get("bandwidth_mbps") or profile.get("tail_rate"):
        parts = [f"{profile['name']}: {profile['latency_ms']:g} ms first byte"]
    if profile.get("bandwidth_mbps"):
        parts.append(f"{profile['bandwidth_mbps']:g} MB/s per response")
    if profile.get("tail_rate"):
        parts.append(f"{profile['tail_rate']:.0%} of responses +{profile['tail_ms']:g} ms")
    return ", ".join(parts)


def _index(results: list[dict[str, Any]]) -> _Index:
    return {(_profile_name(r), r["row"], r["engine"]): r for r in results}


def _last_stats(r: dict[str, Any]) -> dict[str, Any]:
    stats = r.get("stats") or [{}]
    return stats[-1]  # type: ignore[no-any-return]


def _decoded_mb(row: str, document: dict[str, Any]) -> float | None:
    if row == "large-shard":
        return document.get("large_shard_nbytes", 0) / 1e6 or None
    fractions = {"full": 1.0, "full-unsharded": 1.0, "full-v2": 1.0, "big-read": 1.0, "slab": 1 / 8}
    return document["nbytes"] * fractions[row] / 1e6 if row in fractions else None


def _percentile(values: list[float], q: float) -> float:
    """The `q` quantile (0..1), nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def _time_cell(r: dict[str, Any]) -> str:
    if "median_s" not in r:
        return "-"
    if r.get("per_read_s"):
        per = r["per_read_s"]
        if r["row"] == "memory-point":
            return f"{statistics.mean(per) * 1e6:.0f} µs per read"
        p50, p99 = _percentile(per, 0.5), _percentile(per, 0.99)
        return f"p50 {p50 * 1e3:.1f} ms, p99 {p99 * 1e3:.1f} ms per read ({len(per)} reads)"
    return f"{r['median_s'] * 1e3:.0f} ms" if r["median_s"] < 10 else f"{r['median_s']:.1f} s"


def _cpu_cell(r: dict[str, Any]) -> str:
    """Median CPU time per repeat of the engine's process and of the emulator's."""
    if "median_cpu_s" not in r:
        return ""
    engine = f"{r['median_cpu_s'] * 1e3:.0f}"
    server = r.get("median_server_cpu_s")
    return engine if server is None else f"{engine} / {server * 1e3:.0f}"


def _cpu_ratio(r: dict[str, Any], peer: dict[str, Any] | None) -> str:
    """Client CPU of `r` over `peer`'s (below 1: `r` spends less)."""
    mine, theirs = r.get("median_cpu_s"), (peer or {}).get("median_cpu_s")
    return f"{mine / theirs:.2f}x" if mine and theirs else ""


def _row_cells(
    r: dict[str, Any],
    base: dict[str, Any] | None,
    document: dict[str, Any],
    tensorstore: dict[str, Any] | None = None,
) -> list[str]:
    s = _last_stats(r)
    mb = _decoded_mb(r["row"], document)
    rate = f"{mb / r['median_s']:.0f}" if mb and r.get("median_s") else ""
    speedup = ""
    if base and base is not r and base.get("median_s") and r.get("median_s"):
        speedup = f"{r['median_s'] / base['median_s']:.2f}x"
    moved = (s.get("bytes_read", 0) + s.get("bytes_written", 0)) / 1e6
    check = "ok" if r.get("ok") else f"**FAILED**: {r.get('error', '')}"[:120]
    return [
        r["engine"],
        _time_cell(r),
        str(s.get("requests", "")),
        f"{moved:.1f}",
        rate,
        str(s.get("peak_inflight", "")),
        f"{r.get('rss_mb', 0):.0f}",
        _cpu_cell(r),
        _cpu_ratio(r, tensorstore),
        speedup,
        check.replace("|", "/"),
    ]


def tables(document: dict[str, Any]) -> str:
    """One table per profile: a block of rows per workload."""
    results = document["results"]
    head = (
        "| workload | engine | median time | requests | MB moved | decoded MB/s | "
        "peak in-flight | peak RSS MiB | CPU ms: engine / emulator | CPU / TensorStore's | "
        "aiozarr speedup | check |\n"
        "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|\n"
    )
    out = []
    for profile in _profiles(document):
        mine = [r for r in results if _profile_name(r) == profile["name"]]
        lines = []
        for row in dict.fromkeys(r["row"] for r in mine):
            here = [r for r in mine if r["row"] == row]
            base = next((r for r in here if r["engine"] == BASE), None)
            peer = next((r for r in here if r["engine"] == "tensorstore"), None)
            for r in here:
                cells = _row_cells(r, base, document, peer)
                lines.append("| " + " | ".join([row, *cells]) + " |")
        out.append(f"### {_describe(profile)}\n\n{head}" + "\n".join(lines) + "\n")
    return "\n".join(out)


# -- targets ----------------------------------------------------------------------------------


def _t(ix: _Index, profile: str, row: str, engine: str, field: str = "median_s") -> float | None:
    """A median of one row (`median_s`, or `median_cpu_s`); None where it did not run."""
    r = ix.get((profile, row, engine))
    return r[field] if r and r.get("ok") and r.get(field) else None


def _judged(name: str, top: float | None, bottom: float | None, met: bool) -> tuple[str, str]:
    """A target's line: the ratio `top / bottom` and whether it is met."""
    if top is None or bottom is None:
        return name, "not measured"
    return name, f"{top / bottom:.2f}x: " + ("met" if met else "**not met**")


def _ratio_check(ix: _Index, profile: str, row: str, peer: str, want: float) -> tuple[str, str]:
    a, p = _t(ix, profile, row, BASE), _t(ix, profile, row, peer)
    name = f"{row} on {profile}: >= {want}x {peer}"
    return _judged(name, p, a, a is not None and p is not None and p >= want * a)


def _cpu_check(ix: _Index, profile: str, row: str, peer: str, most: float) -> tuple[str, str]:
    """aiozarr's client CPU per repeat at most `most` times `peer`'s."""
    a, p = (_t(ix, profile, row, e, "median_cpu_s") for e in (BASE, peer))
    name = f"{row} on {profile}: client CPU <= {most}x {peer}'s"
    return _judged(name, a, p, a is not None and p is not None and a <= most * p)


def _sync_check(ix: _Index, profile: str) -> tuple[str, str]:
    """The sync facade's full read within 10 % of the async one's time."""
    a, s = _t(ix, profile, "full", BASE), _t(ix, profile, "full", "aiozarr-sync")
    name = f"full on {profile}: aiozarr-sync within 10 % of aiozarr-async"
    return _judged(name, s, a, a is not None and s is not None and s <= 1.1 * a)


def _full_read_checks(ix: _Index, profile: str, full_want: float) -> list[tuple[str, str]]:
    """What a full read owes on `profile`: time and client CPU against TensorStore, CPU
    against the decode-only probe, the sync facade against async."""
    return [
        _ratio_check(ix, profile, "full", "tensorstore", full_want),
        _cpu_check(ix, profile, "full", "tensorstore", 0.9),
        _cpu_check(ix, profile, "full", "probe-decode", 1.3),
        _sync_check(ix, profile),
    ]


def _round_trips(ix: _Index, row: str) -> tuple[float, str] | None:
    """Round trips on aiozarr's critical path for `row`, and how they were estimated.

    The time 20 ms of latency adds, divided by 20 ms: CPU work (decoding, the emulator
    on the same cores, building the client) costs the same at 0 and 20 ms and drops
    out, so what is left counts sequential waits. Without a 0 ms run: time / latency.
    """
    t20, t0 = _t(ix, "20ms", row, BASE), _t(ix, "0ms", row, BASE)
    if t20 is None:
        return None
    if t0 is None:
        return t20 / 0.020, "time / latency"
    return (t20 - t0) / 0.020, "(time at 20 ms - time at 0 ms) / 20 ms"


def _moved(r: dict[str, Any]) -> int:
    s = _last_stats(r)
    return int(s.get("bytes_read", 0) + s.get("bytes_written", 0))


def _traffic_checks(ix: _Index, profiles: list[str]) -> list[tuple[str, str]]:
    """Bulk reads move <= 1.05x TensorStore's bytes; small reads make no more requests."""
    over_bytes, over_requests = [], []
    for (profile, row, engine), ts in ix.items():
        mine = ix.get((profile, row, BASE))
        if engine != "tensorstore" or not (mine and mine.get("ok") and ts.get("ok")):
            continue
        if row in _BULK and _moved(mine) > 1.05 * _moved(ts):
            over_bytes.append(f"{row} on {profile} ({_moved(mine) / _moved(ts):.2f}x)")
        a, b = _last_stats(mine).get("requests", 0), _last_stats(ts).get("requests", 0)
        if row in _SMALL and a > b:
            over_requests.append(f"{row} on {profile} ({a} > {b})")
    return [
        (
            "bulk reads move <= 1.05x TensorStore's bytes",
            "met" if not over_bytes else "**not met**: " + "; ".join(over_bytes),
        ),
        (
            "small reads (drill, random) make no more requests than TensorStore",
            "met" if not over_requests else "**not met**: " + "; ".join(over_requests),
        ),
    ]


def _rss_check(ix: _Index, profile: str, nbytes: int) -> tuple[str, str] | None:
    """Peak RSS of the full read within output + 128 MiB: the first read in a fresh
    process, and the peak over every repeat in it (memory kept between reads counts)."""
    r = ix.get((profile, "full", BASE))
    if not (r and r.get("ok")):
        return None
    limit_mb = nbytes / 2**20 + 128
    first, repeats = r.get("first_rss_mb", r["rss_mb"]), r["rss_mb"]
    return (
        f"full on {profile}: peak RSS <= output + 128 MiB ({limit_mb:.0f} MiB), "
        "first read and after every repeat",
        f"{first:.0f} / {repeats:.0f} MiB (after {len(r.get('times', []))} repeats): "
        + ("met" if max(first, repeats) <= limit_mb else "**not met**"),
    )


def _tail_ratio(r: dict[str, Any] | None) -> float | None:
    per = (r or {}).get("per_read_s")
    if not per or not (r and r.get("ok")):
        return None
    return _percentile(per, 0.99) / _percentile(per, 0.5)


def cloud_targets(document: dict[str, Any]) -> list[tuple[str, str]]:
    """The targets on the cloud profile, with the measured value and met / not met."""
    ix = _index(document["results"])
    if "cloud" not in {p["name"] for p in _profiles(document)}:
        return []
    full_want = 1.5 if document["mode"] == "full" else 2.0
    checks = [
        *_full_read_checks(ix, "cloud", full_want),
        _ratio_check(ix, "cloud", "full", "zarr-obstore", 3.0),
        _ratio_check(ix, "cloud", "full", "zarr-newest-obstore", 3.0),
        _ratio_check(ix, "cloud", "large-shard", "tensorstore", 3.0),
        _ratio_check(ix, "cloud", "slab", "tensorstore", 1.5),
        _ratio_check(ix, "cloud", "drill", "tensorstore", 1.2),
        _cpu_check(ix, "cloud", "drill", "tensorstore", 1.0),
    ]
    mine = _tail_ratio(ix.get(("cloud", "random", BASE)))
    peers = ", ".join(
        f"{peer} {ratio:.1f}x"
        for peer in ("tensorstore", "zarr-obstore", "zarr-newest-obstore")
        if (ratio := _tail_ratio(ix.get(("cloud", "random", peer)))) is not None
    )
    checks.append(
        (
            "random on cloud: p99 <= 2x p50",
            "not measured"
            if mine is None
            else f"{mine:.1f}x (peers: {peers or '-'}): "
            + ("met" if mine <= 2.0 else "**not met**"),
        )
    )
    checks += [
        _ratio_check(ix, "cloud", "write", "tensorstore", 1.5),
        _ratio_check(ix, "cloud", "write", "zarr-obstore", 3.0),
        _ratio_check(ix, "cloud", "write", "zarr-newest-obstore", 3.0),
    ]
    rss = _rss_check(ix, "cloud", document["nbytes"])
    if rss is not None:
        checks.append(rss)
    return checks


def targets(document: dict[str, Any]) -> list[tuple[str, str]]:
    """The targets on the 0 and 20 ms profiles with the measured value and met / not met."""
    ix = _index(document["results"])
    names = [p["name"] for p in _profiles(document)]
    checks: list[tuple[str, str]] = []
    for profile in (x for x in names if x in ("0ms", "20ms")):
        a = _t(ix, profile, "full", BASE)
        probes = [_t(ix, profile, "full", p) for p in ("probe-network", "probe-decode")]
        if a is not None and all(p is not None for p in probes):
            limit = max(p for p in probes if p is not None)
            frac = limit / a
            checks.append(
                (
                    f"full on {profile}: >= 90 % of the limit ({limit * 1e3:.0f} ms)",
                    f"{frac:.0%}: " + ("met" if frac >= 0.9 else "**not met**"),
                )
            )
        checks += _full_read_checks(ix, profile, 1.3 if profile == "20ms" else 1.2)
        checks.append(_ratio_check(ix, profile, "full", "zarr-obstore", 2.0))
    if "20ms" in names:
        checks.append(_ratio_check(ix, "20ms", "slab", "tensorstore", 1.3))
        checks.append(_ratio_check(ix, "20ms", "slab", "zarr-obstore", 5.0))
        checks.append(_ratio_check(ix, "20ms", "slab", "zarr-newest-obstore", 2.0))
        trips = _round_trips(ix, "drill")
        if trips is not None:
            checks.append(
                (
                    f"drill on 20ms cold: <= 3 round trips ({trips[1]})",
                    f"{trips[0]:.1f}: " + ("met" if trips[0] < 3.5 else "**not met**"),
                )
            )
        checks.append(_ratio_check(ix, "20ms", "drill", "tensorstore", 1.2))
        checks.append(_cpu_check(ix, "20ms", "drill", "tensorstore", 1.0))
        checks.append(_ratio_check(ix, "20ms", "random", "tensorstore", 1.8))
        trips = _round_trips(ix, "group")
        if trips is not None:
            checks.append(
                (
                    f"group (unconsolidated) on 20ms: <= 3 round trips ({trips[1]})",
                    f"{trips[0]:.1f}: " + ("met" if trips[0] < 3.5 else "**not met**"),
                )
            )
        r = ix.get(("20ms", "group-consolidated", BASE))
        if r and r.get("ok"):
            n = _last_stats(r).get("requests", 0)
            checks.append(
                (
                    # `zarr.json` and `.zmetadata` in one batch, so a consolidated v2
                    # group opens in the same round trip (docs/decisions/formats.md)
                    "group-consolidated on 20ms: <= 2 requests",
                    f"{n}: " + ("met" if n <= 2 else "**not met**"),
                )
            )
        checks.append(_ratio_check(ix, "20ms", "write", "tensorstore", 1.5))
        checks.append(_ratio_check(ix, "20ms", "write", "zarr-obstore", 5.0))
    for profile in names:
        r = ix.get((profile, "random", BASE))
        if r and r.get("ok"):
            reads = r.get("reads_per_repeat") or len(r.get("per_read_s", [1]))
            per = _last_stats(r).get("requests", 0) / max(reads, 1)
            checks.append(
                (
                    f"random on {profile}, warm index: 1 request per read",
                    f"{per:.2f}: " + ("met" if per <= 1.0 else "**not met**"),
                )
            )
    checks += _traffic_checks(ix, names)
    for profile in names:
        rss = _rss_check(ix, profile, document["nbytes"])
        if rss is not None and profile != "cloud":
            checks.append(rss)
    r = ix.get(("0ms", "memory-point", "aiozarr-sync"))
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


def machine(server_workers: int = 1) -> str:
    """This machine in words, as the results say it (written where they are measured)."""
    emulator = "the emulator" if server_workers == 1 else f"{server_workers} emulator processes"
    return (
        f"{os.cpu_count()} cores ({_cpu()}), {platform.system()}; {emulator}, the engine and "
        "the probes share these cores"
    )


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
        f"- machine: {document.get('machine') or machine()}",
        f"- data: {document['nbytes'] / 2**20:.0f} MiB float32 per array dataset (the "
        f"large shard: {document.get('large_shard_nbytes', 0) / 2**20:.0f} MiB), written by "
        f"zarr-python {document['manifest']['written_by'].get('zarr')}; median of "
        f"{document['repeats']} repeats"
        + (
            f" ({document['tail_repeats']} on the cloud profile, whose slow tail moves a "
            "small median)"
            if document.get("tail_repeats", document["repeats"]) != document["repeats"]
            else ""
        )
        + ", each job in a fresh process",
        "- versions: " + ", ".join(f"{k} {v}" for k, v in sorted(versions.items())),
        "- aiozarr speedup = peer time / aiozarr-async time (above 1: aiozarr is faster; "
        "for a probe: the fraction of the limit aiozarr reaches)",
        "",
        "### Targets on the 0 and 20 ms profiles",
        "",
        "| target | measured |",
        "|---|---|",
        *(f"| {name} | {value} |" for name, value in targets(document)),
        "",
    ]
    cloud = cloud_targets(document)
    if cloud:
        lines += [
            "### Targets on the cloud profile",
            "",
            "| target | measured |",
            "|---|---|",
            *(f"| {name} | {value} |" for name, value in cloud),
            "",
        ]
    lines += peers.section(document)
    lines.append(tables(document))
    return "\n".join(lines)


def write_readme(document: dict[str, Any], path: Path) -> None:
    """Replace the results of the document's mode in the README at `path`, keeping the
    text above `RESULTS_MARKER` and the results of the other modes (full mode first:
    the size users read)."""
    text = path.read_text() if path.exists() else ""
    head, _, generated = text.partition(RESULTS_MARKER)
    sections = {
        match.group(1): match.group(0).strip()
        for match in re.finditer(
            r"## Results: (\w+) mode.*?(?=^## Results: |\Z)", generated, re.S | re.M
        )
    }
    sections[document["mode"]] = results_section(document).partition(RESULTS_MARKER)[2].strip()
    order = sorted(sections, key=lambda mode: (mode != "full", mode != "quick", mode))
    body = "\n\n".join(sections[mode] for mode in order)
    path.write_text(head.rstrip() + "\n\n" + RESULTS_MARKER + "\n\n" + body + "\n")
