"""The emulator's listening socket: an aiohttp site that answers a connection over the cap
with a 503 and closes it, instead of holding it.

The cap must fit the process's open-file limit: a connection is a socket, and a file
while it reads or writes an object. Past the limit the server can accept nothing, not
even to answer 503, and clients wait in the listen backlog; so the soft limit is raised
toward the hard one at start, and the cap lowered to what still fits (`aiozarr serve`
says so).

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

__all__ = ["BoundedSite", "connections_that_fit"]

#: Files kept for the rest (the listening socket, logs, the threads' files, imports).
_SPARE_FILES = 64

_BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\n"
    b"Content-Length: 24\r\nConnection: close\r\n\r\ntoo many connections now"
)


def connections_that_fit(wanted: int) -> int:
    """`wanted`, or as many connections as the open-file limit has room for (two files
    each), once the soft limit is raised as far as needed and the hard one allows."""
    try:
        import resource
    except ImportError:  # Windows: no such limit to fit
        return wanted
    need = 2 * wanted + _SPARE_FILES
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < need:
        raised = need if hard == resource.RLIM_INFINITY else min(need, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
            soft = raised
        except (ValueError, OSError):
            pass
    if soft == resource.RLIM_INFINITY or soft >= need:
        return wanted
    return max(1, min(wanted, (soft - _SPARE_FILES) // 2))


class _Busy(asyncio.Protocol):
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.WriteTransport)
        transport.write(_BUSY)
        transport.close()


class BoundedSite(web.BaseSite):
    """Serve `runner` on `host:port` (`port=0`: a free one, then `port` tells which),
    holding at most `max_connections` connections; `reuse_port`: other processes may
    listen on the same port, and the system spreads connections among them."""

    def __init__(
        self,
        runner: web.BaseRunner,
        host: str,
        port: int,
        max_connections: int,
        *,
        reuse_port: bool = False,
    ) -> None:
        super().__init__(runner)
        self.host, self.port, self.max_connections = host, port, max_connections
        self.reuse_port = reuse_port

    @property
    def name(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def start(self) -> None:
        await super().start()
        self.max_connections = connections_that_fit(self.max_connections)
        server = self._runner.server
        assert server is not None

        def connection() -> asyncio.BaseProtocol:
            if len(server.connections) >= self.max_connections:
                return _Busy()
            return server()

        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            connection, self.host, self.port, reuse_port=self.reuse_port or None
        )
        self.port = self._server.sockets[0].getsockname()[1]
