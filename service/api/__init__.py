"""Generated gRPC code for ``proto/azulsim/v1/azulsim.proto`` (package ``azulsim.v1``).

The ``*_pb2*.py`` files beside this one are generated and committed, so a plain ``pip install .``
needs no code generator. Regenerate after editing the proto with::

    python -m service.api.generate

``tests/test_api_generated.py`` regenerates them into a temporary folder and fails when the
committed files differ (stale). Import the messages and the stub from here::

    from service.api import azulsim_pb2 as pb, azulsim_pb2_grpc as pb_grpc
"""

from . import azulsim_pb2, azulsim_pb2_grpc

SERVICE_NAME = azulsim_pb2.DESCRIPTOR.services_by_name["AzulSim"].full_name  # "azulsim.v1.AzulSim"

__all__ = ["SERVICE_NAME", "azulsim_pb2", "azulsim_pb2_grpc"]
