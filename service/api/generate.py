"""Generate ``service/api/azulsim_pb2*.py`` from ``proto/azulsim/v1/azulsim.proto``.

Run from a checkout (the proto folder is not installed)::

    python -m service.api.generate            # rewrite the committed files
    python -m service.api.generate --check    # exit 1 when they are stale

protoc names the module of ``azulsim/v1/azulsim.proto`` ``azulsim.v1.azulsim_pb2``; the generated
gRPC module imports it by that absolute name. The files live in ``service.api`` instead, so that
one import is rewritten to a relative one. The descriptor keeps the proto's own path and package,
which is what reflection and other languages see.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROTO_ROOT = ROOT / "proto"
PROTO = "azulsim/v1/azulsim.proto"
HERE = Path(__file__).resolve().parent
OUTPUTS = ("azulsim_pb2.py", "azulsim_pb2.pyi", "azulsim_pb2_grpc.py")


def generate(out_dir: Path) -> dict[str, str]:
    """Run grpcio-tools' protoc into `out_dir`; return {file name: text} of `OUTPUTS`."""
    import grpc_tools
    from grpc_tools import protoc

    include = Path(grpc_tools.__file__).parent / "_proto"  # google/protobuf/*.proto
    with tempfile.TemporaryDirectory() as tmp:
        status = protoc.main(
            [
                "protoc",
                f"-I{PROTO_ROOT}",
                f"-I{include}",
                f"--python_out={tmp}",
                f"--pyi_out={tmp}",
                f"--grpc_python_out={tmp}",
                str(PROTO_ROOT / PROTO),
            ]
        )
        if status != 0:
            raise RuntimeError(f"protoc failed on {PROTO} (status {status})")
        gen = Path(tmp) / "azulsim" / "v1"
        texts = {name: (gen / name).read_text() for name in OUTPUTS}
    texts["azulsim_pb2_grpc.py"] = texts["azulsim_pb2_grpc.py"].replace(
        "from azulsim.v1 import azulsim_pb2 as", "from . import azulsim_pb2 as"
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, text in texts.items():
        (out_dir / name).write_text(text)
    return texts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="exit 1 if the committed files are stale"
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        fresh = generate(Path(tmp))
    stale = [n for n, t in fresh.items() if not (HERE / n).exists() or (HERE / n).read_text() != t]
    if args.check:
        for name in stale:
            print(f"stale: service/api/{name}", file=sys.stderr)
        return 1 if stale else 0
    for name, text in fresh.items():
        (HERE / name).write_text(text)
    print(f"wrote {', '.join(OUTPUTS)} to service/api/" + (" (unchanged)" if not stale else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
