"""Submitting a shift: GPUs moved from one team's namespace to another's, as one request.

The request row's ``namespace``/``team`` are the target; the source is ``source_namespace``. One card
goes to ``shifts.channel`` when set, else to the admin channel (``shifts.approval: admin``) or the
target team's channel, with a copy and the decision buttons in the source team's channel. Approval
rules: ``Access.shift_decision_problem``; the apply order: ``bot.services.shift_apply``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from datetime import datetime

from bot.clock import Clock
from bot.domain.commands import ShiftDraft, format_request_id
from bot.domain.durations import format_duration
from bot.domain.lifecycle import RequestKind, RequestState
from bot.domain.policy import Policy, ShiftApproval, Team, limit_problems
from bot.domain.prices import CostBasis
from bot.domain.quota import QuotaScope, QuotaSnapshot, change_cost
from bot.domain.resources import Unresolved, resolve
from bot.errors import GpuQuotaError, KarmadaObjectMissing, KueueObjectMissing, NamespaceNotFound
from bot.services.access import Access
from bot.services.announce import Announcer
from bot.services.outcomes import Submitted
from bot.services.ports import QuotaCluster, Repository, Transactions
from bot.services.pricing import Pricer
from bot.services.quota_sync import QuotaSync
from bot.services.refusals import (
    FederationMissing,
    NoSharedResource,
    NoSuchNamespace,
    NotAShiftMember,
    OverLimits,
    QueueMissing,
    QuotaUnreadable,
    Reading,
    Refused,
    ResourceUnclear,
    SameNamespace,
    SourceTooSmall,
)
from bot.services.requests import check_reason_length, managed_key

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Side:
    team: Team
    snapshot: QuotaSnapshot | None
    hard: int


class ShiftService:
    def __init__(
        self,
        *,
        policy: Policy,
        database: Transactions,
        cluster: QuotaCluster,
        access: Access,
        sync: QuotaSync,
        announcer: Announcer,
        clock: Clock,
        pricer: Pricer,
    ) -> None:
        """``pricer`` prices the GPUs moved at the target's GPU models (where they will run)."""
        self._policy = policy
        self._pricer = pricer
        self._db = database
        self._cluster = cluster
        self._access = access
        self._sync = sync
        self._announce = announcer
        self._clock = clock

    def submit(self, *, requester: str, draft: ShiftDraft) -> Submitted:
        """Record a shift, post its card; it is applied once approved (``shifts.approval``)."""
        check_reason_length(draft.reason)
        source_key, target_key = (
            managed_key(self._policy, n, listed=True, submitting=True) for n in (draft.source, draft.target)
        )
        draft = replace(draft, source=source_key, target=target_key)
        if draft.source == draft.target:
            raise Refused(SameNamespace(draft.source))
        resource = self._resource(draft)
        source, target = self._side(QuotaScope(draft.source, resource)), self._side(QuotaScope(draft.target, resource))
        if not any(self._access.may_request(requester, side.team) for side in (source, target)):
            raise Refused(NotAShiftMember(source.team.label, target.team.label))
        if draft.gpus > source.hard:
            raise Refused(SourceTooSmall(draft.source, source.hard, draft.gpus))
        problems = limit_problems(
            self._policy, draft.target, current=target.hard, delta=draft.gpus, duration=draft.duration, resource=resource
        )
        if problems:
            raise Refused(OverLimits(tuple(problems)))
        price = self._pricer.price(draft.target, resource)
        monthly = change_cost(gpus=draft.gpus, duration=None, price_per_gpu_hour=price.per_gpu_hour)
        same_team = source.team.name == target.team.name
        required = 1 if self._policy.shifts.approval == ShiftApproval.ADMIN or same_team else 2
        channel = self._channel(target.team)

        def create(repo: Repository) -> tuple[int, datetime | None]:
            now = self._clock.now()
            for name, side in ((draft.source, source), (draft.target, target)):
                if repo.namespace(name, resource) is None:
                    self._sync.record_observation(repo, side.snapshot, QuotaScope(name, resource))
            request = repo.add_request(
                kind=RequestKind.SHIFT,
                state=RequestState.PENDING,
                namespace=draft.target,
                resource=resource,
                team=target.team.name,
                requester_id=requester,
                amount_text=f"+{draft.gpus}",
                delta=draft.gpus,
                duration_seconds=int(draft.duration.total_seconds()) if draft.duration else None,
                reason=draft.reason.strip(),
                approvals_required=required,
                auto_approved=False,
                hard_before=target.hard,
                used_before=target.snapshot.used if target.snapshot else None,
                cost=round(monthly, 2),
                cost_basis=CostBasis(grant=False, price=price.named(), named=True),
                channel_id=channel,
                source_namespace=draft.source,
                source_team=source.team.name,
                source_from=source.hard,
                source_used=source.snapshot.used if source.snapshot else None,
                source_channel_id=self._copy_channel(source.team, channel),
                created_at=now,
                updated_at=now,
                decide_by=now + self._policy.defaults.pending_timeout,
                post_claimed_until=self._announce.new_card_claim(),
            )
            repo.record(
                at=now,
                actor=requester,
                action="shift_submitted",
                namespace=draft.target,
                request_id=request.id,
                before={draft.source: source.hard, draft.target: target.hard},
                after={
                    draft.source: source.hard - draft.gpus,
                    draft.target: target.hard + draft.gpus,
                    "duration": format_duration(draft.duration) if draft.duration else "permanent",
                },
                detail=draft.reason.strip(),
            )
            return request.id, request.post_claimed_until

        request_id, claim = self._db.run(create)
        log.info(
            "%s: shift of %d GPUs from %s to %s by %s",
            format_request_id(request_id),
            draft.gpus,
            draft.source,
            draft.target,
            requester,
        )
        post_error = self._announce.post_card(request_id, claimed=claim)
        return Submitted.of(request_id, channel, RequestState.PENDING, required, post_error)

    def _resource(self, draft: ShiftDraft) -> str:
        """The resource the shift moves: one both namespaces govern, named by the draft when there are several."""
        target = self._policy.governed_resources(draft.target)
        both = tuple(r for r in self._policy.governed_resources(draft.source) if r in target)
        if not both:
            raise Refused(NoSharedResource(draft.source, draft.target))
        resolved = resolve(draft.resource, both)
        if isinstance(resolved, Unresolved):
            raise Refused(ResourceUnclear(draft.source, resolved.word, resolved.candidates, both))
        return resolved.resource

    def _side(self, scope: QuotaScope) -> _Side:
        namespace = scope.namespace
        team = self._policy.team_of(namespace)
        assert team is not None, "both namespaces were checked by _resource"
        try:
            snapshot = self._sync.current(scope)
        except NamespaceNotFound:
            raise Refused(NoSuchNamespace(namespace, Reading.SHIFT)) from None
        except KarmadaObjectMissing as missing:
            raise Refused(FederationMissing.of(namespace, missing)) from None
        except KueueObjectMissing as missing:
            raise Refused(QueueMissing.of(namespace, missing, Reading.SHIFT)) from None
        except GpuQuotaError as error:
            raise Refused(QuotaUnreadable(namespace, str(error), Reading.SHIFT)) from error
        default = self._policy.default_quota(namespace, resource=scope.resource)
        return _Side(team, snapshot, snapshot.hard if snapshot else default)

    def _channel(self, target: Team) -> str:
        if self._policy.shifts.channel:
            return self._policy.shifts.channel
        if self._policy.shifts.approval == ShiftApproval.ADMIN and self._policy.admin_channel:
            return self._policy.admin_channel
        return target.channel

    def _copy_channel(self, source: Team, channel: str) -> str | None:
        """Where the source team's copy of the card goes: its channel when each team approves and no single channel is set."""
        if self._policy.shifts.approval != ShiftApproval.EACH_TEAM or self._policy.shifts.channel or source.channel == channel:
            return None
        return source.channel
