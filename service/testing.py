"""An in-process API server on a background thread, for tests and notebooks.

::

    with ServerThread(make_backend(config, settings), config) as server:
        client = Client(server.address)

The server runs on its own asyncio loop in a daemon thread, on a free loopback port.
"""

from __future__ import annotations

import asyncio
import threading

from .config import ServerConfig
from .server import Backend, RunningServer, start_server


class ServerThread:
    """`start_server` on a free port of 127.0.0.1 (or on `listen`), in a thread; a context
    manager."""

    def __init__(
        self, backend: Backend, config: ServerConfig | None = None, listen: str = "127.0.0.1:0"
    ):
        self.backend = backend
        self.config = config or ServerConfig()
        self.listen = listen
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.running: RunningServer | None = None

    @property
    def port(self) -> int:
        return self.running.port

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def web_url(self) -> str:
        """``http://127.0.0.1:<port>`` of the web view (a config with ``web_listen``)."""
        return f"http://127.0.0.1:{self.running.web_port}"

    def start(self) -> ServerThread:
        self.thread.start()
        future = asyncio.run_coroutine_threadsafe(
            start_server(self.backend, self.config, self.listen), self.loop
        )
        try:
            self.running = future.result(timeout=30)
        except BaseException:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)
            raise
        return self

    def stop(self, grace: float = 1.0) -> None:
        if self.running is not None:
            asyncio.run_coroutine_threadsafe(self.running.stop(grace), self.loop).result(30)
            self.running = None
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
