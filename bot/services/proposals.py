"""Weekly proposed shifts (``schedules.proposals``, off by default): each managed namespace's quota
against what it really used over the last ``WINDOW_DAYS`` finished days (GPU-hours and utilisation
from the cost ledger, the peak allocation from Prometheus: the ledger keeps no maxima) and whether the
quota held it back: how often the quota blocked its workloads (the bot's blocked-workload alerts,
counted per day) and how long its quota sat full (Prometheus's ``kube_resourcequota``, which holds the
window's days from before the bot was installed or while it was down). A Prometheus that fails to
answer the saturation leaves the alerts to decide, and each proposal says which signal it used. The
proposals (``bot.domain.proposals``) go to the admin channel with the numbers behind each and a
[Propose shift] button. Nothing here changes a quota: a proposal becomes a change only as a shift
request, approved the usual way.

Spot in the strategy shift: with ``pricing.spot.preemptible_priority_classes`` set, the same run names the
namespaces whose GPU-hours of those classes ran mostly on on-demand nodes, with what spot would save per month
(``SpotSavings``, one post without a button): the share of preemptible work from Prometheus (kube_pod_info's
priority class, one query), the hours and the models from the ledger, today's prices.

One post per week across replicas: the run claims ("*proposals", today) in the digest claims table.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from bot.clock import Clock
from bot.domain.capacity import SPOT, Placement
from bot.domain.clusters import HOME, cluster_of
from bot.domain.costs import ModelUse, day_window
from bot.domain.policy import Policy
from bot.domain.proposals import NamespaceUse, Proposal, Signal, SpotSaving, propose, signals, spot_saving
from bot.domain.resources import GPU
from bot.errors import PermanentError, TemporaryError
from bot.services.announce import Announcer
from bot.services.ledger import RECORDED, Entry, Ledger, answered
from bot.services.messages import ShiftProposal, SpotSavings
from bot.services.ports import (
    Action,
    ActionKind,
    ButtonLabel,
    MetricsSource,
    PreemptibleWork,
    QuotaCluster,
    Repository,
    Transactions,
)

log = logging.getLogger(__name__)

WINDOW_DAYS = 14
CLAIM_SCOPE = "*proposals"  # beside the digests' team scopes; "*" marks the organisation-wide ones


@dataclass
class ProposalRun:
    day: date
    proposals: list[Proposal] = field(default_factory=list)
    skipped: str | None = None  # why nothing was posted
    spot: list[SpotSaving] = field(default_factory=list)  # the spot savings posted beside the proposals


@dataclass(frozen=True)
class Measured:
    """The window as measured: each namespace's use, how many of its days the metrics saw, and whether
    Prometheus answered for the quotas' saturation."""

    uses: list[NamespaceUse]
    days: int
    saturation_read: bool
    spot: list[SpotSaving] = field(default_factory=list)

    def no_signal(self) -> str | None:
        """Why no namespace can be called short, when neither signal holds anything for the window."""
        if any(use.blocked for use in self.uses) or any(use.saturation is not None for use in self.uses):
            return None
        prometheus = "no kube_resourcequota series in Prometheus" if self.saturation_read else "Prometheus was not read"
        return f"no sign of a shortage: no quota-blocked alerts in the last {WINDOW_DAYS} days and {prometheus}"


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
            measured = self.measure(today)
            # A day the metrics did not see would read as GPUs nobody used: no proposal from a partial fortnight.
            whole = measured.days == WINDOW_DAYS
            proposals = propose(measured.uses) if whole else []
            spot = measured.spot if whole else []

            def post(repo: Repository) -> None:
                """The proposals recorded with the day marked posted."""
                for index, proposal in enumerate(proposals, start=1):
                    notice = proposal_message(proposal, index, len(proposals), saturation_read=measured.saturation_read)
                    out.post(repo, channel, notice, actions=[propose_button(proposal)])
                if spot:
                    out.post(repo, channel, SpotSavings(WINDOW_DAYS, self._policy.pricing.currency, tuple(spot)))
                repo.mark_digest_posted(CLAIM_SCOPE, today, at=self._clock.now())

            self._db.run(post)
        except Exception:  # nothing recorded: the day is claimed again by the next run
            self._db.run(lambda repo: repo.release_digest(CLAIM_SCOPE, today))
            raise
        out.deliver()
        log.info("proposals: %d shift(s) proposed from %d days of use", len(proposals), WINDOW_DAYS)
        if measured.days < WINDOW_DAYS:
            log.warning("proposals: only %d of the last %d days were measured; nothing proposed", measured.days, WINDOW_DAYS)
            return ProposalRun(today, skipped=f"only {measured.days} of the last {WINDOW_DAYS} days were measured")
        if proposals:
            return ProposalRun(today, proposals, spot=spot)
        if reason := measured.no_signal():
            log.info("proposals: %s", reason)
            return ProposalRun(today, skipped=reason, spot=spot)
        return ProposalRun(today, skipped="no namespace both short and with spare GPUs", spot=spot)

    def measure(self, today: date) -> Measured:
        """Each managed namespace with a GPU quota, over the ``WINDOW_DAYS`` finished days before ``today``,
        how many of those days the metrics saw, and whether Prometheus told the quotas' saturation."""
        zone = self._policy.schedules.zone
        days = [today - timedelta(days=n) for n in range(WINDOW_DAYS, 0, -1)]
        self._ledger.record_unknown(days)
        status = self._ledger.cluster_status(days)
        managed = self._policy.managed_namespaces()
        # Each cluster's days on their own: a namespace's mean is over the days its cluster was recorded.
        recorded = {
            cluster: [d for d in days if status.get(d, {}).get(cluster) == RECORDED]
            for cluster in {cluster_of(ns) for ns in managed} or {HOME}
        }
        hours_in_window = {c: sum(day_window(d, zone).seconds for d in of_cluster) / 3600 for c, of_cluster in recorded.items()}
        allocated: dict[str, float] = {}
        observed: dict[str, float] = {}
        util: dict[str, float] = {}
        # Whole GPUs only: a shift moves GPU quota, and MIG slice-hours are not GPU-hours.
        entries = [e for e in self._ledger.entries(days[0], days[-1]) if e.use.resource == GPU]
        for entry in entries:
            allocated[entry.namespace] = allocated.get(entry.namespace, 0.0) + entry.use.allocated_hours
            observed[entry.namespace] = observed.get(entry.namespace, 0.0) + entry.use.observed_hours
            util[entry.namespace] = util.get(entry.namespace, 0.0) + entry.use.util_hours
        start, end = day_window(days[0], zone).start, day_window(days[-1], zone).end
        unavailable: dict[str, str] = {}
        peaks = answered(lambda: self._metrics.peak_allocated(start, end), unavailable)
        if unavailable:
            log.warning("proposals: the namespaces of clusters whose metrics could not be read are left out: %s", unavailable)
        saturation = self._saturation(start, end)
        blocked = self._db.run(lambda repo: repo.quota_blocks(days[0], days[-1]))
        quotas = self._cluster.gpu_quota_totals({ns: self._policy.quota_name(ns) for ns in managed})
        # A namespace can give only what it holds for good: GPUs of active temporary grants are borrowed.
        borrowed = self._db.run(lambda repo: {ns: repo.active_grant_total(ns, GPU) for ns in quotas})
        uses = [
            NamespaceUse(
                namespace=ns,
                quota=max(0, quotas[ns].get(GPU, 0) - borrowed[ns]),
                peak=peaks.get(ns, 0.0),
                mean=allocated.get(ns, 0.0) / hours if (hours := hours_in_window[cluster_of(ns)]) else 0.0,
                busy=util[ns] / observed[ns] if observed.get(ns) else None,
                blocked=blocked.get(ns, 0),
                saturation=(saturation or {}).get(ns),
            )
            for ns in sorted(managed)
            if ns in quotas and cluster_of(ns) not in unavailable  # no quota: unlimited, nothing to give
        ]
        measured_days = min((len(of_cluster) for of_cluster in recorded.values()), default=0)
        spot = self._spot_savings(start, end, entries, allocated, managed=set(managed), unavailable=unavailable)
        return Measured(uses, measured_days, saturation_read=saturation is not None, spot=spot)

    def _spot_savings(
        self,
        start: datetime,
        end: datetime,
        entries: list[Entry],
        hours: dict[str, float],
        *,
        managed: set[str],
        unavailable: dict[str, str],
    ) -> list[SpotSaving]:
        """The managed namespaces whose preemptible work ran mostly on on-demand nodes, dearest saving first; none
        without preemptible classes in the policy, or when Prometheus could not tell (said in the log)."""
        classes = self._policy.pricing.spot.preemptible_priority_classes
        if not classes or not isinstance(self._metrics, PreemptibleWork):
            return []
        metrics = self._metrics
        try:
            shares = answered(lambda: metrics.preemptible_use(start, end, classes), unavailable)
        except (TemporaryError, PermanentError) as error:
            log.warning("proposals: Prometheus was not read for the preemptible work (%s); no spot savings", error)
            return []
        found = [
            saving
            for namespace, per_place in sorted(shares.items())
            if namespace in managed
            and (
                saving := spot_saving(
                    namespace,
                    hours=hours.get(namespace, 0.0),
                    shares=per_place,
                    gap_per_hour=self._spot_gap([e.use for e in entries if e.namespace == namespace]),
                    window_days=WINDOW_DAYS,
                )
            )
            is not None
        ]
        return sorted(found, key=lambda saving: (-saving.saving_per_month, saving.namespace))

    def _spot_gap(self, uses: list[ModelUse]) -> float:
        """What a GPU-hour of the models a namespace ran on on-demand nodes costs more on-demand than on spot, at
        today's prices (weighted by its hours; no such hours: a model of the default price)."""
        pricing = self._policy.pricing
        on_demand = [use for use in uses if use.placement.on_demand and use.allocated_hours > 0]
        if not on_demand:
            return pricing.price_for(None) - pricing.price_for(None, Placement(SPOT))
        total = sum(use.allocated_hours for use in on_demand)
        gap = sum(
            use.allocated_hours * (pricing.price_for(use.model) - pricing.price_for(use.model, Placement(SPOT)))
            for use in on_demand
        )
        return gap / total

    def _saturation(self, start: datetime, end: datetime) -> dict[str, float] | None:
        """The quotas' saturation from Prometheus; None when it could not answer (the alerts alone then decide:
        the subquery over the fortnight is the run's costliest query, the one a loaded Prometheus refuses)."""
        try:
            names = {ns: self._policy.quota_name(ns) for ns in self._policy.managed_namespaces()}
            return answered(lambda: self._metrics.quota_saturation(start, end, names))
        except (TemporaryError, PermanentError) as error:
            log.warning(
                "proposals: Prometheus was not read for the quotas' saturation (%s); "
                "the bot's alerts alone tell which namespaces are short",
                error,
            )
            return None


def proposal_message(proposal: Proposal, index: int, count: int, *, saturation_read: bool = True) -> ShiftProposal:
    """Proposal ``index`` of ``count``: the source's use and what showed the target short, each with its signal."""
    source, target = proposal.source, proposal.target
    found = signals(target)
    return ShiftProposal(
        index,
        count,
        WINDOW_DAYS,
        proposal.gpus,
        source.namespace,
        source.peak,
        source.quota,
        source.mean,
        source.busy,
        target.namespace,
        target.blocked if Signal.ALERTS in found else None,
        target.saturation if Signal.SATURATION in found else None,
        saturation_read,
    )


def propose_button(proposal: Proposal) -> Action:
    return Action(
        kind=ActionKind.PROPOSE_SHIFT,
        label=ButtonLabel.PROPOSE_SHIFT,
        value=f"{proposal.source.namespace}:{proposal.target.namespace}:{proposal.gpus}",
    )
