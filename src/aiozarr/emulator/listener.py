"""The emulator's listening socket: an aiohttp site that answers a connection over the cap
with a 503 and closes it, instead of holding it.

The cap counts the connections aiohttp holds when a new one is accepted; a burst of
connections accepted in one go may pass it by up to the listen backlog. Connections
that send no complete request head in time are closed by aiohttp's keep-alive timer
(the server passes the header timeout as `keepalive_timeout`: in aiohttp it runs from
the connection's start and from the end of each answer, and closes a connection still
waiting for a request head when it fires).
"""

from __future__ import annotations

import asyncio

from aiohttp import web

__all__ = ["BoundedSite"]

_BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\n"
    b"Content-Length: 24\r\nConnection: close\r\n\r\ntoo many connections now"
)


class _Busy(asyncio.Protocol):
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.WriteTransport)
        transport.write(_BUSY)
        transport.close()


class BoundedSite(web.BaseSite):
    """Serve `runner` on `host:port` (`port=0`: a free one, then `port` tells which),
    holding at most `max_connections` connections."""

    def __init__(self, runner: web.BaseRunner, host: str, port: int, max_connections: int) -> None:
        super().__init__(runner)
        self.host, self.port, self.max_connections = host, port, max_connections

    @property
    def name(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def start(self) -> None:
        await super().start()
        server = self._runner.server
        assert server is not None

        def connection() -> asyncio.BaseProtocol:
            if len(server.connections) >= self.max_connections:
                return _Busy()
            return server()

        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(connection, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]
