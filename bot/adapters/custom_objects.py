"""What the adapters of custom resources share (Kueue's ClusterQueues, Karmada's FederatedResourceQuotas).

A call through the ``ApiClient`` (``call``) whose failure becomes the bot's error kind with a sentence a
person can act on (``QuotaConflict`` for a 409, ``PermanentError`` for a refusal, ``TemporaryError``
for 5xx, 429 and an API that does not answer), or, for the statuses the caller asks for, an
``Answered`` it interprets itself (a missing object, a JSON Patch operation that did not apply:
``handlers/patch.go``'s bare 422, told apart from a validation 422, which names the kind and its
causes). And the pieces of a JSON Patch write: JSON Pointer tokens and the bot's stamp annotations.
The client's exceptions never leave this module; the messages kept are the API server's, which carry
no credentials.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import urllib3
from kubernetes.client.exceptions import ApiException
from kubernetes.utils import parse_quantity

from bot.domain.quota import stamp_annotations
from bot.errors import PermanentError, QuotaConflict, TemporaryError, Unreachable
from bot.observability import count_error

log = logging.getLogger(__name__)
T = TypeVar("T")
JSON_PATCH = "application/json-patch+json"
_REJECTED_PATCH = "the server rejected our request due to an error in our request"  # patch.go's 422 for an op that does not apply


@dataclass(frozen=True)
class Said:
    """A Status answer of the API server: its code, reason, message and details."""

    code: int
    reason: str
    message: str
    details: dict[str, Any] = field(default_factory=dict)
    retry_after: float = 1.0  # seconds: the Retry-After header, else details.retryAfterSeconds

    @property
    def failed_patch_operation(self) -> bool:
        """A JSON Patch operation did not apply (a failed ``test``, a path not there): patch.go's bare 422,
        unlike a validation 422, which names the kind and its causes."""
        return self.code == 422 and self.message == _REJECTED_PATCH and not self.details.get("kind")

    @property
    def webhook_denied(self) -> bool:
        return self.code == 403 and self.message.startswith("admission webhook")


class Answered(Exception):
    """An answer the caller interprets itself (a missing object, a failed patch operation)."""

    def __init__(self, said: Said) -> None:
        super().__init__(said.message)
        self.said = said


def call(action: str, request: Callable[[], T], *, on: tuple[int, ...] = ()) -> T:
    """Run a client call; an answer of a status in ``on`` (a 422 only for a JSON Patch operation that did not
    apply) raises ``Answered`` for the caller, any other failure the bot's error kind."""
    try:
        return request()
    except ApiException as error:
        said = said_of(error)
        if said.code in on and (said.code != 422 or said.failed_patch_operation):
            raise Answered(said) from None
        translated = _translate(said, action)
        count_error("kubernetes", "conflict" if isinstance(translated, QuotaConflict) else _kind(translated))
        raise translated from None
    except (urllib3.exceptions.HTTPError, OSError) as error:
        log.warning("Kubernetes API unreachable while trying to %s: %s", action, type(error).__name__)
        count_error("kubernetes", "temporary")
        raise Unreachable(f"the Kubernetes API did not answer when the bot tried to {action}", delay=2.0) from None


def pointer_token(key: str) -> str:
    """A key as a JSON Pointer token (RFC 6901): ``~`` as ``~0``, ``/`` as ``~1``."""
    return key.replace("~", "~0").replace("/", "~1")


def stamp_operations(resource: str, *, qualifier: str, gpus: int, applied_by: str, annotated: bool) -> list[dict[str, Any]]:
    """The JSON Patch operations that stamp a write of ``gpus`` of ``resource`` (``stamp_annotations``) on an
    object that had ``metadata.annotations`` (``annotated``) or had none (a patch cannot add into a missing map)."""
    applied, applied_by_key = stamp_annotations(resource, qualifier=qualifier)
    stamps = {applied: str(gpus), applied_by_key: applied_by}
    if not annotated:
        return [{"op": "add", "path": "/metadata/annotations", "value": stamps}]
    return [{"op": "add", "path": f"/metadata/annotations/{pointer_token(key)}", "value": v} for key, v in stamps.items()]


def stamped(annotations: dict[str, Any] | None, resource: str, *, qualifier: str) -> int | None:
    """The value the bot's stamp says it wrote of ``resource``, None when there is none (or it is not a number)."""
    stamp = (annotations or {}).get(stamp_annotations(resource, qualifier=qualifier)[0])
    return int(stamp) if isinstance(stamp, str) and stamp.lstrip("-").isdigit() else None


def whole(quantity: Any, *, up: bool = False) -> int:
    """A quantity as a whole number (rounded down, or ``up``); 0 when absent."""
    if quantity in (None, ""):
        return 0
    value = parse_quantity(str(quantity))
    return math.ceil(value) if up else int(value)


def said_of(error: ApiException) -> Said:
    """The Status body of an answer, else its HTTP status and reason."""
    try:
        body = json.loads(error.body or "")
    except (TypeError, ValueError):
        body = None
    body = body if isinstance(body, dict) else {}
    details: dict[str, Any] = body["details"] if isinstance(body.get("details"), dict) else {}
    message = str(body.get("message") or error.reason or "no reason given")
    wait = (error.headers or {}).get("Retry-After") or details.get("retryAfterSeconds") or 1
    try:
        retry_after = float(wait)
    except (TypeError, ValueError):
        retry_after = 1.0
    return Said(int(error.status or 0), str(body.get("reason") or ""), message, details, retry_after)


def _translate(said: Said, action: str) -> Exception:
    log.warning("Kubernetes API answered %s to %s: %s", said.code, action, said.message)
    if said.code == 409:
        return QuotaConflict(f"could not {action}: {said.message}")
    if said.webhook_denied or said.code == 422:
        return PermanentError(
            f"the cluster rejected the change when the bot tried to {action} (HTTP {said.code}: {said.message})"
        )
    if said.code in (401, 403):
        return PermanentError(
            f"the cluster refused to let the bot {action} (HTTP {said.code}: {said.message}). "
            "Check the bot's ServiceAccount and RBAC (see deploy/)"
        )
    if said.code == 429 or said.code >= 500:
        return TemporaryError(f"the Kubernetes API failed to {action} (HTTP {said.code}: {said.message})", delay=said.retry_after)
    return PermanentError(f"the Kubernetes API refused to {action} (HTTP {said.code}: {said.message})")


def _kind(error: Exception) -> str:
    return "temporary" if isinstance(error, TemporaryError) else "permanent"
