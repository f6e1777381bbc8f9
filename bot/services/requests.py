"""What people do with requests: submit, decide, cancel, extend, release, retry.

Each public method is one use case, called by a Slack handler (or the shell) after ``ack()``. Refusals
are ``UserError``s whose text goes back to the person; everything that happens is in the audit trail.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, time, timedelta
from typing import TYPE_CHECKING

from bot.clock import Clock
from bot.domain.commands import GpuAmount, RequestDraft, format_request_id
from bot.domain.durations import format_duration
from bot.domain.lifecycle import GrantState, RequestKind, RequestState, SourceLeg, Verdict
from bot.domain.policy import (
    AutoApproval,
    AutoApprovalCheck,
    Policy,
    Team,
    approvals_required,
    auto_approval,
    limit_problems,
    needs_confirmation,
)
from bot.domain.quota import CapacityImpact, QuotaSnapshot, change_cost, change_problem, desired_gpus
from bot.errors import GpuQuotaError, NamespaceNotFound, RateLimited, UserError
from bot.logs import request_context
from bot.observability import DECISIONS
from bot.services.access import Access
from bot.services.announce import Announcer, Outgoing
from bot.services.changes import ChangeApplier
from bot.services.effects import record_effect, source_problem
from bot.services.failures import FailurePath
from bot.services.ports import QuotaCluster, Repository, Transactions
from bot.services.pricing import Pricer
from bot.services.views import RequestCard

if TYPE_CHECKING:
    from bot.adapters.db.models import GrantRow, RequestRow
from bot.services.quota_sync import QuotaRead, QuotaSync
from bot.services.request_rows import move_request
from bot.services.text import Notice, Refusal, User, gpus, say

log = logging.getLogger(__name__)
AUTO_APPROVER = "gpu-quota-bot"
# A submission's "before" may be this old when this process read or wrote the quota that recently (a
# burst of requests reads it once): it is what the card shows; the approval and the apply read it again.
# Not for a total asked for ("8"): its change is derived from the read (another replica may have written).
SUBMITTED_QUOTA_MAX_AGE = 5.0


@dataclass(frozen=True)
class Submitted:
    request_id: int
    channel_id: str
    state: RequestState
    approvals_required: int
    post_error: str | None  # Slack refused the message; the reconcile job posts it later
    post_waits: bool = False  # Slack asked to wait (429): the reconcile job posts it after the Retry-After

    @classmethod
    def of(
        cls, request_id: int, channel_id: str, state: RequestState, approvals_required: int, post: GpuQuotaError | None
    ) -> Submitted:
        """The outcome, with what ``Announcer.post_card`` answered for the card."""
        waits = isinstance(post, RateLimited)
        error = None if post is None or waits else str(post)
        return cls(request_id, channel_id, state, approvals_required, error, waits)

    @property
    def display_id(self) -> str:
        return format_request_id(self.request_id)


@dataclass(frozen=True)
class Confirmation:
    """A permanent or large change as it would be applied now, for the approver to confirm."""

    request_id: int
    namespace: str
    team_label: str
    requester_id: str
    delta: int
    duration: timedelta | None  # None: permanent
    before: int  # the quota now, read when the form opens
    after: int
    monthly_cost: float  # the change's GPUs for a whole month
    grant_cost: float | None  # a temporary change: its cost for the grant
    price_basis: str  # "at 4.80 USD/h, the ... price this namespace ran on" (bot.services.pricing)
    currency: str
    approvals: int
    approvals_required: int
    large_above: int | None  # set when the change counts as large: more than this many GPUs

    @property
    def display_id(self) -> str:
        return format_request_id(self.request_id)

    @property
    def permanent(self) -> bool:
        return self.duration is None


@dataclass(frozen=True)
class _NewRequest:
    """What submit and extend have in common before the row is written."""

    kind: RequestKind
    team: Team
    namespace: str
    amount_text: str
    delta: int
    duration: timedelta | None
    reason: str
    snapshot: QuotaSnapshot | None
    hard_before: int
    grant_length: timedelta | None  # the whole grant: ``duration``, or for an extension the grant so far plus it
    extends_request_id: int | None = None


class RequestService:
    def __init__(
        self,
        *,
        policy: Policy,
        database: Transactions,
        cluster: QuotaCluster,
        access: Access,
        sync: QuotaSync,
        applier: ChangeApplier,
        failures: FailurePath,
        announcer: Announcer,
        clock: Clock,
        pricer: Pricer,
        over_budget: Callable[[Repository, str], bool] = lambda repo, team: False,
    ) -> None:
        """``pricer`` prices a request's GPUs (the namespace's GPU models), for its card and the confirmation form."""
        self._policy = policy
        self._pricer = pricer
        self._db = database
        self._cluster = cluster
        self._access = access
        self._sync = sync
        self._applier = applier
        self._failures = failures
        self._announce = announcer
        self._clock = clock
        self._over_budget = over_budget

    # --- submit ------------------------------------------------------------------------------

    def submit(self, *, requester: str, draft: RequestDraft) -> Submitted:
        """Record a new request, post it for approval, and apply it at once if policy auto-approves."""
        if not draft.complete:
            raise UserError(
                "The request is incomplete: " + "; ".join(draft.problems or ("namespace, GPUs and a reason are needed",))
            )
        assert draft.namespace is not None and draft.amount is not None
        check_reason_length(draft.reason)
        team = self._team_for_request(requester, draft.namespace)
        # A total asked for becomes a change from this read, which an auto-approval applies as it is: read now.
        snapshot = self._read_quota(draft.namespace, max_age=SUBMITTED_QUOTA_MAX_AGE if draft.amount.relative else 0.0)
        current = snapshot.hard if snapshot else self._policy.default_quota(draft.namespace)
        delta = draft.amount.delta_from(current)
        problems = limit_problems(self._policy, draft.namespace, current=current, delta=delta, duration=draft.duration)
        if problems:
            raise UserError("Not submitted: " + "; ".join(problems) + ".")
        return self._create(
            requester,
            _NewRequest(
                kind=RequestKind.CHANGE,
                team=team,
                namespace=draft.namespace,
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
        original = self._load(request_id)
        grant = self._active_grant(original)
        team = self._team_for_request(requester, original.namespace)
        # The whole grant counts, not the time left: otherwise repeated extensions make any grant endless.
        whole = max(grant.ends_at, self._clock.now()) + duration - grant.starts_at
        if whole > team.limits.max_duration:
            raise UserError(
                f"Not submitted: {team.label} may borrow GPUs for at most {format_duration(team.limits.max_duration)}"
                f" per grant, extensions included; {format_request_id(request_id)} would then last {format_duration(whole)}."
            )
        snapshot = self._read_quota(original.namespace)
        return self._create(
            requester,
            _NewRequest(
                kind=RequestKind.EXTENSION,
                team=team,
                namespace=original.namespace,
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

    def check_extendable(self, request_id: int) -> None:
        """Raise UserError unless the request has a grant to extend (asked before the extend form opens)."""
        self._active_grant(self._load(request_id))

    def _active_grant(self, request: RequestRow) -> GrantRow:
        """The request's grant if it is active now; after downtime one may be past its end before the reconcile ends it."""
        request_id = request.id
        if request.kind == RequestKind.SHIFT:
            # An extension is decided by the target team alone; the source's GPUs need the source team's approval too.
            raise UserError(
                f"{format_request_id(request_id)} is a shift: its GPUs come from {request.source_namespace}, so to keep them"
                " longer, request a new shift when this one ends (both teams approve it)."
            )
        grant = self._db.run(lambda repo: repo.grant_of(request_id))
        if grant is None or grant.state != GrantState.ACTIVE or grant.ends_at <= self._clock.now():
            raise UserError(f"{format_request_id(request_id)} has no active grant to extend.")
        return grant

    def _create(self, requester: str, new: _NewRequest) -> Submitted:
        capacity = self._capacity(new.namespace, 0 if new.kind == RequestKind.EXTENSION else new.delta)
        # The cluster's part of the price is read here, from the capacity view: never on the network inside the transaction.
        dearest = self._pricer.dearest_on_nodes()
        permanent = new.duration is None
        within_capacity = capacity is not None and not capacity.oversubscribed

        def create(repo: Repository) -> tuple[RequestRow, RequestCard]:
            now = self._clock.now()
            # Price and budget are read in this transaction too: one transaction for the whole submission.
            price = self._pricer.price_from(self._pricer.recent_hours(repo, new.namespace), dearest)
            cost, basis = change_cost(gpus=new.delta, duration=new.duration, price_per_gpu_hour=price.per_gpu_hour)
            over_budget = self._over_budget(repo, new.team.name)
            required = approvals_required(new.team, delta=new.delta, permanent=permanent, over_budget=over_budget)
            # Decided from rows read in this transaction, under the team's lock: see _auto_approval.
            verdict = self._auto_approval(repo, new, now=now, over_budget=over_budget, within_capacity=within_capacity)
            auto = verdict is not None and verdict.approved
            if not repo.namespace_known(new.namespace):
                # Only a namespace the bot has never seen takes its base from this read. Later, the read
                # may predate an apply that finished meanwhile: folding it in would take that apply for a
                # hand edit and undo it. Hand edits are adopted by converge, which reads just before.
                self._sync.record_observation(repo, new.snapshot, new.namespace)
            request = repo.add_request(
                kind=new.kind,
                state=RequestState.PENDING,
                namespace=new.namespace,
                team=new.team.name,
                requester_id=requester,
                amount_text=new.amount_text,
                delta=new.delta,
                duration_seconds=int(new.duration.total_seconds()) if new.duration else None,
                reason=new.reason,
                approvals_required=required,
                auto_approved=auto,
                auto_note=verdict.reason if verdict else None,
                hard_before=new.hard_before,
                used_before=new.snapshot.used if new.snapshot else None,
                allocatable=capacity.allocatable if capacity else None,
                committed_after=capacity.committed_after if capacity else None,
                cost=round(cost, 2),
                cost_basis=f"{basis}, {price.describe()}",
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
                namespace=new.namespace,
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
                    at=now, action="request_auto_approved", namespace=new.namespace, request_id=request.id, detail=verdict.reason
                )
            return request, self._announce.card_of(repo, request)  # rendered from this row: no second read

        request, card = self._db.run(create)
        with request_context(format_request_id(request.id)):
            log.info("submitted by %s for %s (%s)", requester, new.namespace, new.amount_text)
            if request.auto_note:
                log.info("%s", request.auto_note)
            post_error = self._announce.post_card(request.id, card=card, claimed=True)
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
            gpu_hours(delta, seconds) for delta, seconds in repo.auto_approved_sizes_since(new.team.name, day_start, day_end)
        )
        # An extension's own grant is not counted twice: its GPUs are this request's.
        active = repo.auto_approved_gpus(new.namespace, excluding_request=new.extends_request_id)
        return auto_approval(new.team, replace(alone, active_auto_gpus=active, auto_gpu_hours_today=used_today))

    def _team_for_request(self, requester: str, namespace: str) -> Team:
        team = self._policy.team_of(namespace)
        if team is None:
            managed = ", ".join(self._policy.managed_namespaces())
            raise UserError(f"`{namespace}` is not managed by gpu-quota-bot. Managed namespaces: {managed}.")
        if not self._access.may_request(requester, team):
            raise UserError(f"Only members of {team.label} may request GPUs for `{namespace}`.")
        return team

    def _read_quota(self, namespace: str, *, max_age: float = SUBMITTED_QUOTA_MAX_AGE) -> QuotaSnapshot | None:
        try:
            return self._cluster.read_quota(namespace, self._policy.quota_name(namespace), max_age=max_age)
        except NamespaceNotFound:
            raise UserError(f"The namespace `{namespace}` does not exist in the cluster. Nothing was submitted.") from None
        except GpuQuotaError as error:
            raise UserError(
                f"Could not read the quota of `{namespace}` from the cluster ({error}). Nothing was submitted; try again."
            ) from error

    def _capacity(self, namespace: str, delta: int) -> CapacityImpact | None:
        """Allocatable GPUs vs all managed quotas after the change; None (and a log line) if unknown."""
        names = {ns: self._policy.quota_name(ns) for ns in self._policy.managed_namespaces()}
        try:
            allocatable = self._cluster.allocatable_gpus()
            committed = sum(self._cluster.gpu_quota_totals(names).values())
        except GpuQuotaError as error:
            log.warning("capacity unknown for a request on %s: %s", namespace, error)
            return None
        return CapacityImpact(allocatable=allocatable, committed_after=committed + delta)

    # --- confirm before approving -------------------------------------------------------------

    def approve_or_confirm(self, *, user: str, request_id: int, reason: str = "") -> Confirmation | str:
        """An approval by button or typed in the thread: the confirmation an approver must see first,
        or else the approval decided at once (``decide``'s answer), from one read of the request.

        A permanent or large change (``approvals.large_change``) is approved through a form that
        shows the change against the quota as it is now; nothing is recorded until the form is
        submitted, which calls ``decide``.
        """
        check_reason_length(reason)
        with request_context(format_request_id(request_id)):
            request = self._load(request_id)
            confirmation = self._confirmation(user, request)
            if confirmation is not None:
                return confirmation
            return self._decide(user, request_id, Verdict.APPROVE, reason.strip(), loaded=request)

    def _confirmation(self, user: str, request: RequestRow) -> Confirmation | None:
        request_id = request.id
        team = self._policy.teams.get(request.team)
        if request.state != RequestState.PENDING:
            raise Refusal(already_decided(request))
        if request.requester_id == user:
            raise UserError(f"You cannot approve your own request {format_request_id(request_id)}.")
        if request.kind == RequestKind.SHIFT:
            self._check_shift_decider(user, request, Verdict.APPROVE)
            return None  # the card already shows both sides against the quotas as asked
        if team is None or not self._access.may_decide(user, team):
            raise UserError(
                f"You are not an approver for {team.label if team else request.team}, so you cannot decide {format_request_id(request_id)}."
            )
        if not needs_confirmation(team, delta=request.delta, permanent=request.permanent):
            return None
        earlier = next((d for d in request.decisions if d.user_id == user), None)
        if earlier is not None:
            raise UserError(f"You already {earlier.verdict}d {format_request_id(request_id)}.")
        try:
            snapshot = self._cluster.read_quota(request.namespace, self._policy.quota_name(request.namespace))
        except GpuQuotaError as error:
            raise UserError(
                f"Could not read the quota of `{request.namespace}` to show the change ({error}). Nothing was recorded; try again."
            ) from error
        current = snapshot.hard if snapshot else self._policy.default_quota(request.namespace)
        delta = delta_now(request, current)
        price = self._pricer.price(request.namespace)
        duration = timedelta(seconds=request.duration_seconds) if request.duration_seconds is not None else None
        large = team.approvals.large_change
        return Confirmation(
            request_id=request_id,
            namespace=request.namespace,
            team_label=team.label,
            requester_id=request.requester_id,
            delta=delta,
            duration=duration,
            before=current,
            after=current + delta,
            monthly_cost=change_cost(gpus=delta, duration=None, price_per_gpu_hour=price.per_gpu_hour)[0],
            grant_cost=change_cost(gpus=delta, duration=duration, price_per_gpu_hour=price.per_gpu_hour)[0] if duration else None,
            price_basis=price.describe(),
            currency=self._policy.pricing.currency,
            approvals=len(request.approvals),
            approvals_required=request.approvals_required,
            large_above=large.above_gpus if large and abs(delta) > large.above_gpus else None,
        )

    # --- decide ------------------------------------------------------------------------------

    def decide(self, *, user: str, request_id: int, verdict: Verdict, reason: str = "") -> str:
        """Record an approval or a denial (with the denier's reason, if given); returns the line shown to the person."""
        check_reason_length(reason)
        with request_context(format_request_id(request_id)):
            return self._decide(user, request_id, verdict, reason.strip())

    def _decide(self, user: str, request_id: int, verdict: Verdict, reason: str, *, loaded: RequestRow | None = None) -> str:
        """``loaded``: the request as the caller just read it (its checks are repeated in the transaction)."""
        request = loaded or self._load(request_id)
        team = self._policy.teams.get(request.team)
        if request.state == RequestState.PENDING and request.requester_id != user and request.kind == RequestKind.SHIFT:
            self._check_shift_decider(user, request, verdict)
        elif request.state == RequestState.PENDING and request.requester_id != user:
            if team is None or not self._access.may_decide(user, team):
                raise UserError(
                    f"You are not an approver for {team.label if team else request.team}, so you cannot decide {format_request_id(request_id)}."
                )
        # Read only when this approval may complete the request: its limits are checked against now.
        completes = verdict == Verdict.APPROVE and len(request.approvals) + 1 >= request.approvals_required
        # A shift's limit that can break by now is the source's: it must still hold the GPUs it gives.
        # A change's quota is read where it is written, in its namespace's critical section (below).
        current = self._current_quota(request.source_namespace or "") if completes and request.kind == RequestKind.SHIFT else None
        out = self._announce.outgoing()  # what the decision says: recorded with it, delivered after the apply

        def record(repo: Repository, current: int | None = current) -> RequestRow:
            now = self._clock.now()
            row = pending(repo, request_id)
            if row.requester_id == user:
                raise UserError(
                    f"You cannot {verdict} your own request {format_request_id(request_id)}; `cancel` it instead if you no longer need it."
                )
            earlier = next((d for d in row.decisions if d.user_id == user), None)
            if earlier is not None:
                raise UserError(f"You already {earlier.verdict}d {format_request_id(request_id)}.")
            if row.kind == RequestKind.SHIFT:
                # Again on the approvals as they are now: another approval may have landed since the check above.
                self._check_shift_decider(user, row, verdict, fresh=False)
            repo.add_decision(row, user_id=user, verdict=verdict, decided_at=now)
            row.touch(now=now)  # a concurrent decision on this request must now re-read
            repo.record(
                at=now, actor=user, action=f"request_{verdict}d", namespace=row.namespace, request_id=request_id, detail=reason
            )
            if verdict == Verdict.DENY:
                move_request(row, RequestState.DENIED, now=now)
                row.decided_at = now
                self._tell_denial(repo, out, row, user, reason)
                return row
            if len(row.approvals) >= row.approvals_required:
                move_request(row, RequestState.APPROVED, now=now)
                row.decided_at = now
            self._tell_approval(repo, out, row, user)
            if row.state == RequestState.APPROVED:
                problem = self._recheck(repo, row, current)
                if problem:
                    self._failures.fail_in(repo, out, row, problem, recorded=False)
                else:
                    record_effect(repo, row, now=now)
            return row

        state: RequestState | None = None
        if completes and request.kind == RequestKind.CHANGE:
            # The quota first: recorded, rechecked and written from one read; "Approved by" and the rest follow.
            row, state = self._approve_and_apply(request.namespace, record, out)
        else:
            row = self._db.run(record)
        DECISIONS.labels(verdict=str(verdict)).inc()
        display = format_request_id(request_id)
        if row.state == RequestState.APPROVED and state is None:
            # A shift or an extension: the quota first; "Approved by" (recorded before the outcome) goes with it.
            state = self._applier.apply(request_id, leased=row, out=out)
        out.deliver()  # once: what the decision and the apply said
        if verdict == Verdict.DENY:
            return f"You denied {display}."
        if row.state == RequestState.APPROVED:
            return f"You approved {display}; it is {state}."
        if row.state == RequestState.FAILED:
            assert row.failure_reason is not None
            return f"You approved {display}, but it cannot be applied: {row.failure_reason}."
        return f"You approved {display} ({len(row.approvals)} of {row.approvals_required}); it needs {row.approvals_required - len(row.approvals)} more."

    def _approve_and_apply(
        self, namespace: str, approve: Callable[[Repository, int | None], RequestRow], out: Outgoing
    ) -> tuple[RequestRow, RequestState | None]:
        """Record the last approval of a change to ``namespace`` and apply it, from one read of the quota.

        In the namespace's critical section: the quota is read; ``approve(repo, hard)`` records the
        approval in a transaction, rechecked against that read (``hard`` None when there is no quota or
        it could not be read: the recheck goes by the database, and the apply reads for itself); the
        write is planned in the same transaction and, if the row is approved, made next from the same
        read, its resourceVersion the write's precondition. Returns the row and, when it was approved,
        the state the apply left it in.
        """
        with self._sync.exclusive(namespace):
            try:
                read: QuotaRead | None = self._sync.read_locked(namespace)
            except GpuQuotaError as error:
                log.warning("could not read the quota of %s to check the approval: %s", namespace, error)
                read = None

            def record(repo: Repository) -> tuple[RequestRow, QuotaRead | None]:
                row = approve(repo, read.hard if read else None)
                if read is None or row.state != RequestState.APPROVED:
                    return row, read
                return row, self._sync.plan_in(repo, namespace, read)

            row, planned = self._db.run(record)
            if row.state != RequestState.APPROVED:
                return row, None
            return row, self._applier.apply_approved(row, out, read=planned)

    def _check_shift_decider(self, user: str, request: RequestRow, verdict: Verdict, *, fresh: bool = True) -> None:
        source, target = self._policy.teams.get(request.source_team or ""), self._policy.teams.get(request.team)
        if source is None or target is None:
            raise UserError(f"{format_request_id(request.id)} names a team the policy no longer has; an admin can cancel it.")
        earlier = [d.user_id for d in request.approvals] if verdict == Verdict.APPROVE else []
        problem = self._access.shift_decision_problem(user, (source, target), approved_by=earlier, fresh=fresh)
        if problem:
            raise UserError(problem)

    def _tell_approval(self, repo: Repository, out: Outgoing, row: RequestRow, user: str) -> None:
        out.thread(repo, row.id, say(":+1: Approved by ", User(user), f" — {len(row.approvals)} of {row.approvals_required}."))
        out.refresh(repo, row.id)

    def _tell_denial(self, repo: Repository, out: Outgoing, row: RequestRow, user: str, reason: str) -> None:
        because = (" Reason: ", reason) if reason else ()  # the denier's words: shown as text
        out.thread(repo, row.id, say(":no_entry: Denied by ", User(user), ".", *because))
        out.direct(
            repo,
            row.requester_id,
            say(f"{format_request_id(row.id)} was denied by ", User(user), ".", *because, " The thread has the discussion."),
        )
        out.refresh(repo, row.id)

    def _current_quota(self, namespace: str) -> int | None:
        """The quota in the cluster now; None when it cannot be read (the apply checks again anyway)."""
        try:
            snapshot = self._cluster.read_quota(namespace, self._policy.quota_name(namespace))
        except GpuQuotaError as error:
            log.warning("could not read the quota of %s to check the approval: %s", namespace, error)
            return None
        return snapshot.hard if snapshot else None

    def _recheck(self, repo: Repository, row: RequestRow, current: int | None) -> str | None:
        """The before -> after again, from the quota as it is when the last approval lands: the
        shown before -> after is updated (an absolute amount is re-derived), or the reason it is refused."""
        if row.kind == RequestKind.SHIFT:
            problem = source_problem(repo, row, current)
            return f"refused when approved: {problem}" if problem else None
        if row.kind != RequestKind.CHANGE:
            return None
        namespace = repo.namespace(row.namespace)
        assert namespace is not None, "a request's namespace is recorded when it is submitted"
        if current is None:
            current = desired_gpus(namespace.base_gpus, repo.active_grant_total(row.namespace))
        row.delta = delta_now(row, current)
        row.hard_before = current
        problem = change_problem(before=current, delta=row.delta, max_gpus=self._policy.max_gpus(row.namespace))
        if problem is None and row.permanent and namespace.base_gpus + row.delta < 0:
            # Running grants are not the base: a permanent decrease cannot take more than the base.
            problem = f"the permanent quota is {namespace.base_gpus} GPUs, so it cannot go down by {-row.delta}"
        return f"refused when approved: {problem}" if problem else None

    # --- cancel, release, retry -----------------------------------------------------------------

    def cancel(self, *, user: str, request_id: int) -> str:
        request = self._load(request_id)
        if request.requester_id != user and not self._access.is_admin(user):
            raise UserError(f"Only the requester or an admin can cancel {format_request_id(request_id)}.")

        out = self._announce.outgoing()

        def cancel(repo: Repository) -> None:
            now = self._clock.now()
            row = pending(repo, request_id)
            move_request(row, RequestState.CANCELLED, now=now)
            row.decided_at = now
            repo.record(at=now, actor=user, action="request_cancelled", namespace=row.namespace, request_id=request_id)
            out.thread(repo, request_id, say(":wastebasket: Cancelled by ", User(user), "."))
            if user != row.requester_id:
                out.direct(repo, row.requester_id, say(f"{format_request_id(request_id)} was cancelled by ", User(user), "."))
            out.refresh(repo, request_id)

        self._db.run(cancel)
        out.deliver()
        return f"{format_request_id(request_id)} is cancelled."

    def release(self, *, user: str, request_id: int) -> str:
        """End a grant early and give the GPUs back."""
        request = self._load(request_id)
        teams = [t for name in (request.team, request.source_team) if name and (t := self._policy.teams.get(name))]
        allowed = request.requester_id == user or any(self._access.may_decide(user, team) for team in teams)
        if not allowed:
            raise UserError(
                f"Only the requester, an approver of the team or an admin can release {format_request_id(request_id)}."
            )
        if request.kind == RequestKind.SHIFT and request.state == RequestState.FAILED:
            # The target side failed and nobody will retry it: the source gets back what it gave.
            if not self._applier.give_back_source(request_id, actor=user):
                raise UserError(f"{format_request_id(request_id)} has nothing to give back: its source was not lowered.")
            return f"{format_request_id(request_id)}: {gpus(request.delta)} given back to {request.source_namespace}."
        grant = self._db.run(lambda repo: repo.grant_of(request_id))
        if grant is None or grant.state != GrantState.ACTIVE:
            raise UserError(f"{format_request_id(request_id)} has no active grant to release.")
        ended = self._applier.end_grant(grant.id, reason="released", actor=user)
        if ended is None:
            raise UserError(f"The grant of {format_request_id(request_id)} has already ended.")
        if ended == GrantState.ENDING:
            return f"Released {format_request_id(request_id)}; the quota could not be put back yet and the bot keeps retrying."
        if request.kind == RequestKind.SHIFT:  # the target gives them back; the source gets them
            return (
                f"Released {format_request_id(request_id)}: {request.namespace} gives the {gpus(grant.gpus)} it was shifted"
                f" back to {request.source_namespace}."
            )
        return f"Released {format_request_id(request_id)}: {gpus(abs(grant.gpus))} given back to {request.namespace}."

    def retry(self, *, user: str, request_id: int) -> str:
        """An admin re-applies a failed request (after fixing what made it fail)."""
        if not self._access.is_admin(user):
            raise UserError("Only admins can retry a failed request.")

        out = self._announce.outgoing()

        def reapprove(repo: Repository) -> None:
            now = self._clock.now()
            row = repo.request(request_id)
            if row is None:
                raise UserError(f"{format_request_id(request_id)} does not exist.")
            if row.state != RequestState.FAILED:
                raise UserError(f"{format_request_id(request_id)} is {row.state}, not failed: nothing to retry.")
            if row.kind == RequestKind.SHIFT and row.source_state != SourceLeg.APPLIED:
                problem = source_problem(repo, row, None)  # before the source leg is recorded: never a negative base
                if problem:
                    raise UserError(f"Not retried: {problem}.")
            move_request(row, RequestState.APPROVED, now=now)
            row.failure_reason = None
            row.decided_at = now
            record_effect(repo, row, now=now)
            repo.record(at=now, actor=user, action="request_retried", namespace=row.namespace, request_id=request_id)
            out.thread(repo, request_id, say(":repeat: Retry by ", User(user), "."))

        self._db.run(reapprove)
        out.deliver()
        state = self._applier.apply(request_id)
        return f"{format_request_id(request_id)} is {state}."

    def _load(self, request_id: int) -> RequestRow:
        request = self._db.run(lambda repo: repo.request(request_id))
        if request is None:
            raise UserError(f"{format_request_id(request_id)} does not exist.")
        return request


def gpu_hours(gpus: int, duration_seconds: int | None) -> float:
    """GPU-hours a grant of ``gpus`` for ``duration_seconds`` gives (none for a permanent change)."""
    return max(gpus, 0) * (duration_seconds or 0) / 3600


def pending(repo: Repository, request_id: int) -> RequestRow:
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


def delta_now(request: RequestRow, current: int) -> int:
    """The change a request makes to a quota that is ``current`` now: a total asked for ("8") stays that total."""
    if request.kind != RequestKind.CHANGE:
        return request.delta
    return GpuAmount.parse(request.amount_text).delta_from(current)


def already_decided(request: RequestRow) -> Notice:
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
