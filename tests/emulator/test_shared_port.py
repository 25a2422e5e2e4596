"""Emulators over one folder share a port (`listen_also(..., reuse_port=True)`): the
system spreads the connections among them, each answers what the folder holds, and each
keeps its own port for its counters."""

from __future__ import annotations

import sys
from pathlib import Path

import aiohttp
import pytest

from aiozarr.emulator import Emulator

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="no SO_REUSEPORT")


async def test_two_emulators_serve_one_folder_on_one_port(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    root = tmp_path / "bucket"
    root.mkdir()
    (root / "obj").write_bytes(b"0123456789")
    async with Emulator(root) as first, Emulator(root) as second:
        shared = await first.listen_also(0, reuse_port=True)
        assert await second.listen_also(shared, reuse_port=True) == shared
        for _ in range(40):  # a new connection each time: the system picks a process
            async with http.get(
                f"http://127.0.0.1:{shared}/bucket/obj",
                headers={"Range": "bytes=2-4", "Connection": "close"},
            ) as answer:
                assert answer.status == 206 and await answer.read() == b"234"
        counts = []
        for emu in (first, second):
            async with http.get(f"{emu.endpoint}/_emulator/stats") as answer:
                counts.append((await answer.json())["by_method"].get("GET", 0))
        # control requests are not counted; one process getting none of 40 is 2**-39
        assert sum(counts) == 40 and all(counts)


async def test_a_port_taken_without_reuse_is_refused(tmp_path: Path) -> None:
    async with Emulator(tmp_path) as first, Emulator(tmp_path) as second:
        with pytest.raises(OSError):
            await second.listen_also(first.port, reuse_port=True)


async def test_another_port_before_start_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="start the emulator"):
        await Emulator(tmp_path).listen_also()
