"""An async web service that answers slice requests with `await arr.getitem`.

Needs the base install only: `pip install -e .` in a checkout of aiozarr (it is not
on the package index yet; `pip wheel --no-deps .` builds a wheel to install elsewhere).

    python examples/web_service.py              # serve on http://127.0.0.1:8080
    python examples/web_service.py --self-test  # 50 concurrent clients, then exit

The array lives on the bundled object-store emulator (20 ms per request, like a cloud
region). The service opens it once and answers

    GET /slice?sel=0:10,100:200   -> {"shape": [...], "dtype": ..., "values": [[...]]}
    GET /health                   -> "ok"

Every request awaits `arr.getitem`, so one process serves many clients at once: while
50 slice requests wait on the store, `/health` still answers at once.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import tempfile
import time

import aiohttp
import numpy as np
from aiohttp import web

import aiozarr
from aiozarr.emulator import Emulator

SHAPE = (512, 512)


def parse_selection(text: str) -> tuple[slice | int, ...]:
    """`"0:10,5"` -> `(slice(0, 10), 5)`."""
    parts: list[slice | int] = []
    for part in text.split(","):
        if ":" in part:
            parts.append(slice(*[int(b) if b else None for b in part.split(":")]))
        else:
            parts.append(int(part))
    return tuple(parts)


def make_app(arr: aiozarr.AsyncArray) -> web.Application:
    async def get_slice(request: web.Request) -> web.Response:
        try:
            selection = parse_selection(request.query.get("sel", ":,:"))
            values = await arr.getitem(selection)
        except (ValueError, IndexError) as error:
            return web.json_response({"error": str(error)}, status=400)
        values = np.asarray(values)
        return web.json_response(
            {"shape": list(values.shape), "dtype": str(values.dtype), "values": values.tolist()}
        )

    async def health(request: web.Request) -> web.Response:
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_get("/slice", get_slice)
    app.router.add_get("/health", health)
    return app


async def self_test(base: str, clients: int, expected: np.ndarray) -> None:
    """`clients` concurrent slice requests; `/health` probed while they are in flight."""
    rng = np.random.default_rng(0)
    starts = rng.integers(0, SHAPE[0] - 32, size=(clients, 2))
    async with aiohttp.ClientSession() as session:

        async def one(i: int) -> float:
            r, c = starts[i]
            began = time.perf_counter()
            async with session.get(
                f"{base}/slice", params={"sel": f"{r}:{r + 32},{c}:{c + 32}"}
            ) as resp:
                body = await resp.json()
            assert np.array_equal(
                np.array(body["values"], dtype="f4"), expected[r : r + 32, c : c + 32]
            ), f"client {i}: wrong values"
            return time.perf_counter() - began

        async def probe() -> list[float]:
            waits = []
            for _ in range(10):
                began = time.perf_counter()
                async with session.get(f"{base}/health") as resp:
                    assert await resp.text() == "ok"
                waits.append(time.perf_counter() - began)
                await asyncio.sleep(0.005)
            return waits

        began = time.perf_counter()
        slices, health = await asyncio.gather(asyncio.gather(*map(one, range(clients))), probe())
        total = time.perf_counter() - began
    print(
        f"{clients} concurrent clients: all values correct in {total * 1e3:.0f} ms "
        f"(per request median {statistics.median(slices) * 1e3:.0f} ms)"
    )
    print(f"/health while they ran: max {max(health) * 1e3:.1f} ms over {len(health)} probes")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--self-test", action="store_true", help="run clients, then exit")
    parser.add_argument("--clients", type=int, default=50)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="aiozarr-") as root:
        await serve(root, args)


async def serve(root: str, args: argparse.Namespace) -> None:
    async with Emulator(root) as emulator:
        options = emulator.storage_options()
        url = emulator.s3_url("service.zarr")
        data = np.random.default_rng(1).normal(size=SHAPE).astype("f4")
        writer = await aiozarr.create_array_async(
            url,
            shape=SHAPE,
            dtype="f4",
            chunks=(64, 64),
            shards=(256, 256),
            storage_options=options,
            overwrite=True,
        )
        await writer.setitem(..., data)
        emulator.set_latency(args.latency_ms)

        arr = await aiozarr.open_array_async(url, mode="r", storage_options=options)
        runner = web.AppRunner(make_app(arr))
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0 if args.self_test else args.port)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        base = f"http://127.0.0.1:{port}"
        try:
            if args.self_test:
                await self_test(base, args.clients, data)
            else:
                print(f"serving {url} at {base}/slice?sel=0:10,0:10 (Ctrl-C to stop)")
                await asyncio.Event().wait()
        finally:
            await runner.cleanup()


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main())
