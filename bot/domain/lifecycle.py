"""The life of a quota request and of a grant, as explicit transition tables.

A request: pending -> approved -> applied | failed; pending -> denied | cancelled | expired;
failed -> approved when an admin retries. A grant (the temporary part of an applied request):
active -> ending (its time is up or it was released; the quota is being put back) -> ended.
"""

from __future__ import annotations

from enum import StrEnum


class RequestState(StrEnum):
    PENDING = "pending"
    APPROVED = "approved"  # decided; the change is being applied to the cluster
    APPLIED = "applied"
    FAILED = "failed"
    DENIED = "denied"
    CANCELLED = "cancelled"
    EXPIRED = "expired"  # nobody decided in time


class RequestKind(StrEnum):
    CHANGE = "change"  # a new quota change, temporary or permanent
    EXTENSION = "extension"  # more time for an active grant
    SHIFT = "shift"  # GPUs moved from a source namespace to this one: two legs, source first


class SourceLeg(StrEnum):
    """The source side of a shift (``requests.source_state``)."""

    RECORDED = "recorded"  # its decrease is in the source's base; the cluster is not lowered yet
    APPLIED = "applied"  # the source's quota is lowered; the target may now be raised
    RETURNED = "returned"  # a temporary shift ended: the source's base has its GPUs back


class GrantState(StrEnum):
    ACTIVE = "active"
    ENDING = "ending"  # no longer counted; the quota is being reverted
    ENDED = "ended"


class Verdict(StrEnum):
    APPROVE = "approve"
    DENY = "deny"


REQUEST_TRANSITIONS: dict[RequestState, frozenset[RequestState]] = {
    RequestState.PENDING: frozenset({RequestState.APPROVED, RequestState.DENIED, RequestState.CANCELLED, RequestState.EXPIRED}),
    RequestState.APPROVED: frozenset({RequestState.APPLIED, RequestState.FAILED}),
    RequestState.FAILED: frozenset({RequestState.APPROVED}),
    RequestState.APPLIED: frozenset(),
    RequestState.DENIED: frozenset(),
    RequestState.CANCELLED: frozenset(),
    RequestState.EXPIRED: frozenset(),
}

GRANT_TRANSITIONS: dict[GrantState, frozenset[GrantState]] = {
    GrantState.ACTIVE: frozenset({GrantState.ENDING}),
    GrantState.ENDING: frozenset({GrantState.ENDED}),
    GrantState.ENDED: frozenset(),
}


class InvalidTransition(Exception):
    """A state change the tables do not allow: a bug or a lost race, never user input."""


def check_request_transition(current: RequestState, target: RequestState) -> None:
    if target not in REQUEST_TRANSITIONS[current]:
        raise InvalidTransition(f"a request cannot go from {current} to {target}")


def check_grant_transition(current: GrantState, target: GrantState) -> None:
    if target not in GRANT_TRANSITIONS[current]:
        raise InvalidTransition(f"a grant cannot go from {current} to {target}")
