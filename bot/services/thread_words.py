"""The words a decision, a cancellation and a retry leave in the request's thread and the requester's DMs.

Gathered here so that ``decisions`` and ``lifecycle`` make none: the remainder of words in the
services (``tests/test_layers.py``). The next step stores typed messages in the outbox and renders
them at the Slack edge, where a second language can be added.
"""

from __future__ import annotations

from bot.domain.commands import format_request_id
from bot.services.text import Notice, User, say


def approved_by(user: str, approvals: int, required: int) -> Notice:
    return say(":+1: Approved by ", User(user), f" — {approvals} of {required}.")


def denied_by(user: str, reason: str) -> Notice:
    return say(":no_entry: Denied by ", User(user), ".", *_because(reason))


def denied_to_requester(request_id: int, user: str, reason: str) -> Notice:
    return say(
        f"{format_request_id(request_id)} was denied by ", User(user), ".", *_because(reason), " The thread has the discussion."
    )


def cancelled_by(user: str) -> Notice:
    return say(":wastebasket: Cancelled by ", User(user), ".")


def cancelled_to_requester(request_id: int, user: str) -> Notice:
    return say(f"{format_request_id(request_id)} was cancelled by ", User(user), ".")


def retry_by(user: str) -> Notice:
    return say(":repeat: Retry by ", User(user), ".")


def _because(reason: str) -> tuple[str, ...]:
    return (" Reason: ", reason) if reason else ()  # the denier's words: shown as text
