"""Kueue ClusterQueues as a quota target, and Workloads waiting for quota: what the bot reads of them. Pure.

A team or namespace may keep its GPU quota in a Kueue ``ClusterQueue``: the bot governs the
``nominalQuota`` of one flavor and resource (``spec.resourceGroups[g].flavors[f].resources[r]``),
and reads what Kueue's controller reports: ``status.flavorsReservation`` (quota reserved by admitted
and admitting workloads: what admission counts against the quota) and ``status.flavorsUsage`` (what
admitted workloads use). Each write stamps two annotations per governed flavor and resource
(``bot.domain.quota.stamp_annotations`` with the flavor as qualifier): the value written and who applied it, so a hand edit is told from the bot's own.

A Workload waiting for quota has the condition ``QuotaReserved`` False; Kueue's scheduler says why in
its message (``pkg/scheduler/flavorassigner/flavorassigner.go``): one part per pod set that does not
fit, ``couldn't assign flavors to pod set <name>: <reasons>`` joined by ``"; "``, its reasons sorted
and joined by ``", "``, such as ``insufficient unused quota for nvidia.com/gpu in flavor h100, 2 more
needed``. ``parse_shortfalls`` reads those reasons.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum

from bot.domain.quota import QuotaSnapshot


@dataclass(frozen=True, kw_only=True)
class ClusterQueueSnapshot(QuotaSnapshot):
    """One flavor and resource of a ClusterQueue at one ``resourceVersion``, as a quota snapshot.

    ``namespace`` is the namespace the bot governs the queue for, ``name`` the ClusterQueue's; ``hard``
    the ``nominalQuota``, ``used`` the reserved quota (``flavorsReservation``), ``limits`` always None,
    ``bot_applied`` the bot's stamp. The indexes locate the quota in ``spec.resourceGroups`` at this
    version only (the list is atomic: a person may reorder it)."""

    flavor: str
    resource: str
    group_index: int
    flavor_index: int
    resource_index: int
    borrowing_limit: int | None  # None: no limit (or no cohort to borrow from)
    cohort: str | None
    in_use: int  # flavorsUsage: what admitted workloads use
    borrowed: int  # of the reserved quota, what is borrowed from the cohort
    pending_workloads: int  # status.pendingWorkloads: the whole queue's, every flavor
    annotated: bool  # the queue had metadata.annotations at this version (a JSON Patch cannot add into a missing map)


class Lack(Enum):
    """Why a pod set's resource does not fit a flavor, as Kueue's scheduler says it."""

    UNUSED_QUOTA = "unused_quota"  # "insufficient unused quota": the quota is reserved by other workloads now
    CAPACITY = "capacity"  # "insufficient quota ... maximum capacity" / "in ClusterQueue": more than the queue can ever give
    BORROWING_LIMIT = "borrowing_limit"  # "borrowing limit ... exceeded"
    NOT_COVERED = "not_covered"  # "resource ... unavailable in ClusterQueue": no flavor of the queue covers it


@dataclass(frozen=True)
class QuotaShortfall:
    """One reason a pod set waits: ``resource`` does not fit ``flavor`` (None: no flavor named), short by
    ``more_needed`` (None: the message does not say)."""

    pod_set: str
    resource: str
    flavor: str | None
    lack: Lack
    more_needed: int | None


@dataclass(frozen=True)
class PendingWorkload:
    """A Kueue Workload whose ``QuotaReserved`` condition is False: waiting for quota (or not admissible)."""

    namespace: str
    name: str
    queue_name: str  # spec.queueName: its LocalQueue
    created_at: datetime | None
    waiting_since: datetime | None  # the condition's lastTransitionTime
    reason: str  # the condition's reason ("Pending"; finer ones with Kueue's UnadmittedWorkloadsObservability gate)
    message: str
    shortfalls: tuple[QuotaShortfall, ...]
    requests: dict[str, int] = field(default_factory=dict, hash=False)  # extended resources, summed over pod sets and pods

    @property
    def preemption_pending(self) -> bool:
        """Kueue has already chosen workloads to preempt for it: the quota it lacks is about to be freed."""
        return _PREEMPTION_PENDING in self.message

    def more_needed(self, resource: str, flavor: str | None = None) -> int | None:
        """How much more of ``resource`` (in ``flavor``, when given) would let it in, as the scheduler said.

        The largest over its pod sets: Kueue counts the pod sets it considered before into each later
        one's figure. None when no reason says a figure."""
        figures = [
            s.more_needed
            for s in self.shortfalls
            if s.resource == resource and flavor in (None, s.flavor) and s.more_needed is not None
        ]
        return max(figures, default=None)


_PREEMPTION_PENDING = "Pending the preemption of"  # "..., 8 more needed. Pending the preemption of 2 workload(s)"
_POD_SET = re.compile(r"couldn't assign flavors to pod set (?P<pod_set>[^:;]+): ")
_TOKEN = r"[^\s,()]+"
_REASONS = [
    (
        Lack.UNUSED_QUOTA,
        re.compile(
            rf"insufficient unused quota (?:in cohort )?for (?P<resource>{_TOKEN}) in flavor (?P<flavor>{_TOKEN}), "
            rf"(?P<more>{_TOKEN}) more needed"
        ),
    ),
    (
        Lack.CAPACITY,
        re.compile(
            rf"insufficient quota for (?P<resource>{_TOKEN})(?: in flavor (?P<flavor>{_TOKEN}))?"
            rf"(?:, request > maximum capacity \((?P<request>{_TOKEN}) > (?P<capacity>{_TOKEN})\)"
            rf"|, previously considered podsets requests \((?P<before>{_TOKEN})\) \+ current podset request "
            rf"\((?P<current>{_TOKEN})\) > maximum capacity \((?P<maximum>{_TOKEN})\))?"
        ),
    ),
    (Lack.BORROWING_LIMIT, re.compile(rf"borrowing limit for (?P<resource>{_TOKEN}) in flavor (?P<flavor>{_TOKEN}) exceeded")),
    (Lack.NOT_COVERED, re.compile(rf"resource (?P<resource>{_TOKEN}) unavailable in ClusterQueue")),
]


def parse_shortfalls(message: str) -> tuple[QuotaShortfall, ...]:
    """The quota reasons of a ``QuotaReserved=False`` message, per pod set, in the order said; reasons of
    other kinds (node affinity, taints, topology) are left out."""
    starts = list(_POD_SET.finditer(message))
    found: list[QuotaShortfall] = []
    for i, start in enumerate(starts):
        reasons = message[start.end() : starts[i + 1].start() if i + 1 < len(starts) else len(message)]
        found.extend(_shortfalls(start["pod_set"], reasons))
    return tuple(found)


def _shortfalls(pod_set: str, reasons: str) -> list[QuotaShortfall]:
    """The reasons of one pod set, in the order said."""
    matched: list[tuple[int, QuotaShortfall]] = []
    for lack, pattern in _REASONS:
        for match in pattern.finditer(reasons):
            shortfall = QuotaShortfall(pod_set, match["resource"], match.groupdict().get("flavor"), lack, _more_needed(match))
            matched.append((match.start(), shortfall))
    return [shortfall for _, shortfall in sorted(matched, key=lambda pair: pair[0])]


def _more_needed(match: re.Match[str]) -> int | None:
    """``N more needed``; or what a request lacks of the queue's maximum capacity; None when not said."""
    said = match.groupdict()
    if said.get("more"):
        return _amount(said["more"])
    if said.get("request") and said.get("capacity"):
        return _difference(_amount(said["request"]), _amount(said["capacity"]))
    if said.get("before") and said.get("current") and said.get("maximum"):
        before, current = _amount(said["before"]), _amount(said["current"])
        return _difference(None if before is None or current is None else before + current, _amount(said["maximum"]))
    return None


def _amount(text: str) -> int | None:
    """A whole count as Kueue prints it for a GPU-like resource (``2``); None for other quantities (``500m``)."""
    return int(text) if text.isdigit() else None


def _difference(wanted: int | None, available: int | None) -> int | None:
    return wanted - available if wanted is not None and available is not None else None
