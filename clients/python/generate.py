"""Generates the Python stubs of ../../proto into gen/ with grpcio-tools.

Nothing generated is committed: scripts/test-clients.sh runs this before the
tests, and so should anyone using the client from a checkout.
"""

import pathlib
import sys

from grpc_tools import protoc

HERE = pathlib.Path(__file__).resolve().parent
PROTO = HERE.parent.parent / "proto"
GEN = HERE / "gen"


def main(gen: pathlib.Path = GEN) -> int:
    """Generates every .proto of PROTO into ``gen``; protoc's exit code."""
    gen.mkdir(parents=True, exist_ok=True)
    files = sorted(str(p.relative_to(PROTO)) for p in PROTO.rglob("*.proto"))
    # grpc_tools ships the well-known types; add them to the include path.
    well_known = pathlib.Path(protoc.__file__).parent / "_proto"
    code = protoc.main(
        [
            "grpc_tools.protoc",
            f"-I{PROTO}",
            f"-I{well_known}",
            f"--python_out={gen}",
            f"--pyi_out={gen}",
            f"--grpc_python_out={gen}",
            *files,
        ]
    )
    if code != 0:
        print(f"protoc failed ({code})", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
