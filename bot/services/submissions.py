"""Submissions: a new request (``submit``) and more time on a grant (``extend``).

The check, the record (with the auto-approval decided in the same transaction, under the team's
lock), the card and, when policy auto-approves, the apply. Refusals are typed (``Refused``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, time, timedelta

from bot.clock import Clock
from bot.domain.audit_details import to_text
from bot.domain.clusters import cluster_of
from bot.domain.commands import RequestDraft, format_request_id
from bot.domain.durations import format_duration
from bot.domain.entities import Grant, Request
from bot.domain.lifecycle import GrantState, RequestKind, RequestState, Verdict
from bot.domain.policy import (
    AutoApproval,
    AutoApprovalCheck,
    Policy,
    Team,
    approvals_required,
    auto_approval,
    limit_problems,
)
from bot.domain.prices import CostBasis
from bot.domain.quota import CapacityImpact, QuotaScope, QuotaSnapshot, change_cost
from bot.domain.resources import Unresolved, resolve
from bot.errors import GpuQuotaError, KarmadaObjectMissing, KueueObjectMissing, NamespaceNotFound
from bot.logs import request_context
from bot.services.access import Access
from bot.services.announce import Announcer
from bot.services.changes import ChangeApplier
from bot.services.effects import record_effect
from bot.services.outcomes import Submitted
from bot.services.ports import QuotaCluster, Repository, Transactions
from bot.services.pricing import Pricer, on_nvidia_nodes
from bot.services.quota_sync import QuotaSync
from bot.services.refusals import (
    FederationMissing,
    GrantTooLong,
    Incomplete,
    NoActiveGrant,
    NoSuchNamespace,
    NotAMember,
    NotManaged,
    OverLimits,
    QueueMissing,
    QuotaUnreadable,
    Reading,
    Refused,
    ResourceUnclear,
    ShiftNotExtendable,
)
from bot.services.request_rows import move_request
from bot.services.requests import AUTO_APPROVER, check_reason_length, gpu_hours, load_request, managed_key
from bot.services.views import RequestCard, ResourceChoice

log = logging.getLogger(__name__)
# A submission's "before" may be this old when this process read or wrote the quota that recently (a
# burst of requests reads it once): it is what the card shows; the approval and the apply read it again.
# Not for a total asked for ("8"): its change is derived from the read (another replica may have written).
SUBMITTED_QUOTA_MAX_AGE = 5.0


@dataclass(frozen=True)
class _NewRequest:
    """What submit and extend have in common before the row is written."""

    kind: RequestKind
    team: Team
    scope: QuotaScope
    amount_text: str
    delta: int
    duration: timedelta | None
    reason: str
    snapshot: QuotaSnapshot | None
    hard_before: int
    grant_length: timedelta | None  # the whole grant: ``duration``, or for an extension the grant so far plus it
    extends_request_id: int | None = None


class Submissions:
    def __init__(
        self,
        *,
        policy: Policy,
        database: Transactions,
        cluster: QuotaCluster,
        access: Access,
        sync: QuotaSync,
        applier: ChangeApplier,
        announcer: Announcer,
        clock: Clock,
        pricer: Pricer,
        over_budget: Callable[[Repository, str], bool] = lambda repo, team: False,
    ) -> None:
        """``pricer`` prices a request's GPUs (the namespace's GPU models), for its card; ``over_budget`` asks for more approvals."""
        self._policy = policy
        self._db = database
        self._cluster = cluster
        self._access = access
        self._sync = sync
        self._applier = applier
        self._announce = announcer
        self._clock = clock
        self._pricer = pricer
        self._over_budget = over_budget

    def submit(self, *, requester: str, draft: RequestDraft) -> Submitted:
        """Record a new request, post it for approval, and apply it at once if policy auto-approves."""
        if not draft.complete:
            raise Refused(Incomplete(tuple(draft.problems or ())))
        assert draft.namespace is not None and draft.amount is not None
        check_reason_length(draft.reason)
        namespace = managed_key(self._policy, draft.namespace, listed=True)
        team = self._team_for_request(requester, namespace)
        scope = QuotaScope(namespace, self.resource_of(namespace, draft.resource))
        # A total asked for becomes a change from this read, which an auto-approval applies as it is: read now.
        snapshot = self._read_quota(scope, max_age=SUBMITTED_QUOTA_MAX_AGE if draft.amount.relative else 0.0)
        current = snapshot.hard if snapshot else self._policy.default_quota(scope.namespace, resource=scope.resource)
        delta = draft.amount.delta_from(current)
        problems = limit_problems(
            self._policy, scope.namespace, current=current, delta=delta, duration=draft.duration, resource=scope.resource
        )
        if problems:
            raise Refused(OverLimits(tuple(problems)))
        return self._create(
            requester,
            _NewRequest(
                kind=RequestKind.CHANGE,
                team=team,
                scope=scope,
                amount_text=str(draft.amount),
                delta=delta,
                duration=draft.duration,
                reason=draft.reason.strip(),
                snapshot=snapshot,
                hard_before=current,
                grant_length=draft.duration,
            ),
        )

    def extend(self, *, requester: str, request_id: int, duration: timedelta, reason: str) -> Submitted:
        """Ask for more time on an active grant: a new request that needs approval like any other."""
        check_reason_length(reason)
        original = load_request(self._db, request_id)
        grant = self._active_grant(original)
        team = self._team_for_request(requester, original.namespace)
        # The whole grant counts, not the time left: otherwise repeated extensions make any grant endless.
        whole = max(grant.ends_at, self._clock.now()) + duration - grant.starts_at
        if whole > team.limits.max_duration:
            raise Refused(GrantTooLong(team.label, team.limits.max_duration, request_id, whole))
        snapshot = self._read_quota(original.scope)
        return self._create(
            requester,
            _NewRequest(
                kind=RequestKind.EXTENSION,
                team=team,
                scope=original.scope,
                amount_text=f"{grant.gpus:+d}",
                delta=grant.gpus,
                duration=duration,
                reason=reason.strip() or f"extend {format_request_id(request_id)}",
                snapshot=snapshot,
                hard_before=snapshot.hard if snapshot else 0,
                grant_length=whole,
                extends_request_id=request_id,
            ),
        )

    def resource_of(self, namespace: str, word: str | None) -> str:
        """The governed resource of ``namespace`` a request names (``word`` as typed; None: not named);
        refused, with what the namespace governs, when it names none or several of them."""
        governed = self._policy.governed_resources(namespace)
        resolved = resolve(word, governed)
        if isinstance(resolved, Unresolved):
            raise Refused(ResourceUnclear(namespace, resolved.word, resolved.candidates, governed))
        return resolved.resource

    def needs_resource(self, draft: RequestDraft) -> bool:
        """True when the draft's namespace governs several resources and the draft names none of them, or
        several: the request form asks which (a word naming none of them is refused by ``submit``)."""
        found = self._policy.namespace_key(draft.namespace) if draft.namespace is not None else None
        if not isinstance(found, str):
            return False  # no namespace, or not one managed namespace: submit says so
        resolved = resolve(draft.resource, self._policy.governed_resources(found))
        return isinstance(resolved, Unresolved) and bool(resolved.candidates)

    def resource_choices(self, namespace: str | None) -> tuple[ResourceChoice, ...]:
        """The resources the request form offers for ``namespace`` with their quota today (none when it
        governs one); a quota that cannot be read is offered without figures."""
        found = self._policy.namespace_key(namespace) if namespace is not None else None
        if not isinstance(found, str):
            return ()
        namespace, governed = found, self._policy.governed_resources(found)
        if len(governed) < 2:
            return ()
        choices = []
        for resource in governed:
            try:
                snapshot = self._sync.current(QuotaScope(namespace, resource), max_age=SUBMITTED_QUOTA_MAX_AGE)
            except GpuQuotaError as error:
                log.warning("the request form shows %s in %s without its quota: %s", resource, namespace, error)
                choices.append(ResourceChoice(resource, None, None))
                continue
            hard = snapshot.hard if snapshot else self._policy.default_quota(namespace, resource)
            choices.append(ResourceChoice(resource, hard, snapshot.used if snapshot else None))
        return tuple(choices)

    def check_extendable(self, request_id: int) -> None:
        """Raise a refusal unless the request has a grant to extend (asked before the extend form opens)."""
        self._active_grant(load_request(self._db, request_id))

    def _active_grant(self, request: Request) -> Grant:
        """The request's grant if it is active now; after downtime one may be past its end before the reconcile ends it."""
        request_id = request.id
        if request.kind == RequestKind.SHIFT:
            # An extension is decided by the target team alone; the source's GPUs need the source team's approval too.
            raise Refused(ShiftNotExtendable(request_id, request.source_namespace or ""))
        grant = self._db.run(lambda repo: repo.grant_of(request_id))
        if grant is None or grant.state != GrantState.ACTIVE or grant.ends_at <= self._clock.now():
            raise Refused(NoActiveGrant(request_id, extending=True))
        return grant

    def _create(self, requester: str, new: _NewRequest) -> Submitted:
        namespace = new.scope.namespace
        capacity = self._capacity(new.scope, 0 if new.kind == RequestKind.EXTENSION else new.delta)
        # The cluster's part of the price is read here, from the capacity view: never on the network inside the transaction.
        resource = new.scope.resource
        dearest = self._pricer.dearest_on_nodes(resource, cluster_of(namespace)) if on_nvidia_nodes(resource) else None
        permanent = new.duration is None
        within_capacity = capacity is not None and not capacity.oversubscribed

        def create(repo: Repository) -> tuple[Request, RequestCard]:
            now = self._clock.now()
            # Price and budget are read in this transaction too: one transaction for the whole submission.
            price = self._pricer.price_from(self._pricer.recent_hours(repo, namespace, resource), dearest, resource)
            cost = change_cost(gpus=new.delta, duration=new.duration, price_per_gpu_hour=price.per_gpu_hour)
            over_budget = self._over_budget(repo, new.team.name)
            required = approvals_required(new.team, delta=new.delta, permanent=permanent, over_budget=over_budget)
            # Decided from rows read in this transaction, under the team's lock: see _auto_approval.
            verdict = self._auto_approval(repo, new, now=now, over_budget=over_budget, within_capacity=within_capacity)
            auto = verdict is not None and verdict.approved
            if not repo.namespace_known(namespace, new.scope.resource):
                # Only a namespace the bot has never seen takes its base from this read. Later, the read
                # may predate an apply that finished meanwhile: folding it in would take that apply for a
                # hand edit and undo it. Hand edits are adopted by converge, which reads just before.
                self._sync.record_observation(repo, new.snapshot, new.scope)
            request = repo.add_request(
                kind=new.kind,
                state=RequestState.PENDING,
                namespace=namespace,
                resource=new.scope.resource,
                team=new.team.name,
                requester_id=requester,
                amount_text=new.amount_text,
                delta=new.delta,
                duration_seconds=int(new.duration.total_seconds()) if new.duration else None,
                reason=new.reason,
                approvals_required=required,
                auto_approved=auto,
                auto_note=to_text(verdict.note) if verdict else None,
                hard_before=new.hard_before,
                used_before=new.snapshot.used if new.snapshot else None,
                allocatable=capacity.allocatable if capacity else None,
                committed_after=capacity.committed_after if capacity else None,
                cost=round(cost, 2),
                cost_basis=CostBasis(grant=new.duration is not None, price=price.named()),
                channel_id=new.team.channel,
                extends_request_id=new.extends_request_id,
                created_at=now,
                updated_at=now,
                decide_by=now + self._policy.defaults.pending_timeout,
                post_claimed_until=self._announce.new_card_claim(),
            )
            repo.record(
                at=now,
                actor=requester,
                action="request_submitted",
                namespace=namespace,
                request_id=request.id,
                after={
                    "amount": new.amount_text,
                    "delta": new.delta,
                    "duration": format_duration(new.duration) if new.duration else "permanent",
                },
                detail=new.reason,
            )
            if auto:
                assert verdict is not None
                repo.add_decision(request, user_id=AUTO_APPROVER, verdict=Verdict.APPROVE, decided_at=now)
                move_request(request, RequestState.APPROVED, now=now)
                request.decided_at = now
                record_effect(repo, request, now=now)
                repo.record(
                    at=now,
                    action="request_auto_approved",
                    namespace=namespace,
                    request_id=request.id,
                    detail=to_text(verdict.note),
                )
            return request, self._announce.card_of(repo, request)  # rendered from this row: no second read

        request, card = self._db.run(create)
        with request_context(format_request_id(request.id)):
            log.info("submitted by %s for %s (%s %s)", requester, namespace, new.amount_text, new.scope.resource)
            if request.auto_note:
                log.info("%s", request.auto_note)
            post_error = self._announce.post_card(request.id, card=card, claimed=request.post_claimed_until)
            state = RequestState(request.state)
            if request.auto_approved:
                state = self._applier.apply(request.id)  # claimed again: the card was posted since
        return Submitted.of(request.id, request.channel_id, state, request.approvals_required, post_error)

    def _auto_approval(
        self, repo: Repository, new: _NewRequest, *, now: datetime, over_budget: bool, within_capacity: bool
    ) -> AutoApproval | None:
        """The auto-approval verdict, from the team's auto-approved requests as this transaction reads them.

        The team's lock makes a second request submitted at the same moment wait until this one is
        recorded, so both cannot see room for one more GPU (the cap is cumulative). A request the
        rule refuses on its own (as if nothing had been auto-approved yet) needs neither: earlier
        auto-approvals only ever refuse more.
        """
        if new.team.auto_approve is None:
            return None
        seconds = int(new.duration.total_seconds()) if new.duration else None
        alone = AutoApprovalCheck(
            gpus=new.delta,
            grant_length=new.grant_length,
            gpu_hours=gpu_hours(new.delta, seconds),
            active_auto_gpus=0,
            auto_gpu_hours_today=0.0,
            over_budget=over_budget,
            within_capacity=within_capacity,
            resource=new.scope.resource,
        )
        verdict = auto_approval(new.team, alone)
        if verdict is None or not verdict.approved:
            return verdict
        repo.lock_auto_approval(new.team.name)
        zone = self._policy.schedules.zone
        today = now.astimezone(zone).date()
        day_start = datetime.combine(today, time(), tzinfo=zone)
        day_end = datetime.combine(today + timedelta(days=1), time(), tzinfo=zone)
        used_today = sum(
            gpu_hours(delta, seconds)
            for delta, seconds in repo.auto_approved_sizes_since(new.team.name, new.scope.resource, day_start, day_end)
        )
        # An extension's own grant is not counted twice: its GPUs are this request's.
        active = repo.auto_approved_gpus(new.scope.namespace, new.scope.resource, excluding_request=new.extends_request_id)
        return auto_approval(new.team, replace(alone, active_auto_gpus=active, auto_gpu_hours_today=used_today))

    def _team_for_request(self, requester: str, namespace: str) -> Team:
        team = self._policy.team_of(namespace)
        if team is None:
            raise Refused(NotManaged(namespace, tuple(self._policy.managed_namespaces())))
        if not self._access.may_request(requester, team):
            raise Refused(NotAMember(team.label, namespace))
        return team

    def _read_quota(self, scope: QuotaScope, *, max_age: float = SUBMITTED_QUOTA_MAX_AGE) -> QuotaSnapshot | None:
        namespace = scope.namespace
        try:
            return self._sync.current(scope, max_age=max_age)
        except NamespaceNotFound:
            raise Refused(NoSuchNamespace(namespace, Reading.REQUEST)) from None
        except KarmadaObjectMissing as missing:
            raise Refused(FederationMissing.of(namespace, missing)) from None
        except KueueObjectMissing as missing:
            raise Refused(QueueMissing.of(namespace, missing, Reading.REQUEST)) from None
        except GpuQuotaError as error:
            raise Refused(QuotaUnreadable(namespace, str(error), Reading.REQUEST)) from error

    def _queued_quota(self, scope: QuotaScope) -> int:
        """A ClusterQueue scope's quota for the capacity sum; 0 (and a log line) when it cannot be read: one
        broken queue must not leave every request's capacity unknown."""
        try:
            snapshot = self._sync.current(scope, max_age=SUBMITTED_QUOTA_MAX_AGE)
        except GpuQuotaError as error:
            log.warning("capacity leaves out the ClusterQueue of %s: %s", scope.namespace, error)
            return 0
        return snapshot.hard if snapshot is not None else 0

    def _capacity(self, scope: QuotaScope, delta: int) -> CapacityImpact | None:
        """The scope's resource allocatable on the nodes vs all managed quotas of it after the change;
        None (and a log line) if unknown."""
        names = {ns: self._policy.quota_name(ns) for ns in self._policy.managed_namespaces()}
        resource, cluster = scope.resource, cluster_of(scope.namespace)  # capacity is per cluster
        queued = {ns for ns, r, _ in self._policy.cluster_queues() if r == resource and cluster_of(ns) == cluster}
        try:
            allocatable = self._cluster.gpu_nodes(cluster).of(resource)
            totals = {ns: hard for ns, hard in self._cluster.gpu_quota_totals(names).items() if cluster_of(ns) == cluster}
        except GpuQuotaError as error:
            log.warning("capacity unknown for a request on %s: %s", scope.namespace, error)
            return None
        # Where the policy keeps the resource in a ClusterQueue, the queue's quota is what commits the nodes' GPUs
        # (a ResourceQuota key left there is not counted twice).
        committed = sum(hard.get(resource, 0) for ns, hard in totals.items() if ns not in queued)
        committed += sum(self._queued_quota(QuotaScope(ns, resource)) for ns in sorted(queued))
        return CapacityImpact(allocatable=allocatable, committed_after=committed + delta)
