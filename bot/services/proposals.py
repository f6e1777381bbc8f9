"""Weekly proposed shifts (``schedules.proposals``, off by default): each managed namespace's quota
against what it really used over the last ``WINDOW_DAYS`` finished days (GPU-hours and utilisation
from the cost ledger, the peak allocation from Prometheus: the ledger keeps no maxima) and how often
the quota blocked its workloads (the blocked-workload alerts, counted per day). The proposals
(``bot.domain.proposals``) go to the admin channel with the numbers behind each and a [Propose shift]
button. Nothing here changes a quota: a proposal becomes a change only as a shift request, approved
the usual way.

One post per week across replicas: the run claims ("*proposals", today) in the digest claims table.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import date, timedelta

from bot.clock import Clock
from bot.domain.costs import day_window
from bot.domain.policy import Policy
from bot.domain.proposals import NamespaceUse, Proposal, propose
from bot.services.announce import Announcer
from bot.services.ledger import RECORDED, Ledger
from bot.services.ports import Action, ActionKind, MetricsSource, QuotaCluster, Repository, Transactions
from bot.services.text import Notice, Strong, gpus, say

log = logging.getLogger(__name__)

WINDOW_DAYS = 14
CLAIM_SCOPE = "*proposals"  # beside the digests' team scopes; "*" marks the organisation-wide ones


@dataclass
class ProposalRun:
    day: date
    proposals: list[Proposal] = field(default_factory=list)
    skipped: str | None = None  # why nothing was posted


class ProposalService:
    def __init__(
        self,
        *,
        policy: Policy,
        metrics: MetricsSource,
        ledger: Ledger,
        cluster: QuotaCluster,
        database: Transactions,
        announcer: Announcer,
        clock: Clock,
    ) -> None:
        self._policy = policy
        self._metrics = metrics
        self._ledger = ledger
        self._cluster = cluster
        self._db = database
        self._announce = announcer
        self._clock = clock

    def run(self) -> ProposalRun:
        """The scheduled job: measure, propose, post once (claimed for the day across replicas)."""
        today = self._clock.now().astimezone(self._policy.schedules.zone).date()
        channel = self._policy.admin_channel
        if channel is None:  # the policy refuses a proposals schedule without one
            return ProposalRun(today, skipped="no admin channel")
        if not self._db.run(lambda repo: repo.claim_digest(CLAIM_SCOPE, today, at=self._clock.now())):
            return ProposalRun(today, skipped="already posted today")
        out = self._announce.outgoing()
        try:
            uses, measured = self.measure(today)
            # A day the metrics did not see would read as GPUs nobody used: no proposal from a partial fortnight.
            proposals = propose(uses) if measured == WINDOW_DAYS else []

            def post(repo: Repository) -> None:
                """The proposals recorded with the day marked posted."""
                for index, proposal in enumerate(proposals, start=1):
                    out.post(repo, channel, proposal_notice(proposal, index, len(proposals)), actions=[propose_button(proposal)])
                repo.mark_digest_posted(CLAIM_SCOPE, today, at=self._clock.now())

            self._db.run(post)
        except Exception:  # nothing recorded: the day is claimed again by the next run
            self._db.run(lambda repo: repo.release_digest(CLAIM_SCOPE, today))
            raise
        out.deliver()
        log.info("proposals: %d shift(s) proposed from %d days of use", len(proposals), WINDOW_DAYS)
        if measured < WINDOW_DAYS:
            log.warning("proposals: only %d of the last %d days were measured; nothing proposed", measured, WINDOW_DAYS)
            return ProposalRun(today, skipped=f"only {measured} of the last {WINDOW_DAYS} days were measured")
        return ProposalRun(today, proposals, skipped=None if proposals else "no namespace both short and with spare GPUs")

    def measure(self, today: date) -> tuple[list[NamespaceUse], int]:
        """Each managed namespace with a GPU quota, over the ``WINDOW_DAYS`` finished days before ``today``,
        and how many of those days the metrics saw."""
        zone = self._policy.schedules.zone
        days = [today - timedelta(days=n) for n in range(WINDOW_DAYS, 0, -1)]
        known = self._ledger.status(days)
        if missing := [d for d in days if d not in known]:
            self._ledger.record(missing)
            known = self._ledger.status(days)
        recorded = [d for d in days if known.get(d) == RECORDED]
        hours_in_window = sum(day_window(d, zone).seconds for d in recorded) / 3600
        allocated: dict[str, float] = {}
        observed: dict[str, float] = {}
        util: dict[str, float] = {}
        for entry in self._ledger.entries(days[0], days[-1]):
            allocated[entry.namespace] = allocated.get(entry.namespace, 0.0) + entry.use.allocated_hours
            observed[entry.namespace] = observed.get(entry.namespace, 0.0) + entry.use.observed_hours
            util[entry.namespace] = util.get(entry.namespace, 0.0) + entry.use.util_hours
        peaks = self._metrics.peak_allocated(day_window(days[0], zone).start, day_window(days[-1], zone).end)
        blocked = self._db.run(lambda repo: repo.quota_blocks(days[0], days[-1]))
        managed = self._policy.managed_namespaces()
        quotas = self._cluster.gpu_quota_totals({ns: self._policy.quota_name(ns) for ns in managed})
        # A namespace can give only what it holds for good: GPUs of active temporary grants are borrowed.
        borrowed = self._db.run(lambda repo: {ns: repo.active_grant_total(ns) for ns in quotas})
        uses = [
            NamespaceUse(
                namespace=ns,
                quota=max(0, quotas[ns] - borrowed[ns]),
                peak=peaks.get(ns, 0.0),
                mean=allocated.get(ns, 0.0) / hours_in_window if hours_in_window else 0.0,
                busy=util[ns] / observed[ns] if observed.get(ns) else None,
                blocked=blocked.get(ns, 0),
            )
            for ns in sorted(managed)
            if ns in quotas  # no quota: unlimited, nothing to give
        ]
        return uses, len(recorded)


def proposal_notice(proposal: Proposal, index: int, count: int) -> Notice:
    """ "Shift 2 GPUs from A to B: A used at most 2 of 4 GPUs (1.5 on average), 31 % busy; B was blocked by quota 17 times." """
    source, target = proposal.source, proposal.target
    busy = f"{source.busy * 100:.0f} % busy" if source.busy is not None else "utilisation not measured"
    return say(
        f":bulb: Proposal {index} of {count} (last {WINDOW_DAYS} days): shift ",
        Strong(gpus(proposal.gpus)),
        " from ",
        Strong(source.namespace),
        " to ",
        Strong(target.namespace),
        f". {source.namespace} used at most {source.peak:g} of {gpus(source.quota)} ({source.mean:.1f} on average), {busy}; "
        f"{target.namespace} was blocked by quota {target.blocked} time{'s' if target.blocked != 1 else ''}. "
        "Nothing changes unless a shift is requested and approved.",
    )


def propose_button(proposal: Proposal) -> Action:
    return Action(
        kind=ActionKind.PROPOSE_SHIFT,
        label="Propose shift",
        value=f"{proposal.source.namespace}:{proposal.target.namespace}:{proposal.gpus}",
    )
