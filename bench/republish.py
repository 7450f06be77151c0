"""Publishes the reconciler adds in a burst and in a backlog: the target is 0 (docs/reliability.md).

Starts a private redis-server, an in-process API server (`service.testing.ServerThread`) and
Celery worker processes (``python -m service worker``, reconciler sweeping every second), with
the time limits scaled down so that the reconciler's old stall rule (15 min) would act within
seconds: soft 6 s < hard 8 s < visibility 10 s < stall 12 s, lease 3 s. Then:

1. **Burst.** ``--jobs`` one-chunk jobs submitted at once through the API while the workers run;
   the last ones wait far longer than the stall time.
2. **Backlog.** The workers stop; ``--jobs`` more jobs are submitted and wait ``--backlog-s``
   seconds (default 30: 2.5 x the stall time, as 30 minutes is 2 x the default 15); the workers
   start again and play them.

For each phase: jobs accepted, jobs SUCCEEDED, games counted, chunks published again (the
service-wide count ``<prefix>:republished`` the reconciler keeps, and its log lines), the wall
time of each phase, and the CPU time of the whole run (this process with the API, and the
workers: ``resource.getrusage``; the machine's cores are shared, so wall times vary).

    python bench/republish.py                   # 2,000 + 2,000 jobs, 2 worker processes
    python bench/republish.py --jobs 200 --backlog-s 15

Writes ``bench/results/republish.json`` (or ``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import redis  # noqa: E402

from service.api import azulsim_pb2 as pb  # noqa: E402
from service.client import Client  # noqa: E402
from service.config import ServerConfig  # noqa: E402
from service.server import make_backend  # noqa: E402
from service.stack import RedisServer  # noqa: E402
from service.testing import ServerThread  # noqa: E402
from workers.settings import load_settings  # noqa: E402
from workers.store import JobStore  # noqa: E402

LIMITS = {
    "AZULSIM_TASK_SOFT_LIMIT_S": "6",
    "AZULSIM_TASK_HARD_LIMIT_S": "8",
    "AZULSIM_VISIBILITY_TIMEOUT_S": "10",
    "AZULSIM_STALL_S": "12",
    "AZULSIM_LEASE_S": "3",
    "AZULSIM_RECONCILE_INTERVAL_S": "1",
}


def _cpu_s() -> float:
    me, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


class Workers:
    def __init__(self, env: dict[str, str], concurrency: int, log: Path):
        self.env, self.concurrency, self.logfile = env, concurrency, log
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        out = open(self.logfile, "ab")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "service", "worker", "--concurrency", str(self.concurrency)],
            env=self.env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, 9)
                self.proc.wait()

    def republished_in_log(self) -> int:
        """Chunks published again per the reconciler's log lines ("published N chunk(s) again")."""
        text = self.logfile.read_text(errors="replace") if self.logfile.exists() else ""
        return sum(int(m.group(1)) for m in re.finditer(r"published (\d+) chunk\(s\) again", text))


def submit(client: Client, n: int, tag: str) -> list[str]:
    spec = pb.JobSpec(
        configurations=[pb.Configuration(players=2, bots=["greedy", "random"])], games=20, seed=7
    )
    return [client.submit(spec, request_id=f"{tag}-{i}")[0].job_id for i in range(n)]


def wait_all(store: JobStore, job_ids: list[str], timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    left = set(job_ids)
    while left and time.monotonic() < deadline:
        left = {j for j in left if not store.get_job(j).finished}
        time.sleep(0.5)
    jobs = [store.get_job(j) for j in job_ids]
    return {
        "succeeded": sum(j.state == "SUCCEEDED" for j in jobs),
        "games_done": sum(j.games_done for j in jobs),
        "games_expected": sum(j.games_total for j in jobs),
        "unfinished": len(left),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=2000, help="jobs per phase (default 2,000)")
    p.add_argument("--backlog-s", type=float, default=30.0, help="seconds the backlog waits")
    p.add_argument("--workers", type=int, default=2, help="worker pool processes (default 2)")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds to wait per phase")
    p.add_argument(
        "--phases", default="burst,backlog", help="which phases, in order (default both)"
    )
    p.add_argument("--keep", action="store_true", help="keep the work directory (worker log)")
    p.add_argument("--out", default=str(ROOT / "bench" / "results" / "republish.json"))
    args = p.parse_args(argv)

    workdir = Path(tempfile.mkdtemp(prefix="azulsim-republish-"))
    redis_server = RedisServer(workdir).start()
    port = redis_server.port
    tag = uuid.uuid4().hex[:6]
    env = {
        **os.environ,
        **LIMITS,
        "AZULSIM_REDIS_URL": f"redis://127.0.0.1:{port}/0",
        "AZULSIM_PREFIX": f"rep{tag}",
        "AZULSIM_QUEUE": f"rep{tag}.chunks",
        "AZULSIM_MAX_QUEUED_JOBS": str(2 * args.jobs + 10),
        "PYTHONPATH": str(ROOT),
    }
    result: dict = {}
    try:
        settings = load_settings(env)
        store = JobStore(redis.Redis.from_url(settings.redis_url), settings)
        config = ServerConfig(max_queued_jobs=2 * args.jobs + 10)
        workers = Workers(env, args.workers, workdir / "worker.log")
        with (
            ServerThread(make_backend(config, settings), config) as server,
            Client(server.address, token="", timeout=30) as client,
        ):
            for phase in args.phases.split(","):
                before = store.republished_total()
                logged_before = workers.republished_in_log()
                t0 = time.monotonic()
                if phase == "burst":
                    workers.start()
                    ids = submit(client, args.jobs, phase)
                else:
                    workers.stop()
                    ids = submit(client, args.jobs, phase)
                    time.sleep(args.backlog_s)
                    workers.start()
                submitted_s = time.monotonic() - t0
                waited = wait_all(store, ids, args.timeout)
                result[phase] = {
                    "jobs": args.jobs,
                    "submitted_in_s": round(submitted_s, 1),
                    **waited,
                    "republished": store.republished_total() - before,
                    "republished_per_log": workers.republished_in_log() - logged_before,
                    "wall_s": round(time.monotonic() - t0, 1),
                }
                print(f"{phase}: {json.dumps(result[phase])}", flush=True)
        workers.stop()
        result["cpu_s"] = round(_cpu_s(), 1)  # this process, the API and the workers, in all
    finally:
        redis_server.stop()
        if args.keep:
            print(f"work directory kept: {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    result.update(
        settings={
            "jobs": args.jobs,
            "backlog_s": args.backlog_s,
            "workers": args.workers,
            **LIMITS,
        },
        cpu_count=os.cpu_count(),
        python=platform.python_version(),
        command="python bench/republish.py " + " ".join(sys.argv[1:] if argv is None else argv),
    )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    ok = all(
        result[p]["republished"] == 0 and result[p]["unfinished"] == 0
        for p in args.phases.split(",")
    )
    print(f"{'OK' if ok else 'FAILED'}: wrote {out}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
