"""The gRPC server against a real Redis, with no worker: status codes, messages, limits, auth,
health, reflection, deadlines, TLS and graceful shutdown."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest

from service.api import azulsim_pb2 as pb
from service.client import Client
from service.config import ServerConfig
from tests.stack_util import ApiProcess, api_thread

pytest.importorskip("workers.store")
from tests.waits import generous
from workers.settings import load_settings  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
C = grpc.StatusCode


def _spec(players=2, bots=("greedy", "random"), games=100, seed=1, max_rounds=0, **extra):
    return pb.JobSpec(
        configurations=[pb.Configuration(players=players, bots=list(bots), **extra)],
        games=games,
        seed=seed,
        max_rounds=max_rounds,
    )


@pytest.fixture
def start(api_server):
    """Factory: a client of a fresh in-process server (``api_server``'s arguments)."""

    def start(env_extra=None, **config) -> Client:
        token = config.pop("token", "")
        return Client(api_server(env_extra, **config).address, token=token, timeout=10)

    return start


@pytest.fixture
def client(start):
    return start()


def _code(call, *args, **kwargs) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.RpcError) as info:
        call(*args, **kwargs)
    return info.value.code(), info.value.details()


BAD_SPECS = [
    (_spec(players=5), "spec.configurations[0].players must be 2, 3 or 4; got 5"),
    (_spec(bots=("greedy", "nope")), "spec.configurations[0].bots[1]: unknown bot 'nope'"),
    (_spec(bots=("greedy",)), "spec.configurations[0].bots must name one bot per seat (2)"),
    (_spec(bots=("heuristic:floor=99", "random")), "parameter 'floor' must be"),
    (_spec(games=0), "spec.games must be an integer of at least 1; got 0"),
    (_spec(seed=2**63), "spec.seed must be an integer between 0 and 2**63-1"),
    (pb.JobSpec(games=10, seed=1), "spec.configurations must hold at least one configuration"),
    (
        _spec(seating=9),
        "spec.configurations[0].seating must be ROTATE, FIXED, SHUFFLE or MIRRORED; got 9",
    ),
    (_spec(wall=7), "spec.configurations[0].wall must be COLOURED or GRAY; got 7"),
    (_spec(bots=("x" * 201, "random")), "spec.configurations[0].bots[0] must be at most 200"),
]


@pytest.mark.parametrize("spec, message", BAD_SPECS, ids=[m[:40] for _, m in BAD_SPECS])
def test_submit_rejects_bad_specs_naming_the_field(client, spec, message):
    code, details = _code(client.stub.SubmitJob, pb.SubmitJobRequest(spec=spec), timeout=10)
    assert code == C.INVALID_ARGUMENT
    assert message in details


def test_bad_fields_of_other_calls(client):
    s = client.stub
    cases = [
        (s.SubmitJob, pb.SubmitJobRequest(), "spec is required"),
        (s.SubmitJob, pb.SubmitJobRequest(spec=_spec(max_rounds=5000)), "spec.max_rounds must be"),
        (
            s.SubmitJob,
            pb.SubmitJobRequest(spec=_spec(), request_id="bad id!"),
            "request_id must be",
        ),
        (s.GetJob, pb.GetJobRequest(), "job_id is required"),
        (s.GetJob, pb.GetJobRequest(job_id="../../etc"), "job_id is not a job id"),
        (s.ListJobs, pb.ListJobsRequest(page_size=5000), "page_size must be in 0..1000; got 5000"),
        (s.ListJobs, pb.ListJobsRequest(page_token="xyz"), "page_token"),
        (s.CancelJob, pb.CancelJobRequest(), "job_id is required"),
        (s.GetStatistics, pb.GetStatisticsRequest(), "job_id is required"),
        (s.ReplayGame, pb.ReplayGameRequest(job_id="abc", game=-1), "game must be at least 0"),
    ]
    for call, request, message in cases:
        code, details = _code(call, request, timeout=10)
        assert code == C.INVALID_ARGUMENT, (request, code, details)
        assert message in details, (request, details)
    code, details = _code(
        lambda: list(s.WatchJob(pb.WatchJobRequest(job_id="abc", interval_ms=5), timeout=10))
    )
    assert code == C.INVALID_ARGUMENT and "interval_ms" in details


def test_not_found(client):
    for call in (client.get, client.cancel, client.statistics, lambda j: client.replay(j, 0)):
        code, details = _code(call, "0123456789abcdef")
        assert code == C.NOT_FOUND and "0123456789abcdef" in details
    code, _ = _code(lambda: list(client.watch("0123456789abcdef")))
    assert code == C.NOT_FOUND


def test_submit_is_idempotent_by_request_id(client):
    job, created = client.submit(_spec(), request_id="run-1")
    assert created and job.state == pb.QUEUED and job.games_total == 100
    again, created_again = client.submit(_spec(), request_id="run-1")
    assert not created_again and again.job_id == job.job_id
    code, details = _code(client.submit, _spec(seed=2), request_id="run-1")
    assert code == C.ALREADY_EXISTS and "run-1" in details
    other, created = client.submit(_spec())  # no request_id: a new job every time
    assert created and other.job_id != job.job_id
    assert client.get(job.job_id).spec == job.spec
    # Specs are echoed canonically.
    assert list(job.spec.configurations[0].bots) == ["greedy", "random"]
    assert job.spec.max_rounds == 100 and job.created_at.seconds > 0


def test_list_jobs_pages_newest_first(client):
    ids = [client.submit(_spec(seed=i))[0].job_id for i in range(5)]
    seen, token = [], ""
    while True:
        page, token = client.list(page_size=2, page_token=token)
        assert len(page) <= 2
        seen += [j.job_id for j in page]
        if not token:
            break
    assert seen == ids[::-1]


def test_cancel_and_cancel_again(client):
    job, _ = client.submit(_spec())
    cancelled = client.cancel(job.job_id)
    assert cancelled.state == pb.CANCELLED and cancelled.finished_at.seconds > 0
    assert client.cancel(job.job_id).state == pb.CANCELLED  # idempotent
    # A watch on an ended job sends it once and closes.
    updates = list(client.watch(job.job_id))
    assert len(updates) == 1 and updates[0].state == pb.CANCELLED
    stats = client.statistics(job.job_id)
    assert stats.partial and stats.games_done == 0


def test_list_bots_with_parameters(client):
    bots = {b.name: b for b in client.bots()}
    assert {"random", "greedy", "heuristic", "rollout"} <= set(bots)
    floor = {p.name: p for p in bots["heuristic"].parameters}["floor"]
    assert floor.type == "float" and floor.HasField("min") and floor.doc


def test_replay_rejects_games_outside_the_job(client):
    job, _ = client.submit(_spec(games=10))
    code, details = _code(client.replay, job.job_id, 10)
    assert code == C.INVALID_ARGUMENT and "game must be in 0..9; got 10" in details
    code, details = _code(client.replay, job.job_id, 0, configuration=1)
    assert code == C.INVALID_ARGUMENT and "configuration must be in 0..0; got 1" in details


def test_limits(start):
    client = start(max_games_per_job=1000, max_queued_jobs=2, max_message_bytes=4096)
    code, details = _code(client.submit, _spec(games=1001))
    assert code == C.RESOURCE_EXHAUSTED and "1,001 games" in details and "1,000" in details
    first, _ = client.submit(_spec(), request_id="study-1")
    client.submit(_spec())
    code, details = _code(client.submit, _spec())
    assert code == C.RESOURCE_EXHAUSTED and "queued" in details
    again, created = client.submit(_spec(), request_id="study-1")  # idempotency wins over limits
    assert again.job_id == first.job_id and not created
    big = pb.JobSpec(
        configurations=[pb.Configuration(players=4, bots=["r" * 190] * 4)] * 10, games=1, seed=1
    )
    code, _ = _code(client.submit, big)
    assert code == C.RESOURCE_EXHAUSTED  # the request is larger than max_message_bytes
    code, details = _code(client.replay, first.job_id, 0)  # a replay is 8-20 KB per round
    assert code == C.RESOURCE_EXHAUSTED
    assert "the replay of game 0 (" in details and "message limit of 4,096" in details


def test_exports_beyond_the_limit_are_refused_while_one_runs(api_server, tmp_path):
    """ExportGames gathers a job's records into a temporary file: at most `max_exports` at once;
    one more is RESOURCE_EXHAUSTED naming the limit, and a slot frees when an export ends."""
    import threading

    from service.server.backend import Precondition

    server = api_server(max_exports=1)
    entered, release = threading.Event(), threading.Event()

    def slow_export(job_id, out):  # stands for the gather of a large job's records
        entered.set()
        release.wait(generous(30))
        raise Precondition(f"no records of job {job_id}")

    client = Client(server.address, timeout=generous(30))
    job, _ = client.submit(_spec())
    server.backend.export_games = slow_export
    first: list[tuple[grpc.StatusCode, str]] = []
    holder = threading.Thread(
        target=lambda: first.append(_code(client.export_games, job.job_id, tmp_path / "a"))
    )
    holder.start()
    assert entered.wait(generous(30))
    code, details = _code(client.export_games, job.job_id, tmp_path / "b")
    assert code == C.RESOURCE_EXHAUSTED and "1 exports are running" in details, details
    release.set()
    holder.join(generous(30))
    assert first == [(C.FAILED_PRECONDITION, f"no records of job {job.job_id}")]
    entered.clear()
    release.set()  # the slot is free again: the next export runs (and ends as the backend says)
    assert _code(client.export_games, job.job_id, tmp_path / "c")[0] == C.FAILED_PRECONDITION


def test_queued_limit_holds_for_submits_with_request_ids(start):
    """With AZULSIM_MAX_QUEUED_JOBS=3 and no workers, five submits each with a
    new request id: three accepted, the fourth and fifth RESOURCE_EXHAUSTED (a missing request
    key read back as the string "None" made every request id look known). A known one is still
    answered from its job at the limit, and a refused one left nothing behind."""
    # 100,000 games a chunk: 20 messages per job, not 40,000 (no worker plays them here).
    client = start(env_extra={"AZULSIM_CHUNK_GAMES": "100000"}, max_queued_jobs=3)
    accepted = [
        client.submit(
            _spec(games=2_000_000, bots=("greedy", "greedy"), seed=100 + i), request_id=f"limit-{i}"
        )
        for i in range(3)
    ]
    assert all(created for _, created in accepted)
    for i in (3, 4):
        code, details = _code(
            client.submit,
            _spec(games=2_000_000, bots=("greedy", "greedy"), seed=100 + i),
            request_id=f"limit-{i}",
        )
        assert code == C.RESOURCE_EXHAUSTED and "3 jobs are already queued" in details, details
    again, created = client.submit(
        _spec(games=2_000_000, bots=("greedy", "greedy"), seed=101), request_id="limit-1"
    )
    assert again.job_id == accepted[1][0].job_id and not created
    assert len(client.list()[0]) == 3


def test_a_second_server_on_the_same_port_fails_at_start(azulsim_env, tmp_path):
    """gRPC sets SO_REUSEPORT by default, so a second `serve`/`up` bound the
    same address beside the first and calls alternated between the two. Now the second fails at
    start, naming the address: in process, as `azulsim serve`, and as `azulsim up` (Stack)."""
    from service.stack import Stack, StackError

    settings = load_settings(azulsim_env)
    config = ServerConfig()
    with api_thread(settings, config) as first:
        address = first.address
        with pytest.raises(OSError) as err:
            api_thread(settings, config, listen=address).start()
        assert f"cannot listen on {address}" in str(err.value)
        assert "in use" in str(err.value)
        env = {**os.environ, **azulsim_env, "PYTHONPATH": str(REPO)}
        serve = subprocess.run(
            [sys.executable, "-m", "service", "serve", "--listen", address],
            env=env,
            capture_output=True,
            text=True,
            timeout=generous(60),
        )
        assert serve.returncode != 0
        assert f"cannot listen on {address}" in serve.stderr, serve.stderr
        stack = Stack(workers=1, listen=address, env=env, workdir=tmp_path)
        with pytest.raises(StackError) as err:
            stack.start(timeout=generous(60))
        assert f"cannot listen on {address}" in str(err.value), str(err.value)
        # The first server still answers: nothing took its calls.
        with Client(address, token="", timeout=10) as client:
            assert client.bots()


def test_deadline_is_honoured(client):
    job, _ = client.submit(_spec())  # no worker: it stays QUEUED
    began = time.monotonic()
    code, _ = _code(lambda: list(client.watch(job.job_id, timeout=0.5)))
    assert code == C.DEADLINE_EXCEEDED and time.monotonic() - began < generous(5)  # no hang
    assert client.get(job.job_id).state == pb.QUEUED  # the server is fine


def test_unavailable_when_redis_is_down(start):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = start({"AZULSIM_REDIS_URL": f"redis://127.0.0.1:{port}/0"})
    for call in (lambda: client.get("abc"), lambda: client.submit(_spec()), lambda: client.list()):
        code, details = _code(call)
        assert code == C.UNAVAILABLE and "Redis" in details
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    health = health_pb2_grpc.HealthStub(client.channel)
    reply = health.Check(health_pb2.HealthCheckRequest(service="azulsim.v1.AzulSim"), timeout=5)
    assert reply.status == health_pb2.HealthCheckResponse.NOT_SERVING


def test_health_and_reflection(client):
    from grpc_health.v1 import health_pb2, health_pb2_grpc
    from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

    health = health_pb2_grpc.HealthStub(client.channel)
    for service in ("", "azulsim.v1.AzulSim"):
        reply = health.Check(health_pb2.HealthCheckRequest(service=service), timeout=5)
        assert reply.status == health_pb2.HealthCheckResponse.SERVING
    stub = reflection_pb2_grpc.ServerReflectionStub(client.channel)
    replies = stub.ServerReflectionInfo(
        iter(
            [
                reflection_pb2.ServerReflectionRequest(list_services=""),
                reflection_pb2.ServerReflectionRequest(file_containing_symbol="azulsim.v1.AzulSim"),
            ]
        ),
        timeout=5,
    )
    listed, files = replies
    names = {s.name for s in listed.list_services_response.service}
    assert {"azulsim.v1.AzulSim", "grpc.health.v1.Health"} <= names
    assert files.file_descriptor_response.file_descriptor_proto


def test_reflection_v1_lists_and_describes_services(client):
    """grpcurl and the Java/Go clients ask for grpc.reflection.v1 first; the proto header promises
    it. The request is written as raw protobuf bytes (field 7 `list_services`, field 4
    `file_containing_symbol`), and the replies are read with the v1alpha classes: the two versions
    share every field number, so this checks the v1 method by its wire format alone."""
    from google.protobuf import descriptor_pb2
    from grpc_reflection.v1alpha import reflection_pb2

    call = client.channel.stream_stream(
        "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
        request_serializer=lambda raw: raw,
        response_deserializer=reflection_pb2.ServerReflectionResponse.FromString,
    )
    symbol = b"grpc.reflection.v1.ServerReflection"
    listed, described = call(
        iter([b"\x3a\x00", b"\x22" + bytes([len(symbol)]) + symbol]), timeout=5
    )
    names = {s.name for s in listed.list_services_response.service}
    assert {
        "azulsim.v1.AzulSim",
        "grpc.health.v1.Health",
        "grpc.reflection.v1.ServerReflection",
        "grpc.reflection.v1alpha.ServerReflection",
    } <= names
    files = [
        descriptor_pb2.FileDescriptorProto.FromString(raw)
        for raw in described.file_descriptor_response.file_descriptor_proto
    ]
    (v1,) = [f for f in files if f.name == "grpc/reflection/v1/reflection.proto"]
    assert v1.package == "grpc.reflection.v1"
    (method,) = v1.service[0].method
    assert (method.name, method.input_type, method.output_type) == (
        "ServerReflectionInfo",
        ".grpc.reflection.v1.ServerReflectionRequest",
        ".grpc.reflection.v1.ServerReflectionResponse",
    )
    assert method.client_streaming and method.server_streaming


def test_bearer_token_auth(start):
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    client = start(auth_tokens=("s3cret", "other"))
    code, details = _code(client.bots)
    assert code == C.UNAUTHENTICATED and "Bearer" in details
    code, _ = _code(lambda: list(client.watch("abc")))
    assert code == C.UNAUTHENTICATED
    wrong = Client(client.address, token="nope")
    assert _code(wrong.bots)[0] == C.UNAUTHENTICATED
    right = Client(client.address, token="s3cret")
    assert right.bots()
    job, _ = right.submit(_spec())
    assert right.get(job.job_id).job_id == job.job_id
    health = health_pb2_grpc.HealthStub(client.channel)  # no token needed
    assert health.Check(health_pb2.HealthCheckRequest(), timeout=5).status == 1


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
def test_tls(start, tmp_path):
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=DNS:localhost,IP:127.0.0.1",
        ],
        check=True,
        capture_output=True,
    )
    plain = start(tls_cert=str(cert), tls_key=str(key))
    assert _code(plain.bots, timeout=3)[0] == C.UNAVAILABLE  # plaintext is refused
    secure = Client(plain.address, tls_ca=str(cert), token="")
    assert secure.bots()


def test_serve_shuts_down_gracefully_on_sigterm(azulsim_env, tmp_path):
    api = ApiProcess({**azulsim_env, "AZULSIM_GRACE_S": "2"}, 0, tmp_path).start()
    try:
        client = Client(api.address, token="")
        job, _ = client.submit(_spec())
        watch = client.watch(job.job_id)
        assert next(watch).state == pb.QUEUED  # an open stream during shutdown
        api.proc.send_signal(signal.SIGTERM)
        assert api.proc.wait(timeout=20) == 0
        with pytest.raises(grpc.RpcError):
            list(watch)
    finally:
        api.stop(signal.SIGKILL)
    assert "listening on 127.0.0.1:" in api.log() and "shutting down" in api.log()


def test_statistics_replies_follow_every_merge_and_state(start, azulsim_env):
    """GetStatistics replies are shared between callers until a chunk merges or the state moves:
    each merge, and the cancel, shows at once."""
    from sim.jobs.chunk import play_chunk
    from sim.stats import derive
    from tests.stack_util import open_store

    client = start()
    job, _ = client.submit(_spec(games=400), request_id="cache-1")
    store = open_store(azulsim_env)
    spec = store.get_job(job.job_id).spec
    chunk_games = store.get_job(job.job_id).chunk_games
    assert store.get_job(job.job_id).chunks_total > 2
    seen = [client.statistics_document(job.job_id)["games_done"]]
    assert seen == [0] and client.statistics(job.job_id).partial
    for chunk in range(2):
        games, counters = play_chunk(spec, chunk_games, chunk)[:2]
        store.merge_chunk(job.job_id, chunk, games, counters)
        first = client.statistics_document(job.job_id)
        assert first == client.statistics_document(job.job_id)  # the shared reply
        assert first == derive(store.counters(job.job_id), spec)
        seen.append(first["games_done"])
    assert seen == [0, chunk_games, 2 * chunk_games]
    client.cancel(job.job_id)
    assert client.statistics(job.job_id).job.state == pb.CANCELLED
    store.redis.close()


def test_a_name_binds_every_address_it_resolves_to_or_fails(azulsim_env):
    """``--listen localhost:PORT`` while another process holds 127.0.0.1:PORT: gRPC resolved
    localhost to [::1] and 127.0.0.1, bound what it could ([::1]), logged "Only 1 addresses
    added out of total 2 resolved" and said it listened. Every address the name resolves to must
    bind, or the server fails at start naming the address."""
    import socket

    settings = load_settings(azulsim_env)
    config = ServerConfig()
    holder = socket.create_server(("127.0.0.1", 0))
    port = holder.getsockname()[1]
    try:
        with pytest.raises(OSError) as err:
            api_thread(settings, config, listen=f"localhost:{port}").start()
        assert f"cannot listen on localhost:{port}" in str(err.value)
    finally:
        holder.close()
    # Free, the name binds each of its addresses, and a client on each reaches the server.
    with api_thread(settings, config, listen="localhost:0") as server:
        for family, *_, sockaddr in socket.getaddrinfo("localhost", server.port):
            host = f"[{sockaddr[0]}]" if family == socket.AF_INET6 else sockaddr[0]
            with Client(f"{host}:{server.port}", token="", timeout=10) as client:
                assert client.bots()


def test_a_call_that_core_ended_is_logged_at_info_and_nothing_else_is_changed(caplog):
    """grpc logs at ERROR a stream's status that its core refused because the client had gone
    (seen in the fuzz tests as a client cancelled a WatchJob just as it ended): once a server is
    built, that record is INFO; another error from the same logger stays ERROR."""
    import asyncio
    import logging

    from grpc._cython import cygrpc

    from service.server.assemble import start_server

    async def start_and_stop():
        running = await start_server(_Nothing, ServerConfig(), "127.0.0.1:0")
        await running.stop(None)

    asyncio.run(start_and_stop())
    core = logging.getLogger("grpc._cython.cygrpc")
    failed = cygrpc.ExecuteBatchError('Failed "execute_batch": (SendStatusFromServerOperation,)')
    with caplog.at_level(logging.DEBUG, logger="grpc._cython.cygrpc"):
        for exc in (failed, ValueError("a servicer's own error")):
            try:
                raise exc
            except Exception:
                core.exception("raised by servicer method [/azulsim.v1.AzulSim/WatchJob]")
    levels = [(type(r.exc_info[1]).__name__, r.levelname) for r in caplog.records]
    assert levels == [("ExecuteBatchError", "INFO"), ("ValueError", "ERROR")]


class _Nothing:
    """A backend that answers only the health check."""

    def ping(self) -> bool:
        return True
