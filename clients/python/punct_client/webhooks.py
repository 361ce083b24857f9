"""Verifying the referee's webhook deliveries (docs/WEBHOOKS.md).

Deliveries follow the Standard Webhooks convention: headers ``webhook-id``,
``webhook-timestamp`` and ``webhook-signature`` (``v1,`` + base64 of
HMAC-SHA256 over ``id.timestamp.body`` with the endpoint's secret). This
module needs only the standard library, so a receiver can use it without the
gRPC stubs::

    from punct_client.webhooks import verify_delivery, WebhookVerificationError

    try:
        event = verify_delivery(secret, request.headers, request.get_data())
    except WebhookVerificationError as e:
        return str(e), 400
    if seen(request.headers["webhook-id"]):
        return "", 204          # a duplicate: already handled
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from typing import Any, Mapping, Optional, Union

#: How far a delivery's timestamp may be from the receiver's clock, seconds.
DEFAULT_TOLERANCE = 300


class WebhookVerificationError(Exception):
    """A delivery that is not the referee's, or not as sent."""


def _secret_bytes(secret: Union[str, bytes]) -> bytes:
    if isinstance(secret, bytes):
        return secret
    if not secret.startswith("whsec_"):
        raise WebhookVerificationError("the secret must start with whsec_")
    try:
        return base64.b64decode(secret[len("whsec_"):], validate=True)
    except ValueError as e:
        raise WebhookVerificationError(f"the secret is not base64: {e}") from None


def _header(headers: Mapping[str, str], name: str) -> str:
    for key, value in headers.items():
        if key.lower() == name:
            return value
    raise WebhookVerificationError(f"missing header {name}")


def sign(secret: Union[str, bytes], webhook_id: str, timestamp: int, body: bytes) -> str:
    """The ``v1,`` signature of a delivery (what the referee sends)."""
    mac = hmac.new(_secret_bytes(secret), digestmod=hashlib.sha256)
    mac.update(f"{webhook_id}.{timestamp}.".encode())
    mac.update(body)
    return "v1," + base64.b64encode(mac.digest()).decode()


def verify_delivery(
    secret: Union[str, bytes],
    headers: Mapping[str, str],
    body: Union[bytes, str],
    tolerance: int = DEFAULT_TOLERANCE,
    now: Optional[float] = None,
) -> Any:
    """Checks a delivery and returns its parsed JSON body.

    ``body`` must be the raw bytes received (not re-serialised JSON).
    Raises :class:`WebhookVerificationError` when a header is missing, the
    timestamp is more than ``tolerance`` seconds from ``now`` (default: the
    clock), or no signature matches.
    """
    raw = body.encode() if isinstance(body, str) else bytes(body)
    webhook_id = _header(headers, "webhook-id")
    stamp = _header(headers, "webhook-timestamp")
    signatures = _header(headers, "webhook-signature")
    try:
        timestamp = int(stamp)
    except ValueError:
        raise WebhookVerificationError("webhook-timestamp is not a number") from None
    current = time.time() if now is None else now
    if abs(current - timestamp) > tolerance:
        raise WebhookVerificationError("webhook-timestamp is too far from now")
    expected = sign(secret, webhook_id, timestamp, raw)
    if not any(hmac.compare_digest(s, expected) for s in signatures.split(" ")):
        raise WebhookVerificationError("no matching signature")
    try:
        return json.loads(raw)
    except ValueError:
        raise WebhookVerificationError("the body is not JSON") from None
