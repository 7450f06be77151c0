"""Play a study's job to the end, in this process or through the service (compare, sweep,
tournament), and print its ``--json`` so that `azulsim report --from` draws it."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from .common import PROG, CommandError, UsageError, make_client, rpc_errors


def submitted_line(command: str, job) -> str:
    """What a job-making command says on stderr once the server took its job: the id that
    `report`, `replay`, `export` and `watch` need."""
    return f"{PROG} {command}: submitted job {job.job_id}: {job.games_total:,} games"


def run_on_server(spec, args: argparse.Namespace, on_update: Callable | None = None):
    """Submit `spec` over gRPC, say its job id on stderr, follow it to its end (`on_update` sees
    every `Job` the watch stream sends) and return ``(job_id, statistics document)``."""
    from ..api import azulsim_pb2 as pb
    from ..convert import spec_to_proto

    with rpc_errors(args), make_client(args) as client:
        submitted, _ = client.submit(spec_to_proto(spec))
        command = getattr(args, "command", None) or "study"
        print(submitted_line(command, submitted), file=sys.stderr, flush=True)
        job = submitted
        for job in client.watch(submitted.job_id):
            if on_update is not None:
                on_update(job)
        if job.state != pb.SUCCEEDED:
            raise CommandError(
                f"job {job.job_id} ended {pb.JobState.Name(job.state)}: {job.error or 'no error'}"
            )
        return job.job_id, client.statistics_document(job.job_id)


def run_to_end(spec, args: argparse.Namespace) -> tuple[str | None, dict]:
    """``(job id, statistics document)`` of `spec` played to the end: through the service with
    ``--server`` (the job's id), else in this process with ``--workers`` processes (no id; and
    ``--chunk-size`` where the command has it: sweep, tournament, balance)."""
    if args.server:
        return run_on_server(spec, args)
    from sim.jobs.local import run_local

    from . import simulate

    if args.workers < 1:
        raise UsageError(f"--workers must be at least 1; got {args.workers}")
    chunk_size = getattr(args, "chunk_size", None)
    if chunk_size is not None and chunk_size < 1:
        raise UsageError(f"--chunk-size must be at least 1; got {chunk_size}")
    return None, run_local(
        spec, workers=args.workers, chunk_size=chunk_size, play=simulate.PLAY
    ).statistics()


def study_json(section: dict[str, Any], doc: dict[str, Any], job_id: str | None) -> dict:
    """A study's ``--json``: its own answer (`section`), the spec, the job id (with
    ``--server``) and the whole statistics document under ``statistics``, which
    `azulsim report --from` draws. The document's ``timing`` is left out: the same spec and seed
    print the same JSON in process and through the service."""
    out = {**section, "spec": doc["spec"]}
    if job_id is not None:
        out["job_id"] = job_id
    out["statistics"] = {k: v for k, v in doc.items() if k != "timing"}
    return out


def write_json(out: dict[str, Any]) -> None:
    json.dump(out, sys.stdout, indent=2)
    sys.stdout.write("\n")


def run_study(spec, args: argparse.Namespace, section: str, render: Callable[[dict], str]) -> int:
    """Play `spec` to the end and print its `section` of the statistics: as JSON (`study_json`)
    with ``--json``, else as `render` lays it out."""
    job_id, doc = run_to_end(spec, args)
    if args.json:
        write_json(study_json(doc[section], doc, job_id))
    else:
        sys.stdout.write(render(doc))
    return 0
