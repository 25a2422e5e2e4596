"""What the command line says: counts in words, the node's name, what progress counts."""

from __future__ import annotations

import asyncio
import html
import io
import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import aiozarr
from aiozarr.cli import main
from aiozarr.cli.progress import ProgressDisplay, plural
from aiozarr.cli.serve import run_serve
from aiozarr.emulator import Emulator
from aiozarr.nodes.description import codecs_text


def test_plural() -> None:
    assert [plural(n, "array") for n in (0, 1, 2)] == ["0 arrays", "1 array", "2 arrays"]


def _rows(table: str) -> dict[str, str]:
    return {k.strip(): v.strip() for k, v in (line.split(" : ", 1) for line in table.splitlines())}


@pytest.mark.parametrize(
    ("options", "codecs"),
    [
        (
            {"chunks": (2,), "shards": (4,)},
            "sharding_indexed[bytes(endian=little) -> zstd(level=0,checksum=False)]",
        ),
        ({"chunks": (2,), "zarr_format": 2}, "zstd(level=0)"),
        ({"chunks": (2,), "compressors": None}, "bytes(endian=little)"),
        ({"chunks": (2,), "dtype": "i1", "compressors": None}, "bytes"),  # no configuration
    ],
)
def test_info_html_and_the_cli_show_one_description(
    tmp_path: Path, capsys, options: dict, codecs: str
) -> None:
    """`arr.info`, the notebook's table and `aiozarr info` render one description: the
    codecs read the same in all three, from the JSON form `--json` prints."""
    options = {"dtype": "f4", **options}
    arr = aiozarr.create_array(tmp_path / "a.zarr", shape=(8,), **options)
    assert _rows(arr.info)["Codecs"] == codecs
    assert f"<td style='text-align:left'>{html.escape(codecs)}</td>" in arr._repr_html_()
    assert main(["info", str(tmp_path / "a.zarr")]) == 0
    assert _rows(capsys.readouterr().out)["Codecs"] == codecs
    assert main(["info", str(tmp_path / "a.zarr"), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["codecs"] == arr.description.to_json()["codecs"]
    assert codecs_text(shown["codecs"]) == codecs


def test_info_shows_the_memory_order_of_chunks(tmp_path: Path, capsys) -> None:
    """A chunk's memory order is part of its encoding: a v3 `transpose` codec showed as
    `transpose()` (its `order` list left out) and a v2 array's `order` nowhere."""
    options = {"shape": (3, 4), "dtype": "i2", "chunks": (2, 2), "zarr_format": 2}
    aiozarr.create_array(tmp_path / "f.zarr", order="F", **options)[...] = 7
    aiozarr.migrate(tmp_path / "f.zarr", tmp_path / "t.zarr")  # F order -> transpose codec
    assert main(["info", str(tmp_path / "t.zarr")]) == 0
    rows = _rows(capsys.readouterr().out)
    assert rows["Codecs"].startswith("transpose(order=[1,0]) -> bytes(endian=little)")
    assert "Order" not in rows  # v3: the codecs say it
    assert main(["info", str(tmp_path / "f.zarr")]) == 0
    assert _rows(capsys.readouterr().out)["Order"] == "F"
    assert main(["info", str(tmp_path / "f.zarr"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["order"] == "F"
    assert _rows(aiozarr.open_array(tmp_path / "f.zarr").info)["Order"] == "F"


def test_tree_and_info_show_names_a_terminal_would_act_on_escaped(tmp_path: Path, capsys) -> None:
    """A newline in a name drew a line of its own (a member that is not there), an
    escape sequence recoloured the terminal: such names are shown quoted, escaped."""
    group = aiozarr.create_group(tmp_path / "g.zarr")
    for name in ("new\nline", "esc\x1b[31mred", "ünï sp.ace"):
        group.create_array(name, shape=(1,), dtype="i1")
    assert main(["tree", str(tmp_path / "g.zarr")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1:] == [
        "├── 'esc\\x1b[31mred' (1,) int8 chunks (1,)",
        "├── 'new\\nline' (1,) int8 chunks (1,)",
        "└── ünï sp.ace (1,) int8 chunks (1,)",
    ]
    assert main(["info", str(tmp_path / "g.zarr")]) == 0
    rows = _rows(capsys.readouterr().out)
    assert rows["Members"] == "'esc\\x1b[31mred', 'new\\nline', ünï sp.ace"
    assert main(["info", str(tmp_path / "g.zarr"), "--path", "new\nline"]) == 0
    assert _rows(capsys.readouterr().out)["Name"] == "'/new\\nline'"
    assert main(["tree", str(tmp_path / "g.zarr"), "--json"]) == 0  # JSON escapes them itself
    names = [m["name"] for m in json.loads(capsys.readouterr().out)["members"]]
    assert names == ["esc\x1b[31mred", "new\nline", "ünï sp.ace"]


def test_info_names_the_node_the_url_points_at(tmp_path: Path, capsys) -> None:
    group = aiozarr.open_group(tmp_path / "demo.zarr", mode="w")
    group.create_array("temperature", shape=(4,), dtype="f4", chunks=(2,))
    assert main(["info", str(tmp_path / "demo.zarr" / "temperature")]) == 0
    rows = _rows(capsys.readouterr().out)
    assert rows["Name"] == "temperature"
    assert main(["info", str(tmp_path / "demo.zarr"), "--path", "temperature"]) == 0
    rows = _rows(capsys.readouterr().out)
    assert rows["Name"] == "/temperature"


def test_cp_counts_objects_in_words(tmp_path: Path, capsys) -> None:
    src = aiozarr.create_array(tmp_path / "a.zarr", shape=(8, 8), dtype="i2", chunks=(4, 4))
    src[...] = np.arange(64).reshape(8, 8)
    dst = tmp_path / "b.zarr"
    assert main(["cp", str(tmp_path / "a.zarr"), str(dst), "--shards", "8,8"]) == 0
    out = capsys.readouterr().out
    assert "copied 1 array, 0 groups: 1 object written (shards or chunks)" in out


def test_progress_lines_name_what_they_count() -> None:
    stream = io.StringIO()
    with ProgressDisplay("copy", mode="plain", stream=stream, pieces="objects") as show:
        show.update(50, 100, 1, 2)
        show.update(100, 100, 2, 2)
    assert "2/2 objects" in stream.getvalue()


def test_cp_progress_lines_count_objects_not_chunks(tmp_path: Path, capsys) -> None:
    # cp writes whole objects (here 1 shard of 4 chunks): its progress must not say "chunks"
    src = aiozarr.create_array(tmp_path / "a.zarr", shape=(8, 8), dtype="i2", chunks=(4, 4))
    src[...] = np.arange(64).reshape(8, 8)
    argv = ["cp", str(tmp_path / "a.zarr"), str(tmp_path / "b.zarr"), "--shards", "8,8"]
    assert main([*argv, "--progress", "plain"]) == 0
    progress = capsys.readouterr().err
    assert "1/1 objects" in progress and "chunks," not in progress


def _s3_options(emulator: Emulator) -> list[str]:
    options = {**emulator.storage_options(), "client_options.allow_http": "true"}
    del options["client_options"]
    return [f"-o{key}={value}" for key, value in options.items()]


def test_a_missing_bucket_is_named_first_and_the_server_text_only_with_debug(
    emulator: Emulator, capsys
) -> None:
    argv = ["info", "s3://no-such-bucket/data.zarr", *_s3_options(emulator)]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err == (
        "aiozarr info: error: cannot read 'zarr.json': "
        f"bucket 'no-such-bucket' does not exist at {emulator.endpoint}\n"
    )
    assert main([*argv, "--debug"]) == 1
    err = capsys.readouterr().err
    assert "<Code>NoSuchBucket</Code>" in err  # the server's answer, as the cause
    assert err.rstrip().endswith(f"does not exist at {emulator.endpoint}")


def test_tree_of_an_http_store_says_why_it_cannot_list(emulator: Emulator, capsys) -> None:
    group = aiozarr.open_group(emulator.root / "tree-http.zarr", mode="w")
    group.create_array("temperature", shape=(4,), dtype="f4", chunks=(2,))
    assert main(["tree", emulator.http_url("tree-http.zarr")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("aiozarr tree: error: an http(s):// store cannot list")
    assert "open the array by its path, or write consolidated metadata" in err
    # The status, not a port that happens to hold the digits (":40511").
    assert "PROPFIND" not in err and not re.search(r"(?<![:\d])405(?!\d)", err)


def test_serve_on_a_taken_port_says_so_in_one_line(tmp_path: Path, capsys) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["serve", str(tmp_path), "--port", str(port)]) == 1
    err = capsys.readouterr().err
    assert err == (
        f"aiozarr serve: error: port {port} on 127.0.0.1 is taken; "
        "choose another with --port, or --port 0 for any free one\n"
    )


def test_a_dead_endpoint_is_one_line_that_says_nothing_listens(tmp_path: Path) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    endpoint = f"http://127.0.0.1:{port}"
    env = {**os.environ, "AIOZARR_RETRY_ATTEMPTS": "2", "AIOZARR_RETRY_BASE_DELAY_S": "0.001"}
    argv = ["info", "s3://bucket/data.zarr", f"-oendpoint={endpoint}", "-oskip_signature=true"]
    result = subprocess.run(
        [sys.executable, "-m", "aiozarr", *argv, "-oclient_options.allow_http=true"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert result.returncode == 1
    # One line (no logged warning before it), saying why: nothing answers at the endpoint.
    [line] = result.stderr.splitlines()
    assert line.startswith("aiozarr info: error: cannot read 'zarr.json' in s3://bucket/")
    assert f"connection refused: nothing listens at {endpoint}" in line


def test_cp_onto_an_existing_target_names_overwrite_and_resume(tmp_path: Path, capsys) -> None:
    aiozarr.create_array(tmp_path / "a.zarr", shape=(4,), dtype="i2", chunks=(2,))
    aiozarr.create_array(tmp_path / "b.zarr", shape=(4,), dtype="i2", chunks=(2,))
    assert main(["cp", str(tmp_path / "a.zarr"), str(tmp_path / "b.zarr")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("aiozarr cp: error: an array or group already exists")
    assert "--overwrite" in err and "--resume" in err


@pytest.mark.parametrize(
    "argv",
    [
        ["info", "{a}", "-o", "regoin=us-west-2"],
        ["tree", "{a}", "-o", "regoin=us-west-2"],
        ["cp", "{a}", "{b}", "-o", "regoin=us-west-2"],
        ["cp", "s3://bucket/a.zarr", "{b}", "--dst-storage-option", "regoin=us-west-2"],
    ],
)
def test_storage_options_for_local_paths_are_refused_by_name(
    tmp_path: Path, capsys, argv: list[str]
) -> None:
    aiozarr.create_array(tmp_path / "a.zarr", shape=(4,), dtype="i2", chunks=(2,))
    paths = {"a": str(tmp_path / "a.zarr"), "b": str(tmp_path / "b.zarr")}
    assert main([arg.format(**paths) for arg in argv]) == 1
    err = capsys.readouterr().err
    assert "regoin" in err and "local paths take no storage options" in err
    assert "us-west-2" not in err  # names only: a value may be a credential
    assert not (tmp_path / "b.zarr").exists()


def test_storage_options_of_a_transfer_go_to_its_remote_end(
    emulator: Emulator, tmp_path: Path, capsys
) -> None:
    # cp ./local s3://...: `-o` is DST's, not refused for SRC being local.
    aiozarr.create_array(tmp_path / "a.zarr", shape=(4,), dtype="i2", chunks=(2,))
    dst = emulator.s3_url("upload-options/a.zarr")
    assert main(["cp", str(tmp_path / "a.zarr"), dst, *_s3_options(emulator)]) == 0
    assert "copied 1 array" in capsys.readouterr().out


@pytest.mark.parametrize("command", ["info", "tree"])
def test_a_reader_that_goes_away_ends_the_command_quietly(tmp_path: Path, command: str) -> None:
    aiozarr.create_array(tmp_path / "data.zarr", shape=(4,), dtype="i4")
    read, write = os.pipe()
    os.close(read)  # `| head` that has already read its lines: every write fails
    try:
        result = subprocess.run(
            [sys.executable, "-m", "aiozarr", command, str(tmp_path / "data.zarr")],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    finally:
        os.close(write)
    assert result.stderr == ""
    assert result.returncode == 141  # as SIGPIPE would


@pytest.mark.parametrize(
    "argv",
    [["tree", "{src}", "--depth", "-1"], ["cp", "{src}", "{dst}", "--max-inflight-bytes", "-5"]],
)
def test_counts_and_sizes_below_their_range_are_refused(
    tmp_path: Path, capsys, argv: list[str]
) -> None:
    aiozarr.create_group(tmp_path / "src.zarr")
    paths = {"src": str(tmp_path / "src.zarr"), "dst": str(tmp_path / "dst.zarr")}
    with pytest.raises(SystemExit) as exited:
        main([part.format(**paths) for part in argv])
    assert exited.value.code == 2
    assert "expected an integer of at least" in capsys.readouterr().err
    assert not (tmp_path / "dst.zarr").exists()


@pytest.mark.parametrize("codec", ["zstd:99", "blosc:nope:5", "gzip:x"])
def test_cp_refuses_a_codec_before_creating_anything(tmp_path: Path, capsys, codec: str) -> None:
    group = aiozarr.create_group(tmp_path / "src.zarr")
    group.create_group("sub").create_array("y", shape=(4,), dtype="i1")[:] = 1
    dst = tmp_path / "dst.zarr"
    assert main(["cp", str(tmp_path / "src.zarr"), str(dst), "--codec", codec]) == 1
    assert f"codec {codec!r}" in capsys.readouterr().err
    assert not dst.exists()
    assert main(["cp", str(tmp_path / "src.zarr"), str(dst), "--codec", "zstd:5"]) == 0


@pytest.mark.parametrize("bucket", ["a/b", "..", "_emulator"])
def test_serve_refuses_a_bucket_name_no_request_reaches(tmp_path: Path, bucket: str) -> None:
    # It was served, and every request answered 404 NoSuchBucket (`a/b`: the bucket is
    # the path's first segment) or reached the control endpoints (`_emulator`).
    def started(emu: Emulator) -> None:
        raise AssertionError(f"served as {emu.http_url()}")

    with pytest.raises(SystemExit) as exited:
        asyncio.run(run_serve(tmp_path, port=0, bucket=bucket, on_start=started))
    assert exited.value.code == (
        f"aiozarr serve: bucket name {bucket!r} cannot be reached: it is the first "
        "segment of every request's path, so not empty, '.', '..' or '_emulator', and "
        "without '/'"
    )


@pytest.mark.parametrize(
    ("option", "said"),
    [
        (["--port", "70000"], "argument --port: a port is 0 to 65535 (0: any free one), not 70000"),
        (["--port", "http"], "argument --port: expected a port number, got 'http'"),
        (["--tail-rate", "x"], "argument --tail-rate: invalid float value: 'x'"),
    ],
)
def test_serve_says_a_bad_option_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: list[str], said: str
) -> None:
    # It printed the whole usage (six lines) first, as no other command does; a port
    # out of range was the socket's "bind(): port must be 0-65535.", naming no option.
    with pytest.raises(SystemExit) as exited:
        main(["serve", str(tmp_path), *option])
    assert exited.value.code == 2
    assert capsys.readouterr().err == f"aiozarr serve: error: {said} (see aiozarr serve --help)\n"


def test_serve_names_a_host_it_cannot_listen_on(tmp_path: Path, capsys) -> None:
    assert main(["serve", str(tmp_path), "--port", "0", "--host", "no-such-host.invalid"]) == 1
    [line] = capsys.readouterr().err.splitlines()  # was "[Errno -2] Name or service not known"
    assert line.startswith("aiozarr serve: error: cannot listen on no-such-host.invalid port 0: ")
    assert line.endswith(
        "--host takes an address of this machine (127.0.0.1, 0.0.0.0, ::1) "
        "or a name that resolves to one"
    )


def test_serve_takes_debug_as_every_command_does(tmp_path: Path, capsys) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["serve", str(tmp_path), "--port", str(port), "--debug"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("Traceback") and "PortTakenError" in err  # was "unrecognized"
