"""The one Celery app and its configuration, for every process (server, workers, monitoring).

docs/reliability.md–1.3 explains the choices; the short reason for each is beside it. The
ordering invariant, checked by `workers.settings.Settings`::

    task soft limit < task hard limit < visibility timeout < reconciler stall threshold < key TTL

Run a worker with ``azulsim worker`` (`run_worker`) or ``celery -A workers.app worker``; both use
the same app. Set ``OMP_NUM_THREADS=1`` (and the OpenBLAS/MKL equivalents) in a worker's
environment: `run_worker` sets them when unset, before the pool forks.
"""

from __future__ import annotations

import logging
import os
import time

from celery import Celery, bootsteps, signals

from sim.jobs.alloc import tune_allocator

from . import logs as log_setup
from . import metrics
from .settings import Settings, load_settings, tcp_options
from .store.connect import broker_url, sentinel_kwargs
from .tasks import TASK_NAME, register


def celery_config(settings: Settings) -> dict:
    """The Celery settings for `settings`, each with its reason."""
    transport = {
        # Redelivery of an unacked (crashed/lost) message after this long; must exceed the hard
        # limit or a running chunk is delivered twice (notes §1.1). Set in every place it is read.
        "visibility_timeout": settings.visibility_timeout_s,
        # kombu >= 5.7 sweeps unacked messages every interval x throttle seconds (default ~100 s).
        "unacked_restore_interval": 10,
        "unacked_restore_throttle": 3,
        # A partition drops packets silently: these make a dead connection an error in seconds
        # (reasons in workers.settings.tcp_options and redis_client_options).
        "socket_keepalive": True,
        "socket_keepalive_options": tcp_options(settings),
        "socket_connect_timeout": settings.redis_connect_s,  # a connect into a partition ends
        # Synchronous commands (publish, ack, the unacked sweep) fail instead of hanging; well
        # above the BRPOP poll (1 s), which runs on the event loop and is not bound by it.
        "socket_timeout": settings.redis_timeout_s,
        "retry_on_timeout": True,  # one retry on a read timeout rather than an error
        # PING idle pooled connections, and drop the consumer's BRPOP connection when its reply
        # is overdue by 1 s + this (kombu >= 5.7): a half-open consumer reconnects by itself.
        "health_check_interval": settings.broker_health_s,
    }
    if settings.broker_key_prefix:  # AZULSIM_PREFIX_BROKER_KEYS: kombu's keys under the prefix
        transport["global_keyprefix"] = settings.broker_key_prefix
    if settings.redis_sentinels:  # kombu's sentinel:// transport asks them for the primary
        transport["master_name"] = settings.redis_master
        transport["sentinel_kwargs"] = sentinel_kwargs(settings)
    return {
        # Redis is the broker and the job store: its URL, or the Sentinels (`broker_url`)
        "broker_url": broker_url(settings),
        "broker_transport_options": transport,
        "visibility_timeout": settings.visibility_timeout_s,  # the docs: set it here too
        "broker_connection_retry_on_startup": True,  # wait for Redis at start; silences 6.0 warning
        # Reconnect for as long as the broker is away (default: give up after 100 tries, ~1 h):
        # a partition ends by itself; a worker that is connected but stuck is the watchdog's
        # (workers/watchdog.py) to end. broker_heartbeat is AMQP-only: kombu's Redis transport
        # ignores it, health_check_interval above is its counterpart.
        "broker_connection_max_retries": None,
        "result_backend": None,  # no result backend: counters go to the job store (notes §1.2)
        "task_ignore_result": True,  # no celery-task-meta-* keys piling up
        "task_serializer": "json",  # JSON only: other formats can run code (notes §2)
        "result_serializer": "json",
        "accept_content": ["json"],  # messages in any other format are refused
        "result_accept_content": ["json"],
        "task_acks_late": True,  # ack after the chunk ran: a crash leaves the message to redeliver
        "task_reject_on_worker_lost": True,  # requeue when the pool child dies (OOM, kill)...
        # ...and the attempt cap in begin_chunk.lua stops the loop a poison chunk would make.
        "task_acks_on_failure_or_timeout": True,  # failures are recorded and republished by us
        "worker_prefetch_multiplier": 1,  # reserve only the running chunk per process (notes §1.3)
        "task_soft_time_limit": settings.task_soft_limit_s,  # raises in the chunk: a failed attempt
        "task_time_limit": settings.task_hard_limit_s,  # kills a stuck child; < visibility timeout
        # Recycle pool children now and then: bounds memory growth of long-lived processes.
        "worker_max_tasks_per_child": settings.max_tasks_per_child or None,
        # Without it a running acks_late task runs twice after a broker connection loss.
        "worker_cancel_long_running_tasks_on_connection_loss": True,
        "worker_soft_shutdown_timeout": 30.0,  # SIGTERM lets a running chunk finish (5.5+)
        # A pool child loads the compiled engine before it reports up (`_load_engine_in_children`):
        # seconds on a busy machine, a compile when the machine has no cache yet. Celery's 4 s
        # would kill it mid-load, again and again; this still ends a child stuck there, before
        # the watchdog (AZULSIM_WATCHDOG_S, 420 s by default) judges the worker stuck.
        "worker_proc_alive_timeout": CHILD_START_S,
        "task_default_queue": settings.queue,  # chunks go to their own queue
        "task_routes": {TASK_NAME: {"queue": settings.queue}},
        "task_create_missing_queues": True,
        # Celery's remote control (celery inspect/control, Flower's worker pages) keeps a pub/sub
        # connection in every worker; after a reset, its blocking re-read is where the worker's
        # event loop hung for good in tests/test_netns.py (celery#8030). AzulSim needs none of
        # it (cancel is a state flag in Redis), so it is off unless AZULSIM_REMOTE_CONTROL=1.
        "worker_enable_remote_control": settings.remote_control,
        "worker_send_task_events": False,  # a pub/sub message per event; Flower turns them on
        "worker_hijack_root_logger": False,  # keep the process's own logging set-up
        "worker_redirect_stdouts": False,  # numpy warnings stay on stderr, not in the task log
        "broker_pool_limit": 10,  # publisher connections per process
        "enable_utc": True,
        "timezone": "UTC",
    }


CHILD_START_S = 300.0  # the longest a pool child may take to start, its engine loaded


class ReconcilerStep(bootsteps.StartStopStep):
    """Runs `workers.reconciler.reconcile_once` every ``settings.reconcile_interval_s`` on the
    worker's own timer (main process, no beat); a Redis lock makes one worker sweep at a time."""

    requires = {"celery.worker.consumer.tasks:Tasks"}

    def __init__(self, parent, **kwargs):
        self.tref = None
        super().__init__(parent, **kwargs)

    def start(self, parent):
        settings: Settings = parent.app.azulsim_settings
        if settings.reconcile_interval_s > 0:
            from .reconciler import reconcile_tick

            self.tref = parent.timer.call_repeatedly(
                settings.reconcile_interval_s, reconcile_tick, (parent.app,), priority=10
            )

    def stop(self, parent):
        if self.tref is not None:
            self.tref.cancel()
            self.tref = None

    shutdown = stop


class WatchdogStep(bootsteps.StartStopStep):
    """Starts the liveness watchdog (`workers.watchdog`) once per worker process, fed by the
    ``task_received`` signal; off with ``AZULSIM_WATCHDOG_S=0``."""

    requires = {"celery.worker.consumer.tasks:Tasks"}
    watchdog = None  # one per process: the consumer's steps start again after each reconnect

    def start(self, parent):
        settings: Settings = parent.app.azulsim_settings
        if settings.watchdog_s <= 0 or WatchdogStep.watchdog is not None:
            return
        from celery import signals

        from .watchdog import Watchdog

        dog = Watchdog(settings)
        signals.task_received.connect(
            lambda **_: dog.received(), weak=False, dispatch_uid="azulsim.watchdog"
        )
        WatchdogStep.watchdog = dog.start()


def make_app(settings: Settings | None = None) -> Celery:
    """A Celery app for `settings` (default: `load_settings()`), with the chunk task registered.

    The settings are kept on the app as ``app.azulsim_settings`` (the task and the reconciler read
    them from there).
    """
    settings = settings or load_settings()
    celery = Celery("azulsim", set_as_current=False)
    celery.config_from_object(celery_config(settings))
    celery.azulsim_settings = settings
    register(celery)
    log_setup.install(celery)  # JSON logs with the job id and chunk (workers/logs.py)
    metrics.install(celery)  # Prometheus metrics, multiprocess-safe (workers/metrics.py)
    celery.steps["consumer"].add(ReconcilerStep)
    celery.steps["consumer"].add(WatchdogStep)
    _tune_allocator_in_workers()
    _load_engine_in_children()
    return celery


def _tune_allocator_in_workers() -> None:
    """Every process that plays chunks sets the allocator once (`sim.jobs.alloc`): the worker's main
    process before the pool forks (children inherit it; the solo pool plays there) and each pool
    child when it starts."""

    def tune(**_):
        tune_allocator()

    signals.worker_init.connect(tune, weak=False, dispatch_uid="azulsim.alloc.worker")
    signals.worker_process_init.connect(tune, weak=False, dispatch_uid="azulsim.alloc.child")


def _load_engine_in_children() -> None:
    """Every process that plays chunks loads the compiled engine and the bots' kernels (numba's
    cache, `sim.rules.compile_once`) when it starts, before it takes a chunk: a pool child reports
    up to the pool only after ``worker_process_init``, and the solo pool sends it before it
    consumes. Loaded in its first chunk instead, the load counted against that chunk's time limits:
    on a busy machine it took longer than a short soft limit, the chunk was retried at the back of
    the queue, and a job with a stopping rule stopped late. Not loaded in the main process before
    the pool forks: that delays the worker's start (``ready``) by the load, and the main process
    plays nothing."""

    def load(**_):
        from sim.bots import alphabeta, playout
        from sim.rules import engine

        log = logging.getLogger("azulsim.workers")
        began = time.monotonic()
        try:
            engine.kernels()
            playout.ready()  # the heuristic's evaluation and the search bots' play-outs
            alphabeta.ready()  # the alpha-beta search (0.06 s from the cache)
        except Exception:  # a chunk that needs the engine fails with the error, and says why
            log.exception("could not load the compiled engine")
            return
        log.info("compiled engine loaded in %.1f s", time.monotonic() - began)

    signals.worker_process_init.connect(load, weak=False, dispatch_uid="azulsim.engine.child")


app = make_app(load_settings())


def run_worker(
    concurrency: int | None = None,
    settings: Settings | None = None,
    argv: list[str] | None = None,
) -> None:
    """Run a chunk worker in this process until it is stopped (what ``azulsim worker`` calls).

    Parameters
    ----------
    concurrency : pool processes (prefork); default ``settings.concurrency`` or one per core
    settings : default `load_settings()` (the module's `app` when they are the same)
    argv : extra ``celery worker`` options (e.g. ``["--loglevel=INFO"]``)
    """
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")  # one BLAS thread per pool child, set before forking
    settings = settings or load_settings()
    celery = app if settings == app.azulsim_settings else make_app(settings)
    concurrency = concurrency or settings.concurrency or os.cpu_count() or 1
    args = [
        "worker",
        "--pool=prefork",
        f"--concurrency={concurrency}",
        f"--queues={settings.queue}",
        "--prefetch-multiplier=1",
        *(argv or []),
    ]
    if not settings.remote_control and "--without-gossip" not in args:
        # Gossip's event subscription is a pub/sub connection too: after a Redis restart redis-py
        # reconnects it inside kombu's read and blocks there for good, the event loop with it
        # (tests/test_faults.py::test_redis_dies_between_merge_and_ack, docs/reliability.md).
        # AzulSim needs no gossip (its reconciler's leases find lost workers); Flower's set-up
        # (AZULSIM_REMOTE_CONTROL=1) keeps it.
        args.append("--without-gossip")
    if not settings.remote_control and "--without-heartbeat" not in args:
        # The worker heartbeat is an event for gossip and Flower only, published from the event
        # loop with kombu's retry: through a partition it held the loop, and the pool's time
        # limits with it, until the heal (docs/reliability.md "Network faults").
        args.append("--without-heartbeat")
    if not any(a.startswith(("--loglevel", "-l")) for a in argv or []):
        args.append("--loglevel=INFO")
    celery.worker_main(args)
