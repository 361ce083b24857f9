"""The server under test: scripts/test-clients.sh starts one and passes its
address in PUNCT_SERVER."""

import os
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from punct_client import RefereeClient  # noqa: E402


@pytest.fixture
def client():
    target = os.environ.get("PUNCT_SERVER")
    if not target:
        pytest.fail("PUNCT_SERVER (host:port of a running punct-referee) is not set")
    with RefereeClient(target) as c:
        yield c
