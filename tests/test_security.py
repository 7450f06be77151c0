"""Security checks: token auth, TLS, JSON-only messages, the Redis key prefix, no secrets in logs.

- **Token auth** (``AZULSIM_AUTH_TOKENS``): every method of ``azulsim.v1.AzulSim`` without a token,
  with a wrong one or another scheme is UNAUTHENTICATED — before the request is validated or does
  anything — and the reply does not echo what was sent; a right token works. Policy: the health
  service (``grpc.health.v1.Health``) and reflection need no token, so load balancers, Kubernetes
  probes and ``grpcurl`` work; they reveal serving status and the public schema, nothing else.
- **TLS** (``AZULSIM_TLS_CERT``/``AZULSIM_TLS_KEY``), with a CA and a server certificate made at
  test time in ``tmp_path`` (no key is committed): a client trusting the CA works; a plaintext
  client and a client trusting another CA fail.
- **JSON only**: the Celery app serializes and accepts JSON only; a pickle message put on the
  queue is refused by a real worker and never unpickled; no module of ``workers/`` or
  ``service/`` imports pickle (or marshal, shelve, dill…).
- **Key prefix**: after a job through a real worker and a cancel, every Redis key is under
  ``AZULSIM_PREFIX`` except Celery's documented broker keys; with
  ``AZULSIM_PREFIX_BROKER_KEYS=1`` (kombu's ``global_keyprefix``) every key is.
- **No secrets in logs**: the server (DEBUG) and a worker log nothing of the bearer token or the
  Redis password, whatever the calls.
"""

from __future__ import annotations

import ast
import datetime
import pickle
import secrets
import uuid
from pathlib import Path

import grpc
import pytest
import redis

from service.api import azulsim_pb2 as pb
from service.client import Client
from service.config import ServerConfig
from service.stack import RedisServer
from tests.stack_util import ApiProcess, api_thread
from tests.waits import wait_until

pytest.importorskip("workers.app")
from workers.app import make_app  # noqa: E402
from workers.settings import load_settings  # noqa: E402
from workers.tasks import TASK_NAME  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
C = grpc.StatusCode
SPEC = pb.JobSpec(
    configurations=[pb.Configuration(players=2, bots=["greedy", "random"])], games=120, seed=3
)


def _requests(job_id: str) -> dict[str, object]:
    return {
        "SubmitJob": pb.SubmitJobRequest(spec=SPEC),
        "GetJob": pb.GetJobRequest(job_id=job_id),
        "ListJobs": pb.ListJobsRequest(),
        "WatchJob": pb.WatchJobRequest(job_id=job_id),
        "CancelJob": pb.CancelJobRequest(job_id="0123456789abcdef"),
        "GetStatistics": pb.GetStatisticsRequest(job_id=job_id),
        "StreamStatistics": pb.GetStatisticsRequest(job_id=job_id),
        "ListBots": pb.ListBotsRequest(),
        "ReplayGame": pb.ReplayGameRequest(job_id=job_id, game=1),
        "ExportGames": pb.ExportGamesRequest(job_id=job_id),
    }


STREAMS = ("WatchJob", "ExportGames", "StreamStatistics")  # unary requests, streamed replies


def _call(channel, method: str, request, metadata=()) -> tuple[C, str]:
    raw = isinstance(request, bytes)
    kw = dict(
        request_serializer=None if raw else type(request).SerializeToString,
        response_deserializer=None,
    )
    try:
        if method in STREAMS:
            call = channel.unary_stream(f"/azulsim.v1.AzulSim/{method}", **kw)(
                request, timeout=5, metadata=metadata
            )
            try:
                next(call)
            finally:
                call.cancel()
        else:
            channel.unary_unary(f"/azulsim.v1.AzulSim/{method}", **kw)(
                request, timeout=10, metadata=metadata
            )
    except grpc.RpcError as exc:
        return exc.code(), exc.details() or ""
    return C.OK, ""


# --- token auth -------------------------------------------------------------------------------


def test_every_method_needs_the_token(api_server):
    token = "tok-" + secrets.token_hex(16)
    server = api_server(auth_tokens=(token, "second-" + secrets.token_hex(8)))
    good = Client(server.address, token=token)
    job, _ = good.submit(SPEC)
    channel = grpc.insecure_channel(server.address)
    wrong = token[:-1] + ("0" if token[-1] != "0" else "1")
    refused = [
        (),
        (("authorization", f"Bearer {wrong}"),),
        (("authorization", f"Bearer {token}x"),),
        (("authorization", f"Bearer {token[:-4]}"),),
        (("authorization", "Bearer "),),
        (("authorization", f"Basic {token}"),),
        (("authorization", token),),  # no scheme
        (("x-api-key", token),),
        (("authorization", f"Bearer {wrong}"), ("authorization", f"Bearer {token}")),  # first wins
    ]
    for method, request in _requests(job.job_id).items():
        for metadata in refused:
            code, details = _call(channel, method, request, metadata)
            assert code == C.UNAUTHENTICATED, (method, metadata, code, details)
            assert token not in details and wrong not in details
        # Refused before the request is even read: an invalid or malformed one is no different.
        assert _call(channel, method, b"\xff\xff")[0] == C.UNAUTHENTICATED
        # The right token gets through (to the method's own answer).
        code, details = _call(channel, method, request, (("authorization", f"Bearer {token}"),))
        # (ExportGames of a job without game_records: its own FAILED_PRECONDITION.)
        answers = (C.OK, C.NOT_FOUND) + ((C.FAILED_PRECONDITION,) * (method == "ExportGames"))
        assert code in answers, (method, code, details)
    # The refused SubmitJobs created nothing: the only jobs are the two with the right token.
    jobs, _ = good.list(page_size=100)
    assert len(jobs) == 2
    channel.close()


def test_health_and_reflection_need_no_token(api_server):
    """Policy: health and reflection are open (probes, load balancers, grpcurl)."""
    from grpc_health.v1 import health_pb2, health_pb2_grpc
    from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

    server = api_server(auth_tokens=("s3cret-" + secrets.token_hex(8),))
    channel = grpc.insecure_channel(server.address)
    health = health_pb2_grpc.HealthStub(channel)
    for service in ("", "azulsim.v1.AzulSim"):
        reply = health.Check(health_pb2.HealthCheckRequest(service=service), timeout=5)
        assert reply.status == health_pb2.HealthCheckResponse.SERVING
    stub = reflection_pb2_grpc.ServerReflectionStub(channel)
    (listed,) = stub.ServerReflectionInfo(
        iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=5
    )
    assert "azulsim.v1.AzulSim" in {s.name for s in listed.list_services_response.service}
    channel.close()


# --- TLS --------------------------------------------------------------------------------------


def _certificates(directory: Path, name: str = "ca") -> tuple[Path, Path, Path]:
    """A CA and a server certificate for localhost/127.0.0.1 signed by it: (ca, cert, key)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"AzulSim test {name}")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    import ipaddress

    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    paths = directory / f"{name}.pem", directory / f"{name}-server.pem", directory / f"{name}.key"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    paths[2].chmod(0o600)
    return paths


def test_tls_with_a_test_ca(api_server, tmp_path):
    ca, cert, key = _certificates(tmp_path)
    other_ca, _, _ = _certificates(tmp_path, "other")
    token = secrets.token_hex(16)
    server = api_server(tls_cert=str(cert), tls_key=str(key), auth_tokens=(token,))
    with Client(server.address, tls_ca=str(ca), token=token, timeout=5) as secure:
        assert len(secure.bots()) >= 4
        job, _ = secure.submit(SPEC)
        assert secure.get(job.job_id).job_id == job.job_id
    with Client(server.address, tls_ca=str(ca), token="", timeout=5) as no_token:
        with pytest.raises(grpc.RpcError) as info:
            no_token.bots()
        assert info.value.code() == C.UNAUTHENTICATED  # TLS does not replace the token
    for client in (
        Client(server.address, token=token, tls_ca="", timeout=3),  # plaintext
        Client(server.address, token=token, tls_ca=str(other_ca), timeout=3),  # untrusted cert
    ):
        with client, pytest.raises(grpc.RpcError) as info:
            client.bots()
        assert info.value.code() == C.UNAVAILABLE
    # The server's half of the config must come in pairs.
    with pytest.raises(ValueError, match="together"):
        ServerConfig.from_env({"AZULSIM_TLS_CERT": str(cert)})


# --- JSON only --------------------------------------------------------------------------------


def test_celery_app_speaks_json_only(azulsim_env):
    conf = make_app(load_settings(azulsim_env)).conf
    assert conf.task_serializer == "json" and conf.result_serializer == "json"
    assert list(conf.accept_content) == ["json"]
    assert list(conf.result_accept_content) == ["json"]
    assert conf.event_serializer == "json"
    import workers.app

    assert list(workers.app.app.conf.accept_content) == ["json"]


UNSAFE_MODULES = {"pickle", "cPickle", "_pickle", "dill", "cloudpickle", "shelve", "marshal",
                  "jsonpickle", "joblib"}  # fmt: skip
UNSAFE_NAMES = {"pickle", "yaml", "msgpack", "application/x-python-serialize"}


def test_no_pickle_in_workers_or_service():
    """Static check: no module of workers/ or service/ imports a pickle-like serializer, names
    one as a Celery serializer, or calls ``yaml.load`` (which can build arbitrary objects)."""
    problems = []
    files = sorted((REPO / "workers").rglob("*.py")) + sorted((REPO / "service").rglob("*.py"))
    assert len(files) > 10
    for path in files:
        tree = ast.parse(path.read_text(), str(path))
        where = path.relative_to(REPO)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [(node.module or "").split(".")[0]]
            else:
                names = []
            problems += [f"{where}:{node.lineno} imports {n}" for n in names if n in UNSAFE_MODULES]
            if isinstance(node, ast.Constant) and node.value in UNSAFE_NAMES | UNSAFE_MODULES:
                problems.append(f"{where}:{node.lineno} names {node.value!r}")
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "load"
                and getattr(node.func.value, "id", "") == "yaml"
            ):
                problems.append(f"{where}:{node.lineno} calls yaml.load")
    assert not problems, "\n".join(problems)


class _Touch:
    """Unpickling this creates a file: proof that a message was unpickled."""

    def __init__(self, path: Path):
        self.path = path

    def __reduce__(self):
        return (Path.touch, (self.path,))


def test_a_worker_refuses_a_pickle_message(azulsim_env, celery_worker_process, tmp_path):
    settings = load_settings(azulsim_env)
    app = make_app(settings)
    marker = tmp_path / "unpickled"
    pickle.loads(pickle.dumps(_Touch(marker)))  # the payload works...
    assert marker.exists()
    marker.unlink()
    # ...put on the chunk queue as a pickle-serialized chunk task, ahead of a real job.
    app.send_task(TASK_NAME, args=[_Touch(marker), 0], queue=settings.queue, serializer="pickle")
    worker = celery_worker_process(azulsim_env, concurrency=1)
    server = api_thread(settings).start()
    try:
        with Client(server.address, token="", timeout=10) as client:
            job, _ = client.submit(SPEC)
            last = list(client.watch(job.job_id, interval_ms=100, timeout=60))[-1]
    finally:
        server.stop()
    assert last.state == pb.SUCCEEDED  # the worker lived on and ran the job queued after
    worker.wait_for_log("ContentDisallowed", timeout=10)
    assert "Refusing to deserialize untrusted content of type pickle" in worker.log()
    assert not marker.exists(), "the worker unpickled a message"


# --- the key prefix ---------------------------------------------------------------------------

# Celery's own keys (kombu's Redis transport) when they are not prefixed, Q the chunk queue:
#   Q (list: waiting messages; Q\x06\x16<n> its priority levels), unacked (hash), unacked_index
#   (zset), unacked_mutex (string), _kombu.binding.<exchange> (set: Q, celery.pidbox,
#   celeryev), _kombu.binding_deadlines (zset), _kombu.binding_permanent.<queue> (set),
#   <id>.reply.celery.pidbox (remote-control replies).
BROKER_KEYS = ("unacked", "unacked_index", "unacked_mutex", "_kombu.binding")


def _run_jobs(env: dict, celery_worker_process) -> list[bytes]:
    """A job to the end, a job cancelled, a request id, a reconciler sweep: every kind of key."""
    celery_worker_process(env, concurrency=1, extra_env={"AZULSIM_RECONCILE_INTERVAL_S": "1"})
    settings = load_settings(env)
    with api_thread(settings) as server:
        with Client(server.address, token="", timeout=10) as client:
            job, _ = client.submit(SPEC, request_id="keys-1")
            assert list(client.watch(job.job_id, interval_ms=100, timeout=60))[-1].state == (
                pb.SUCCEEDED
            )
            big = pb.JobSpec()
            big.CopyFrom(SPEC)
            big.games = 5000
            other, _ = client.submit(big)
            client.cancel(other.job_id)
            client.statistics(job.job_id)
    r = redis.Redis.from_url(settings.redis_url)
    # The worker's reconciler has swept at least once (its lock is a key too).
    wait_until(lambda: r.exists(f"{settings.prefix}:reconciler"), 10, "a reconciler sweep")
    keys = sorted(r.scan_iter(count=1000))
    r.close()
    return keys


def test_with_bare_broker_keys_only_celerys_own_are_outside_the_prefix(
    azulsim_env, celery_worker_process
):
    env = {
        **azulsim_env,
        "AZULSIM_PREFIX": "sec-" + uuid.uuid4().hex[:6],
        "AZULSIM_PREFIX_BROKER_KEYS": "0",
    }
    keys = [k.decode() for k in _run_jobs(env, celery_worker_process)]
    prefix, queue = env["AZULSIM_PREFIX"] + ":", env["AZULSIM_QUEUE"]
    ours = [k for k in keys if k.startswith(prefix)]
    assert (
        any(":job:{" in k for k in ours)
        and f"{prefix}jobs" in ours
        and f"{prefix}req:" in (" ".join(ours))
    )
    others = [k for k in keys if not k.startswith(prefix)]
    unexpected = [
        k
        for k in others
        if not (k == queue or k.startswith(BROKER_KEYS) or k.endswith(".reply.celery.pidbox"))
    ]
    assert not unexpected, f"keys outside {prefix!r} that are not Celery's: {unexpected}"


def test_every_key_is_under_the_prefix_by_default(azulsim_env, celery_worker_process):
    env = {**azulsim_env, "AZULSIM_PREFIX": "sec-" + uuid.uuid4().hex[:6]}
    env.pop("AZULSIM_PREFIX_BROKER_KEYS", None)
    keys = [k.decode() for k in _run_jobs(env, celery_worker_process)]
    prefix = env["AZULSIM_PREFIX"] + ":"
    outside = [k for k in keys if not k.startswith(prefix)]
    assert not outside, f"keys outside {prefix!r}: {outside}"
    assert any(k.startswith(f"{prefix}celery:_kombu.binding") for k in keys), keys


# --- no secrets in logs -----------------------------------------------------------------------


def test_no_secrets_in_logs(azulsim_env, celery_worker_process, tmp_path):
    token = "tok-" + secrets.token_hex(16)
    password = "pw-" + secrets.token_hex(16)
    wrong = "guess-" + secrets.token_hex(8)
    redis_server = RedisServer(tmp_path / "redis", password=password).start()
    port = redis_server.port
    env = {
        **azulsim_env,
        "AZULSIM_REDIS_URL": f"redis://:{password}@127.0.0.1:{port}/0",
        "AZULSIM_AUTH_TOKENS": f"{token},other-{secrets.token_hex(4)}",
        "AZULSIM_LOG_LEVEL": "DEBUG",
        "AZULSIM_RECONCILE_INTERVAL_S": "1",
    }
    (tmp_path / "api").mkdir()
    server = ApiProcess({**env, "AZULSIM_GRACE_S": "1"}, 0, tmp_path / "api")
    try:
        celery_worker_process(env, concurrency=1)
        address = server.start().address
        with Client(address, token=token, timeout=10) as client:
            job, _ = client.submit(SPEC, request_id="secret-run")
            assert list(client.watch(job.job_id, interval_ms=100, timeout=60))[-1].state == (
                pb.SUCCEEDED
            )
            client.statistics(job.job_id)
            for bad in (lambda: client.get("nope"), lambda: client.submit(pb.JobSpec())):
                with pytest.raises(grpc.RpcError):
                    bad()
        for metadata in ((("authorization", f"Bearer {wrong}"),), ()):
            with Client(address, token="", timeout=10) as anonymous:
                with pytest.raises(grpc.RpcError) as info:
                    anonymous.stub.ListBots(pb.ListBotsRequest(), timeout=10, metadata=metadata)
                assert info.value.code() == C.UNAUTHENTICATED
    finally:
        server.stop()
        for w in celery_worker_process.started:
            w.stop()
        redis_server.kill()
    logs = {
        "server": server.log(),
        **{f"worker{i}": w.log() for i, w in enumerate(celery_worker_process.started)},
        **{p.name: p.read_text(errors="replace") for p in tmp_path.glob("worker-*.stderr")},
    }
    assert "azulsim.rpc" in logs["server"] or "AzulSim/" in logs["server"], logs["server"][-2000:]
    assert "ready" in logs["worker0"]
    for name, text in logs.items():
        for secret in (token, password, wrong):
            assert secret not in text, f"{secret[:6]}… appears in the {name} log"
