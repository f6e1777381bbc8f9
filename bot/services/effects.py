"""What a request's change does to the desired state (the namespace bases and the grants), and its undoing.

Called in the transaction that moves the request: approval or retry records the effect (and gives
the request its apply lease), a failure takes it back, a temporary shift's end returns its source.
Shared by every applier (``changes``, ``shift_apply``) and the use cases; the cluster is never
touched here: the appliers make it match through ``QuotaSync``.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from bot.domain.audit_details import SourceGivenBack, to_text
from bot.domain.entities import Request
from bot.domain.failure_reasons import FailureReason, SourceShort
from bot.domain.lifecycle import GrantState, RequestKind, RequestState, SourceLeg
from bot.services.ports import Repository

# A worker applying a request holds it this long; after that the reconcile takes it over.
APPLY_LEASE = timedelta(seconds=10)


def record_effect(repo: Repository, request: Request, *, now: datetime) -> None:
    """Put an approved change into the desired state: a grant, or a new base (extensions act at apply).

    The approver's worker applies it next: it holds the apply lease from now.
    """
    request.apply_lease_until, request.apply_attempts = now + APPLY_LEASE, 0
    if request.kind == RequestKind.EXTENSION:
        return
    if request.kind == RequestKind.SHIFT:
        record_shift_effect(repo, request, now=now)
        return
    if request.permanent:
        namespace = repo.namespace(request.namespace, request.resource)
        assert namespace is not None, "a request's namespace is recorded when it is submitted"
        namespace.base_gpus += request.delta
        namespace.updated_at = now
        return
    assert request.duration_seconds is not None
    repo.add_grant(
        request_id=request.id,
        namespace=request.namespace,
        resource=request.resource,
        gpus=request.delta,
        state=GrantState.ACTIVE,
        starts_at=now,
        ends_at=now + timedelta(seconds=request.duration_seconds),
    )


def take_back_effect(repo: Repository, request: Request, *, now: datetime) -> None:
    if request.kind == RequestKind.EXTENSION:
        return
    if request.kind == RequestKind.SHIFT:
        take_back_shift_effect(repo, request, now=now)
        return
    if request.permanent:
        namespace = repo.namespace(request.namespace, request.resource)
        assert namespace is not None
        namespace.base_gpus = max(0, namespace.base_gpus - request.delta)  # a hand edit may have lowered it since
        namespace.updated_at = now
        return
    grant = repo.grant_of(request.id)
    if grant is not None:
        repo.remove_grant(grant)


def record_shift_effect(repo: Repository, request: Request, *, now: datetime) -> None:
    """The next leg of an approved shift: the source's decrease, or (source applied: a retry) the target's increase."""
    if request.source_state == SourceLeg.APPLIED:
        record_target(repo, request, now=now)
        return
    source = repo.namespace(request.source_namespace or "", request.resource)
    assert source is not None, "a shift's namespaces are recorded when it is submitted"
    source.base_gpus -= request.delta  # checked against zero at apply: a refusal takes it back
    source.updated_at = now
    request.source_state = SourceLeg.RECORDED


def source_problem(repo: Repository, request: Request, current: int | None) -> FailureReason | None:
    """Why the source cannot give the shifted GPUs as the last approval lands (``current``: its quota in
    the cluster now, None when unread); None when it can. Checked again when the source is lowered."""
    source = repo.namespace(request.source_namespace or "", request.resource)
    assert source is not None, "a shift's namespaces are recorded when it is submitted"
    if current is not None and current < request.delta:
        return SourceShort(source.name, current, request.delta, own=False)
    if source.base_gpus < request.delta:
        return SourceShort(source.name, source.base_gpus, request.delta, own=True)
    return None


def take_back_shift_effect(repo: Repository, request: Request, *, now: datetime) -> None:
    """Undo the leg recorded but not applied: the target's when the source is applied, else the source's."""
    if request.source_state == SourceLeg.APPLIED:
        _take_back_target(repo, request, now=now)
        return
    if request.source_state == SourceLeg.RECORDED:
        source = repo.namespace(request.source_namespace or "", request.resource)
        assert source is not None
        source.base_gpus += request.delta
        source.updated_at = now
        request.source_state = None


def return_source_in(repo: Repository, request: Request, *, now: datetime, actor: str = "gpu-quota-bot") -> bool:
    """Give the source its GPUs back (True when it had them out): a temporary shift's target grant has ended,
    or the target side failed and someone released the shift instead of retrying it."""
    if request.source_state != SourceLeg.APPLIED:
        return False
    source = repo.namespace(request.source_namespace or "", request.resource)
    assert source is not None
    source.base_gpus += request.delta
    source.updated_at = now
    request.source_state = SourceLeg.RETURNED
    request.touch(now=now)
    repo.record(
        at=now,
        actor=actor,
        action="shift_source_returned",
        namespace=request.source_namespace,
        request_id=request.id,
        before={"base_gpus": source.base_gpus - request.delta},
        after={"base_gpus": source.base_gpus},
        detail=to_text(SourceGivenBack(request.namespace, request.state == RequestState.APPLIED, request.delta)),
    )
    return True


def shifted_gpus(request: Request) -> int:
    """GPUs the source actually gave up (the target is raised by exactly these)."""
    assert request.source_from is not None and request.source_to is not None
    return request.source_from - request.source_to


def record_target(repo: Repository, request: Request, *, now: datetime) -> None:
    given = shifted_gpus(request)
    if request.permanent:
        target = repo.namespace(request.namespace, request.resource)
        assert target is not None
        target.base_gpus += given
        target.updated_at = now
        return
    assert request.duration_seconds is not None
    repo.add_grant(
        request_id=request.id,
        namespace=request.namespace,
        resource=request.resource,
        gpus=given,
        state=GrantState.ACTIVE,
        starts_at=now,
        ends_at=now + timedelta(seconds=request.duration_seconds),
    )


def _take_back_target(repo: Repository, request: Request, *, now: datetime) -> None:
    if request.permanent:
        target = repo.namespace(request.namespace, request.resource)
        assert target is not None
        target.base_gpus = max(0, target.base_gpus - shifted_gpus(request))
        target.updated_at = now
        return
    grant = repo.grant_of(request.id)
    if grant is not None:
        repo.remove_grant(grant)
