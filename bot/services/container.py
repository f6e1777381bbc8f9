"""``Services``: the use cases handlers and jobs call, with the ports they share. Built by ``bot.bootstrap``."""

from __future__ import annotations

from dataclasses import dataclass

from bot.clock import Clock
from bot.domain.policy import Policy
from bot.services.access import Access
from bot.services.blocked import BlockedWatch
from bot.services.budget import BudgetWatch
from bot.services.decisions import Decisions
from bot.services.digest import DigestService
from bot.services.doctor import Doctor
from bot.services.home import HomeService
from bot.services.idle import IdleWatch
from bot.services.inbox import EventInbox
from bot.services.ledger import CostLookup, Ledger
from bot.services.lifecycle import Lifecycle
from bot.services.monthly_close import MonthlyClose
from bot.services.ports import ClusterInspection, QuotaCluster, Transactions
from bot.services.pricing import Pricer
from bot.services.proposals import ProposalService
from bot.services.queries import Queries
from bot.services.quota_sync import QuotaSync
from bot.services.reclaim import ReclaimWatch
from bot.services.reconcile import Reconciler
from bot.services.shifts import ShiftService
from bot.services.submissions import Submissions
from bot.services.why import Why


@dataclass(frozen=True)
class Services:
    policy: Policy
    database: Transactions
    cluster: QuotaCluster
    clock: Clock
    access: Access
    submissions: Submissions  # submit, extend
    decisions: Decisions  # approve (after a confirmation), deny
    lifecycle: Lifecycle  # cancel, release, retry
    queries: Queries
    reconciler: Reconciler
    sync: QuotaSync
    blocked: BlockedWatch
    reclaims: ReclaimWatch
    home: HomeService
    inbox: EventInbox
    shifts: ShiftService
    # Without a metrics source (no PROMETHEUS_URL) there are no digests, budgets, idle nudges or proposals.
    digest: DigestService | None = None
    budget: BudgetWatch | None = None
    monthly_close: MonthlyClose | None = None  # with a metrics source and a mail server (SMTP_URL) only
    idle: IdleWatch | None = None
    ledger: Ledger | None = None
    costs: CostLookup | None = None
    proposals: ProposalService | None = None
    pricer: Pricer | None = None
    # What why and doctor read of the clusters (read only); None where nothing wired it (tests of other things).
    inspection: ClusterInspection | None = None
    doctor: Doctor | None = None  # the GPU stack's checklist
    why: Why | None = None  # why a pod is pending (read only); None where nothing wired it
