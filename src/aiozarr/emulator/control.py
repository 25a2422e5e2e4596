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

They act on the emulator's `Conditions` (serving_conditions.py), its counters and the shaping
and fault rules in force, and on nothing else.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import asdict
from typing import Any

from aiohttp import web

from aiozarr.emulator.bodies import read_small
from aiozarr.emulator.s3 import S3Error
from aiozarr.emulator.serving_conditions import Conditions

__all__ = ["add_control_routes"]

_CONTROL_BODY_BYTES = 64 << 10

#: What a control POST does with its JSON object: the answer, or TypeError / ValueError.
Action = Callable[[Conditions, dict[str, Any]], web.Response]


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


def _reset(conditions: Conditions, spec: dict[str, Any]) -> web.Response:
    if spec:
        raise ValueError(f"reset takes no arguments, not {sorted(spec)}")
    conditions.reset_stats()
    return web.json_response(conditions.stats())


def _faults(conditions: Conditions, spec: dict[str, Any]) -> web.Response:
    clear = spec.pop("clear", False)
    if not isinstance(clear, bool):
        raise ValueError(f"clear must be true or false, not {clear!r}")
    fault = None
    if "kind" in spec:
        fault = conditions.make_fault(**spec)  # checked before anything changes
    elif spec:
        raise ValueError(f"a fault needs a kind; got only {sorted(spec)}")
    if clear:
        conditions.clear_faults()
    if fault is not None:
        conditions.add_fault(fault)
    return web.json_response([asdict(f) for f in conditions.faults()])


def _latency(conditions: Conditions, spec: dict[str, Any]) -> web.Response:
    if set(spec) != {"ms"}:
        raise ValueError(f'expected {{"ms": <milliseconds>}}, got keys {sorted(spec)}')
    conditions.set_latency(spec["ms"])
    return web.json_response({"latency_ms": conditions.network()["latency_ms"]})


def _network(conditions: Conditions, spec: dict[str, Any]) -> web.Response:
    conditions.set_network(**spec)
    return web.json_response(conditions.network())


_ACTIONS: dict[str, Action] = {
    "reset": _reset,
    "faults": _faults,
    "latency": _latency,
    "network": _network,
}


def _endpoint(
    action: Action, conditions: Conditions
) -> Callable[[web.Request], Awaitable[web.Response]]:
    """The handler of one control POST: its JSON object to `action`, a bad one a 4xx."""

    async def handle(request: web.Request) -> web.Response:
        try:
            return action(conditions, await _json_object(request))
        except _BadRequest as exc:
            return _error(exc.status, str(exc))
        except (TypeError, ValueError) as exc:
            return _error(400, str(exc))

    return handle


def add_control_routes(app: web.Application, conditions: Conditions, *, control: bool) -> None:
    """Route `/_emulator/...` of `app` to `conditions`; the POSTs only with `control`."""

    async def stats(request: web.Request) -> web.Response:
        return web.json_response(conditions.stats())

    async def off(request: web.Request) -> web.Response:
        return _error(404, "the control endpoints are off (aiozarr serve --faults turns them on)")

    app.router.add_get("/_emulator/stats", stats)
    if not control:
        app.router.add_route("*", "/_emulator/{name:.*}", off)
        return
    for name, action in _ACTIONS.items():
        app.router.add_post(f"/_emulator/{name}", _endpoint(action, conditions))
