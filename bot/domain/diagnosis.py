"""Why a GPU pod is pending, from the facts (``bot.domain.scheduling``): typed causes, each with its evidence and
its fix as data. Pure.

The causes come in the order a person can act on them, and a check that makes others moot ends them:

1. a resource no node advertises (a typo such as ``nvidia.com/gpus``, whole GPUs on a cluster of MIG slices, a MIG
   profile no node offers): fix the pod spec; placement and capacity of that resource mean nothing until then;
2. the quota (a controller's ``exceeded quota``: [Request +N]) or Kueue's queue (its reservation and the
   workload's place in it) keep the pods from being created or admitted;
3. scheduling gates (Kueue's admission gate among them): the scheduler does not consider the pod yet, so what
   it would find of capacity and priority is moot;
4. placement: no node offering the resource matches the ``nodeSelector`` / required node affinity (with the
   label values those nodes do have), taints it does not tolerate (with the toleration to add), cordoned or
   not-ready nodes; first where they keep it from every node or from a node that has room now;
5. capacity: no node it may use has enough free (the largest free block per node pool or GPU model), whether
   the cluster autoscaler could add one; then priority: what holds those GPUs, whether it may preempt it;
6. nothing of the above: a node could take it now (the scheduler's words say what else it waits for).

The scheduler's own words (its latest ``FailedScheduling`` message) are quoted alongside; a pod's image is never
checked for CUDA, which the answer says. ``why_target`` reads the command's target against the policy's clusters.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from bot.domain.kueue import PendingWorkload
from bot.domain.resources import GPU, mig_profile
from bot.domain.scheduling import (
    AutoscalerStatus,
    NodeFacts,
    PodFacts,
    PriorityClassFacts,
    SchedulerEvent,
    SelectorTerm,
    Taint,
    Toleration,
)

KUEUE_GATE = "kueue.x-k8s.io/admission"  # the scheduling gate Kueue puts on a plain pod until it is admitted
NEVER = "Never"  # preemptionPolicy of a class whose pods never preempt
SYSTEM_TAINTS = "node.kubernetes.io/"  # the node lifecycle's own taints (cordon, not-ready): not for a pod to tolerate
# Labels that name a node's pool, by provider (GKE, EKS, Karpenter, AKS, OpenShift machine sets, the generic one).
POOL_LABELS = (
    "cloud.google.com/gke-nodepool",
    "eks.amazonaws.com/nodegroup",
    "karpenter.sh/nodepool",
    "kubernetes.azure.com/agentpool",
    "machine.openshift.io/cluster-api-machineset",
    "node.kubernetes.io/pool",
)
_CLOSE = 0.8  # how alike a resource name must be to another to be taken for a typo of it


# --- what the command names ----------------------------------------------------------------------


@dataclass(frozen=True)
class WhyTarget:
    """``namespace`` as typed (a key, or ``home/name``), ``name`` the pod or workload (None: pick one)."""

    namespace: str
    name: str | None


def why_target(target: str, name: str | None, *, clusters: Collection[str], managed: Callable[[str], bool]) -> WhyTarget:
    """``ns/pod``, ``us-2/ns/pod``, ``ns`` or ``us-2/ns`` (and a second word naming the pod). Two parts are a
    namespace when the first is a cluster of the policy and both name a managed namespace; else ``ns/pod``."""
    parts = target.split("/")
    if name is not None or len(parts) == 1:
        return WhyTarget(target, name)
    if len(parts) == 3:
        return WhyTarget(f"{parts[0]}/{parts[1]}", parts[2])
    if parts[0] in clusters and managed(target):
        return WhyTarget(target, None)
    return WhyTarget(parts[0], parts[1])


# --- facts about the quota and Kueue ---------------------------------------------------------------


@dataclass(frozen=True)
class QuotaRefused:
    """The namespace's quota of ``resource`` refused a controller's pods (its ``exceeded quota`` event): what one
    pod asked (None: the message did not say), the quota's hard and used now, the running pods holding it."""

    namespace: str
    resource: str
    asks: int | None
    hard: int
    used: int
    holders: tuple[str, ...] = ()


@dataclass(frozen=True)
class QueueFacts:
    """Kueue's view where a ClusterQueue holds the namespace's quota of ``resource``: the queue's flavor (nominal
    quota and what is reserved of it; None: not read), and the workload waiting in it with its place among the
    queue's waiting workloads (oldest first; None: not waiting)."""

    namespace: str
    resource: str
    cluster_queue: str
    flavor: str
    nominal: int | None
    reserved: int | None
    workload: PendingWorkload | None
    position: int | None
    waiting: int


@dataclass(frozen=True)
class Facts:
    """What is known of a pending pod; None where it could not be read (that check is then left out)."""

    pod: PodFacts
    nodes: tuple[NodeFacts, ...] | None = None
    classes: Mapping[str, PriorityClassFacts] | None = None
    holders: tuple[PodFacts, ...] | None = None  # unfinished GPU pods bound to the nodes it could use (``short_nodes``)
    autoscaler: AutoscalerStatus | None = None
    event: SchedulerEvent | None = None
    queues: tuple[QueueFacts, ...] = ()
    refused: tuple[QuotaRefused, ...] = ()  # the quota refusing more pods of its controller


# --- the causes ----------------------------------------------------------------------------------------


class Cause:
    """The base of every cause (subclasses are frozen dataclasses)."""


@dataclass(frozen=True)
class RequestMore:
    """The fix of a full quota: ask for ``amount`` more of ``resource`` (the [Request +N] button)."""

    namespace: str
    amount: int
    resource: str

    @property
    def value(self) -> str:
        """The button's value, as the blocked-workload alert's ([Request more] opens the form prefilled)."""
        return json.dumps({"namespace": self.namespace, "gpus": f"+{self.amount}", "resource": self.resource})


class Mistake(StrEnum):
    """Why no node advertises what the pod asks for."""

    TYPO = "typo"  # close to a resource the nodes do advertise (``suggestion``)
    WHOLE_GPU_ON_MIG = "whole_gpu_on_mig"  # nvidia.com/gpu where the nodes offer only MIG profiles
    MIG_PROFILE = "mig_profile"  # a MIG profile no node is partitioned into
    NO_DEVICE_PLUGIN = "no_device_plugin"  # GPU nodes advertise no nvidia.com resource at all
    UNKNOWN = "unknown"  # nothing like it anywhere


@dataclass(frozen=True)
class NotAdvertised(Cause):
    resource: str
    mistake: Mistake
    suggestion: str | None  # the resource to ask for instead
    offered: tuple[str, ...]  # what the nodes advertise (its vendor's resources)


@dataclass(frozen=True)
class QuotaFull(Cause):
    namespace: str
    resource: str
    asks: int | None
    hard: int
    used: int
    holders: tuple[str, ...]
    fix: RequestMore


@dataclass(frozen=True)
class QueueWait(Cause):
    """Kueue has not admitted the workload: the queue's quota and the workload's place; ``fix`` when Kueue said
    how much more it needs."""

    namespace: str
    resource: str
    cluster_queue: str
    flavor: str
    workload: str
    nominal: int | None
    reserved: int | None
    more: int | None
    position: int | None
    waiting: int
    message: str  # Kueue's words
    preemption_pending: bool
    fix: RequestMore | None


@dataclass(frozen=True)
class Gated(Cause):
    """The pod's scheduling gates: the scheduler does not consider it until they are removed."""

    gates: tuple[str, ...]

    @property
    def kueue(self) -> bool:
        return KUEUE_GATE in self.gates


@dataclass(frozen=True)
class LabelValues:
    key: str
    values: tuple[str, ...]  # on the nodes offering the resource (empty: none carries the label)


@dataclass(frozen=True)
class SelectorMismatch(Cause):
    """``blocks_all``: no node offering the resource matches; else ``roomy`` names the nodes with room it excludes."""

    node_selector: tuple[tuple[str, str], ...]
    terms: tuple[SelectorTerm, ...]
    present: tuple[LabelValues, ...]
    blocks_all: bool
    roomy: tuple[str, ...]


@dataclass(frozen=True)
class UntoleratedTaint(Cause):
    """``fix``: the toleration to add to the pod spec."""

    taint: Taint
    nodes: tuple[str, ...]
    blocks_all: bool
    roomy: tuple[str, ...]
    fix: Toleration

    @property
    def toleration(self) -> dict[str, str]:
        """The fix as the pod spec writes it."""
        fix = self.fix
        return {"key": fix.key, "operator": fix.operator, **({"value": fix.value} if fix.value else {}), "effect": fix.effect}


@dataclass(frozen=True)
class NodesUnavailable(Cause):
    cordoned: tuple[str, ...]
    not_ready: tuple[str, ...]
    blocks_all: bool
    roomy: tuple[str, ...]


@dataclass(frozen=True)
class FreeBlock:
    """The largest free block of the resource on one node of a pool (or GPU model) of ``nodes`` nodes."""

    pool: str
    product: str | None
    largest: int
    nodes: int


@dataclass(frozen=True)
class ScaleUp:
    """What the cluster autoscaler says of itself: the node groups that could grow, those at their maximum, those
    backing off (name, its error)."""

    health: str
    can_grow: tuple[str, ...]
    at_max: tuple[str, ...]
    backing_off: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class NoCapacity(Cause):
    resource: str
    asks: int
    blocks: tuple[FreeBlock, ...]  # largest first
    total_free: int  # over the nodes it may use: more than ``asks`` means they are fragmented
    scale_up: ScaleUp | None  # None: no autoscaler status


@dataclass(frozen=True)
class HeldBy:
    priority_class: str  # "" none
    priority: int
    gpus: int


@dataclass(frozen=True)
class PriorityStanding(Cause):
    """Where the pod stands against what holds the GPUs of the nodes it could use; ``unseen`` GPUs are held by
    pods outside the namespaces read."""

    priority_class: str
    priority: int
    may_preempt: bool
    held: tuple[HeldBy, ...]  # highest priority first
    lower: int  # GPUs held by pods of lower priority (what preemption could free)
    unseen: int
    nominated_node: str | None


@dataclass(frozen=True)
class FitsNow(Cause):
    """A node could take it now: the scheduler has not retried yet, or it waits for something not checked here."""

    nodes: tuple[str, ...]


class Note(StrEnum):
    IMAGE_NOT_CHECKED = "image_not_checked"  # whether the image has CUDA is not checked


@dataclass(frozen=True)
class SchedulerWords:
    message: str
    count: int
    last_seen: datetime | None


@dataclass(frozen=True)
class Diagnosis:
    """Why ``pod`` (None: a workload with no pods yet) waits: ``causes`` first to last, the scheduler's words."""

    namespace: str
    pod: str | None
    asks: Mapping[str, int]
    causes: tuple[Cause, ...]
    said: SchedulerWords | None = None
    notes: tuple[Note, ...] = ()


@dataclass(frozen=True)
class Scheduled:
    """Not pending: bound to ``node`` (``phase`` Running, or Pending while its containers start)."""

    namespace: str
    pod: str
    node: str
    phase: str
    since: datetime | None
    asks: Mapping[str, int] = field(default_factory=dict)


# --- the reasoning -----------------------------------------------------------------------------------


def diagnose(facts: Facts) -> Diagnosis | Scheduled:
    """The causes of one pod's wait, cause first; a bound pod is ``Scheduled``."""
    pod = facts.pod
    asks = _extended(pod)
    if pod.node_name is not None:
        return Scheduled(pod.namespace, pod.name, pod.node_name, pod.phase, pod.started_at or pod.created_at, asks)
    causes: list[Cause] = []
    nodes = facts.nodes
    unadvertised = not_advertised(asks, nodes) if nodes is not None else []
    causes += unadvertised
    causes += quota_causes(facts.refused, facts.queues)
    gates = tuple(g for g in pod.scheduling_gates if not (g == KUEUE_GATE and any(isinstance(c, QueueWait) for c in causes)))
    if gates:
        causes.append(Gated(gates))
    missing = {c.resource for c in unadvertised}
    placeable = {r: n for r, n in asks.items() if r not in missing}
    if nodes is not None and placeable:
        causes += _placement_and_capacity(facts, placeable, nodes, gated=bool(pod.scheduling_gates))
    said = facts.event or (SchedulerEvent(pod.unschedulable_message, 1, None) if pod.unschedulable_message else None)
    words = SchedulerWords(said.message, said.count, said.last_seen) if said else None
    notes = (Note.IMAGE_NOT_CHECKED,) if asks else ()
    return Diagnosis(pod.namespace, pod.name, asks, tuple(causes), words, notes)


def not_advertised(asks: Mapping[str, int], nodes: Sequence[NodeFacts]) -> list[NotAdvertised]:
    """Each resource asked that no node advertises, with the likely mistake."""
    offered = sorted({r for node in nodes for r, n in node.allocatable.items() if n > 0})
    found = []
    for resource in asks:
        if resource in offered:
            continue
        vendor = resource.partition("/")[0]
        same_vendor = tuple(r for r in offered if r.partition("/")[0] == vendor)
        close = difflib.get_close_matches(resource, offered, n=1, cutoff=_CLOSE)
        suggestion = close[0] if close else None
        if resource == GPU and same_vendor and all(mig_profile(r) for r in same_vendor):
            mistake, suggestion = Mistake.WHOLE_GPU_ON_MIG, None
        elif mig_profile(resource) is not None:
            mistake = Mistake.MIG_PROFILE
        elif suggestion is not None:
            mistake = Mistake.TYPO
        elif vendor == "nvidia.com" and not same_vendor and any(node.gpu_labelled for node in nodes):
            mistake = Mistake.NO_DEVICE_PLUGIN
        else:
            mistake = Mistake.UNKNOWN
        found.append(NotAdvertised(resource, mistake, suggestion, same_vendor))
    return found


def quota_causes(refused: Sequence[QuotaRefused], queues: Sequence[QueueFacts]) -> list[Cause]:
    """The quota refusing a controller's pods, and Kueue not admitting a workload."""
    causes: list[Cause] = []
    for quota in refused:
        free = max(quota.hard - quota.used, 0)
        more = max((quota.asks or 1) - free, 1)
        fix = RequestMore(quota.namespace, more, quota.resource)
        causes.append(QuotaFull(quota.namespace, quota.resource, quota.asks, quota.hard, quota.used, quota.holders, fix))
    for queue in queues:
        workload = queue.workload
        if workload is None:
            continue
        needed = workload.more_needed(queue.resource, queue.flavor)
        ask = RequestMore(queue.namespace, needed, queue.resource) if needed else None
        causes.append(
            QueueWait(
                queue.namespace,
                queue.resource,
                queue.cluster_queue,
                queue.flavor,
                workload.name,
                queue.nominal,
                queue.reserved,
                needed,
                queue.position,
                queue.waiting,
                workload.message,
                workload.preemption_pending,
                ask,
            )
        )
    return causes


@dataclass(frozen=True)
class _Node:
    """One node offering every resource asked, and what keeps the pod off it."""

    facts: NodeFacts
    selected: bool
    taints: tuple[Taint, ...]  # untolerated, the pod's to tolerate
    down: bool  # cordoned, not ready, or a lifecycle taint it does not tolerate
    room: bool

    @property
    def eligible(self) -> bool:
        return self.selected and not self.taints and not self.down


def _survey(pod: PodFacts, asks: Mapping[str, int], nodes: Sequence[NodeFacts]) -> list[_Node]:
    surveyed = []
    for node in nodes:
        if any(node.allocatable.get(r, 0) <= 0 for r in asks):
            continue
        untolerated = [t for t in node.scheduling_taints if not pod.tolerates(t)]
        own = tuple(t for t in untolerated if not t.key.startswith(SYSTEM_TAINTS))
        down = node.unschedulable or not node.ready or len(own) < len(untolerated)
        room = all(node.free(r) >= n for r, n in asks.items())
        surveyed.append(_Node(node, pod.selects(node), own, down, room))
    return surveyed


def short_nodes(pod: PodFacts, nodes: Sequence[NodeFacts]) -> tuple[str, ...]:
    """The nodes the pod may use when none of them has room for it (what holds their GPUs matters then); none
    when one has room, or it may use none."""
    surveyed = [n for n in _survey(pod, _placeable(pod, nodes), nodes) if n.eligible]
    return () if any(n.room for n in surveyed) else tuple(n.facts.name for n in surveyed)


def _placeable(pod: PodFacts, nodes: Sequence[NodeFacts]) -> dict[str, int]:
    missing = {c.resource for c in not_advertised(_extended(pod), nodes)}
    return {r: n for r, n in _extended(pod).items() if r not in missing}


def _placement_and_capacity(facts: Facts, asks: Mapping[str, int], nodes: Sequence[NodeFacts], *, gated: bool) -> list[Cause]:
    pod = facts.pod
    surveyed = _survey(pod, asks, nodes)
    selected = [n for n in surveyed if n.selected]
    usable = [n for n in selected if not n.down]
    eligible = [n for n in usable if not n.taints]
    roomy = [n for n in eligible if n.room]
    causes: list[Cause] = []
    # Placement: what keeps it from every node, or from a node with room now.
    hidden = [n for n in surveyed if not n.selected and not n.taints and not n.down and n.room]
    if not selected or hidden:
        causes.append(_selector(pod, surveyed, blocks_all=not selected, roomy=hidden))
    if selected:
        taint_all = bool(usable) and not eligible
        causes += _taints(usable, blocks_all=taint_all)
        down = [n for n in selected if n.down]
        down_roomy = [n for n in down if n.room and not n.taints]
        if down and (not usable or down_roomy):
            causes.append(
                NodesUnavailable(
                    tuple(n.facts.name for n in down if n.facts.unschedulable),
                    tuple(n.facts.name for n in down if not n.facts.ready),
                    not usable,
                    tuple(n.facts.name for n in down_roomy),
                )
            )
    if gated or not eligible:
        return causes  # not yet considered by the scheduler, or no node it may use: capacity is moot
    if roomy:
        return causes or [FitsNow(tuple(n.facts.name for n in roomy))]
    resource = next((r for r, n in asks.items() if all(e.facts.free(r) < n for e in eligible)), next(iter(asks)))
    causes.append(_capacity(resource, asks[resource], eligible, facts.autoscaler))
    if facts.holders is not None:
        causes.append(_priority(facts, resource, eligible))
    return causes


def _selector(pod: PodFacts, surveyed: Sequence[_Node], *, blocks_all: bool, roomy: Sequence[_Node]) -> SelectorMismatch:
    keys = list(pod.node_selector)
    keys += [r.key for term in pod.required_terms for r in term.requirements if r.key not in keys and r.key != "metadata.name"]
    present = tuple(
        LabelValues(key, tuple(sorted({v for n in surveyed if (v := n.facts.labels.get(key)) is not None}))) for key in keys
    )
    return SelectorMismatch(
        tuple(sorted(pod.node_selector.items())), pod.required_terms, present, blocks_all, tuple(n.facts.name for n in roomy)
    )


def _taints(usable: Sequence[_Node], *, blocks_all: bool) -> list[UntoleratedTaint]:
    """One cause per taint: on every usable node when they all have one, else on the nodes with room."""
    concerned = usable if blocks_all else [n for n in usable if n.room and n.taints]
    by_taint: dict[Taint, list[_Node]] = {}
    for node in concerned:
        for taint in node.taints:
            by_taint.setdefault(taint, []).append(node)
    return [
        UntoleratedTaint(
            taint,
            tuple(n.facts.name for n in tainted),
            blocks_all,
            tuple(n.facts.name for n in tainted if n.room),
            Toleration(taint.key, "Equal", taint.value, taint.effect)
            if taint.value
            else Toleration(taint.key, "Exists", "", taint.effect),
        )
        for taint, tainted in sorted(by_taint.items(), key=lambda item: (-len(item[1]), str(item[0])))
    ]


def _pool(node: NodeFacts) -> str:
    return next((node.labels[label] for label in POOL_LABELS if node.labels.get(label)), node.product or "")


def _capacity(resource: str, asks: int, eligible: Sequence[_Node], autoscaler: AutoscalerStatus | None) -> NoCapacity:
    pools: dict[str, list[NodeFacts]] = {}
    for node in eligible:
        pools.setdefault(_pool(node.facts), []).append(node.facts)
    blocks = sorted(
        (
            FreeBlock(pool, members[0].product, max(n.free(resource) for n in members), len(members))
            for pool, members in pools.items()
        ),
        key=lambda block: (-block.largest, block.pool),
    )
    total = sum(n.facts.free(resource) for n in eligible)
    return NoCapacity(resource, asks, tuple(blocks), total, scale_up(autoscaler) if autoscaler is not None else None)


def scale_up(status: AutoscalerStatus) -> ScaleUp:
    groups = status.node_groups
    backing = tuple((g.name, g.backoff) for g in groups if g.scale_up == "Backoff")
    return ScaleUp(
        status.health,
        tuple(g.name for g in groups if not g.at_max and g.scale_up != "Backoff" and g.health != "Unhealthy"),
        tuple(g.name for g in groups if g.at_max),
        backing,
    )


def _priority(facts: Facts, resource: str, eligible: Sequence[_Node]) -> PriorityStanding:
    pod = facts.pod
    names = {n.facts.name for n in eligible}
    holders = [h for h in facts.holders or () if h.node_name in names and h.asks(resource) > 0]
    held: dict[tuple[str, int], int] = {}
    for holder in holders:
        key = (holder.priority_class, holder.priority)
        held[key] = held.get(key, 0) + holder.asks(resource)
    seen = sum(held.values())
    requested = sum(n.facts.requested.get(resource, 0) for n in eligible)
    known = (facts.classes or {}).get(pod.priority_class) if pod.priority_class else None
    # Admission copies the class's policy into the pod; the class is read too for a pod created before it changed.
    may_preempt = pod.preemption_policy != NEVER and (known is None or known.preemption_policy != NEVER)
    return PriorityStanding(
        pod.priority_class,
        pod.priority,
        may_preempt,
        tuple(HeldBy(c, p, g) for (c, p), g in sorted(held.items(), key=lambda item: (-item[0][1], item[0][0]))),
        sum(g for (_, p), g in held.items() if p < pod.priority),
        max(requested - seen, 0),
        pod.nominated_node,
    )


def _extended(pod: PodFacts) -> dict[str, int]:
    """The extended resources it asks for (a ``/`` in the name), GPUs and others alike: the scheduler places all."""
    return {r: n for r, n in sorted(pod.requests.items()) if "/" in r and n > 0}
