"""Play a study's job to the end, in this process or through the service (sweep, tournament)."""

from __future__ import annotations

import argparse

from .common import CommandError, UsageError, make_client, rpc_errors


def run_to_end(spec, args: argparse.Namespace) -> dict:
    """The statistics document of `spec` played to the end: through the service with
    ``--server``, else in this process with ``--workers`` processes (sweep, tournament)."""
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
    return run_local(spec, workers=args.workers, play=simulate.PLAY).statistics()
