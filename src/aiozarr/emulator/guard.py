"""Who may ask the emulator what: the `Host` check, the cross-site check on requests that
change something, and CORS (for reads only).

- `Host` must name this server: an IP address (a page can only send one when its own
  origin is that address), `localhost`, the address it listens on, or a name the user
  allowed. Anything else is refused (403): a page whose name was re-pointed at 127.0.0.1
  (DNS rebinding) sends its own name. The port is not compared: it adds nothing against
  rebinding and would break port forwarding.
- A request that is not a read (PUT, POST, DELETE: writes and the control endpoints) is
  refused (403) when it carries an `Origin` other than this server's own, or a
  `Sec-Fetch-Site` other than `same-origin`/`none`. Browsers send `Origin` on every such
  request, "simple" ones (a text/plain or form POST, which has no preflight) included.
  Clients that are not browsers send neither, and are served.
- CORS: any page may read (GET, HEAD, with the headers range reads use), as a browser
  viewer needs; no page is granted a write.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from aiohttp import web

__all__ = ["READS", "Guard"]

READS = frozenset({"GET", "HEAD", "OPTIONS"})
_CORS_HEADERS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Expose-Headers": "Content-Range, Content-Length, ETag, Last-Modified, "
    "Accept-Ranges, x-goog-generation",
}
_READ_REQUEST_HEADERS = frozenset(
    {
        "range",
        "if-match",
        "if-none-match",
        "if-modified-since",
        "if-unmodified-since",
        "authorization",
        "cache-control",
    }
)


def _hostname(header: str) -> str:
    """The name in a `Host` header, without its port or IPv6 brackets, lower case."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1:].partition("]")[0]
    return header.rpartition(":")[0] if header.count(":") == 1 else header


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


class Guard:
    """The checks for a server listening on `host`; `allowed_hosts`: more names that may
    reach it (when it listens on all addresses, say, and is reached by a host name)."""

    def __init__(self, host: str, allowed_hosts: Iterable[str] = ()) -> None:
        self.names = {"localhost", _hostname(host)} | {_hostname(h) for h in allowed_hosts}

    def refusal(self, request: web.Request) -> str | None:
        """Why `request` is refused, or None."""
        host = request.headers.get("Host")
        if host is not None:
            name = _hostname(host)
            if name not in self.names and not _is_ip(name):
                return (
                    f"Host {host!r} is not this server (allow a name with --allow-host); "
                    "refused to defeat DNS rebinding"
                )
        if request.method in READS:
            return None
        origin = request.headers.get("Origin")
        if origin is not None and origin.lower() != f"http://{host or ''}".lower():
            return f"cross-site {request.method} from Origin {origin!r} refused"
        site = request.headers.get("Sec-Fetch-Site")
        if site is not None and site.lower() not in ("same-origin", "none"):
            return f"{site} {request.method} refused"
        return None

    @staticmethod
    def add_cors(request: web.Request, response: web.StreamResponse) -> None:
        """CORS headers on the answers to reads (none on writes)."""
        if request.method in ("GET", "HEAD"):
            response.headers.update(_CORS_HEADERS)

    @staticmethod
    def preflight(request: web.Request) -> web.Response:
        """The answer to a CORS preflight: reads are granted, nothing else."""
        method = request.headers.get("Access-Control-Request-Method", "").upper()
        if method not in ("GET", "HEAD"):
            return web.Response(status=403, text=f"no page is granted {method or 'this'}\n")
        asked = request.headers.get("Access-Control-Request-Headers", "")
        granted = [
            h.strip()
            for h in asked.split(",")
            if h.strip().lower() in _READ_REQUEST_HEADERS
            or h.strip().lower().startswith(("x-amz-", "amz-sdk-"))
        ]
        headers = {
            **_CORS_HEADERS,
            "Access-Control-Allow-Methods": "GET, HEAD",
            "Access-Control-Max-Age": "3600",
        }
        if granted:
            headers["Access-Control-Allow-Headers"] = ", ".join(granted)
        return web.Response(status=204, headers=headers)
