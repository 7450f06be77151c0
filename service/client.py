"""A small Python client for the AzulSim API, with deadlines on every call.

::

    from service.client import Client
    from sim.jobs.spec import JobSpec

    with Client("127.0.0.1:50051") as c:
        spec = JobSpec.from_dict({"configurations": [{"players": 2, "bots": ["greedy", "random"]}],
                                  "games": 10000, "seed": 7})
        job, created = c.submit(spec, request_id="my-run-1")
        for update in c.watch(job.job_id):
            print(update.games_done, "/", update.games_total)
        doc = c.statistics_document(job.job_id)   # the same document as `azulsim simulate --json`

Calls raise `grpc.RpcError` (``.code()``, ``.details()``) on failure. Unary calls have a default
deadline (`DEFAULT_TIMEOUT_S`); `watch` has none and ends when the job does (or on cancel).
The bearer token travels as ``authorization`` metadata (grpc drops call credentials on insecure
channels, so it is not sent as call credentials).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import grpc

from sim.quote import shown
from workers.settings import from_env

from . import convert
from .api import azulsim_pb2 as pb
from .api import azulsim_pb2_grpc as pb_grpc
from .config import ClientSettings

DEFAULT_TIMEOUT_S = 30.0
REPLAY_TIMEOUT_S = 120.0
EXPORT_TIMEOUT_S = 600.0  # a whole job's records: the gather on the server and the transfer


class Client:
    """Client of ``azulsim.v1.AzulSim``.

    Parameters
    ----------
    address : ``host:port`` (default ``$AZULSIM_SERVER`` or ``127.0.0.1:50051``)
    token : bearer token (default ``$AZULSIM_TOKEN``); sent on every call when set
    tls_ca : PEM file of the CA that signed the server's certificate (default ``$AZULSIM_TLS_CA``);
        set: the channel uses TLS
    timeout : default deadline of unary calls, seconds
    max_message_bytes : largest reply accepted
    """

    def __init__(
        self,
        address: str | None = None,
        token: str | None = None,
        tls_ca: str | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
        max_message_bytes: int = 64 * 1024 * 1024,
        tls_server_name: str | None = None,
    ):
        env = from_env(ClientSettings)
        self.address = address or env.server
        token = token if token is not None else env.token
        tls_ca = tls_ca if tls_ca is not None else env.tls_ca
        self.timeout = timeout
        options = [
            ("grpc.max_receive_message_length", max_message_bytes),
            ("grpc.max_send_message_length", max_message_bytes),
            ("grpc.keepalive_time_ms", 30_000),
            ("grpc.keepalive_timeout_ms", 10_000),
        ]
        if tls_server_name:
            options.append(("grpc.ssl_target_name_override", tls_server_name))
        if tls_ca:
            creds = grpc.ssl_channel_credentials(root_certificates=Path(tls_ca).read_bytes())
            self.channel = grpc.secure_channel(self.address, creds, options=options)
        else:
            self.channel = grpc.insecure_channel(self.address, options=options)
        self.metadata = (("authorization", f"Bearer {token}"),) if token else ()
        self.stub = pb_grpc.AzulSimStub(self.channel)

    # -- context manager ---------------------------------------------------------------------

    def close(self) -> None:
        self.channel.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _kw(self, timeout: float | None) -> dict[str, Any]:
        return {"timeout": self.timeout if timeout is None else timeout, "metadata": self.metadata}

    def wait_ready(self, timeout: float = 10.0) -> None:
        """Block until the channel connects (raises grpc.FutureTimeoutError)."""
        grpc.channel_ready_future(self.channel).result(timeout=timeout)

    # -- calls -------------------------------------------------------------------------------

    def submit(
        self, spec, request_id: str = "", timeout: float | None = None
    ) -> tuple[pb.Job, bool]:
        """Submit a job spec; returns ``(job, created)``.

        `spec` is a `sim.jobs.spec.JobSpec`, a `pb.JobSpec`, or the spec's JSON form as a dict (the
        spec file format, e.g. ``{"configurations": [{"bots": ["greedy", "random"]}]}``, with
        the CLI's defaults; see `convert.spec_from_document`). A configuration's rules travel
        with it: ``{"bots": [...], "rules": {"column_bonus": 5}}`` (`sim.rules.rulesets`)."""
        if isinstance(spec, Mapping):
            spec = convert.spec_from_document(spec)
        msg = spec if isinstance(spec, pb.JobSpec) else convert.spec_to_proto(spec)
        reply = self.stub.SubmitJob(
            pb.SubmitJobRequest(spec=msg, request_id=request_id), **self._kw(timeout)
        )
        return reply.job, reply.created

    def get(self, job_id: str, timeout: float | None = None) -> pb.Job:
        return self.stub.GetJob(pb.GetJobRequest(job_id=job_id), **self._kw(timeout))

    def list(
        self, page_size: int = 0, page_token: str = "", timeout: float | None = None
    ) -> tuple[list[pb.Job], str]:
        """One page of jobs, newest first, and the next page's token ("" after the last)."""
        reply = self.stub.ListJobs(
            pb.ListJobsRequest(page_size=page_size, page_token=page_token), **self._kw(timeout)
        )
        return list(reply.jobs), reply.next_page_token

    def watch(
        self, job_id: str, interval_ms: int = 0, timeout: float | None = None
    ) -> Iterator[pb.Job]:
        """The job now and after each change, until it ends (no deadline unless `timeout`)."""
        return self.stub.WatchJob(
            pb.WatchJobRequest(job_id=job_id, interval_ms=interval_ms),
            timeout=timeout,
            metadata=self.metadata,
        )

    def cancel(self, job_id: str, timeout: float | None = None) -> pb.Job:
        return self.stub.CancelJob(pb.CancelJobRequest(job_id=job_id), **self._kw(timeout))

    def statistics(self, job_id: str, timeout: float | None = None) -> pb.Statistics:
        """The job's statistics, whatever their size: read with StreamStatistics (in parts,
        joined here), or GetStatistics from a server that has no StreamStatistics."""
        from .convert import statistics_joined

        request = pb.GetStatisticsRequest(job_id=job_id)
        try:
            return statistics_joined(self.stub.StreamStatistics(request, **self._kw(timeout)))
        except grpc.RpcError as exc:
            if exc.code() != grpc.StatusCode.UNIMPLEMENTED:
                raise
        return self.stub.GetStatistics(request, **self._kw(timeout))

    def statistics_document(self, job_id: str, timeout: float | None = None) -> dict[str, Any]:
        """The statistics document (as ``azulsim simulate --json`` prints it, minus ``timing``)."""
        return json.loads(self.statistics(job_id, timeout).statistics_json)

    def ratings(self, job_id: str, timeout: float | None = None) -> dict[str, Any]:
        """The ``ratings`` section of a tournament's statistics (a plain dict)."""
        doc = self.statistics_document(job_id, timeout)
        if "ratings" not in doc:
            raise ValueError(f"job {job_id} is not a tournament (its spec has no ratings)")
        return doc["ratings"]

    def frame(self, job_id: str, table: str = "statistics", timeout: float | None = None):
        """A table of the job's statistics as a pandas DataFrame (`sim.stats.frames`):
        ``statistics``, ``turn_order``, ``ratings``, ``head_to_head``, ``sweep`` or
        ``comparison``."""
        from sim.stats import frames

        if table not in frames.FRAMES:
            raise ValueError(f"table must be one of {', '.join(frames.FRAMES)}; got {shown(table)}")
        return getattr(frames, f"{table}_frame")(self.statistics_document(job_id, timeout))

    def statistics_frame(self, job_id: str, timeout: float | None = None):
        return self.frame(job_id, "statistics", timeout)

    def turn_order_frame(self, job_id: str, timeout: float | None = None):
        return self.frame(job_id, "turn_order", timeout)

    def ratings_frame(self, job_id: str, timeout: float | None = None):
        return self.frame(job_id, "ratings", timeout)

    def sweep_frame(self, job_id: str, timeout: float | None = None):
        return self.frame(job_id, "sweep", timeout)

    def comparison_frame(self, job_id: str, timeout: float | None = None):
        return self.frame(job_id, "comparison", timeout)

    def bots(self, timeout: float | None = None) -> list[pb.Bot]:
        return list(self.stub.ListBots(pb.ListBotsRequest(), **self._kw(timeout)).bots)

    def export_games(self, job_id: str, path: str | Path, timeout: float | None = None) -> int:
        """Write the per-game records of job `job_id` (submitted with ``game_records``) to the
        Parquet file `path`, as the server gathers them; the games (rows) written. The file
        appears whole or not at all (written beside it, then renamed)."""
        path = Path(path)
        tmp = path.with_name(f".{path.name}.part")
        games = 0
        try:
            with open(tmp, "wb") as f:
                for part in self.stub.ExportGames(
                    pb.ExportGamesRequest(job_id=job_id),
                    timeout=EXPORT_TIMEOUT_S if timeout is None else timeout,
                    metadata=self.metadata,
                ):
                    f.write(part.data)
                    games = part.games
            tmp.replace(path)
        finally:
            tmp.unlink(missing_ok=True)
        return games

    def replay(
        self, job_id: str, game: int, configuration: int = 0, timeout: float | None = None
    ) -> pb.Replay:
        return self.stub.ReplayGame(
            pb.ReplayGameRequest(job_id=job_id, configuration=configuration, game=game),
            **self._kw(REPLAY_TIMEOUT_S if timeout is None else timeout),
        )
