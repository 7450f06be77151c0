"""Prometheus metrics, scraped in-process: the API's interceptor and endpoint (a real server on a
real Redis), the workers' multiprocess counters (forked processes), and a real Celery worker's
endpoint and JSON logs after a real job."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import urllib.request
from pathlib import Path

import grpc
import pytest
import redis
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families

from service.client import Client
from service.config import ServerConfig
from service.server import make_backend
from service.testing import ServerThread
from tests.waits import generous, wait_job, wait_until
from workers.metrics import QueueDepthCollector, metrics_port
from workers.settings import load_settings

REPO = Path(__file__).resolve().parent.parent
SERVICE = "azulsim.v1.AzulSim"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape(port: int) -> dict[tuple[str, tuple], float]:
    """``{(sample name, sorted labels): value}`` of ``http://127.0.0.1:port/metrics``."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as reply:
        assert reply.status == 200
        text = reply.read().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(name: str, **labels) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_metrics_port_parsing():
    assert metrics_port({}) is None
    assert metrics_port({"AZULSIM_METRICS_PORT": "0"}) is None
    assert metrics_port({"AZULSIM_METRICS_PORT": " 9100 "}) == 9100
    with pytest.raises(ValueError, match="AZULSIM_METRICS_PORT"):
        metrics_port({"AZULSIM_METRICS_PORT": "http"})


def test_api_interceptor_counts_methods_codes_and_latency(azulsim_env):
    settings = load_settings(azulsim_env)
    config = ServerConfig(auth_tokens=("s3cret",))
    labels = {"grpc_type": "unary", "grpc_service": SERVICE}
    before = {
        ("GetJob", "NOT_FOUND"): value(
            "grpc_server_handled_total", **labels, grpc_method="GetJob", grpc_code="NOT_FOUND"
        ),
        ("ListBots", "OK"): value(
            "grpc_server_handled_total", **labels, grpc_method="ListBots", grpc_code="OK"
        ),
        ("ListBots", "UNAUTHENTICATED"): value(
            "grpc_server_handled_total",
            **labels,
            grpc_method="ListBots",
            grpc_code="UNAUTHENTICATED",
        ),
    }
    watch_before = value(
        "grpc_server_handled_total",
        grpc_type="server_stream",
        grpc_service=SERVICE,
        grpc_method="WatchJob",
        grpc_code="NOT_FOUND",
    )
    latency_before = value("grpc_server_handling_seconds_count", **labels, grpc_method="ListBots")
    with ServerThread(make_backend(config, settings), config) as server:
        with Client(server.address, token="s3cret", timeout=10) as client:
            assert client.bots()
            with pytest.raises(grpc.RpcError) as info:
                client.get("0" * 32)
            assert info.value.code() == grpc.StatusCode.NOT_FOUND
            with pytest.raises(grpc.RpcError) as info:
                list(client.watch("0" * 32, timeout=10))
            assert info.value.code() == grpc.StatusCode.NOT_FOUND
        with Client(server.address, token="wrong", timeout=10) as stranger:
            with pytest.raises(grpc.RpcError) as info:
                stranger.bots()
            assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
    after = {
        (m, c): value("grpc_server_handled_total", **labels, grpc_method=m, grpc_code=c)
        for m, c in before
    }
    assert {k: after[k] - before[k] for k in before} == {k: 1.0 for k in before}
    assert (
        value(
            "grpc_server_handled_total",
            grpc_type="server_stream",
            grpc_service=SERVICE,
            grpc_method="WatchJob",
            grpc_code="NOT_FOUND",
        )
        - watch_before
        == 1.0
    )
    assert (
        value("grpc_server_handling_seconds_count", **labels, grpc_method="ListBots")
        - latency_before
        == 2.0
    )
    assert (
        value(
            "azulsim_api_errors_total",
            grpc_service=SERVICE,
            grpc_method="GetJob",
            grpc_code="NOT_FOUND",
        )
        >= 1.0
    )
    assert value("grpc_server_started_total", **labels, grpc_method="ListBots") >= 2.0


@pytest.fixture
def api_endpoint(azulsim_env):
    """``start_api_metrics`` on a free port; undone afterwards (collector and HTTP server)."""
    import service.metrics as m

    settings = load_settings(azulsim_env)
    port = free_port()
    started = m.start_api_metrics(
        settings, env={"AZULSIM_METRICS_PORT": str(port), "AZULSIM_METRICS_ADDR": "127.0.0.1"}
    )
    assert started is not None
    yield settings, port
    httpd, thread = started
    httpd.shutdown()
    httpd.server_close()
    REGISTRY.unregister(m._queue_collector)
    m._queue_collector = None


def test_api_endpoint_serves_rpc_metrics_and_queue_depth(api_endpoint):
    settings, port = api_endpoint
    client = redis.Redis.from_url(settings.redis_url)
    key = settings.queue_key  # the queue's Redis list
    client.rpush(key, b"a", b"b", b"c")
    client.rpush(key + "\x06\x163", b"d")  # a priority level of the same queue
    samples = scrape(port)
    assert samples[("azulsim_redis_up", ())] == 1.0
    assert samples[("azulsim_queue_length", (("queue", settings.queue),))] == 4.0
    assert any(name.startswith("process_") for name, _ in samples)  # default collectors
    client.delete(key, key + "\x06\x163")
    assert scrape(port)[("azulsim_queue_length", (("queue", settings.queue),))] == 0.0
    client.close()


def test_queue_depth_without_redis_is_a_gauge_not_an_error():
    collector = QueueDepthCollector(f"redis://127.0.0.1:{free_port()}/0", ["q"])
    families = {f.name: f for f in collector.collect()}
    assert families["azulsim_redis_up"].samples[0].value == 0
    assert "azulsim_queue_length" not in families


MULTIPROCESS_SCRIPT = textwrap.dedent(
    """
    import json, multiprocessing, os, sys
    from prometheus_client import generate_latest
    from prometheus_client.parser import text_string_to_metric_families
    import workers.metrics as wm

    assert wm.prepare_multiprocess_dir() == os.environ["PROMETHEUS_MULTIPROC_DIR"]

    def child(games, fail):
        m = wm.worker_metrics()
        m.observe({"status": "ok", "games": games, "merge": "merged",
                   "timings": {"play": 0.5, "count": 0.25, "merge": 0.25}}, 1.5)
        m.observe({"status": "ok", "games": games, "merge": "duplicate",
                   "timings": {"play": 0.5, "count": 0.1, "merge": 0.1}}, 0.7)
        if fail:
            m.observe({"status": "failed", "outcome": "retry", "error": "x"}, 0.2)
            m.observe({"status": "skipped", "reason": "state"}, 0.01)

    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=child, args=(g, g == 30)) for g in (30, 70)]
    for p in procs: p.start()
    for p in procs: p.join(); assert p.exitcode == 0
    text = generate_latest(wm.worker_registry()).decode()
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            key = s.name + "".join(f"|{k}={v}" for k, v in sorted(s.labels.items()) if k != "pid")
            out[key] = out.get(key, 0) + s.value
    json.dump(out, sys.stdout)
    """
)


def test_worker_metrics_sum_over_forked_pool_processes(tmp_path):
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "mp"), "PYTHONPATH": str(REPO)}
    (tmp_path / "mp").mkdir()
    (tmp_path / "mp" / "counter_999.db").write_bytes(b"stale")  # wiped at start
    run = subprocess.run(
        [sys.executable, "-c", MULTIPROCESS_SCRIPT],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=generous(120),
    )
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert out["azulsim_games_played_total"] == 100
    assert out["azulsim_chunks_done_total"] == 2
    assert out["azulsim_chunks_total|outcome=merged"] == 2
    assert out["azulsim_chunks_total|outcome=duplicate"] == 2
    assert out["azulsim_chunks_total|outcome=failed"] == 1
    assert out["azulsim_chunks_total|outcome=skipped"] == 1
    assert out["azulsim_chunk_retries_total"] == 1
    assert out["azulsim_chunk_failures_total|outcome=retry"] == 1
    assert out["azulsim_chunk_seconds_count"] == 6
    assert out["azulsim_chunk_phase_seconds_total|phase=play"] == pytest.approx(2.0)
    # games/s of each process's last merged chunk (30 and 70 games in 1 s), summed
    assert out["azulsim_worker_games_per_second"] == pytest.approx(100.0)


def test_real_worker_serves_metrics_and_logs_json(azulsim_env, celery_worker_process, tmp_path):
    """One worker (prefork, 2 processes) with AZULSIM_METRICS_PORT and AZULSIM_LOG_FORMAT=json
    plays a 4-chunk job; its endpoint sums both pool processes and every line it logged while
    running a chunk is JSON with the job id and the chunk index."""
    from sim.jobs.spec import JobSpec
    from workers.app import make_app
    from workers.dispatch import submit
    from workers.store import JobStore

    port = free_port()
    worker = celery_worker_process(
        azulsim_env,
        concurrency=2,
        extra_env={
            "AZULSIM_METRICS_PORT": str(port),
            "AZULSIM_METRICS_ADDR": "127.0.0.1",
            "AZULSIM_LOG_FORMAT": "json",
            "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "prom"),
        },
    )
    settings = load_settings(azulsim_env)
    client = redis.Redis.from_url(settings.redis_url)
    store, app = JobStore(client, settings), make_app(settings)
    spec = JobSpec.from_dict(
        {"configurations": [{"players": 2, "bots": ["greedy", "random"]}], "games": 200, "seed": 5}
    )
    job, _ = submit(store, app, spec, "metrics-1")
    assert job.chunks_total == 4
    wait_job(store, job.job_id, [worker])
    # The last chunk's postrun signal can trail its merge.
    samples = wait_until(
        lambda: (got := scrape(port)).get(("azulsim_chunks_done_total", ())) == 4 and got,
        30,
        "4 chunks counted by the metrics",
        interval=0.1,
    )
    assert samples[("azulsim_games_played_total", ())] == 200
    assert samples[("azulsim_chunk_seconds_count", ())] == 4
    assert samples[("azulsim_queue_length", (("queue", settings.queue),))] == 0
    assert samples[("azulsim_redis_up", ())] == 1

    lines = [ln for ln in worker.log().splitlines() if ln.strip()]
    records = [json.loads(ln) for ln in lines if ln.startswith("{")]
    assert len(records) >= len(lines) - 2, lines[:20]  # (a banner line may be plain text)
    in_chunks = [r for r in records if r.get("job_id") == job.job_id]
    assert {r["chunk"] for r in in_chunks} == {0, 1, 2, 3}, records
    assert all(isinstance(r["chunk"], int) and r["task_id"] for r in in_chunks)
    assert {"ts", "level", "logger", "message", "process"} <= set(in_chunks[0])
    assert any(r["logger"] == "azulsim.workers" for r in in_chunks)
    client.close()
