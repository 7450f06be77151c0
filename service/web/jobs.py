"""What the pages say of a job: its progress (the record's counts, the rate since it started, the
time left or the work queued ahead of it) and a one-line summary of its spec. Read from the `Job`
message (`service.convert.job_to_proto`), as a gRPC client sees it."""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from typing import Any

from sim.rules.rulesets import PRINTED

from ..api import azulsim_pb2 as pb
from ..cli.output import _stopping_text, clock, state_name, when
from ..cli.progress import AHEAD_PAGES
from ..convert import SEATING, TERMINAL, WALL, job_to_proto, rule_set_from_proto


def rule_set_label(c: pb.Configuration, spec: pb.JobSpec) -> str:
    """The canonical label of the rule set configuration `c` of job `spec` plays under
    (`sim.rules.rulesets.RuleSet.label`: its wall, round cap and other rules; ``printed`` for the
    printed game's), as its statistics name it."""
    rules = c.rules.SerializeToString(deterministic=True) if c.HasField("rules") else b""
    return _label(rules, WALL.get(c.wall, "coloured"), c.max_rounds or spec.max_rounds)


@functools.lru_cache(maxsize=1024)
def _label(rules: bytes, wall: str, cap: int) -> str:
    # Kept: a page lists up to 100 configurations, most of them of one or a few rule sets.
    return rule_set_from_proto(pb.Rules.FromString(rules), wall, cap).label


def configuration_summary(c: pb.Configuration, spec: pb.JobSpec, seating: bool = True) -> str:
    """``greedy, random (2p, fixed, rules wall=gray)``: the bots, the players, the seating when
    not ``rotate`` (with `seating`) and the rule set's label when not ``printed``."""
    extra = [f"{c.players}p"]
    if seating and SEATING.get(c.seating) != "rotate":
        extra.append(SEATING.get(c.seating, "rotate"))
    label = rule_set_label(c, spec)
    if label != PRINTED:
        extra.append(f"rules {label}")
    return f"{', '.join(c.bots)} ({', '.join(extra)})"


def spec_summary(spec: pb.JobSpec) -> str:
    """``2 configurations × 10,000 games: greedy, random (2p) | … · SPRT elo`` and so on."""
    configs = spec.configurations
    parts = [configuration_summary(c, spec) for c in list(configs)[:3]]
    if len(configs) > 3:
        parts.append(f"… {len(configs) - 3} more")
    kind = []
    if spec.HasField("stop"):
        rule = "SPRT" if spec.stop.rule == pb.StopRule.SPRT else "precision"
        kind.append(f"{rule} on {spec.stop.statistic or 'elo'}")
    if spec.HasField("ratings"):
        kind.append("tournament")
    if spec.sweep:
        kind.append(f"sweep of {', '.join(spec.sweep)}")
    n = len(configs)
    head = f"{n} configuration{'s' if n != 1 else ''} × {spec.games:,} games, seed {spec.seed}"
    return f"{head}: " + " | ".join(parts) + (" · " + ", ".join(kind) if kind else "")


def _seconds(ts) -> float | None:
    return ts.seconds + ts.nanos / 1e9 if ts.seconds or ts.nanos else None


@dataclass
class Progress:
    """A job's progress as the pages show it."""

    job_id: str
    state: str
    games_done: int
    games_total: int
    percent: float
    rate: str  # games/s since it started ("-" before)
    remaining: str  # ETA while running, the work ahead while queued, else ""
    request_id: str
    created: str
    summary: str
    verdict: str  # the stopping rule's line (LLR against its bounds, the decision)
    error: str

    @property
    def finished(self) -> bool:
        return self.state in TERMINAL


def progress(job: pb.Job, ahead: tuple[int, int, bool] | None = None, now: float | None = None):
    """`Progress` of `job`; `ahead` is `work_ahead`'s answer for a queued job."""
    now = time.time() if now is None else now
    state = state_name(job)
    started, finished = _seconds(job.started_at), _seconds(job.finished_at)
    rate = None
    if started is not None:
        elapsed = (finished or now) - started
        rate = job.games_done / elapsed if elapsed > 0 and job.games_done else None
    remaining = ""
    if state == "RUNNING" and rate:
        remaining = f"ETA {clock((job.games_total - job.games_done) / rate)}"
    elif state == "QUEUED" and ahead is not None:
        games, jobs, complete = ahead
        remaining = (
            f"queued behind {games:,}{'' if complete else ' or more'} games of {jobs:,} "
            f"earlier job{'s' if jobs != 1 else ''}"
            if jobs
            else "next in the queue"
        )
    total = job.games_total or 0
    return Progress(
        job_id=job.job_id,
        state=state,
        games_done=job.games_done,
        games_total=total,
        percent=100.0 * job.games_done / total if total else 0.0,
        rate="-" if rate is None else f"{rate:,.0f}",
        remaining=remaining,
        request_id=job.request_id,
        created=when(job.created_at),
        summary=spec_summary(job.spec),
        verdict=_stopping_text(job).lstrip(", "),
        error=job.error,
    )


def work_ahead(backend, jobs: list[pb.Job]) -> dict[str, tuple[int, int, bool]]:
    """For each QUEUED job of `jobs`: games not yet counted in the older jobs still queued or
    running, how many such jobs, and whether all were read (`AHEAD_PAGES` pages of 1000 at
    most, newest first; as ``azulsim watch`` counts it). One scan serves every job asked for."""
    wanted = {j.job_id for j in jobs if state_name(j) == "QUEUED"}
    if not wanted:
        return {}
    order: list[tuple[str, int]] = []  # (job id, games left) of active jobs, newest first
    token, complete = "", False
    for _ in range(AHEAD_PAGES):
        page, token = backend.list(1000, token)
        order += [
            (info.job_id, info.games_total - info.games_done)
            for info in page
            if info.state in ("QUEUED", "RUNNING")
        ]
        if not token:
            complete = True
            break
    out: dict[str, tuple[int, int, bool]] = {}
    games = count = 0
    for job_id, left in reversed(order):  # oldest first: what is ahead of each job so far
        if job_id in wanted:
            out[job_id] = (games, count, complete)
        games += left
        count += 1
    for job_id in wanted - set(out):  # beyond the pages read
        out[job_id] = (games, count, False)
    return out


def job_protos(infos: list[Any]) -> list[pb.Job]:
    return [job_to_proto(i) for i in infos]
