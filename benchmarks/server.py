"""The emulator in its own process, and a client for its control endpoints.

    with EmulatorProcess(root) as emu:      # serves root as bucket `bench` on 127.0.0.1
        emu.set_profile(spec.PROFILES["cloud"]); emu.reset(); ...; emu.stats()

`python -m benchmarks.server ROOT` serves and prints the port as its first line.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from benchmarks import spec


def _control(endpoint: str, path: str, body: dict[str, Any] | None = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    method = "GET" if path == "stats" else "POST"
    request = urllib.request.Request(
        f"{endpoint}/_emulator/{path}",
        data=data,
        method=method,
        headers={"Content-Type": "application/json"},  # the control endpoints take JSON only
    )
    # A 503 is the emulator's connection cap: a client's pooled connections from the run
    # before (each kept alive until it idles out) can fill it for a moment.
    for wait_s in (0.1, 0.3, 1.0, 3.0):
        try:
            return _answer(request)
        except urllib.error.HTTPError as error:
            if error.code != 503:
                raise
        time.sleep(wait_s)
    return _answer(request)


def _answer(request: urllib.request.Request) -> Any:
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def stats(endpoint: str) -> dict[str, Any]:
    """The emulator's counters (requests, bytes_read, peak_inflight, ...)."""
    return _control(endpoint, "stats")  # type: ignore[no-any-return]


def reset(endpoint: str) -> None:
    """Zero the emulator's counters."""
    _control(endpoint, "reset", {})


class EmulatorProcess:
    """`aiozarr.emulator.Emulator` over `root`, run by a child process."""

    def __init__(self, root: Path, latency_ms: float = 0.0) -> None:
        self.root = root
        self.latency_ms = latency_ms
        self._proc: subprocess.Popen[str] | None = None
        self.endpoint = ""

    def __enter__(self) -> EmulatorProcess:
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.server", str(self.root), str(self.latency_ms)],
            stdout=subprocess.PIPE,
            text=True,
            cwd=Path(__file__).resolve().parent.parent,
        )
        assert self._proc.stdout is not None
        port = int(self._proc.stdout.readline())
        self.endpoint = f"http://127.0.0.1:{port}"
        return self

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None:
            self._proc.terminate()
            self._proc.wait(timeout=30)

    @property
    def pid(self) -> int:
        """The server process's id (its CPU time is read from `/proc`)."""
        assert self._proc is not None
        return self._proc.pid

    def storage_options(self) -> dict[str, Any]:
        """obstore `S3Store` options that reach it (anonymous, plain HTTP)."""
        return spec.storage_options(self.endpoint)

    def set_latency(self, ms: float) -> None:
        """Delay every later answer by `ms`."""
        self.latency_ms = ms
        _control(self.endpoint, "latency", {"ms": ms})

    def set_profile(self, profile: spec.Profile, seed: int = 0) -> None:
        """Answer as `profile` says from now on; the slow tail's draws restart at `seed`,
        so every engine's job meets the same sequence of slow answers."""
        self.latency_ms = profile.latency_ms
        _control(
            self.endpoint,
            "network",
            {
                "latency_ms": profile.latency_ms,
                "bandwidth_mbps": profile.bandwidth_mbps,
                "tail_rate": profile.tail_rate,
                "tail_ms": profile.tail_ms,
                "seed": seed,
            },
        )

    def stats(self) -> dict[str, Any]:
        return stats(self.endpoint)

    def reset(self) -> None:
        reset(self.endpoint)


#: The connections the benchmarks' emulator holds at once. It stands for an object store,
#: which caps no client's connections; the emulator's default (1,000) counts the idle
#: pooled connections of a job's earlier repeats too, and four arrays' stores each keep
#: up to `max_concurrency` (256) of their own.
MAX_CONNECTIONS = 8192


async def _serve(root: str, latency_ms: float) -> None:
    from aiozarr.emulator import Emulator

    async with Emulator(
        root, latency_ms=latency_ms, bucket=spec.BUCKET, max_connections=MAX_CONNECTIONS
    ) as emu:
        print(emu.port, flush=True)
        await asyncio.Event().wait()


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 0.0))
