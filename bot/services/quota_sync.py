"""Bring one scope's quota (a governed resource of a namespace: ``requests.<resource>`` of its ResourceQuota,
or a Kueue ClusterQueue flavor's ``nominalQuota``) to what the database says it should be: one writer at a time.

What serialises it: ``Database.namespace_lock`` — a PostgreSQL transaction-level advisory lock keyed
by the object the target writes (``QuotaTarget.lock_name``: the namespace for its ResourceQuota, the
ClusterQueue for a queue), held for the whole critical section by every replica (on SQLite, which serves one
process, a process-local lock; its transactions are ``BEGIN IMMEDIATE``). Inside
it, in this order: read the cluster; fold a person's hand edit into the base, measured from the
value the bot itself last wrote (the ``gpu-quota-bot.io/applied-gpus`` stamp), never from a snapshot
taken before another writer's write; decide the desired value (base + active grants); dry-run and
write it with the read's resourceVersion as precondition; record the write and the adoption in one
transaction (with the reclaim a write below usage opens: ``bot.services.reclaim``). The read may be the caller's (``read_locked``): the last approval of a change is recorded,
rechecked against that read, in the same critical section, and the write then uses it. No other bot write can happen between the read and the record, so a burst of approvals
for one namespace coalesces: the first writer to get the lock writes the value that includes every
change approved so far, and the others find the cluster already in sync. A worker waiting for the
section of a scope whose cluster stops answering meanwhile (the holder waits on that cluster) gives up
(``SectionNotEntered``) rather than hold its thread until the holder's call times out: its caller
leaves the change waiting for the reconcile, as after a temporary fault.

A 409 can then only come from someone outside the bot: it is retried with jittered exponential
backoff. Temporary faults are raised to the caller (the request stays approved and the reconcile
retries); nothing here fails a request. Because the value written is derived from stored state
rather than added to what the cluster holds, running this twice is harmless.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial

from bot.clock import Clock
from bot.domain.audit_details import HandEditAdopted, NamespaceFirstSeen, QuotaWritten, to_text
from bot.domain.entities import Namespace
from bot.domain.failure_reasons import FailureReason, QuotaKeptChanging, ShiftLowersFirst
from bot.domain.kueue import ClusterQueueSnapshot
from bot.domain.policy import Policy
from bot.domain.quota import Observation, QuotaScope, QuotaSnapshot, desired_gpus, in_sync, observe
from bot.errors import PermanentError, QuotaConflict, TemporaryError, WordedError
from bot.services.ports import QuotaTarget, Repository, Transactions
from bot.services.reclaim import follow_reclaim

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SyncOutcome:
    scope: QuotaScope
    quota_name: str
    before: int | None  # hard in the cluster before the write; None when there was no quota
    after: int
    used: int
    drift: int  # GPUs a person changed by hand since the bot's last write, now adopted
    created: bool

    @property
    def changed(self) -> bool:
        return self.before != self.after or self.created


class ReasonedError(WordedError[FailureReason]):
    """An error that carries a typed failure ``reason``, worded at the edge."""

    @property
    def reason(self) -> FailureReason:
        return self.said


class ChangeRefused(ReasonedError, PermanentError):
    """The desired quota breaks a limit now (``reason``); nothing was written."""


class QuotaBusy(ReasonedError, TemporaryError):
    """The quota cannot be written yet (``reason``); the apply waits and tries again."""


class SectionNotEntered(TemporaryError):
    """A scope's critical section was not entered: its cluster stopped answering while this waited for it
    (whoever holds it waits on that cluster). Nothing was read or written; the cluster's words are the message."""


@dataclass(frozen=True)
class _Plan:
    seen: Observation
    grants: int
    desired: int
    shifting: int | None = None  # the approved shift whose decrease of this namespace is recorded, not yet applied


@dataclass(frozen=True)
class QuotaRead:
    """The quota as read inside the namespace's critical section (``snapshot`` None: it has no GPU quota),
    and the plan made from it in the caller's transaction (``QuotaSync.plan_in``), if any."""

    snapshot: QuotaSnapshot | None
    plan: _Plan | None = None

    @property
    def hard(self) -> int | None:
        return self.snapshot.hard if self.snapshot else None


class QuotaSync:
    def __init__(
        self,
        *,
        policy: Policy,
        target: QuotaTarget,
        database: Transactions,
        clock: Clock,
        conflict_backoff: tuple[float, float] = (0.05, 2.0),
        max_conflicts: int = 8,
        sleep: Callable[[float], None] | None = None,
        rng: random.Random | None = None,
        answering: Callable[[QuotaScope], None] | None = None,
    ) -> None:
        """``answering(scope)`` raises a TemporaryError while the cluster holding the scope's quota does not
        answer: a worker waiting for the scope's critical section then gives up (whoever holds it waits on
        that cluster) instead of holding its thread until the holder's call times out."""
        self._policy = policy
        self._target = target
        self._db = database
        self._clock = clock
        self._first_wait, self._max_wait = conflict_backoff
        self._max_conflicts = max_conflicts
        self._sleep = sleep or time.sleep
        self._rng = rng or random.Random()
        self._answering = answering

    def record_observation(self, repository: Repository, snapshot: QuotaSnapshot | None, scope: QuotaScope) -> Namespace:
        """Record a scope the first time the bot sees it (a submission's read).

        Later reads are folded only inside ``converge``'s critical section: a snapshot read outside
        it may predate another writer's write.
        """
        row = repository.namespace(scope.namespace, scope.resource)
        if row is not None:
            return row
        grants = repository.active_grant_total(scope.namespace, scope.resource)
        seen = observe(
            snapshot,
            base=None,
            last_seen=None,
            seen_version=None,
            active_grants=grants,
            default_quota=self._policy.default_quota(scope.namespace, resource=scope.resource),
        )
        return self._adopt_namespace(repository, scope, snapshot, seen)

    @contextmanager
    def exclusive(self, scope: QuotaScope) -> Iterator[None]:
        """The scope's critical section: the only bot writer of its quota object, in every replica.
        Raises SectionNotEntered, entering nothing, when its cluster stops answering while this waits for it."""
        answering = partial(self._still_answering, scope) if self._answering is not None else None
        with self._db.namespace_lock(self._target.lock_name(scope), while_waiting=answering):
            yield

    def answering(self, scope: QuotaScope) -> bool:
        """Whether the cluster holding the scope's quota takes a call now (False: it is down and not due for
        another try, or it hangs); True when there is no telling."""
        try:
            self._still_answering(scope)
        except SectionNotEntered:
            return False
        return True

    def _still_answering(self, scope: QuotaScope) -> None:
        if self._answering is None:
            return
        try:
            self._answering(scope)
        except TemporaryError as error:
            raise SectionNotEntered(str(error), delay=error.delay) from error

    def current(self, scope: QuotaScope, *, max_age: float = 0.0) -> QuotaSnapshot | None:
        """The quota as it is now, read outside the critical section: what a person is shown or asked
        about (a write reads it again inside). ``max_age``: as ``QuotaTarget.read``."""
        return self._target.read(scope, max_age=max_age)

    def quota_name(self, scope: QuotaScope) -> str:
        """The name of the object that holds the scope's quota."""
        return self._target.name(scope)

    def read_locked(self, scope: QuotaScope) -> QuotaRead:
        """Read the quota, for a caller inside ``exclusive(scope)`` that decides from it and then
        passes it to ``converge_locked``: no other bot writer can change it in between."""
        return QuotaRead(self._target.read(scope))

    def plan_in(self, repo: Repository, scope: QuotaScope, read: QuotaRead) -> QuotaRead:
        """``read`` with the write planned from it in the caller's transaction (the one that recorded the
        change, still inside ``exclusive(scope)``), so that ``converge_locked`` writes at once."""
        return QuotaRead(read.snapshot, self._plan(repo, scope, read.snapshot))

    def converge(self, scope: QuotaScope, *, request_id: int | None = None) -> SyncOutcome:
        """Make the cluster hold the desired quota, in the scope's critical section."""
        with self.exclusive(scope):
            return self.converge_locked(scope, request_id=request_id)

    def converge_locked(
        self,
        scope: QuotaScope,
        *,
        request_id: int | None = None,
        check: Callable[[int, int], FailureReason | None] | None = None,
        read: QuotaRead | None = None,
    ) -> SyncOutcome:
        """``converge`` for a caller already inside ``exclusive(scope)``.

        ``read``: the caller's ``read_locked`` in this critical section (with its ``plan_in``); the first
        attempt writes from it (its resourceVersion the write's precondition) instead of reading again.

        ``check(base, active grants)`` may refuse the plan before anything is written (ChangeRefused); its base is
        below zero when a hand edit took more than the base had. Raises
        TemporaryError for faults that may pass (and after too many 409s in a row), PermanentError or
        NamespaceNotFound for what will not.
        """
        quota_name = self._target.name(scope)
        conflicts = 0
        while True:
            try:
                return self._attempt(scope, quota_name, request_id, check, read)
            except QuotaConflict:
                read = None  # someone outside the bot wrote since: read again
                conflicts += 1
                if conflicts >= self._max_conflicts:
                    raise QuotaBusy(QuotaKeptChanging(quota_name, scope.namespace, conflicts)) from None
                delay = self._conflict_wait(conflicts)
                log.info(
                    "quota %s/%s (%s) changed under us (409); reading again in %.2fs",
                    scope.namespace,
                    quota_name,
                    scope.resource,
                    delay,
                )
                self._sleep(delay)

    def _conflict_wait(self, conflicts: int) -> float:
        """Exponential backoff with full jitter: writers that collided do not collide again in step."""
        ceiling = min(self._max_wait, self._first_wait * 2 ** (conflicts - 1))
        return self._rng.uniform(ceiling / 2, ceiling)

    def _attempt(
        self,
        scope: QuotaScope,
        quota_name: str,
        request_id: int | None,
        check: Callable[[int, int], FailureReason | None] | None,
        read: QuotaRead | None,
    ) -> SyncOutcome:
        snapshot = read.snapshot if read is not None else self._target.read(scope)
        plan = (
            read.plan
            if read is not None and read.plan is not None
            else self._db.run(lambda repo: self._plan(repo, scope, snapshot))
        )
        if plan.seen.short and plan.shifting is not None and plan.shifting != request_id:
            # Adopting this edit would stop the base at zero and hide from the shift that the source lacks GPUs.
            raise QuotaBusy(ShiftLowersFirst(plan.shifting, scope.namespace))
        if check is not None:
            # The base as the edit left it, below zero when the edit took more than a recorded decrease left.
            problem = check(plan.seen.base - plan.seen.short, plan.grants)
            if problem:
                raise ChangeRefused(problem)
        written: QuotaSnapshot | None = None
        if not in_sync(snapshot, plan.desired):
            stamp = self._target.stamp(plan.desired, request_id=request_id)
            self._target.dry_run(scope, stamp, previous=snapshot)
            written = self._target.write(scope, stamp, previous=snapshot)
        # The adoption is recorded only now, with the write: had the write failed, the stamp would
        # still hold the bot's last value and the next attempt measures the same edit again.
        self._db.run(lambda repo: self._record(repo, scope, snapshot, written, plan, request_id))
        if written is None:
            assert snapshot is not None
            return SyncOutcome(scope, quota_name, snapshot.hard, snapshot.hard, snapshot.used, plan.seen.drift, False)
        return SyncOutcome(
            scope,
            quota_name,
            snapshot.hard if snapshot else None,
            written.hard,
            snapshot.used if snapshot else written.used,
            plan.seen.drift,
            snapshot is None,
        )

    def _plan(self, repo: Repository, scope: QuotaScope, snapshot: QuotaSnapshot | None) -> _Plan:
        row = repo.namespace(scope.namespace, scope.resource)
        grants = repo.active_grant_total(scope.namespace, scope.resource)
        seen = observe(
            snapshot,
            base=row.base_gpus if row else None,
            last_seen=row.last_seen_gpus if row else None,
            seen_version=row.seen_resource_version if row else None,
            active_grants=grants,
            default_quota=self._policy.default_quota(scope.namespace, resource=scope.resource),
        )
        shifting = repo.shift_sources_in_flight().get((scope.namespace, scope.resource)) if seen.short else None
        return _Plan(seen=seen, grants=grants, desired=desired_gpus(seen.base, grants), shifting=shifting)

    def _record(
        self,
        repo: Repository,
        scope: QuotaScope,
        snapshot: QuotaSnapshot | None,
        written: QuotaSnapshot | None,
        plan: _Plan,
        request_id: int | None,
    ) -> None:
        now = self._clock.now()
        namespace = scope.namespace
        row = repo.namespace(namespace, scope.resource)
        if row is None:
            row = self._adopt_namespace(repo, scope, snapshot, plan.seen)
        elif plan.seen.drift:
            # Relative, on the row as it is now: a permanent approval that moved the base meanwhile stays.
            before = {"quota_gpus": row.last_seen_gpus, "base_gpus": row.base_gpus}
            row.base_gpus = max(0, row.base_gpus + plan.seen.drift)
            repo.record(
                at=now,
                action="manual_change_adopted",
                namespace=namespace,
                request_id=request_id,
                before=before,
                after={"quota_gpus": plan.seen.last_seen, "base_gpus": row.base_gpus},
                detail=to_text(HandEditAdopted(plan.seen.drift)),
            )
        current = written or snapshot
        if current is not None:
            row.last_seen_gpus, row.seen_resource_version = current.hard, current.resource_version
        row.updated_at = now
        if written is not None:
            repo.record(
                at=now,
                action="quota_created" if snapshot is None else "quota_patched",
                namespace=namespace,
                request_id=request_id,
                before={"quota_gpus": snapshot.hard, "resource_version": snapshot.resource_version} if snapshot else None,
                after={"quota_gpus": written.hard, "resource_version": written.resource_version},
                detail=to_text(
                    QuotaWritten(
                        written.name,
                        snapshot.hard if snapshot else None,
                        written.hard,
                        scope.resource,
                        written.flavor if isinstance(written, ClusterQueueSnapshot) else None,
                    )
                ),
            )
            used = snapshot.used if snapshot is not None else written.used
            follow_reclaim(repo, scope, request_id=request_id, hard=written.hard, used=used, at=now)

    def _adopt_namespace(
        self, repo: Repository, scope: QuotaScope, snapshot: QuotaSnapshot | None, seen: Observation
    ) -> Namespace:
        now = self._clock.now()
        namespace = scope.namespace
        team = self._policy.team_of(namespace)
        row = repo.add_namespace(
            name=namespace,
            resource=scope.resource,
            team=team.name if team else "",
            base_gpus=seen.base,
            last_seen_gpus=seen.last_seen,
            seen_resource_version=snapshot.resource_version if snapshot else None,
            updated_at=now,
        )
        repo.record(
            at=now,
            action="namespace_adopted",
            namespace=namespace,
            after={"base_gpus": seen.base, "quota_gpus": snapshot.hard if snapshot else None},
            detail=to_text(NamespaceFirstSeen(has_quota=snapshot is not None)),
        )
        return row
