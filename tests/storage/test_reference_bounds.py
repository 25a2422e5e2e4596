"""References whose lengths, fields or rows claim what their targets do not hold.

A reference's length is a claim about another object: a read sends no request in
proportion to it (the request policy stops at the value's end), refuses before any
request a claim no reader could hold, and reports a target shorter than its reference as
that (not as a value replaced mid-read). Malformed top-level fields of a JSON reference
file and malformed Parquet rows are `MetadataError`s naming where they are.
"""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest

import aiozarr
from aiozarr.byte_range import ByteRange
from aiozarr.emulator import Emulator
from aiozarr.errors import MetadataError, StoreError, ValueTooLargeError
from aiozarr.storage.backends.counting import CountingStore
from aiozarr.storage.backends.local import LocalStore
from aiozarr.storage.opening.url import from_url
from aiozarr.storage.policy import ranges
from aiozarr.storage.protocol import RangeRequest
from aiozarr.storage.references import reference_store
from aiozarr.storage.references.reference_store import ReferenceStore

TARGET = bytes(range(100))


def _gets(emulator: Emulator) -> int:
    return emulator.stats().get("by_method", {}).get("GET", 0)


def _s3_references(emulator: Emulator, prefix: str, length: int) -> ReferenceStore:
    folder = emulator.root / prefix
    folder.mkdir(parents=True)
    (folder / "t.bin").write_bytes(TARGET)
    refs = {"version": 1, "refs": {"k": ["t.bin", 0, length]}}
    (folder / "refs.json").write_text(json.dumps(refs))
    return ReferenceStore(
        emulator.s3_url(f"{prefix}/refs.json"), storage_options=emulator.storage_options()
    )


# -- the request policy: parts made as they are sent, none past the value's end --------


def test_a_plan_builds_nothing_in_proportion_to_a_claimed_length() -> None:
    tracemalloc.start()
    try:
        plan = ranges.plan([ByteRange.of(0, 1 << 20)], gap_bytes=0, max_request_bytes=1)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(plan.fetch) == 1 << 20
    assert plan.fetch[-1] == ByteRange.of((1 << 20) - 1, 1)
    assert peak < 64 << 10  # a list of the 2**20 parts takes over 100 MiB


def test_slice_back_reads_requests_left_unsent_after_a_short_answer_as_empty() -> None:
    wanted = [ByteRange.of(0, 100), ByteRange.of(150, 10), ByteRange.of(300, 10)]
    plan = ranges.plan(wanted, gap_bytes=1000, max_request_bytes=40)
    assert len(plan.fetch) == 8
    blob = bytes(range(50))  # the value ends inside the second part
    views = plan.slice_back([blob[:40], blob[40:]])
    assert [bytes(v) for v in views] == [blob, b"", b""]
    with pytest.raises(ValueError, match="expected 8 answers"):  # nothing was short
        plan.slice_back([bytes(40), bytes(40)])


async def test_a_long_range_of_a_short_object_stops_at_its_end(
    emulator: Emulator, prefix: str
) -> None:
    (emulator.root / prefix).mkdir(parents=True)
    (emulator.root / prefix / "t.bin").write_bytes(TARGET)
    store = from_url(
        emulator.s3_url(prefix), storage_options=emulator.storage_options(), read_only=True
    )
    with aiozarr.config.set(parts_per_object=4):  # 32 parts of 2 MiB claimed
        emulator.reset_stats()
        [value] = await store.get_partial_values([RangeRequest("t.bin", ByteRange.of(0, 64 << 20))])
    assert bytes(value) == TARGET
    assert _gets(emulator) == 4  # the first window of parts; none sent after it


async def test_a_batched_store_reads_a_long_range_one_window_at_a_time(tmp_path: Path) -> None:
    (tmp_path / "t.bin").write_bytes(TARGET)
    store = CountingStore(LocalStore(tmp_path, read_only=True))
    with aiozarr.config.set(max_inflight_bytes=8 << 20):  # 4 parts of 2 MiB a window
        [value] = await store.get_partial_values([RangeRequest("t.bin", ByteRange.of(0, 2 << 30))])
    assert bytes(value) == TARGET
    assert store.counts["get"] == 4  # one window, not the 1,024 parts of the claim


# -- the reference store: claims refused, short targets named -------------------------


async def test_a_reference_claiming_more_than_memory_is_refused_before_any_request(
    emulator: Emulator, prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(reference_store, "memory_bytes", lambda: 1 << 20, raising=False)
    store = _s3_references(emulator, prefix, 4 << 20)
    emulator.reset_stats()
    with pytest.raises(ValueTooLargeError, match=r"'k'.*'t\.bin'.*4194304 bytes"):
        await store.get("k")
    assert _gets(emulator) == 1  # the reference file; no request of its target


@pytest.mark.parametrize("length", [(2 << 20) + 100, 8 << 20])
async def test_a_target_shorter_than_its_reference_is_named_not_torn(
    emulator: Emulator, prefix: str, length: int
) -> None:
    store = _s3_references(emulator, prefix, length)
    emulator.reset_stats()
    with pytest.raises(StoreError, match=rf"'k'.*'t\.bin'.*holds 100 of the {length} bytes"):
        await store.get("k")
    assert _gets(emulator) == 1 + -(-length // (2 << 20))  # the file, each part once


async def test_a_whole_read_with_a_bound_is_still_refused_by_it(tmp_path: Path) -> None:
    (tmp_path / "t.bin").write_bytes(TARGET)
    refs = {"version": 1, "refs": {"k": ["t.bin", 0, 1 << 62]}}
    (tmp_path / "refs.json").write_text(json.dumps(refs))
    store = ReferenceStore(tmp_path / "refs.json")
    [request] = [RangeRequest("k", None, 1000)]
    with pytest.raises(ValueTooLargeError, match="more than the 1000 allowed"):
        await store.get_partial_values([request])


# -- malformed reference files -------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "doc"),
    [
        ("refs", {"version": 1, "refs": None}),
        ("refs", {"version": 1, "refs": "abc"}),
        ("refs", {"version": 1, "refs": [["k", ["t.bin", 0, 4]]]}),
        ("templates", {"version": 1, "templates": ["x"], "refs": {"k": ["t.bin", 0, 4]}}),
    ],
)
async def test_malformed_top_level_fields_are_metadata_errors(
    tmp_path: Path, field: str, doc: dict
) -> None:
    (tmp_path / "t.bin").write_bytes(TARGET)
    path = tmp_path / "refs.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(MetadataError, match=rf"refs\.json: '{field}' must be a JSON object"):
        await ReferenceStore(path).get("k")


def _parquet_references(tmp_path: Path, n: int) -> tuple[Path, Path]:
    """A target file and a Parquet reference folder holding array `a` of `n` one-byte
    chunks, one record of `n` rows (its record file is the test's)."""
    target = tmp_path / "t.bin"
    target.write_bytes(TARGET)
    root = tmp_path / "refs.parq"
    (root / "a").mkdir(parents=True)
    meta = {"zarr_format": 2, "shape": [n], "chunks": [1], "dtype": "|u1", "compressor": None}
    meta |= {"fill_value": 0, "filters": None, "order": "C"}
    doc = {"metadata": {".zgroup": {"zarr_format": 2}, "a/.zarray": meta}, "record_size": n}
    (root / ".zmetadata").write_text(json.dumps(doc))
    return target, root


async def test_a_parquet_row_with_a_null_size_fails_alone(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    target, root = _parquet_references(tmp_path, 4)
    rows = [(5, 1), (5, None), (None, 1), (0, 0)]  # (offset, size)
    table = pa.table(
        {
            "path": pa.array([str(target)] * 4, pa.string()),
            "offset": pa.array([r[0] for r in rows], pa.int64()),
            "size": pa.array([r[1] for r in rows], pa.int64()),
            "raw": pa.array([None] * 4, pa.binary()),
        }
    )
    pq.write_table(table, root / "a" / "refs.0.parq")
    store = ReferenceStore(root)
    assert bytes(await store.get("a/0")) == b"\x05"
    assert bytes(await store.get("a/3")) == TARGET  # offset = size = 0: the whole object
    for i in (1, 2):
        with pytest.raises(MetadataError, match=rf"'a/{i}' \(row {i} of a/refs\.0\.parq\)"):
            await store.get(f"a/{i}")
    listed = [key async for key in store.list_prefix("a/")]
    assert sorted(listed) == ["a/.zarray", *(f"a/{i}" for i in range(4))]  # every row listed


@pytest.mark.parametrize("dropped", [("path",), ("offset", "size")])
async def test_a_parquet_record_file_without_a_column_is_malformed(
    tmp_path: Path, dropped: tuple[str, ...]
) -> None:
    """A record file lacking `path` read every chunk as absent (fill values), one lacking
    `offset` and `size` every chunk as its whole target: each is refused, naming it."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    target, root = _parquet_references(tmp_path, 2)
    columns = {
        "path": pa.array([str(target)] * 2, pa.string()),
        "offset": pa.array([5, 6], pa.int64()),
        "size": pa.array([1, 1], pa.int64()),
        "raw": pa.array([None] * 2, pa.binary()),
    }
    for name in dropped:
        del columns[name]
    pq.write_table(pa.table(columns), root / "a" / "refs.0.parq")
    with pytest.raises(MetadataError, match=rf"a/refs\.0\.parq has no '{dropped[0]}' column"):
        aiozarr.open_array(str(root), "a", mode="r")[...]
