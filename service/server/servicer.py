"""The ``azulsim.v1.AzulSim`` servicer: validate the request (`service.convert`), call one
`Backend` function in the thread pool — so Redis and Celery calls never block the event loop —
and build the reply. Every failure becomes a status through `service.server.status`."""

from __future__ import annotations

import asyncio
import logging
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import grpc

from .. import convert
from ..api import azulsim_pb2 as pb
from ..api import azulsim_pb2_grpc as pb_grpc
from ..config import ServerConfig
from .backend import Backend
from .replies import StatisticsReplies
from .status import checked, message, status_of

log = logging.getLogger("azulsim.server")

T = TypeVar("T")
EXPORT_PIECE_BYTES = 1 << 20  # well under any message limit (gRPC's default is 4 MiB)


class AzulSimServicer(pb_grpc.AzulSimServicer):
    """``azulsim.v1.AzulSim``: validate, call `Backend` in a thread, build the reply."""

    def __init__(self, backend: Backend, pool: ThreadPoolExecutor, config: ServerConfig):
        self.backend, self.pool, self.config = backend, pool, config
        self.watches = 0
        self.replays = 0
        self.exports = 0  # each gathers a job's records into a temporary Parquet file
        self.replies = StatisticsReplies()

    async def _abort(self, context, exc: Exception, where: Any) -> NoReturn:
        """Abort the call with the status of `exc`; re-raise an unexpected one (logged)."""
        code = status_of(exc)
        if code is None:
            log.exception("unexpected error in %s", getattr(where, "__name__", where))
            raise exc
        await context.abort(code, message(exc))
        raise exc  # unreachable: abort raises

    async def _check(self, context, fn: Callable[..., T], *args: Any) -> T:
        """Validate a request field (in the loop: it is cheap)."""
        try:
            return checked(fn, *args)
        except Exception as exc:  # noqa: BLE001 - mapped to a status, or re-raised
            await self._abort(context, exc, fn)

    async def _call(self, context, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(*args)`` in the pool."""
        remaining = context.time_remaining()
        if remaining is not None and remaining <= 0:
            await context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, "deadline exceeded")
        work = asyncio.get_running_loop().run_in_executor(self.pool, partial(fn, *args))
        try:
            if remaining is None:
                return await work
            # Answer before the deadline: a Redis call stuck in a partition (or a pool full of
            # them) gives UNAVAILABLE, which clients retry, not DEADLINE_EXCEEDED. The thread
            # finishes on its own; a submit it completes late is found again by request_id.
            return await asyncio.wait_for(work, max(0.0, remaining - min(0.25, remaining / 10)))
        except TimeoutError:
            await context.abort(
                grpc.StatusCode.UNAVAILABLE,
                "the job store (Redis) did not answer within the call's deadline",
            )
        except Exception as exc:  # noqa: BLE001 - mapped to a status, or re-raised
            await self._abort(context, exc, fn)

    async def SubmitJob(self, request, context):
        spec = await self._check(
            context, convert.spec_from_proto, request.spec, request.HasField("spec")
        )
        request_id = await self._check(context, convert.check_request_id, request.request_id)
        info, created = await self._call(context, self.backend.submit, spec, request_id)
        return pb.SubmitJobResponse(job=convert.job_to_proto(info), created=created)

    async def GetJob(self, request, context):
        job_id = await self._check(context, convert.check_job_id, request.job_id)
        return convert.job_to_proto(await self._call(context, self.backend.get, job_id))

    async def ListJobs(self, request, context):
        size = await self._check(context, convert.page_size, request.page_size)
        jobs, token = await self._call(context, self.backend.list, size, request.page_token)
        return pb.ListJobsResponse(
            jobs=[convert.job_to_proto(j) for j in jobs], next_page_token=token or ""
        )

    async def WatchJob(self, request, context):
        job_id = await self._check(context, convert.check_job_id, request.job_id)
        interval = await self._check(context, convert.watch_interval_s, request.interval_ms)
        if self.watches >= self.config.max_watches:
            await context.abort(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"{self.config.max_watches} WatchJob streams are open (the server's limit); "
                "poll GetJob or retry later",
            )
        self.watches += 1
        try:
            last = None
            while True:
                info = await self._call(context, self.backend.get, job_id)
                job = convert.job_to_proto(info)
                key = job.SerializeToString(deterministic=True)
                if key != last:
                    last = key
                    yield job
                if info.state in convert.TERMINAL:
                    return
                await asyncio.sleep(interval)
        finally:
            self.watches -= 1

    async def CancelJob(self, request, context):
        job_id = await self._check(context, convert.check_job_id, request.job_id)
        return convert.job_to_proto(await self._call(context, self.backend.cancel, job_id))

    async def GetStatistics(self, request, context):
        job_id = await self._check(context, convert.check_job_id, request.job_id)
        reply = await self._call(context, self._statistics, job_id)
        await self._fits(
            context,
            reply,
            f"the statistics of job {job_id} are",
            ": StreamStatistics sends them in parts (as the azulsim client and CLI do)",
        )
        return reply

    async def StreamStatistics(self, request, context):
        job_id = await self._check(context, convert.check_job_id, request.job_id)
        reply = await self._call(context, self._statistics, job_id)
        # Half the limit per part: the first part carries the job and the bot summaries too.
        for part in convert.statistics_parts(reply, max(1024, self.config.max_message_bytes // 2)):
            yield part

    def _statistics(self, job_id: str) -> pb.Statistics:
        """The reply for the job as it is now (in the pool): many clients polling one running job
        share one derivation per merged chunk."""
        return self.replies.reply(self.backend, job_id)

    async def ListBots(self, request, context):
        from sim.bots.registry import list_bots

        return convert.bots_to_proto(await self._call(context, list_bots))

    async def ReplayGame(self, request, context):
        job_id, configuration, game = await self._check(context, convert.replay_target, request)
        if self.replays >= self.config.max_replays:
            await context.abort(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"{self.config.max_replays} replays are running (the server's limit); retry later",
            )
        self.replays += 1
        try:
            info, replay = await self._call(
                context, self.backend.replay, job_id, configuration, game
            )
        finally:
            self.replays -= 1
        reply = convert.replay_to_proto(job_id, replay, info.rules_version or "")
        # A game near a 1,000-round cap can run to tens of MiB.
        steps = len(reply.steps)
        await self._fits(context, reply, f"the replay of game {game} ({steps:,} steps) is")
        return reply

    async def _fits(self, context, reply, what: str, hint: str = "") -> None:
        """Abort with RESOURCE_EXHAUSTED when `reply` is above the server's message limit: said
        here, naming what and the setting, rather than as gRPC's bare "sent message larger than
        max"."""
        if (size := reply.ByteSize()) > self.config.max_message_bytes:
            await context.abort(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"{what} {size:,} bytes, above this server's message limit of "
                f"{self.config.max_message_bytes:,} (AZULSIM_MAX_MESSAGE_BYTES){hint}",
            )

    async def ExportGames(self, request, context):
        job_id = await self._check(context, convert.check_job_id, request.job_id)
        if self.exports >= self.config.max_exports:
            await context.abort(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"{self.config.max_exports} exports are running (the server's limit); retry later",
            )
        self.exports += 1
        try:
            with tempfile.TemporaryDirectory(prefix="azulsim-export-") as tmp:
                path = Path(tmp) / "games.parquet"
                games = await self._call(context, self.backend.export_games, job_id, path)
                with open(path, "rb") as f:
                    while data := await self._call(context, f.read, EXPORT_PIECE_BYTES):
                        yield pb.GameRecordsPart(data=data, games=games)
        finally:
            self.exports -= 1
