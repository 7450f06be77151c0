"""The committed generated code matches the proto, and the proto documents everything."""

from __future__ import annotations

import tempfile
from pathlib import Path

import grpc_tools

from service.api import generate


def test_generated_code_is_fresh():
    with tempfile.TemporaryDirectory() as tmp:
        fresh = generate.generate(Path(tmp))
    for name, text in fresh.items():
        committed = (generate.HERE / name).read_text()
        assert committed == text, (
            f"service/api/{name} is stale: run `python -m service.api.generate` and commit it"
        )


def test_generated_code_imports_from_the_package():
    from service.api import SERVICE_NAME, azulsim_pb2, azulsim_pb2_grpc

    assert SERVICE_NAME == "azulsim.v1.AzulSim"
    assert azulsim_pb2.DESCRIPTOR.package == "azulsim.v1"
    assert hasattr(azulsim_pb2_grpc, "AzulSimStub")


def _descriptor_with_comments():
    from google.protobuf import descriptor_pb2
    from grpc_tools import protoc

    include = Path(grpc_tools.__file__).parent / "_proto"
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "set.pb"
        status = protoc.main(
            [
                "protoc",
                f"-I{generate.PROTO_ROOT}",
                f"-I{include}",
                "--include_source_info",
                f"--descriptor_set_out={out}",
                str(generate.PROTO_ROOT / generate.PROTO),
            ]
        )
        assert status == 0
        fds = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())
    return fds.file[0]


def test_every_message_field_enum_value_and_method_is_documented():
    f = _descriptor_with_comments()
    comments = {
        tuple(loc.path): loc.leading_comments.strip() for loc in f.source_code_info.location
    }
    missing = []

    def check_message(msg, path, name):
        for i, field in enumerate(msg.field):
            if not comments.get((*path, 2, i)):
                missing.append(f"{name}.{field.name}")
        for i, enum in enumerate(msg.enum_type):
            check_enum(enum, (*path, 4, i), f"{name}.{enum.name}")
        for i, nested in enumerate(msg.nested_type):
            check_message(nested, (*path, 3, i), f"{name}.{nested.name}")

    def check_enum(enum, path, name):
        for i, value in enumerate(enum.value):
            if not comments.get((*path, 2, i)):
                missing.append(f"{name}.{value.name}")

    for i, msg in enumerate(f.message_type):  # FileDescriptorProto.message_type = 4
        check_message(msg, (4, i), msg.name)
    for i, enum in enumerate(f.enum_type):  # enum_type = 5
        check_enum(enum, (5, i), enum.name)
    for i, method in enumerate(f.service[0].method):  # service = 6, method = 2
        if not comments.get((6, 0, 2, i)):
            missing.append(f"AzulSim.{method.name}")
    assert not missing, f"undocumented in azulsim.proto: {', '.join(missing)}"
