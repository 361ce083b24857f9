"""Builds the package with its stubs: before the package's files are
copied, the generator of generate.py compiles the .proto files (the kit's
own proto/ folder if it has one, else the checkout's ../../proto) into
punct_client/_gen/ of the build (pyproject.toml holds the metadata)."""

import pathlib
import sys

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = pathlib.Path(__file__).resolve().parent


class BuildWithStubs(build_py):
    """build_py, plus the generated stubs inside the package."""

    def run(self):
        super().run()
        sys.path.insert(0, str(HERE))
        import generate

        target = pathlib.Path(self.build_lib) / "punct_client" / "_gen"
        if generate.main(target) != 0:
            raise SystemExit("generating the stubs from proto/ failed")


setup(cmdclass={"build_py": BuildWithStubs})
