"""gRPC server reflection, both ``grpc.reflection.v1`` and ``grpc.reflection.v1alpha``.

grpcio-reflection (1.85) serves only v1alpha (grpc/grpc#38576), while grpcurl, Postman and the Java
and Go clients ask for v1 first. The two protocols are the same messages with the same field
numbers under another package name, so v1 is served by the v1alpha servicer itself; only the
descriptor differs. That descriptor is derived here from the v1alpha one (package and type names
renamed) and added to the default pool, so reflection also describes the v1 service.
"""

from __future__ import annotations

from collections.abc import Iterable

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool
from grpc_reflection.v1alpha import reflection, reflection_pb2

ALPHA_PACKAGE = "grpc.reflection.v1alpha"
V1_PACKAGE = "grpc.reflection.v1"
V1_FILE = "grpc/reflection/v1/reflection.proto"
V1_SERVICE_NAME = f"{V1_PACKAGE}.ServerReflection"
V1_METHOD = f"/{V1_SERVICE_NAME}/ServerReflectionInfo"
SERVICE_NAMES = (V1_SERVICE_NAME, reflection.SERVICE_NAME)


def _v1_file() -> descriptor_pb2.FileDescriptorProto:
    proto = descriptor_pb2.FileDescriptorProto()
    reflection_pb2.DESCRIPTOR.CopyToProto(proto)
    proto.name = V1_FILE
    proto.package = V1_PACKAGE
    proto.ClearField("options")  # v1alpha's java_package etc. do not describe v1
    old, new = f".{ALPHA_PACKAGE}.", f".{V1_PACKAGE}."
    for message in proto.message_type:
        for f in message.field:
            if f.type_name.startswith(old):
                f.type_name = new + f.type_name[len(old) :]
    for service in proto.service:
        for m in service.method:
            m.input_type = new + m.input_type[len(old) :]
            m.output_type = new + m.output_type[len(old) :]
    return proto


def _register_v1_descriptor() -> None:
    pool = descriptor_pool.Default()
    try:
        pool.FindFileByName(V1_FILE)
    except KeyError:
        pool.Add(_v1_file())


def enable_reflection(service_names: Iterable[str], server: grpc.aio.Server) -> None:
    """Serve reflection v1 and v1alpha on `server`, listing `service_names` and both versions."""
    _register_v1_descriptor()
    names = tuple(service_names) + SERVICE_NAMES
    servicer = reflection.aio.ReflectionServicer(names)
    reflection.enable_server_reflection(names, server)
    # Same wire format: the v1alpha messages (de)serialize v1 requests and replies byte for byte.
    handler = grpc.stream_stream_rpc_method_handler(
        servicer.ServerReflectionInfo,
        request_deserializer=reflection_pb2.ServerReflectionRequest.FromString,
        response_serializer=reflection_pb2.ServerReflectionResponse.SerializeToString,
    )
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(V1_SERVICE_NAME, {"ServerReflectionInfo": handler}),)
    )
