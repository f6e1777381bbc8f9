"""What the request use cases (``submissions``, ``decisions``, ``lifecycle``) share: loading a request,
the pending check and its refusal, the reason's length, a change re-derived from the quota now."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.domain.commands import GpuAmount, format_request_id
from bot.domain.entities import Request
from bot.domain.lifecycle import RequestKind, RequestState, Verdict
from bot.errors import UserError
from bot.services.ports import Transactions
from bot.services.text import Notice, Refusal, User, say

if TYPE_CHECKING:
    from bot.services.ports import Repository

AUTO_APPROVER = "gpu-quota-bot"


def load_request(database: Transactions, request_id: int) -> Request:
    """The request, read in its own transaction; a UserError if there is none."""
    request = database.run(lambda repo: repo.request(request_id))
    if request is None:
        raise UserError(f"{format_request_id(request_id)} does not exist.")
    return request


def gpu_hours(gpus: int, duration_seconds: int | None) -> float:
    """GPU-hours a grant of ``gpus`` for ``duration_seconds`` gives (none for a permanent change)."""
    return max(gpus, 0) * (duration_seconds or 0) / 3600


def pending(repo: Repository, request_id: int) -> Request:
    """The request, read inside the transaction; a UserError if it is no longer pending."""
    row = repo.request(request_id)
    assert row is not None, "the request was loaded before the transaction"
    if row.state != RequestState.PENDING:
        raise Refusal(already_decided(row))
    return row


MAX_REASON = 2000  # characters: a reason is read by approvers in a card and a thread, not a document


def check_reason_length(reason: str) -> None:
    """A UserError for a reason longer than a card shows (Slack cuts a section at 3,000 characters)."""
    if len(reason.strip()) > MAX_REASON:
        raise UserError(f"The reason is {len(reason.strip()):,} characters long; say it in at most {MAX_REASON:,}.")


def delta_now(request: Request, current: int) -> int:
    """The change a request makes to a quota that is ``current`` now: a total asked for ("8") stays that total."""
    if request.kind != RequestKind.CHANGE:
        return request.delta
    return GpuAmount.parse(request.amount_text).delta_from(current)


def already_decided(request: Request) -> Notice:
    display = format_request_id(request.id)
    state = RequestState(request.state)
    if state == RequestState.DENIED:
        deniers = [d.user_id for d in request.decisions if d.verdict == Verdict.DENY]
        return say(f"{display} was already denied by ", *_people(deniers), ".")
    if state in (RequestState.APPROVED, RequestState.APPLIED, RequestState.FAILED):
        approvers = [d.user_id for d in request.approvals]
        return say(f"{display} was already approved by ", *_people(approvers), f" (now {state}).")
    return say(f"{display} is already {state}.")


def _people(user_ids: list[str]) -> list[str | User]:
    """``@a, @b`` as notice parts; the auto-approver is named, not mentioned."""
    parts: list[str | User] = []
    for index, user_id in enumerate(user_ids):
        parts += [", "] if index else []
        parts.append("auto-approval" if user_id == AUTO_APPROVER else User(user_id))
    return parts
