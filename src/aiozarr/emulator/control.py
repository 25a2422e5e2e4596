"""The emulator's control endpoints, never counted as requests:

    GET  /_emulator/stats     the counters (always on: it changes nothing)
    POST /_emulator/reset     zero the counters
    POST /_emulator/faults    {"kind": ..., <the arguments of inject>} or {"clear": true}
    POST /_emulator/latency   {"ms": 20}
    POST /_emulator/network   the arguments of set_network

The POSTs exist only when the emulator is made with `control=True` (`aiozarr serve
--faults`); otherwise they answer 404. They take JSON bodies only (`Content-Type:
application/json`, which a page cannot send cross-site without a preflight that is never
granted; anything else is 415) and every value is checked (400 with what was wrong).
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from aiohttp import web

from aiozarr.emulator.bodies import read_small
from aiozarr.emulator.s3 import S3Error

if TYPE_CHECKING:
    from aiozarr.emulator.server import Emulator

__all__ = ["add_control_routes"]

_CONTROL_BODY_BYTES = 64 << 10


class _BadRequest(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


async def _json_object(request: web.Request) -> dict[str, Any]:
    """The request's JSON object (an empty body is `{}`)."""
    try:
        raw = await read_small(request, _CONTROL_BODY_BYTES)
    except S3Error as exc:
        raise _BadRequest(exc.status, str(exc)) from None
    if not raw:
        return {}  # nothing to read, whatever its type says (an empty POST: a reset)
    if request.content_type != "application/json":
        raise _BadRequest(415, "send a JSON body with Content-Type: application/json")
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise _BadRequest(400, f"the body is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise _BadRequest(400, f"expected a JSON object, not {type(value).__name__}")
    return value


def add_control_routes(app: web.Application, emulator: Emulator, *, control: bool) -> None:
    """Route `/_emulator/...` of `app` to `emulator`; the POSTs only with `control`."""

    async def stats(request: web.Request) -> web.Response:
        return web.json_response(emulator.stats())

    app.router.add_get("/_emulator/stats", stats)
    if not control:

        async def off(request: web.Request) -> web.Response:
            return _error(
                404, "the control endpoints are off (aiozarr serve --faults turns them on)"
            )

        app.router.add_route("*", "/_emulator/{name:.*}", off)
        return

    def endpoint(action: Any) -> Any:
        async def handle(request: web.Request) -> web.Response:
            try:
                return await action(await _json_object(request))  # type: ignore[no-any-return]
            except _BadRequest as exc:
                return _error(exc.status, str(exc))
            except (TypeError, ValueError) as exc:
                return _error(400, str(exc))

        return handle

    async def reset(spec: dict[str, Any]) -> web.Response:
        if spec:
            raise ValueError(f"reset takes no arguments, not {sorted(spec)}")
        emulator.reset_stats()
        return web.json_response(emulator.stats())

    async def faults(spec: dict[str, Any]) -> web.Response:
        clear = spec.pop("clear", False)
        if not isinstance(clear, bool):
            raise ValueError(f"clear must be true or false, not {clear!r}")
        fault = None
        if "kind" in spec:
            fault = emulator.make_fault(**spec)  # checked before anything changes
        elif spec:
            raise ValueError(f"a fault needs a kind; got only {sorted(spec)}")
        if clear:
            emulator.clear_faults()
        if fault is not None:
            emulator.add_fault(fault)
        return web.json_response([asdict(f) for f in emulator.faults()])

    async def latency(spec: dict[str, Any]) -> web.Response:
        if set(spec) != {"ms"}:
            raise ValueError(f'expected {{"ms": <milliseconds>}}, got keys {sorted(spec)}')
        emulator.set_latency(spec["ms"])
        return web.json_response({"latency_ms": emulator.network()["latency_ms"]})

    async def network(spec: dict[str, Any]) -> web.Response:
        emulator.set_network(**spec)
        return web.json_response(emulator.network())

    for name, action in (
        ("reset", reset),
        ("faults", faults),
        ("latency", latency),
        ("network", network),
    ):
        app.router.add_post(f"/_emulator/{name}", endpoint(action))
