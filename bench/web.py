"""The web view's two targets, on a local stack (`service.stack.Stack` with its web view):

- a job page of 100 configurations renders in under 300 ms of server time: the page's own
  ``Server-Timing`` (the handler's time) for the first request of each of ``--firsts`` jobs of
  that shape (nothing cached: GetStatistics' derivation of the counters, then the page's render;
  the best and the median) and the median of the next ones (the
  statistics HTML cached by job record, as while fifty pages watch); the first GetStatistics
  after it (the reply's JSON, which the page leaves to it); and, in this process, the parts of a
  first request apart: the page's document (`StatisticsReplies.document`: the counters' HGETALL
  and `sim.stats.derive`, each also timed alone), the reply's JSON (`statistics_to_proto`) and the
  render of the page from its document, each in wall and in CPU time, best and median (the API
  process's CPU time for the first requests too: on a loaded machine the wall time is mostly
  waiting for a core);
- fifty open pages watching a running job cost the API process under 10 % of one core: its CPU
  time (``/proc/<pid>/stat``, all threads) over a window with no page open and over the same
  window with fifty event streams open on a job that the workers are playing (one of one
  configuration, and one of 100, whose statistics take a few tenths of a second to derive).

    python bench/web.py                    # a few minutes
    python bench/web.py --window 30 --pages 50 --out /tmp/web.json
    python bench/web.py --page-only --out /tmp/page.json   # the job page's times alone

Writes ``bench/results/web.json`` (or ``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from service.client import Client  # noqa: E402
from service.stack import Stack  # noqa: E402

WIDE = {  # 100 configurations: the most a job may have
    "configurations": [
        {"players": 2 + k % 3, "bots": ["greedy", "random", "random", "greedy"][: 2 + k % 3],
         "seating": ["rotate", "fixed", "shuffle"][k % 3]}
        for k in range(100)
    ],
    "games": 40,
    "seed": 7,
}  # fmt: skip
RUNNING = {"configurations": [{"players": 2, "bots": ["greedy", "random"]}], "games": 5_000_000,
           "seed": 8}  # fmt: skip
WIDE_RUNNING = {**WIDE, "games": 50_000, "seed": 9}  # 100 configurations that keep running


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def server_ms(url: str) -> float:
    with urllib.request.urlopen(url, timeout=60) as r:
        r.read()
        return float(r.headers["Server-Timing"].split("dur=")[1])


def wait(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while not (got := predicate()):
        if time.monotonic() > deadline:
            raise SystemExit(f"bench/web.py: timed out waiting for {what}")
        time.sleep(0.2)
    return got


def page_times(stack: Stack, client: Client, repeats: int, firsts: int) -> dict:
    # `firsts` jobs of the same shape (seeds apart), each page drawn once with nothing cached.
    jobs = [client.submit({**WIDE, "seed": WIDE["seed"] + 10 * i})[0] for i in range(firsts)]
    for job in jobs:
        wait(lambda j=job: client.get(j.job_id).state == 3, 900, "the 100-configuration jobs")
    api = stack.procs["api"].pid
    first_walls, first_cpus = [], []
    for job in jobs:
        url = f"{stack.web_url}jobs/{job.job_id}"
        cpu_before = cpu_seconds(api)
        first_walls.append(server_ms(url))
        first_cpus.append(1e3 * (cpu_seconds(api) - cpu_before))  # the API process's, 10 ms ticks
    job = jobs[0]
    url = f"{stack.web_url}jobs/{job.job_id}"
    began = time.perf_counter()
    client.statistics(job.job_id)  # builds its reply from the document the page derived
    getstatistics = 1e3 * (time.perf_counter() - began)
    warm = [server_ms(url) for _ in range(repeats)]
    # In this process, its parts: the document (the counters from Redis, `sim.stats.derive`),
    # the reply's JSON, and the page's own render of that document (templates compiled once, as
    # in the server; the statistics HTML not cached).
    from service.config import ServerConfig
    from service.convert import statistics_to_proto
    from service.server import make_backend
    from service.server.replies import StatisticsReplies
    from service.web.views import Views
    from sim.stats import derive as derive_document
    from workers.settings import load_settings

    backend = make_backend(ServerConfig(), load_settings(stack.env))
    # Wall and CPU time (this thread's: on a loaded machine the wall time is mostly waiting).
    parts: dict[str, list[tuple[float, float]]] = {
        "document": [], "read_counters": [], "derive": [], "reply": [], "page_render": []
    }  # fmt: skip
    views = Views()

    def timed(name: str, fn, *args):
        wall, cpu = time.perf_counter(), time.thread_time()
        got = fn(*args)
        parts[name].append((1e3 * (time.perf_counter() - wall), 1e3 * (time.thread_time() - cpu)))
        return got

    for _ in range(max(5, repeats // 2)):
        shown = timed("document", StatisticsReplies().document, backend, job.job_id)
        # The document's own parts: the counters' HGETALL, `derive`; then the reply's JSON.
        info = backend.get(job.job_id)
        counters = timed("read_counters", backend.store.counters, job.job_id)
        whole = timed("derive", derive_document, counters, info.spec)
        timed("reply", statistics_to_proto, info, whole)
        views.live(shown)  # compiled templates, as in a running server
        views._stats.clear()
        timed("page_render", views.live, shown)
    medians = {}
    for name, got in parts.items():
        medians[f"{name}_ms_median"] = round(statistics.median(w for w, _ in got), 1)
        medians[f"{name}_ms_best"] = round(min(w for w, _ in got), 1)
        medians[f"{name}_cpu_ms_median"] = round(statistics.median(c for _, c in got), 1)
        medians[f"{name}_cpu_ms_best"] = round(min(c for _, c in got), 1)
    return {
        "configurations": len(WIDE["configurations"]),
        "page_bytes": len(urllib.request.urlopen(url, timeout=60).read()),
        "first_requests": firsts,
        "first_server_ms_median": round(statistics.median(first_walls), 1),
        "first_server_ms_best": round(min(first_walls), 1),
        "first_server_cpu_ms_median": round(statistics.median(first_cpus), 1),
        "first_server_cpu_ms_best": round(min(first_cpus), 1),
        "warm_server_ms_median": round(statistics.median(warm), 1),
        "warm_server_ms_max": round(max(warm), 1),
        "first_getstatistics_client_ms": round(getstatistics, 1),
        "counters": len(counters),
        **medians,
        "target_ms": 300,
    }


def watch_cost(stack: Stack, client: Client, pages: int, window: float, spec=RUNNING) -> dict:
    job = client.submit(spec)[0]
    wait(lambda: client.get(job.job_id).games_done > 0, 300, "the job to run")
    api = stack.procs["api"].pid

    def measure() -> float:
        before, began = cpu_seconds(api), time.monotonic()
        time.sleep(window)
        return 100.0 * (cpu_seconds(api) - before) / (time.monotonic() - began)

    idle = measure()
    events = [0] * pages
    stop = threading.Event()

    def read(i: int) -> None:
        with urllib.request.urlopen(f"{stack.web_url}jobs/{job.job_id}/events", timeout=600) as r:
            for line in r:
                if line.startswith(b"event: update"):
                    events[i] += 1
                if stop.is_set():
                    return

    readers = [threading.Thread(target=read, args=(i,), daemon=True) for i in range(pages)]
    for r in readers:
        r.start()
    wait(lambda: all(events), 120, "every page's first update")
    start_events = sum(events)
    busy = measure()
    got = sum(events) - start_events
    stop.set()
    done_at = client.get(job.job_id).games_done
    client.cancel(job.job_id)
    return {
        "configurations": len(spec["configurations"]),
        "pages": pages,
        "window_s": window,
        "api_cpu_percent_no_pages": round(idle, 2),
        "api_cpu_percent_with_pages": round(busy, 2),
        "api_cpu_percent_for_pages": round(busy - idle, 2),
        "updates_sent_in_window": got,
        "games_done_when_measured": done_at,
        "target_percent": 10,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pages", type=int, default=50, help="event streams open (default 50)")
    p.add_argument("--window", type=float, default=15.0, help="seconds measured (default 15)")
    p.add_argument("--repeats", type=int, default=20, help="warm page requests (default 20)")
    p.add_argument(
        "--firsts", type=int, default=3, help="jobs whose page is drawn first (default 3)"
    )
    p.add_argument("--workers", type=int, default=1, help="worker pool processes (default 1)")
    p.add_argument(
        "--page-only", action="store_true", help="only the job page's times (no watching)"
    )
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "web.json")
    args = p.parse_args(argv)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AZULSIM_")}
    stack = Stack(workers=args.workers, listen="127.0.0.1:0", web="127.0.0.1:0", env=env)
    stack.start()
    try:
        with Client(stack.address, token="", timeout=120) as client:
            client.wait_ready(60)
            result = {
                "bench": "web",
                "host": platform.node(),
                "cpus": os.cpu_count(),
                "note": "the machine's load average is recorded at the start and the end",
                "load_average_at_start": round(os.getloadavg()[0], 2),
                "job_page": page_times(stack, client, args.repeats, args.firsts),
            }
            if not args.page_only:
                result["watching"] = watch_cost(stack, client, args.pages, args.window)
                result["watching_100_configurations"] = watch_cost(
                    stack, client, args.pages, args.window, WIDE_RUNNING
                )
        result["load_average_at_end"] = round(os.getloadavg()[0], 2)
    finally:
        stack.stop()
        stack.cleanup()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
