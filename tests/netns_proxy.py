"""A TCP proxy for network-fault tests: latency, resets and stalls on the path to a server.

This kernel has no netem qdisc, so what netem would do to a link is done here, per connection:

* ``latency``: every byte is passed on that many seconds after it arrived, in each direction
  (order kept; a round trip gains twice the figure);
* ``reset``: every open connection of the route is closed with a TCP RST on both sides (SO_LINGER
  0), as a stateful firewall or a load balancer that forgets its connections does;
* ``stall``: a black hole that keeps the connections open: nothing is read or passed on, new
  connections are accepted but not connected upstream, until the stall is lifted (then what was
  held is delivered, as TCP would after retransmitting).

Run it (``python tests/netns_proxy.py --control SOCK --route NAME=LISTEN_HOST:PORT=UP_HOST:PORT
...``) inside a test host's namespace; it is driven over the UNIX socket ``SOCK`` (a path in the
file system, so reachable from every network namespace) with one JSON object per line, answered
by one JSON line:

``{"op": "set", "route": "w1", "latency": 0.2}``  (``"route": "*"``: every route)
``{"op": "stall", "route": "w1", "on": true}``
``{"op": "reset", "route": "w1"}``  -> ``{"ok": true, "reset": <connections>}``
``{"op": "stats"}``  -> per route: open connections, connections accepted so far, resets
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import struct
import time
from dataclasses import dataclass, field


@dataclass
class Route:
    name: str
    listen: tuple[str, int]
    upstream: tuple[str, int]
    latency: float = 0.0
    open: asyncio.Event = field(default_factory=asyncio.Event)  # set: not stalled
    conns: set = field(default_factory=set)
    accepted: int = 0
    resets: int = 0

    def __post_init__(self) -> None:
        self.open.set()


class Conn:
    """One proxied connection: the client's and the upstream's stream pairs and their pumps."""

    def __init__(self, route: Route, client: tuple):
        self.route = route
        self.client = client
        self.upstream: tuple | None = None
        self.tasks: list[asyncio.Task] = []
        self.closed = False

    async def run(self) -> None:
        route = self.route
        await route.open.wait()  # a stall holds new connections before they reach the server
        try:
            self.upstream = await asyncio.open_connection(*route.upstream)
        except OSError:
            self.close(rst=True)
            return
        self.tasks = [
            asyncio.create_task(self._pump(self.client[0], self.upstream[1])),
            asyncio.create_task(self._pump(self.upstream[0], self.client[1])),
        ]
        await asyncio.wait(self.tasks, return_when=asyncio.FIRST_COMPLETED)
        self.close(rst=False)

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        queue: asyncio.Queue = asyncio.Queue()

        async def deliver() -> None:
            while True:
                due, data = await queue.get()
                if data is None:
                    return
                delay = due - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                await self.route.open.wait()
                writer.write(data)
                await writer.drain()

        sender = asyncio.create_task(deliver())
        try:
            while True:
                await self.route.open.wait()
                data = await reader.read(65536)
                if not data:
                    break
                await self.route.open.wait()
                queue.put_nowait((time.monotonic() + self.route.latency, data))
            queue.put_nowait((0.0, None))
            await sender
        except (OSError, asyncio.CancelledError):
            pass
        finally:
            sender.cancel()

    def close(self, rst: bool) -> None:
        if self.closed:
            return
        self.closed = True
        for task in self.tasks:
            task.cancel()
        for pair in (self.client, self.upstream):
            if pair is None:
                continue
            writer = pair[1]
            sock = writer.get_extra_info("socket")
            if rst and sock is not None:
                try:  # linger 0: close() sends RST instead of FIN
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                except OSError:
                    pass
            try:
                writer.transport.abort() if rst else writer.close()
            except Exception:  # noqa: BLE001 - already closed
                pass
        self.route.conns.discard(self)


async def serve_route(route: Route) -> asyncio.AbstractServer:
    async def accepted(reader, writer):
        route.accepted += 1
        conn = Conn(route, (reader, writer))
        route.conns.add(conn)
        await conn.run()

    return await asyncio.start_server(accepted, *route.listen, reuse_address=True)


def control_reply(routes: dict[str, Route], cmd: dict) -> dict:
    op = cmd.get("op")
    if op == "stats":
        return {
            "ok": True,
            "routes": {
                n: {
                    "open": len(r.conns),
                    "accepted": r.accepted,
                    "resets": r.resets,
                    "latency": r.latency,
                    "stalled": not r.open.is_set(),
                }
                for n, r in routes.items()
            },
        }
    name = cmd.get("route", "*")
    chosen = list(routes.values()) if name == "*" else [routes[name]]
    if op == "set":
        for r in chosen:
            r.latency = float(cmd.get("latency", r.latency))
        return {"ok": True}
    if op == "stall":
        for r in chosen:
            r.open.clear() if cmd.get("on", True) else r.open.set()
        return {"ok": True}
    if op == "reset":
        n = 0
        for r in chosen:
            for conn in list(r.conns):
                conn.close(rst=True)
                n += 1
            r.resets += 1
        return {"ok": True, "reset": n}
    return {"ok": False, "error": f"unknown op {op!r}"}


async def main(args: argparse.Namespace) -> None:
    routes: dict[str, Route] = {}
    for text in args.route:
        name, listen, up = text.split("=")
        lh, lp = listen.rsplit(":", 1)
        uh, up_ = up.rsplit(":", 1)
        routes[name] = Route(name, (lh, int(lp)), (uh, int(up_)))
    servers = [await serve_route(r) for r in routes.values()]

    async def control(reader, writer):
        while line := await reader.readline():
            try:
                reply = control_reply(routes, json.loads(line))
            except Exception as exc:  # noqa: BLE001 - a bad command is answered, not fatal
                reply = {"ok": False, "error": repr(exc)}
            writer.write((json.dumps(reply) + "\n").encode())
            await writer.drain()
        writer.close()

    ctl = await asyncio.start_unix_server(control, path=args.control)
    print("proxy ready", flush=True)
    async with ctl:
        await asyncio.gather(*(s.serve_forever() for s in servers), ctl.serve_forever())


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--control", required=True, help="UNIX socket path for commands")
    parser.add_argument("--route", action="append", default=[], help="NAME=HOST:PORT=HOST:PORT")
    asyncio.run(main(parser.parse_args()))
