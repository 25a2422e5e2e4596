"""The emulator in its own processes, and a client for their control endpoints.

    with EmulatorProcess(root) as emu:      # serves root as bucket `bench` on 127.0.0.1
        emu.set_profile(spec.PROFILES["cloud"]); emu.reset(); ...; emu.stats()

`EmulatorProcess(root, workers=N)`: N processes share one port (`SO_REUSEPORT`; the
system spreads connections among them), so the server is not one core's worth on a
machine with many; each keeps a port of its own for its control endpoints, and
`stats()` adds up their counters.

`python -m benchmarks.server ROOT [LATENCY_MS [SHARED_PORT]]` serves and prints its port
as its first line; with SHARED_PORT (0: a free one) it also listens there and prints
"PORT SHARED_PORT".
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


#: The counters `stats` adds up over several processes (a sum of peaks is an upper bound);
#: the rest (the network shaping) is the same in each.
_COUNTERS = (
    "requests",
    "bytes_read",
    "bytes_written",
    "inflight",
    "peak_inflight",
    "faults",
    "tails",
)
_TALLIES = ("by_method", "by_kind", "by_status")


def stats(*endpoints: str) -> dict[str, Any]:
    """The emulator's counters (requests, bytes_read, peak_inflight, ...), added up over
    the control endpoints of its processes."""
    each = [_control(endpoint, "stats") for endpoint in endpoints]
    total = dict(each[0])
    for other in each[1:]:
        for name in _COUNTERS:
            total[name] = total.get(name, 0) + other.get(name, 0)
        for name in _TALLIES:
            tally = dict(total.get(name, {}))
            for key, count in other.get(name, {}).items():
                tally[key] = tally.get(key, 0) + count
            total[name] = tally
    return total


def reset(*endpoints: str) -> None:
    """Zero the emulator's counters in each of its processes."""
    for endpoint in endpoints:
        _control(endpoint, "reset", {})


class EmulatorProcess:
    """`aiozarr.emulator.Emulator` over `root`, run by `workers` child processes."""

    def __init__(self, root: Path, latency_ms: float = 0.0, workers: int = 1) -> None:
        if workers < 1:
            raise ValueError(f"workers must be >= 1, not {workers}")
        self.root = root
        self.latency_ms = latency_ms
        self.workers = workers
        self._procs: list[subprocess.Popen[str]] = []
        self.endpoint = ""
        self.controls: list[str] = []

    @classmethod
    def attach(cls, endpoint: str, controls: list[str]) -> EmulatorProcess:
        """A handle on the emulator another process started at `endpoint` (its control
        endpoints `controls`): its settings and counters; leaving it stops nothing."""
        emu = cls(Path())
        emu.endpoint, emu.controls = endpoint, list(controls)
        return emu

    def __enter__(self) -> EmulatorProcess:
        try:
            shared = 0
            for _ in range(self.workers):
                own, shared = self._start(shared)
                self.controls.append(f"http://127.0.0.1:{own}")
            self.endpoint = f"http://127.0.0.1:{shared}"
        except BaseException:
            self.__exit__()
            raise
        return self

    def _start(self, shared: int) -> tuple[int, int]:
        args = [str(self.root), str(self.latency_ms), str(shared)]
        proc = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.server", *args],
            stdout=subprocess.PIPE,
            text=True,
            cwd=Path(__file__).resolve().parent.parent,
        )
        self._procs.append(proc)
        assert proc.stdout is not None
        own, shared = map(int, proc.stdout.readline().split())
        return own, shared

    def __exit__(self, *exc: object) -> None:
        for proc in self._procs:
            proc.terminate()
        for proc in self._procs:
            proc.wait(timeout=30)
        self._procs = []

    @property
    def pids(self) -> list[int]:
        """The server processes' ids (their CPU time is read from `/proc`)."""
        return [proc.pid for proc in self._procs]

    def storage_options(self) -> dict[str, Any]:
        """obstore `S3Store` options that reach it (anonymous, plain HTTP)."""
        return spec.storage_options(self.endpoint)

    def set_latency(self, ms: float) -> None:
        """Delay every later answer by `ms`."""
        self.latency_ms = ms
        for control in self.controls:
            _control(control, "latency", {"ms": ms})

    def set_profile(self, profile: spec.Profile, seed: int = 0) -> None:
        """Answer as `profile` says from now on; the slow tail's draws restart at `seed`,
        so every engine's job meets the same sequence of slow answers."""
        self.latency_ms = profile.latency_ms
        network = {
            "latency_ms": profile.latency_ms,
            "bandwidth_mbps": profile.bandwidth_mbps,
            "tail_rate": profile.tail_rate,
            "tail_ms": profile.tail_ms,
        }
        for i, control in enumerate(self.controls):
            # each process its own sequence of slow answers, the same in every job
            _control(control, "network", network | {"seed": seed + i})

    def stats(self) -> dict[str, Any]:
        return stats(*self.controls)

    def reset(self) -> None:
        reset(*self.controls)


#: The connections the benchmarks' emulator holds at once. It stands for an object store,
#: which caps no client's connections; the emulator's default (1,000) counts the idle
#: pooled connections of a job's earlier repeats too, and four arrays' stores each keep
#: up to `max_concurrency` (256) of their own.
MAX_CONNECTIONS = 8192


async def _serve(root: str, latency_ms: float, shared: int | None) -> None:
    from aiozarr.emulator import Emulator

    async with Emulator(
        root, latency_ms=latency_ms, bucket=spec.BUCKET, max_connections=MAX_CONNECTIONS
    ) as emu:
        if shared is None:
            print(emu.port, flush=True)
        else:
            shared = await emu.listen_also(shared, reuse_port=True)
            print(emu.port, shared, flush=True)
        await asyncio.Event().wait()


if __name__ == "__main__":
    args = sys.argv[1:] + [None] * (3 - len(sys.argv[1:]))
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(
            _serve(args[0], float(args[1] or 0.0), None if args[2] is None else int(args[2]))
        )
