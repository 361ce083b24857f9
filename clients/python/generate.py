"""Generates the Python stubs of the service's .proto files into gen/ with
grpcio-tools.

The .proto files come from, in this order: the folder named by
PUNCT_REFEREE_PROTO, a proto/ folder inside this kit (a kit handed out on its
own: copy the repository's proto/ into it, docs/CLIENTS.md "Handing out a
kit"), the repository's proto/ (../../proto, a checkout).

Nothing generated is committed: scripts/test-clients.sh runs this before the
tests, and so should anyone using the client from a checkout.
"""

import os
import pathlib
import sys

from grpc_tools import protoc

HERE = pathlib.Path(__file__).resolve().parent


def _proto_dir() -> pathlib.Path:
    named = os.environ.get("PUNCT_REFEREE_PROTO")
    if named:
        return pathlib.Path(named).resolve()
    for candidate in (HERE / "proto", HERE.parent.parent / "proto"):
        if (candidate / "referee" / "v1" / "referee.proto").is_file():
            return candidate
    return HERE.parent.parent / "proto"


PROTO = _proto_dir()
GEN = HERE / "gen"


def main(gen: pathlib.Path = GEN) -> int:
    """Generates every .proto of PROTO into ``gen``; protoc's exit code."""
    if not (PROTO / "referee" / "v1" / "referee.proto").is_file():
        print(
            f"no referee/v1/referee.proto under {PROTO}: copy the repository's proto/ "
            "into this kit folder or set PUNCT_REFEREE_PROTO (docs/CLIENTS.md)",
            file=sys.stderr,
        )
        return 2
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
