"""`azulsim up` as a user runs it: a local stack that keeps its jobs and results in a data
directory across a restart, and `azulsim watch` on a job that waits in the queue
behind another. A real redis-server, Celery worker and API server, started and
stopped by the installed `azulsim` itself."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import threading
import time
from pathlib import Path

import psutil
import pytest

from service.stack import free_port
from tests.cli_util import AZULSIM, azulsim, user_env
from tests.waits import generous, wait_until


class Up:
    """`azulsim up --workers 1` on a free port, with its banner read."""

    def __init__(self, *args: str, **env: str):
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        # The web view on a free port: the default 127.0.0.1:8051 would be taken by another
        # stack of a parallel test (or by a user's own `azulsim up`).
        web = [] if {"--web", "--no-web"} & set(args) else ["--web", "127.0.0.1:0"]
        self.proc = subprocess.Popen(
            [str(AZULSIM), "up", "--workers", "1", "--listen", self.address, *web, *args],
            env=user_env(**env),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.banner = ""
        deadline = time.monotonic() + generous(90)
        while "Ctrl-C" not in self.banner:
            line = self.proc.stdout.readline()
            assert line or self.proc.poll() is None, self.proc.stderr.read()
            self.banner += line
            assert time.monotonic() < deadline, self.banner
        self.children = psutil.Process(self.proc.pid).children(recursive=True)

    def cli(self, *args: str, **kw) -> subprocess.CompletedProcess:
        return azulsim(*args, "--server", self.address, **kw)

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        assert self.proc.wait(timeout=generous(60)) == 0, self.proc.stderr.read()
        alive = psutil.wait_procs(self.children, timeout=10)[1]
        assert not alive, f"still running after `up` stopped: {[p.pid for p in alive]}"

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for p in self.children:
            try:
                p.kill()
            except psutil.NoSuchProcess:
                pass


def test_jobs_and_statistics_survive_a_restart(tmp_path):
    data = tmp_path / "azulsim-data"
    up = Up("--data-dir", str(data))
    try:
        assert re.search(rf"data +{re.escape(str(data))}/ +\(Redis append-only file", up.banner)
        # a second stack on the same data directory is refused, with the reason
        second = azulsim("up", "--data-dir", str(data), "--listen", "127.0.0.1:0", check=False)
        assert second.returncode == 1 and "another `azulsim up`" in second.stderr
        job = up.cli("submit", "--bots", "greedy,random", "--games", "300", "--seed", "9")
        job_id = job.stdout.strip()
        assert up.cli("watch", job_id).returncode == 0
        before = json.loads(up.cli("stats", job_id, "--json").stdout)
        assert before["games_done"] == 300
        up.stop()
    finally:
        up.kill()
    assert list((data / "redis").rglob("*.aof")), "no append-only file was written"
    assert (data / "logs" / "worker.log").stat().st_size > 0

    up = Up("--data-dir", str(data))
    try:
        jobs = json.loads(up.cli("jobs", "--json").stdout)["jobs"]
        assert [(j["job_id"], j["state"]) for j in jobs] == [(job_id, "SUCCEEDED")]
        assert json.loads(up.cli("stats", job_id, "--json").stdout) == before
        up.stop()
    finally:
        up.kill()


def test_ephemeral_keeps_nothing(tmp_path):
    up = Up("--ephemeral", XDG_DATA_HOME=str(tmp_path / "xdg"))
    try:
        workdir = Path(re.search(r"data +(\S+)/ +\(--ephemeral", up.banner).group(1))
        assert workdir.is_dir()
        up.stop()
    finally:
        up.kill()
    assert not workdir.exists() and not (tmp_path / "xdg").exists()


def test_a_queued_job_says_what_is_ahead_of_it_every_2_s(tmp_path):
    # One worker process: the job ahead keeps every worker process busy until it is cancelled, and
    # the queued job's rate and ETA need seconds of play, not a second core.
    up = Up("--ephemeral", AZULSIM_CHUNK_GAMES="2000", AZULSIM_CONCURRENCY="1")
    try:
        # The earlier job must still run when the test cancels it: 400,000 greedy games once
        # lasted long enough, and ended within the wait once greedy got faster. Chunks are
        # published a window at a time, so a bigger job costs nothing more to submit.
        big_games = 10_000_000
        big = up.cli("submit", "--bots", "greedy,greedy", "--games", str(big_games)).stdout.strip()
        # The queued job runs for seconds once it starts, so `watch` shows its rate and ETA:
        # 100,000 greedy games once ended between two of its lines. 40,000 rollout-random games
        # are about 8 s of one quiet core (0.19 ms a game), four of its lines.
        small = up.cli("submit", "--bots", "rollout,random", "--games", "40000").stdout.strip()
        watch = subprocess.Popen(
            [str(AZULSIM), "watch", small, "--server", up.address],
            env=user_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        lines: list[tuple[float, str]] = []
        reader = threading.Thread(
            target=lambda: lines.extend((time.monotonic(), ln) for ln in watch.stderr), daemon=True
        )
        reader.start()
        # Three lines take 4 s once `watch` runs; on a loaded machine its start alone can take
        # seconds more, so wait for them rather than for a fixed time.
        queued = wait_until(
            lambda: (q := [(t, ln) for t, ln in list(lines) if ln.startswith("queued")])[2:] and q,
            60,
            "three 'queued' lines from watch",
            details=lambda: "".join(ln for _, ln in lines),
        )
        assert re.match(
            r"queued behind [\d,]+ games of 1 earlier job: 0/40,000 games", queued[0][1]
        )
        ahead = int(re.search(r"behind ([\d,]+)", queued[0][1]).group(1).replace(",", ""))
        assert 0 < ahead <= 2 * big_games
        gaps = [b - a for (a, _), (b, _) in zip(queued, queued[1:], strict=False)]
        # A line every 2 s, chunk or no chunk (never sooner; later only on a busy machine).
        assert all(1.5 < g < 2 + generous(1.5) for g in gaps), gaps
        up.cli("cancel", big)
        assert watch.wait(timeout=generous(120)) == 0
        reader.join(10)
        last = lines[-1][1]
        assert last.startswith(f"job {small} SUCCEEDED: 40,000/40,000 games"), "".join(
            x for _, x in lines
        )
        running = [ln for _, ln in lines if ln.startswith("running")]
        assert running[0].startswith("running: ")  # said as soon as it starts
        assert any(
            re.match(r"running: [\d,]+/40,000 games  [\d,]+ games/s  ETA \d", ln) for ln in running
        )
        up.stop()
    finally:
        up.kill()


@pytest.mark.slow  # about 15 s; `make test-all`
def test_a_job_stopped_half_way_finishes_after_a_restart(tmp_path):
    """Its remaining chunks wait in the kept Redis; the result equals an in-process run. The job
    is 200,000 games (about 5 s of one core): 20,000 ended within the first poll on a busy
    machine, before any stop could land."""
    games = "200000"
    data = tmp_path / "azulsim-data"
    up = Up("--data-dir", str(data), AZULSIM_CHUNK_GAMES="2000")
    try:
        job_id = up.cli(
            "submit", "--bots", "greedy,random", "--games", games, "--seed", "5"
        ).stdout.strip()

        def listed():
            return json.loads(up.cli("jobs", "--json").stdout)["jobs"][0]

        # Stop once some but not all chunks are counted.
        job = wait_until(
            lambda: (j := listed())["games_done"] > 0 and j, 60, "a chunk counted", interval=0.2
        )
        up.stop()
    finally:
        up.kill()
    assert 0 < job["games_done"] < int(games), job

    up = Up("--data-dir", str(data), AZULSIM_CHUNK_GAMES="2000")
    try:
        assert up.cli("watch", job_id, timeout=generous(180)).returncode == 0
        doc = json.loads(up.cli("stats", job_id, "--json").stdout)
        up.stop()
    finally:
        up.kill()
    local = json.loads(
        azulsim(
            "simulate", "--bots", "greedy,random", "--games", games, "--seed", "5", "--json"
        ).stdout
    )
    local.pop("timing")
    assert doc == local


def test_a_redis_left_running_keeps_a_second_stack_off_its_data(tmp_path):
    """`up` killed outright leaves its children; their Redis still holds the data directory, so
    a new `up` refuses it instead of starting a second Redis on the same append-only file."""
    data = tmp_path / "azulsim-data"
    up = Up("--data-dir", str(data))
    try:
        up.proc.kill()
        up.proc.wait()
        again = azulsim("up", "--data-dir", str(data), "--listen", "127.0.0.1:0", check=False)
        assert again.returncode == 1
        assert "or a redis-server it left running" in again.stderr
    finally:
        up.kill()  # the orphans too
    psutil.wait_procs(up.children, timeout=10)
    up = Up("--data-dir", str(data))  # with them gone the directory is free again
    try:
        up.stop()
    finally:
        up.kill()


def test_up_with_sentinels_survives_the_loss_of_its_primary(tmp_path):
    """`azulsim up --sentinel`: a primary, a replica and three Sentinels. The primary is
    SIGKILLed for good; the next job still runs to the end on the promoted replica."""
    up = Up("--ephemeral", "--sentinel", XDG_DATA_HOME=str(tmp_path / "xdg"))
    try:
        assert "Sentinels 127.0.0.1:" in up.banner, up.banner
        ports = re.search(r"primary and replica on 127.0.0.1 ports (\d+), (\d+)", up.banner)
        titles = {p: " ".join(p.cmdline()) for p in up.children}  # redis-server sets its title
        primary = next(p for p, t in titles.items() if f"127.0.0.1:{ports.group(1)}" in t)
        sentinels = [p for p, t in titles.items() if "sentinel" in t]
        assert len(sentinels) == 3
        first = up.cli("submit", "--bots", "greedy,random", "--games", "200", "--seed", "3")
        assert up.cli("watch", first.stdout.strip()).returncode == 0
        primary.kill()  # never started again
        # While the Sentinels fail over (seconds) a call answers UNAVAILABLE: retry, as a
        # client would.
        job = wait_until(
            lambda: (r := up.cli("submit", "--bots", "greedy,random", "--games", "200",
                                 "--seed", "4", check=False)).returncode == 0 and r,
            120, "a submit on the promoted replica", interval=1,
        )  # fmt: skip
        assert up.cli("watch", job.stdout.strip(), timeout=180).returncode == 0
        stats = json.loads(up.cli("stats", job.stdout.strip(), "--json").stdout)
        assert stats["games_done"] == 200
        up.stop()
    finally:
        up.kill()


def test_game_records_on_the_local_stack_export_by_prefix_from_any_shell(tmp_path):
    """`azulsim up`, a spec with game_records, then `azulsim export PREFIX` from a shell that
    has no AZULSIM_GAMES_DIR: the stack keeps the records in its data directory and the API
    sends them; the rows are those of `simulate --games-out` of the same spec."""
    import pyarrow.parquet as pq

    data = tmp_path / "azulsim-data"
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({
        "configurations": [{"players": 2, "bots": ["greedy", "random"]}],
        "games": 200, "seed": 5, "game_records": True,
    }))  # fmt: skip
    local = tmp_path / "local.parquet"
    azulsim("simulate", "--spec", str(spec), "--workers", "1", "--games-out", str(local))
    up = Up("--data-dir", str(data))
    try:
        assert re.search(rf"games +{re.escape(str(data / 'games'))}/", up.banner)
        job_id = up.cli("submit", "--spec", str(spec)).stdout.strip()
        assert up.cli("watch", job_id).returncode == 0
        out = tmp_path / "export.parquet"
        long = tmp_path / "long.parquet"
        done = up.cli("export", job_id[:6], "-o", str(out), "--long-out", str(long), cwd=tmp_path)
        assert "wrote 200 games" in done.stderr  # (user_env: no AZULSIM_* in this shell)
        assert pq.read_table(long).num_rows == 400
        assert pq.read_table(out).equals(pq.read_table(local))
        assert list((data / "games" / job_id).glob("chunk-*.parquet"))
        # A job without records says what it lacks, in one line.
        plain = up.cli("submit", "--bots", "greedy,random", "--games", "10").stdout.strip()
        assert up.cli("watch", plain).returncode == 0
        refused = up.cli("export", plain, "-o", str(tmp_path / "x.parquet"), check=False)
        assert refused.returncode == 1 and "FAILED_PRECONDITION" in refused.stderr
        assert '"game_records": true' in refused.stderr
        assert not (tmp_path / "x.parquet").exists()
        up.stop()
    finally:
        up.kill()
