"""The newest peers beside aiozarr, from the same run: stock zarr-python (the newest, in
its Python 3.12 venv) and what aiozarr adds to it (its `Store`, its `CodecPipeline`,
both), aiozarr's own API, and zarrista (zarrs in Rust).

Each cell is stock zarr's median time over the engine's (above 1: faster than stock
zarr) with the requests the emulator counted, so a ratio and the traffic behind it are
read together. The targets are the zarr-python issue's: the pipeline path never slower
than stock zarr, and on the cloud profile the slab and the drill >= 1.5x, the full read
>= 1.2x; and aiozarr ahead of zarrista on every row.
"""

from __future__ import annotations

from typing import Any

STOCK = "zarr-newest-obstore"
WITH_AIOZARR = ("zarr-newest+Store", "zarr-newest+pipeline", "zarr-newest+pipeline+Store")
COLUMNS = (*WITH_AIOZARR, "aiozarr-async", "zarrista", "tensorstore")
CLOUD_WANT = {"slab": 1.5, "drill": 1.5, "full": 1.2}
NOISE = 0.95  # "never slower" allows this much: medians of a few repeats on shared cores


def _ok(r: dict[str, Any] | None) -> bool:
    return bool(r and r.get("ok") and r.get("median_s"))


def _profile(r: dict[str, Any]) -> str:
    return r.get("profile") or f"{r['latency_ms']:g}ms"  # type: ignore[no-any-return]


def _requests(r: dict[str, Any]) -> str:
    return str(((r.get("stats") or [{}])[-1]).get("requests", "?"))


def _cell(stock: dict[str, Any] | None, r: dict[str, Any] | None) -> str:
    if not _ok(r):
        return "failed" if r else ""
    assert r is not None
    if not _ok(stock):
        return f"{r['median_s'] * 1e3:.0f} ms, {_requests(r)} req"
    assert stock is not None
    return f"{stock['median_s'] / r['median_s']:.2f}x, {_requests(r)} req"


def _index(document: dict[str, Any]) -> dict[tuple[str, str, str], dict[str, Any]]:
    return {(_profile(r), r["row"], r["engine"]): r for r in document["results"]}


def _places(document: dict[str, Any]) -> list[tuple[str, str]]:
    """(profile, row) pairs where stock zarr or a column ran, in the run's order."""
    seen = dict.fromkeys(
        (_profile(r), r["row"])
        for r in document["results"]
        if r["engine"] in (STOCK, *WITH_AIOZARR, "zarrista")
    )
    return list(seen)


def table(document: dict[str, Any]) -> str:
    """Markdown: per profile and workload, stock zarr's time and each column's ratio."""
    ix = _index(document)
    places = _places(document)
    if not places:
        return ""
    versions = next(
        (r["versions"] for r in document["results"] if r["engine"] == STOCK and r.get("versions")),
        {},
    )
    zarr = versions.get("zarr", "?")
    lines = [
        f"### Against zarr-python {zarr} (stock: its obstore `ObjectStore`) and zarrista",
        "",
        f"Each cell: stock zarr {zarr}'s median time / the engine's (above 1: faster), and "
        "the requests of the last repeat. `+Store`: zarr on `aiozarr.zarr.Store`; "
        "`+pipeline`: `codec_pipeline.path = aiozarr.zarr.CodecPipeline`.",
        "",
        "| profile | workload | zarr "
        + zarr
        + " | "
        + " | ".join(c.replace("zarr-newest", "zarr") for c in COLUMNS)
        + " |",
        "|---|---|--:|" + "--:|" * len(COLUMNS),
    ]
    for profile, row in places:
        stock = ix.get((profile, row, STOCK))
        first = (
            f"{stock['median_s'] * 1e3:.0f} ms, {_requests(stock)} req"
            if _ok(stock)
            else ("failed" if stock else "")
        )
        cells = [_cell(stock, ix.get((profile, row, c))) for c in COLUMNS]
        lines.append(f"| {profile} | {row} | {first} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _ratio(ix: dict[Any, Any], place: tuple[str, str], engine: str, peer: str) -> float | None:
    mine, theirs = ix.get((*place, engine)), ix.get((*place, peer))
    if not (_ok(mine) and _ok(theirs)):
        return None
    return float(theirs["median_s"] / mine["median_s"])  # type: ignore[index]


def targets(document: dict[str, Any]) -> list[tuple[str, str]]:
    """The targets against stock zarr and zarrista, with the ratios and met / not met."""
    ix = _index(document)
    places = _places(document)
    checks: list[tuple[str, str]] = []
    for engine in ("zarr-newest+pipeline", "zarr-newest+pipeline+Store", "aiozarr-async"):
        ratios = {p: r for p in places if (r := _ratio(ix, p, engine, STOCK)) is not None}
        if not ratios:
            continue
        slower = [f"{row} on {prof} {r:.2f}x" for (prof, row), r in ratios.items() if r < NOISE]
        checks.append(
            (
                f"{engine}: never slower than stock zarr (>= {NOISE}x, every row)",
                "met" if not slower else "**not met**: " + "; ".join(slower),
            )
        )
        for row, want in CLOUD_WANT.items():
            r = ratios.get(("cloud", row))
            if r is not None:
                checks.append(
                    (
                        f"{engine}: {row} on cloud >= {want}x stock zarr",
                        f"{r:.2f}x: " + ("met" if r >= want else "**not met**"),
                    )
                )
    ahead = {p: r for p in places if (r := _ratio(ix, p, "aiozarr-async", "zarrista")) is not None}
    if ahead:
        behind = [f"{row} on {prof} {r:.2f}x" for (prof, row), r in ahead.items() if r < 1.0]
        checks.append(
            (
                "aiozarr-async ahead of zarrista on every row",
                "met" if not behind else "**not met**: " + "; ".join(behind),
            )
        )
    return checks


def section(document: dict[str, Any]) -> list[str]:
    """The README lines: the table and its targets (nothing when no peer ran)."""
    text = table(document)
    if not text:
        return []
    checks = targets(document)
    lines = [text]
    if checks:
        lines += [
            "| target | measured |",
            "|---|---|",
            *(f"| {name} | {value} |" for name, value in checks),
            "",
        ]
    return lines
