"""The API client of a network-fault test, run on the client host (its own network namespace).

The test process stays in the root namespace, so it cannot open a gRPC channel to a test host
itself; it drives this program instead, one JSON command per line on stdin, one JSON reply per
line on stdout. Every call is a real `service.client.Client` call over the test network, with a
deadline; the reply says how it ended and how long it took:

``{"op": "submit", "spec": {...}, "request_id": "r1", "timeout": 10}``
    -> ``{"code": "OK", "elapsed": 0.01, "job_id": "...", "created": true}``
``{"op": "get", "job_id": "...", "timeout": 5}``
    -> ``{"code": "OK", "job": {"state": ..., "games_done": ..., ...}}``
``{"op": "statistics", "job_id": "...", "timeout": 10}`` -> ``{"code": "OK", "document": {...}}``
``{"op": "health", "timeout": 5}`` -> ``{"code": "OK", "status": "SERVING"}``

A failed call answers ``{"code": "UNAVAILABLE", "details": "...", "elapsed": 1.2}`` (the gRPC
status name).
"""

from __future__ import annotations

import json
import sys
import time

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from service.client import Client
from sim.jobs.spec import JobSpec


def _job(job) -> dict:
    from service.api import azulsim_pb2 as pb

    return {
        "job_id": job.job_id,
        "state": pb.JobState.Name(job.state),
        "games_done": job.games_done,
        "games_total": job.games_total,
        "chunks_done": job.chunks_done,
        "chunks_total": job.chunks_total,
    }


def handle(client: Client, health, cmd: dict) -> dict:
    op, timeout = cmd["op"], float(cmd.get("timeout", 10))
    if op == "submit":
        job, created = client.submit(
            JobSpec.from_dict(cmd["spec"]), cmd.get("request_id", ""), timeout=timeout
        )
        return {"job_id": job.job_id, "created": created, "job": _job(job)}
    if op == "get":
        return {"job": _job(client.get(cmd["job_id"], timeout=timeout))}
    if op == "statistics":
        return {"document": client.statistics_document(cmd["job_id"], timeout=timeout)}
    if op == "health":
        reply = health.Check(health_pb2.HealthCheckRequest(service=""), timeout=timeout)
        return {"status": health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)}
    raise ValueError(f"unknown op {op!r}")


def main() -> None:
    address = sys.argv[1]
    client = Client(address)
    health = health_pb2_grpc.HealthStub(client.channel)
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        cmd = json.loads(line)
        t0 = time.monotonic()
        try:
            reply = {"code": "OK", **handle(client, health, cmd)}
        except grpc.RpcError as exc:
            reply = {"code": exc.code().name, "details": exc.details()}
        except Exception as exc:  # noqa: BLE001 - reported to the test, which fails on it
            reply = {"code": "CLIENT_ERROR", "details": repr(exc)}
        reply["elapsed"] = round(time.monotonic() - t0, 3)
        print(json.dumps(reply), flush=True)


if __name__ == "__main__":
    main()
