"""What the request use cases (``submissions``, ``decisions``, ``lifecycle``) share: loading a request,
the pending check and its refusal, the reason's length, a change re-derived from the quota now."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.domain.commands import GpuAmount
from bot.domain.entities import Request
from bot.domain.lifecycle import RequestKind, RequestState, Verdict
from bot.domain.policy import Policy
from bot.services.ports import Transactions
from bot.services.refusals import AlreadyDecided, AmbiguousNamespace, NoSuchRequest, NotManaged, ReasonTooLong, Refused

if TYPE_CHECKING:
    from bot.services.ports import Repository

AUTO_APPROVER = "gpu-quota-bot"


def managed_key(policy: Policy, typed: str, *, listed: bool = False, submitting: bool = False) -> str:
    """The key of the managed namespace ``typed`` names (``cluster/name``, or a bare name one cluster alone
    has); refused when it names none (``listed``: with the managed ones to choose from) or several."""
    found = policy.namespace_key(typed)
    if isinstance(found, str):
        return found
    if found:
        raise Refused(AmbiguousNamespace(typed, found))
    raise Refused(NotManaged(typed, tuple(policy.managed_namespaces()) if listed else None, submitting=submitting))


def load_request(database: Transactions, request_id: int) -> Request:
    """The request, read in its own transaction; a UserError if there is none."""
    request = database.run(lambda repo: repo.request(request_id))
    if request is None:
        raise Refused(NoSuchRequest(request_id))
    return request


def gpu_hours(gpus: int, duration_seconds: int | None) -> float:
    """GPU-hours a grant of ``gpus`` for ``duration_seconds`` gives (none for a permanent change)."""
    return max(gpus, 0) * (duration_seconds or 0) / 3600


def pending(repo: Repository, request_id: int) -> Request:
    """The request, read inside the transaction; a UserError if it is no longer pending."""
    row = repo.request(request_id)
    assert row is not None, "the request was loaded before the transaction"
    if row.state != RequestState.PENDING:
        raise Refused(already_decided(row))
    return row


MAX_REASON = 2000  # characters: a reason is read by approvers in a card and a thread, not a document


def check_reason_length(reason: str) -> None:
    """A UserError for a reason longer than a card shows (Slack cuts a section at 3,000 characters)."""
    if len(reason.strip()) > MAX_REASON:
        raise Refused(ReasonTooLong(len(reason.strip()), MAX_REASON))


def delta_now(request: Request, current: int) -> int:
    """The change a request makes to a quota that is ``current`` now: a total asked for ("8") stays that total."""
    if request.kind != RequestKind.CHANGE:
        return request.delta
    return GpuAmount.parse(request.amount_text).delta_from(current)


def already_decided(request: Request) -> AlreadyDecided:
    """Why a request that is no longer pending cannot be decided or cancelled: its state and its deciders."""
    state = RequestState(request.state)
    if state == RequestState.DENIED:
        return AlreadyDecided(request.id, state, tuple(d.user_id for d in request.decisions if d.verdict == Verdict.DENY))
    if state in (RequestState.APPROVED, RequestState.APPLIED, RequestState.FAILED):
        return AlreadyDecided(request.id, state, tuple(d.user_id for d in request.approvals))
    return AlreadyDecided(request.id, state)
