"""The web view's routes (aiohttp), served on the API server's event loop.

=================================================  =============================================
route                                              page
=================================================  =============================================
``GET /jobs?state=S&size=N&page=TOKEN``            jobs, newest first, a page at a time
``GET /jobs/{job_id}``                             a job: progress and statistics, kept live
``GET /jobs/{job_id}/live``                        the live parts as JSON (what the stream sends)
``GET /jobs/{job_id}/events``                      server-sent events: ``update`` at each
                                                   change, ``end`` when the job has ended
``GET /jobs/{job_id}/game?configuration=C&game=G`` a game replayed on drawn boards
``GET, POST /login``                               the token form (when auth is on)
``GET /static/...``                                the page's own script and style
=================================================  =============================================

Every read goes through the gRPC servicer's `Backend` and its GetStatistics cache, in its thread
pool; request fields are checked by `service.convert` as the RPCs check them, and refusals use
the same table (`service.web.errors`).
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from aiohttp import web

from ..api import azulsim_pb2 as pb
from ..convert import STATES, check_job_id, job_to_proto
from ..server.status import BadRequest, LimitExceeded, checked
from .auth import COOKIE, OPEN_PATHS, TokenCheck, safe_next
from .errors import http_status
from .feed import Feeds
from .jobs import configuration_summary, job_protos, progress, work_ahead
from .views import Views

log = logging.getLogger("azulsim.web")

STATIC = Path(__file__).resolve().parent / "static"
DEFAULT_PAGE = 50
MAX_PAGE = 200  # jobs a page shows
FILTER_PAGES = 20  # ListJobs pages read to fill one page of a state filter
MAX_QUERY_CHARS = 200  # longer query values are refused before they are read
SECURITY_HEADERS = {
    # Nothing from elsewhere: the page's script and style are its own files; SVGs are inline.
    "Content-Security-Policy": "default-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; frame-ancestors 'none'; form-action 'self'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


def _query(request: web.Request, name: str) -> str:
    value = request.query.get(name, "")
    if len(value) > MAX_QUERY_CHARS:
        raise BadRequest(f"{name} must be at most {MAX_QUERY_CHARS} characters; got {len(value)}")
    return value


def _whole(request: web.Request, name: str, default: int | None, lo: int, hi: int) -> int:
    text = _query(request, name).strip()
    if not text:
        if default is None:
            raise BadRequest(f"{name} is required")
        return default
    if not text.isascii() or not text.isdigit():
        raise BadRequest(f"{name} must be a whole number; got {text[:20]!r}")
    value = int(text)
    if not lo <= value <= hi:
        raise BadRequest(f"{name} must be in {lo}..{hi:,}; got {value if value < 1e12 else text}")
    return value


@dataclass
class WebView:
    """The routes' state: the servicer's backend, pool and statistics cache."""

    backend: Any  # service.server.Backend
    pool: Any  # its ThreadPoolExecutor
    replies: Any  # service.server.replies.StatisticsReplies (the servicer's)
    config: Any  # service.config.ServerConfig
    views: Views = field(default_factory=Views)
    replays: int = 0

    def __post_init__(self):
        self.auth = TokenCheck(self.config.auth_tokens) if self.config.auth_tokens else None
        self.feeds = Feeds(self.live_parts)

    async def call(self, fn, *args, **kwargs):
        work = partial(fn, *args, **kwargs)
        return await asyncio.get_running_loop().run_in_executor(self.pool, work)

    # --- blocking helpers, run in the pool -----------------------------------------------------

    def _live(self, job_id: str, ahead, recount: bool, statistics: str | None = None):
        """The job's live parts; `statistics`: the statistics HTML to show again instead of
        reading GetStatistics now (the feed spaces out derivations of a big running job)."""
        if statistics is None:
            shown = self.replies.document(self.backend, job_id)
            job, statistics = shown.job, self.views.statistics(shown)
        else:
            info = self.backend.get(job_id)
            if info.finished:  # the last figures are always GetStatistics' of the ended job
                return self._live(job_id, ahead, recount)
            job = job_to_proto(info)
        if job.state != pb.QUEUED:
            ahead = None
        elif recount or ahead is None:
            ahead = work_ahead(self.backend, [job]).get(job_id)
        return job, self.views.live_parts(job, statistics, ahead), ahead

    async def live_parts(self, job_id: str, ahead, recount: bool, statistics: str | None = None):
        _, parts, ahead = await self.call(self._live, job_id, ahead, recount, statistics)
        return parts, ahead

    def _jobs(self, state: str, size: int, token: str):
        """A page of jobs (only those in `state` when given) and the next page's token."""
        shown: list = []
        for _ in range(FILTER_PAGES if state else 1):
            page, token = self.backend.list(size - len(shown) if not state else size, token)
            shown += [i for i in page if not state or i.state == state]
            if len(shown) >= size or not token:
                break
        jobs = job_protos(shown[:size])
        ahead = work_ahead(self.backend, jobs)
        rows = [progress(j, ahead.get(j.job_id)) for j in jobs]
        return self.views.page(
            "jobs.html", rows=rows, state=state, states=STATES, size=size, next_token=token
        )

    def _job(self, job_id: str):
        job, parts, _ = self._live(job_id, None, True)
        spec = job.spec
        return self.views.page(
            "job.html",
            job=job,
            live=parts,
            configurations=[
                f"{k}: {configuration_summary(c, spec, seating=False)}"
                for k, c in enumerate(spec.configurations)
            ],
            games=spec.games,
        )

    def _game(self, job_id: str, configuration: int, game: int):
        info, replay = self.backend.replay(job_id, configuration, game)
        return self.views.game(replay, info.job_id)

    # --- routes ---------------------------------------------------------------------------------

    async def jobs(self, request: web.Request) -> web.Response:
        state = _query(request, "state").upper()
        if state and state not in STATES:
            raise BadRequest(f"state must be one of {', '.join(STATES)}; got {state[:20]!r}")
        size = _whole(request, "size", DEFAULT_PAGE, 1, MAX_PAGE)
        token = _query(request, "page")
        return _html(await self.call(self._jobs, state, size, token))

    async def job(self, request: web.Request) -> web.Response:
        job_id = checked(check_job_id, request.match_info["job_id"])
        return _html(await self.call(self._job, job_id))

    async def live(self, request: web.Request) -> web.Response:
        job_id = checked(check_job_id, request.match_info["job_id"])
        parts, _ = await self.live_parts(job_id, None, True)
        return web.json_response(parts, headers={"Cache-Control": "no-store"})

    async def events(self, request: web.Request) -> web.StreamResponse:
        job_id = checked(check_job_id, request.match_info["job_id"])
        await self.call(self.backend.get, job_id)  # NOT_FOUND as a status, before the stream
        limit = self.config.max_watches
        if self.feeds.watchers() >= limit:
            raise LimitExceeded(
                f"{limit} pages are watching jobs (the server's limit); reload later"
            )
        response = web.StreamResponse(
            headers={
                "Content-Type": "text/event-stream",
                "Cache-Control": "no-store",
                "X-Accel-Buffering": "no",  # nginx: pass each event on at once
            }
        )
        await response.prepare(request)
        try:
            async with self.feeds.watch(job_id) as feed:
                async for data in feed.follow():
                    if data is None:
                        await response.write(b": keep-alive\n\n")
                        continue
                    await response.write(f"event: update\ndata: {data}\n\n".encode())
                # The job has ended: the page closes its EventSource on this (else it reconnects).
                await response.write(b"event: end\ndata: {}\n\n")
        except (ConnectionResetError, asyncio.CancelledError):
            pass  # the page went away, or the server is stopping
        return response

    async def game(self, request: web.Request) -> web.Response:
        job_id = checked(check_job_id, request.match_info["job_id"])
        configuration = _whole(request, "configuration", 0, 0, 10**9)
        game = _whole(request, "game", 0, 0, 10**15)
        if self.replays >= self.config.max_replays:
            raise LimitExceeded(
                f"{self.config.max_replays} replays are running (the server's limit); retry later"
            )
        self.replays += 1
        try:
            html = await self.call(self._game, job_id, configuration, game)
        finally:
            self.replays -= 1
        return _html(html)

    async def login_form(self, request: web.Request) -> web.Response:
        target = safe_next(_query(request, "next"))
        return _html(await self.call(self.views.page, "login.html", next=target, error=""))

    async def login(self, request: web.Request) -> web.Response:
        form = await request.post()
        token = str(form.get("token", ""))[:512]
        target = safe_next(str(form.get("next", "/jobs"))[:MAX_QUERY_CHARS])
        response = web.Response(status=303, headers={"Location": target})
        if self.auth is None:
            return response
        if not self.auth.valid(token.strip()):
            html = await self.call(
                self.views.page, "login.html", next=target, error="that token is not accepted"
            )
            return _html(html, status=401)
        response.set_cookie(
            COOKIE,
            token.strip(),
            httponly=True,
            samesite="Strict",
            secure=bool(self.config.tls_cert),
            path="/",
        )
        return response

    # --- middleware ---------------------------------------------------------------------------

    @web.middleware
    async def guard(self, request: web.Request, handler):
        """Tokens when auth is on; every failure a page with its status (never a traceback)."""
        began = time.perf_counter()
        try:
            if self.auth is not None and not request.path.startswith(OPEN_PATHS):
                if not self.auth.allows(request):
                    return await self._refuse(request)
            response = await handler(request)
        except web.HTTPException as exc:
            if exc.status < 400:
                raise
            response = await self._error(exc.status, exc.reason)
        except Exception as exc:  # noqa: BLE001 - a status for every failure
            code, message = http_status(exc)
            if code == 500:
                log.exception("web view: %s %s failed", request.method, request.path_qs[:200])
            response = await self._error(code, message)
        if not response.prepared:
            response.headers.update(SECURITY_HEADERS)
            # The server's own time for the page (what bench/web.py measures), W3C Server-Timing.
            response.headers["Server-Timing"] = f"app;dur={1e3 * (time.perf_counter() - began):.1f}"
        return response

    async def _refuse(self, request: web.Request) -> web.Response:
        if request.path.endswith(("/events", "/live")):
            return web.json_response(
                {"error": "this server needs a bearer token"},
                status=401,
                headers={"WWW-Authenticate": "Bearer"},
            )
        target = safe_next(request.path_qs[:MAX_QUERY_CHARS])
        html = await self.call(
            self.views.page, "login.html", next=target, error="this server needs a bearer token"
        )
        return _html(html, status=401, headers={"WWW-Authenticate": "Bearer"})

    async def _error(self, status: int, message: str) -> web.Response:
        html = await self.call(self.views.page, "error.html", status=status, message=message)
        return _html(html, status=status)

    def application(self) -> web.Application:
        app = web.Application(middlewares=[self.guard], client_max_size=16 * 1024)
        app.router.add_get("/", _to_jobs)
        app.router.add_get("/jobs", self.jobs)
        app.router.add_get("/jobs/{job_id}", self.job)
        app.router.add_get("/jobs/{job_id}/live", self.live)
        app.router.add_get("/jobs/{job_id}/events", self.events, allow_head=False)  # a stream
        app.router.add_get("/jobs/{job_id}/game", self.game)
        app.router.add_get("/login", self.login_form)
        app.router.add_post("/login", self.login)
        app.router.add_static("/static/", STATIC)
        return app


async def _to_jobs(request: web.Request) -> web.Response:
    raise web.HTTPFound("/jobs")


def _html(text: str, status: int = 200, headers: dict | None = None) -> web.Response:
    response = web.Response(text=text, status=status, content_type="text/html", headers=headers)
    response.enable_compression()  # a game's boards are repetitive SVG: a tenth of the bytes
    return response


@dataclass
class RunningWeb:
    view: WebView
    runner: web.AppRunner
    port: int

    async def stop(self) -> None:
        await self.view.feeds.close()  # open event streams end now
        await self.runner.cleanup()


def _split(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    if not port.isdigit():
        raise ValueError(f"AZULSIM_WEB_LISTEN must be host:port; got {address!r}")
    return host.strip("[]") or "0.0.0.0", int(port)


async def start_web(backend, pool, replies, config) -> RunningWeb:
    """Serve the web view on ``config.web_listen`` (HTTPS with the API's certificate under TLS)."""
    view = WebView(backend, pool, replies, config)
    runner = web.AppRunner(
        view.application(), access_log=None, handle_signals=False, shutdown_timeout=2.0
    )
    await runner.setup()
    host, port = _split(config.web_listen)
    context = None
    if config.tls_cert:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(config.tls_cert, config.tls_key)
    site = web.TCPSite(runner, host, port, ssl_context=context)
    try:
        await site.start()
    except OSError as exc:
        await runner.cleanup()
        raise OSError(
            f"cannot serve the web view on {config.web_listen}: {exc.strerror or exc} "
            "(AZULSIM_WEB_LISTEN; another `azulsim up` or `azulsim serve`?)"
        ) from None
    bound = runner.addresses[0][1]
    return RunningWeb(view, runner, bound)
