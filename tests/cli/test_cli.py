"""The `aiozarr` command line through `subprocess`, on data the emulator serves."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr

import aiozarr
from aiozarr.emulator import Emulator
from aiozarr.errors import UnfinishedNodeError


def _cli_options(emulator: Emulator) -> list[str]:
    """The emulator's storage options as `-o KEY=VALUE` arguments."""
    args: list[str] = []
    for key, value in emulator.storage_options().items():
        if isinstance(value, dict):
            args += [f"-o{key}.{k}={json.dumps(v)}" for k, v in value.items()]
        else:
            args.append(f"-o{key}={value if isinstance(value, str) else json.dumps(value)}")
    return args


def aiozarr_cli(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, "-m", "aiozarr", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if check and result.returncode != 0:
        raise AssertionError(f"aiozarr {' '.join(args)} failed:\n{result.stderr}")
    return result


@pytest.fixture
def v2_array(emulator: Emulator, prefix: str) -> tuple[str, np.ndarray]:
    """A Zarr v2 array of 8 x 6 chunks on the emulator; (its s3 URL, its values)."""
    url = emulator.s3_url(f"{prefix}/v2.zarr")
    data = np.random.default_rng(0).normal(size=(80, 60)).astype("f4")
    data[:10] = np.nan  # the fill value: those chunks are not stored
    arr = aiozarr.create_array(
        url,
        shape=data.shape,
        dtype=data.dtype,
        chunks=(10, 10),
        zarr_format=2,
        fill_value=np.nan,
        attributes={"units": "K"},
        storage_options=emulator.storage_options(),
    )
    arr[...] = data
    return url, data


def test_help_reads_well() -> None:
    out = aiozarr_cli("--help").stdout
    for command in ("info", "tree", "cp", "migrate", "bench", "serve"):
        assert command in out
    assert "--storage-option" in aiozarr_cli("cp", "--help").stdout


def test_info_json(emulator: Emulator, v2_array: tuple[str, np.ndarray]) -> None:
    url, data = v2_array
    info = json.loads(aiozarr_cli("info", url, "--json", *_cli_options(emulator)).stdout)
    assert info["node"] == "array" and info["zarr_format"] == 2
    assert info["shape"] == [80, 60] and info["dtype"] == "float32"
    assert info["chunks"] == [10, 10] and info["shards"] is None and info["grid"] == [8, 6]
    assert info["attributes"] == {"units": "K"} and info["fill_value"] == "NaN"
    # 42 chunks stored (6 all-NaN chunks are not) + .zarray + .zattrs, from one listing.
    assert info["stored_objects"] == 44
    assert info["stored_bytes"] > 0 and info["decoded_bytes"] == data.nbytes
    gets = emulator.stats()["by_method"].get("GET", 0)
    assert gets < 10  # metadata and a listing, not the chunks
    text = aiozarr_cli("info", url, *_cli_options(emulator)).stdout
    assert "(8, 6) = 48 chunks" in text and "ratio" in text


def test_info_counts_the_objects_under_its_node_only(emulator: Emulator, prefix: str) -> None:
    options = emulator.storage_options()
    for name in ("a.zarr", "a.zarr-b", "b.zarr"):  # neighbours in the one bucket
        arr = aiozarr.create_array(
            emulator.s3_url(f"{prefix}/{name}"),
            shape=(6,),
            chunks=(1,),
            dtype="u1",
            storage_options=options,
        )
        arr[:] = 1
    url = emulator.s3_url(f"{prefix}/a.zarr")
    info = json.loads(aiozarr_cli("info", url, "--json", *_cli_options(emulator)).stdout)
    assert info["stored_objects"] == 7  # six chunks and zarr.json


def test_tree_json(tmp_path: Path) -> None:
    group = aiozarr.create_group(tmp_path / "g.zarr")
    group.create_array("a", shape=(4, 4), dtype="i2", chunks=(2, 2))
    group.create_group("sub").create_array("b", shape=(8,), dtype="u1", chunks=(2,), shards=(4,))
    tree = json.loads(aiozarr_cli("tree", str(tmp_path / "g.zarr"), "--json").stdout)
    assert [m["name"] for m in tree["members"]] == ["a", "sub"]
    b = tree["members"][1]["members"][0]
    assert b == {
        "name": "b",
        "node": "array",
        "shape": [8],
        "dtype": "uint8",
        "chunks": [2],
        "shards": [4],
        "zarr_format": 3,
        "format": "Zarr v3",
    }
    text = aiozarr_cli("tree", str(tmp_path / "g.zarr")).stdout
    assert "b (8,) uint8 chunks (2,) shards (4,)" in text


def test_tree_shows_a_member_whose_codec_cannot_be_built(tmp_path: Path) -> None:
    """One array with a codec unknown here must not hide the rest of the hierarchy."""
    group = aiozarr.create_group(tmp_path / "g.zarr")
    group.create_array("good", shape=(4,), dtype="i4", chunks=(2,))
    group.create_group("sub").create_array("odd", shape=(6,), dtype="u1", chunks=(3,))
    document_path = tmp_path / "g.zarr" / "sub" / "odd" / "zarr.json"
    document = json.loads(document_path.read_text())
    document["codecs"].append({"name": "mystery_codec", "configuration": {}})
    document_path.write_text(json.dumps(document))
    tree = json.loads(aiozarr_cli("tree", str(tmp_path / "g.zarr"), "--json").stdout)
    assert [m["name"] for m in tree["members"]] == ["good", "sub"]
    odd = tree["members"][1]["members"][0]
    assert (odd["name"], odd["shape"], odd["chunks"]) == ("odd", [6], [3])
    assert "unknown codec 'mystery_codec'" in odd["problem"]
    assert "problem" not in tree["members"][0]
    text = aiozarr_cli("tree", str(tmp_path / "g.zarr")).stdout
    assert "odd (6,) uint8 chunks (3,) (cannot read here: sub/odd/zarr.json: unknown codec" in text


def test_cp_v2_to_sharded_v3_across_stores(
    emulator: Emulator, v2_array: tuple[str, np.ndarray], tmp_path: Path, prefix: str
) -> None:
    url, data = v2_array
    local = str(tmp_path / "v3.zarr")
    out = aiozarr_cli(
        "cp",
        url,
        local,
        "--zarr-format",
        "3",
        "--shards",
        "40,30",
        "--codec",
        "zstd:5",
        "--json",
        *_cli_options(emulator),
    ).stdout
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["chunks_written"] == 4  # 2 x 2 shards of (40, 30)
    v3 = aiozarr.open_array(local, mode="r")
    assert v3.zarr_format == 3 and v3.shards == (40, 30) and v3.chunks == (10, 10)
    np.testing.assert_array_equal(v3[...], data)
    # ... and back to the emulator (local -> S3), values exactly equal again.
    back = emulator.s3_url(f"{prefix}/back.zarr")
    aiozarr_cli("cp", local, back, "--progress", "plain", *_cli_options(emulator))
    copied = aiozarr.open_array(back, mode="r", storage_options=emulator.storage_options())
    np.testing.assert_array_equal(copied[...], data)
    assert copied.shards == (40, 30)


def _puts(emulator: Emulator) -> int:
    return int(emulator.stats()["by_method"].get("PUT", 0))


def test_resume_after_a_killed_copy(emulator: Emulator, prefix: str) -> None:
    src = emulator.s3_url(f"{prefix}/src.zarr")
    dst = emulator.s3_url(f"{prefix}/dst.zarr")
    data = np.arange(64 * 64, dtype="i4").reshape(64, 64)
    options = emulator.storage_options()
    arr = aiozarr.create_array(
        src, shape=data.shape, dtype=data.dtype, chunks=(8, 8), storage_options=options
    )
    arr[...] = data
    emulator.reset_stats()
    # One unit in flight at a time (16 units of 16 x 16 = 1 KiB each), and the PUTs of the
    # last 8 held back until their client goes: the copy stops at the first of them (with
    # 8 written, in row order) and is killed there, however fast it runs.
    emulator.inject("late", delay_s=600, methods=["PUT"], key_glob="*/dst.zarr/c/[23]/*")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "aiozarr",
            "cp",
            src,
            dst,
            "--shards",
            "16,16",
            "--max-inflight-bytes",
            "1024",
            "--progress",
            "off",
            *_cli_options(emulator),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    while not emulator.stats()["faults"] and proc.poll() is None:  # a PUT is held
        assert time.monotonic() < deadline, "no PUT was held back"
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    while emulator.stats()["inflight"]:  # the held PUT ends when its client has gone
        assert time.monotonic() < deadline, "the held PUT never ended"
        time.sleep(0.01)
    emulator.clear_faults()
    written = [p for p in (emulator.root / prefix / "dst.zarr" / "c").rglob("*") if p.is_file()]
    assert 3 <= len(written) < 16, "the kill should land part way through the copy"
    # what the copy did not write would read as fill values: no reader opens it
    with pytest.raises(UnfinishedNodeError, match=r"^zarr\.json: the placeholder"):
        aiozarr.open_array(dst, mode="r", storage_options=options)
    with pytest.raises((KeyError, ValueError)):  # zarr 3.1: no "data_type"; 3.4: the field
        zarr.open_array(emulator.root / prefix / "dst.zarr", mode="r")

    emulator.reset_stats()
    out = aiozarr_cli(
        "cp", src, dst, "--shards", "16,16", "--resume", "--json", *_cli_options(emulator)
    ).stdout
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["chunks_skipped"] == len(written)
    assert summary["chunks_written"] == 16 - len(written)
    # nothing verified is written again; the array's document replaces the placeholder
    assert _puts(emulator) == 16 - len(written) + 1
    result = aiozarr.open_array(dst, mode="r", storage_options=options)
    np.testing.assert_array_equal(result[...], data)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["info", "nosuch://bucket/x"], "unknown URL scheme"),
        (["info", "{tmp}/missing.zarr"], "no Zarr array or group"),
        (["cp", "{tmp}/a.zarr", "{tmp}/b.zarr", "--shards", "ten"], "--shards"),
        (["bench", "{tmp}/a.zarr", "--selection", "1:x"], "bad slice"),
        (["info", "{tmp}/a.zarr", "-o", "novalue"], "KEY=VALUE"),
    ],
)
def test_errors_are_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    aiozarr.create_array(tmp_path / "a.zarr", shape=(4,), dtype="u1")
    argv = [a.format(tmp=tmp_path) for a in args]
    result = aiozarr_cli(*argv, check=False)
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], result.stderr
    assert lines[0].startswith(f"aiozarr {argv[0]}: error: ")


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    result = aiozarr_cli("info", str(tmp_path / "missing.zarr"), "--debug", check=False)
    assert result.returncode != 0 and "Traceback" in result.stderr


def test_bench_json(tmp_path: Path) -> None:
    arr = aiozarr.create_array(
        tmp_path / "b.zarr", shape=(64, 64), dtype="f8", chunks=(8, 8), shards=(32, 32)
    )
    arr[...] = 1.0
    result: dict[str, Any] = json.loads(
        aiozarr_cli(
            "bench", str(tmp_path / "b.zarr"), "--selection", "0:32,:", "--repeat", "2", "--json"
        ).stdout
    )
    assert result["decoded_bytes"] == 32 * 64 * 8
    assert result["requests"] >= 2 and result["bytes_read"] > 0
    assert result["round_trips"] >= 1
    assert set(result["suggested"]) >= {"coalesce_gap_bytes", "max_concurrency"}


def test_bench_of_an_array_it_times_no_request_for(tmp_path: Path) -> None:
    """With no latency measured (nothing stored to read) the text report raised a bare
    TypeError formatting None."""
    aiozarr.create_array(tmp_path / "e.zarr", shape=(0,), dtype="f4", chunks=(4,))
    result = aiozarr_cli("bench", str(tmp_path / "e.zarr"), "--repeat", "1")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("repeat", ["0", "-2"])
def test_bench_refuses_a_repeat_below_one(tmp_path: Path, repeat: str) -> None:
    """`--repeat 0` timed one read anyway and reported it as the median of 1."""
    aiozarr.create_array(tmp_path / "e.zarr", shape=(4,), dtype="f4", chunks=(4,))
    result = aiozarr_cli("bench", str(tmp_path / "e.zarr"), "--repeat", repeat, check=False)
    assert result.returncode == 2 and "--repeat: expected an integer of at least 1" in result.stderr


def test_a_consolidated_hierarchy_over_http_is_copied(tmp_path: Path) -> None:
    """A plain HTTP server cannot list: copies walked every group by listing, so a
    consolidated hierarchy served over HTTP could be opened but not copied."""
    import zarr

    served = tmp_path / "served"
    served.mkdir()
    group = zarr.open_group(served / "pub.zarr", mode="w", zarr_format=2)
    group.create_array("t", shape=(4,), chunks=(2,), dtype="f4")[:] = np.arange(4)
    group.create_group("sub").create_array("u", shape=(2,), dtype="i2")[:] = [7, 8]
    zarr.consolidate_metadata(served / "pub.zarr")
    with Emulator(served).running_in_thread() as emu:
        url = emu.http_url("pub.zarr")
        result = aiozarr_cli("cp", url, str(tmp_path / "copy.zarr"), "--progress", "off")
    assert result.returncode == 0, result.stderr
    copied = aiozarr.open_group(tmp_path / "copy.zarr")
    np.testing.assert_array_equal(copied["t"][...], np.arange(4, dtype="f4"))
    np.testing.assert_array_equal(copied["sub/u"][...], [7, 8])


def test_a_local_reference_file_takes_allowed_targets(tmp_path: Path) -> None:
    """Its error asks for allowed_targets, which the command line refused as "local
    paths take no storage options"."""
    h5py = pytest.importorskip("h5py")
    hdf = pytest.importorskip("kerchunk.hdf")
    (tmp_path / "data").mkdir()
    (tmp_path / "refs").mkdir()
    with h5py.File(tmp_path / "data" / "f.h5", "w") as f:
        f.create_dataset("t", data=np.arange(6, dtype="f4"), chunks=(3,))
    refs = hdf.SingleHdf5ToZarr(str(tmp_path / "data" / "f.h5"), inline_threshold=0).translate()
    (tmp_path / "refs" / "refs.json").write_text(json.dumps(refs))
    allowed = f"allowed_targets={json.dumps([str(tmp_path / 'data') + '/'])}"
    out = tmp_path / "out.zarr"
    source = str(tmp_path / "refs" / "refs.json")
    aiozarr_cli("cp", source, str(out), "-o", allowed, "--progress", "off")
    np.testing.assert_array_equal(aiozarr.open_array(out, "t")[...], np.arange(6, dtype="f4"))
