"""The webhook verifier against the Standard Webhooks example and tampering
(no server needed)."""

import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from punct_client.webhooks import (  # noqa: E402
    WebhookVerificationError,
    sign,
    verify_delivery,
)

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
ID = "msg_p5jXN8AQM9LWM0D4loKWxJek"
TS = 1614265330
BODY = b'{"test": 2432232314}'
SIG = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="


def headers(sig=SIG, ts=TS):
    return {"Webhook-Id": ID, "Webhook-Timestamp": str(ts), "Webhook-Signature": sig}


def test_the_standard_example_verifies():
    assert sign(SECRET, ID, TS, BODY) == SIG
    assert verify_delivery(SECRET, headers(), BODY, now=TS + 10) == {"test": 2432232314}
    assert verify_delivery(SECRET, headers("v1,bogus " + SIG), BODY, now=TS)


@pytest.mark.parametrize(
    "secret, hdrs, body, now",
    [
        (SECRET, headers(), b'{"test": 2432232315}', TS),
        ("whsec_" + "A" * 32, headers(), BODY, TS),
        (SECRET, headers(), BODY, TS + 301),
        (SECRET, {"webhook-id": ID}, BODY, TS),
    ],
)
def test_tampering_fails(secret, hdrs, body, now):
    with pytest.raises(WebhookVerificationError):
        verify_delivery(secret, hdrs, body, now=now)
