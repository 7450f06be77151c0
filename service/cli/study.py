"""Play a study's job to the end, in this process or through the service (sweep, tournament)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable

from .common import CommandError, UsageError, make_client, rpc_errors


def run_to_end(spec, args: argparse.Namespace) -> dict:
    """The statistics document of `spec` played to the end: through the service with
    ``--server``, else in this process with ``--workers`` processes (and ``--chunk-size``
    where the command has it: sweep, tournament, balance)."""
    if args.server:
        from ..api import azulsim_pb2 as pb
        from ..convert import spec_to_proto

        with rpc_errors(args), make_client(args) as client:
            submitted, _ = client.submit(spec_to_proto(spec))
            job = submitted
            for job in client.watch(submitted.job_id):  # noqa: B007 - the last one is the result
                pass
            if job.state != pb.SUCCEEDED:
                raise CommandError(
                    f"job {job.job_id} ended {pb.JobState.Name(job.state)}: "
                    f"{job.error or 'no error'}"
                )
            return client.statistics_document(job.job_id)
    from sim.local import run_local

    from . import simulate

    if args.workers < 1:
        raise UsageError(f"--workers must be at least 1; got {args.workers}")
    chunk_size = getattr(args, "chunk_size", None)
    if chunk_size is not None and chunk_size < 1:
        raise UsageError(f"--chunk-size must be at least 1; got {chunk_size}")
    return run_local(
        spec, workers=args.workers, chunk_size=chunk_size, play=simulate.PLAY
    ).statistics()


def run_study(spec, args: argparse.Namespace, section: str, render: Callable[[dict], str]) -> int:
    """Play `spec` to the end and print its `section` of the statistics: as JSON (with the
    spec) with ``--json``, else as `render` lays it out."""
    doc = run_to_end(spec, args)
    if args.json:
        json.dump({**doc[section], "spec": doc["spec"]}, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render(doc))
    return 0
