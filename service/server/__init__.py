"""The gRPC server (``grpc.aio``): the ``azulsim.v1.AzulSim`` service, health and reflection.

One module per job: `backend` (the plain blocking functions on the job store and Celery, with the
server's limits), `status` (the one table from exceptions to status codes), `servicer` (validate
with `service.convert`, call the backend in a thread pool, build the reply), `replies` (the
GetStatistics reply cache), `interceptors` (bearer tokens, malformed requests), `health` (the
health poller) and `assemble` (building, running and stopping the server).

The server never plays batches: `SubmitJob` only stores the job and publishes its chunks
(`workers.dispatch.submit`); `ReplayGame` replays one game (milliseconds).

Run it with ``azulsim serve`` (settings: `service.config` and `workers.settings`).
"""

from __future__ import annotations

from .assemble import RunningServer, serve, server_options, start_server
from .backend import Backend, make_backend
from .interceptors import BearerTokenInterceptor, MalformedRequestInterceptor
from .servicer import AzulSimServicer
from .status import BadRequest, LimitExceeded, Precondition

__all__ = [
    "AzulSimServicer",
    "Backend",
    "BadRequest",
    "BearerTokenInterceptor",
    "LimitExceeded",
    "MalformedRequestInterceptor",
    "Precondition",
    "RunningServer",
    "make_backend",
    "serve",
    "server_options",
    "start_server",
]
