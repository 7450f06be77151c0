"""Prometheus metrics of the chunk workers, safe under Celery's prefork pool.

What is measured (all fed from Celery signals, so the task code needs no calls):

=======================================  =====================================================
metric                                   meaning
=======================================  =====================================================
``azulsim_chunks_total{outcome}``        chunk task runs by outcome: ``merged``/``finished``
                                         (counted; ``finished`` completed its job),
                                         ``duplicate`` (already merged), ``refused``,
                                         ``skipped`` (job not running), ``failed`` (an
                                         attempt failed and was recorded), ``error`` (an
                                         exception escaped the task)
``azulsim_chunks_done_total``            chunks whose counters were merged
``azulsim_games_played_total``           games played and merged
``azulsim_chunk_seconds``                histogram of a chunk task's wall time
``azulsim_chunk_phase_seconds_total``    seconds spent per phase: ``play``, ``count``, ``merge``
``azulsim_worker_games_per_second``      each pool process's rate over its last chunk, summed
                                         over live processes (the measured rate is
                                         ``rate(azulsim_games_played_total[1m])``)
``azulsim_chunk_retries_total``          failed attempts published again
``azulsim_chunk_failures_total{outcome}``  failed attempts: ``retry``, ``failed`` (the job
                                         FAILED: attempts spent), ``error`` (escaped)
``azulsim_chunk_redelivered_total``      deliveries the broker flagged as redelivered
``azulsim_queue_length{queue}``          messages waiting in the chunk queue (``LLEN``, read
                                         at scrape time; `QueueDepthCollector`)
``azulsim_redis_up``                     1 when the last scrape reached Redis
=======================================  =====================================================

Multiprocess mode. Every pool child counts into its own memory-mapped file under
``PROMETHEUS_MULTIPROC_DIR``, and the worker's main process serves the sum of all of them on
``AZULSIM_METRICS_PORT`` (client_python's "multiprocess mode"; docs/reliability.md). The worker
sets the directory up itself in `worker_init` — before the pool forks — when the port is set: it
uses ``PROMETHEUS_MULTIPROC_DIR`` if set (wiping the files of earlier runs) or a fresh temporary
directory. Metrics are created lazily, so the mode is chosen before the first one exists.

Hook: ``install(app)`` (idempotent) connects the signal handlers; `workers.app.make_app` calls it.
"""

from __future__ import annotations

import glob
import logging
import os
import tempfile
import time
from typing import Any

from .settings import MetricsSettings, from_env

log = logging.getLogger("azulsim.metrics")

MULTIPROC_VAR = "PROMETHEUS_MULTIPROC_DIR"
DEFAULT_ADDR = MetricsSettings.addr

# Buckets of a chunk's wall time, seconds: chunks are sized to take seconds (DESIGN §5).
CHUNK_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600)


def metrics_port(env=None) -> int | None:
    """``AZULSIM_METRICS_PORT`` as a port number; None when unset, empty or 0 (metrics off)."""
    return from_env(MetricsSettings, env).port


def metrics_addr(env=None) -> str:
    """``AZULSIM_METRICS_ADDR``: the address the endpoint binds."""
    return from_env(MetricsSettings, env).addr


# --- the queue-depth gauge --------------------------------------------------------------------


class QueueDepthCollector:
    """Reads the chunk queue's length from Redis at each scrape (a custom collector).

    Yields ``azulsim_queue_length{queue}`` — the messages waiting (all priority levels), the
    figure KEDA scales the workers on — and ``azulsim_redis_up``. A Redis error gives
    ``azulsim_redis_up 0`` and no queue sample, never a failed scrape.
    """

    def __init__(
        self,
        redis_url: str,
        queues: list[str] | tuple[str, ...],
        client=None,
        key_prefix="",
        settings=None,
    ):
        self.redis_url = redis_url
        self.settings = settings  # with AZULSIM_REDIS_SENTINELS: the primary they name
        self.queues = list(queues)
        self._client = client
        self.key_prefix = key_prefix  # `Settings.broker_key_prefix`: kombu's key prefix

    def _redis(self):
        if self._client is None and self.settings is not None and self.settings.redis_sentinels:
            from .store.connect import connect

            self._client = connect(self.settings, socket_connect_timeout=2, socket_timeout=5)
        if self._client is None:
            import redis

            self._client = redis.Redis.from_url(
                self.redis_url, socket_connect_timeout=2, socket_timeout=5
            )
        return self._client

    def lengths(self) -> dict[str, int]:
        """``{queue: messages waiting}`` (raises redis errors); `workers.broker.queue_lengths`,
        the figure the reconciler reads too."""
        from .broker import queue_lengths

        keys = {q: self.key_prefix + q for q in self.queues}  # kombu's global_keyprefix first
        lengths = queue_lengths(self._redis(), keys.values())
        return {q: lengths[key] for q, key in keys.items()}

    def describe(self):
        return []  # no samples at registration time (that would call Redis)

    def collect(self):
        from prometheus_client.core import GaugeMetricFamily

        up = GaugeMetricFamily("azulsim_redis_up", "1 when the last scrape reached Redis")
        try:
            lengths = self.lengths()
        except Exception as exc:  # noqa: BLE001 - a scrape must not fail because Redis did
            log.debug("queue length: %s", exc)
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        depth = GaugeMetricFamily(
            "azulsim_queue_length",
            "Messages waiting in the Celery queue (Redis LLEN)",
            labels=["queue"],
        )
        for q, n in lengths.items():
            depth.add_metric([q], n)
        yield depth


# --- the worker's own metrics -----------------------------------------------------------------


class WorkerMetrics:
    """The metric objects (created on first use, in whichever mode the process is in)."""

    def __init__(self, registry=None):
        from prometheus_client import REGISTRY, Counter, Gauge, Histogram

        registry = REGISTRY if registry is None else registry
        self.chunks = Counter(
            "azulsim_chunks", "Chunk task runs by outcome", ["outcome"], registry=registry
        )
        self.chunks_done = Counter(
            "azulsim_chunks_done", "Chunks whose counters were merged", registry=registry
        )
        self.games = Counter("azulsim_games_played", "Games played and merged", registry=registry)
        self.chunk_seconds = Histogram(
            "azulsim_chunk_seconds",
            "Wall time of a chunk task",
            buckets=CHUNK_BUCKETS,
            registry=registry,
        )
        self.phase_seconds = Counter(
            "azulsim_chunk_phase_seconds",
            "Seconds spent in each phase of the chunks (play, count, merge)",
            ["phase"],
            registry=registry,
        )
        self.games_per_second = Gauge(
            "azulsim_worker_games_per_second",
            "Games per second of each pool process's last chunk, summed over live processes",
            multiprocess_mode="livesum",
            registry=registry,
        )
        self.retries = Counter(
            "azulsim_chunk_retries", "Failed chunk attempts published again", registry=registry
        )
        self.failures = Counter(
            "azulsim_chunk_failures",
            "Failed chunk attempts by outcome",
            ["outcome"],
            registry=registry,
        )
        self.redelivered = Counter(
            "azulsim_chunk_redelivered",
            "Chunk deliveries flagged as redelivered by the broker",
            registry=registry,
        )

    def observe(self, result: Any, seconds: float | None) -> None:
        """Count one finished chunk task from the dict `workers.tasks.run_chunk` returns."""
        if seconds is not None:
            self.chunk_seconds.observe(seconds)
        if not isinstance(result, dict):
            self.chunks.labels("error").inc()
            return
        status = result.get("status")
        if status == "ok":
            outcome = str(result.get("merge", "merged"))
            self.chunks.labels(outcome).inc()
            timings = result.get("timings") or {}
            for phase, spent in timings.items():
                self.phase_seconds.labels(phase).inc(max(0.0, float(spent)))
            if outcome in ("merged", "finished"):
                games = int(result.get("games", 0))
                self.chunks_done.inc()
                self.games.inc(games)
                busy = sum(float(v) for v in timings.values()) or seconds
                if busy:
                    self.games_per_second.set(games / busy)
        elif status == "skipped":
            self.chunks.labels("skipped").inc()
        elif status == "failed":
            self.chunks.labels("failed").inc()
            outcome = str(result.get("outcome", "unknown"))
            self.failures.labels(outcome).inc()
            if outcome == "retry":
                self.retries.inc()
        else:
            self.chunks.labels("error").inc()

    def observe_error(self) -> None:
        """An exception escaped the chunk task (e.g. Redis unreachable)."""
        self.chunks.labels("error").inc()
        self.failures.labels("error").inc()


_metrics: WorkerMetrics | None = None


def worker_metrics() -> WorkerMetrics:
    """This process's `WorkerMetrics` (created on the first call)."""
    global _metrics
    if _metrics is None:
        _metrics = WorkerMetrics()
    return _metrics


# --- multiprocess set-up and the HTTP endpoint ------------------------------------------------


def prepare_multiprocess_dir(env=None) -> str:
    """Make sure ``PROMETHEUS_MULTIPROC_DIR`` names an empty directory; return it.

    Call in the worker's main process before the pool forks and before the first metric is
    created. Uses the variable when set (creating the directory, removing ``*.db`` files of an
    earlier run), else a new temporary directory, and switches prometheus_client to
    multiprocess mode for metrics created from now on.
    """
    env = os.environ if env is None else env
    path = env.get(MULTIPROC_VAR, "").strip()
    if path:
        os.makedirs(path, exist_ok=True)
        for stale in glob.glob(os.path.join(path, "*.db")):
            os.remove(stale)
    else:
        path = tempfile.mkdtemp(prefix="azulsim-metrics-")
    env[MULTIPROC_VAR] = path
    from prometheus_client import values

    values.ValueClass = values.get_value_class()  # chosen at import; re-choose now
    return path


def worker_registry(
    redis_url: str | None = None, queues=(), key_prefix: str = "", settings=None
):
    """A registry that sums the pool processes' files, plus the queue depth when `redis_url`."""
    from prometheus_client import CollectorRegistry
    from prometheus_client.multiprocess import MultiProcessCollector

    registry = CollectorRegistry()
    MultiProcessCollector(registry)
    if redis_url and queues:
        registry.register(
            QueueDepthCollector(redis_url, list(queues), key_prefix=key_prefix, settings=settings)
        )
    return registry


def start_metrics_server(port: int, registry, addr: str = DEFAULT_ADDR):
    """Serve `registry` on ``http://addr:port/metrics`` from a daemon thread; returns
    ``(server, thread)`` (``server.shutdown()`` stops it)."""
    from prometheus_client import start_http_server

    return start_http_server(port, addr=addr, registry=registry)


# --- Celery signals ---------------------------------------------------------------------------

_started: dict[str, float] = {}
_installed = False


def _is_chunk(task) -> bool:
    from .tasks import TASK_NAME

    return getattr(task, "name", None) == TASK_NAME


def _on_worker_init(sender=None, **_):
    """Main process, before the pool forks: multiprocess dir and the endpoint."""
    try:
        port = metrics_port()
    except ValueError as exc:
        log.error("metrics off: %s", exc)
        return
    if port is None:
        return
    path = prepare_multiprocess_dir()
    app = getattr(sender, "app", None)
    settings = getattr(app, "azulsim_settings", None)
    registry = worker_registry(
        getattr(settings, "redis_url", None),
        [settings.queue] if settings else [],
        key_prefix=getattr(settings, "broker_key_prefix", ""),
        settings=settings,
    )
    try:
        start_metrics_server(port, registry, metrics_addr())
    except OSError as exc:
        log.error("metrics endpoint on port %d: %s", port, exc)
        return
    log.info("metrics on http://%s:%d/metrics (multiprocess dir %s)", metrics_addr(), port, path)


def _on_prerun(sender=None, task_id=None, task=None, **_):
    task = task or sender
    if not _is_chunk(task):
        return
    _started[task_id] = time.perf_counter()
    delivery = getattr(getattr(task, "request", None), "delivery_info", None) or {}
    if delivery.get("redelivered"):
        worker_metrics().redelivered.inc()


def _on_postrun(sender=None, task_id=None, task=None, retval=None, state=None, **_):
    task = task or sender
    if not _is_chunk(task):
        return
    began = _started.pop(task_id, None)
    seconds = time.perf_counter() - began if began is not None else None
    if state == "FAILURE":
        return  # counted by _on_failure
    worker_metrics().observe(retval, seconds)


def _on_failure(sender=None, task_id=None, **_):
    if not _is_chunk(sender):
        return
    worker_metrics().observe_error()


def _on_process_shutdown(pid=None, **_):
    """A pool child exits: its live gauges stop counting."""
    if os.environ.get(MULTIPROC_VAR):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(pid or os.getpid())


def install(app=None) -> None:
    """Connect the metric signal handlers (once per process; `app` is unused, for symmetry
    with `workers.logs.install`). The endpoint starts only in a worker whose environment
    sets ``AZULSIM_METRICS_PORT``."""
    global _installed
    if _installed:
        return
    from celery import signals

    signals.worker_init.connect(_on_worker_init, weak=False, dispatch_uid="azulsim.metrics.init")
    signals.task_prerun.connect(_on_prerun, weak=False, dispatch_uid="azulsim.metrics.prerun")
    signals.task_postrun.connect(_on_postrun, weak=False, dispatch_uid="azulsim.metrics.postrun")
    signals.task_failure.connect(_on_failure, weak=False, dispatch_uid="azulsim.metrics.fail")
    signals.worker_process_shutdown.connect(
        _on_process_shutdown, weak=False, dispatch_uid="azulsim.metrics.child_exit"
    )
    _installed = True
