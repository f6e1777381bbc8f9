"""Where a GPU-hour ran: the node's capacity type (spot or on-demand) read from its well-known labels, and the
pool a policy prices on its own (an on-premises pool, by any node label). Pure: labels come in as values.

Cloud providers and node autoscalers label a node with how it was bought; ``CAPACITY_LABELS`` lists those
labels with the values each writes. The first label a node carries with a value understood decides; a value
no provider writes (``node.kubernetes.io/lifecycle: foo``) is *unknown*: priced as on-demand, counted as such,
never dropped, and named once by ``check-config``. A node with none of the labels (or a GPU-hour whose node is
not known) is on-demand: most clusters label spot nodes only.

kube-state-metrics exports a node's labels in ``kube_node_labels`` only when its ``--metric-labels-allowlist``
names them, with their names sanitised (``ksm_label_name``): ``karpenter.sh/capacity-type`` becomes
``label_karpenter_sh_capacity_type`` and ``eks.amazonaws.com/capacityType`` ``label_eks_amazonaws_com_capacity_type``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date
from enum import StrEnum


class CapacityType(StrEnum):
    """How a node is bought: on-demand (reliable: the price list's ``models``) or spot (preemptible, cheaper)."""

    ON_DEMAND = "on-demand"
    SPOT = "spot"


ON_DEMAND, SPOT = CapacityType.ON_DEMAND, CapacityType.SPOT

# Each well-known label with the values providers write (compared case-insensitively), in the order they decide.
CAPACITY_LABELS: dict[str, dict[str, CapacityType]] = {
    # Karpenter (AWS, Azure): "reserved" is an on-demand capacity reservation (Karpenter 1.3+).
    "karpenter.sh/capacity-type": {"spot": SPOT, "on-demand": ON_DEMAND, "reserved": ON_DEMAND},
    # EKS managed node groups; CAPACITY_BLOCK is an EC2 capacity block for ML, paid ahead like on-demand.
    "eks.amazonaws.com/capacityType": {"spot": SPOT, "on_demand": ON_DEMAND, "capacity_block": ON_DEMAND},
    # GKE: Spot VMs, and the older preemptible VMs (both "true"; absent on standard nodes).
    "cloud.google.com/gke-spot": {"true": SPOT, "false": ON_DEMAND},
    "cloud.google.com/gke-preemptible": {"true": SPOT, "false": ON_DEMAND},
    # AKS: the node pool's scale set priority.
    "kubernetes.azure.com/scalesetpriority": {"spot": SPOT, "regular": ON_DEMAND},
    # kOps, eksctl and others.
    "node.kubernetes.io/lifecycle": {"spot": SPOT, "ec2spot": SPOT, "normal": ON_DEMAND, "on-demand": ON_DEMAND},
}

_INVALID = re.compile(r"[^a-zA-Z0-9_]")
_CAPITAL = re.compile(r"([a-z0-9])([A-Z])")


def ksm_label_name(label: str) -> str:
    """The name kube-state-metrics gives a Kubernetes label in ``kube_*_labels``: invalid characters become
    ``_``, then camelCase becomes snake_case, lower-cased, after ``label_`` (its ``labelName``)."""
    return "label_" + _CAPITAL.sub(r"\1_\2", _INVALID.sub("_", label)).lower()


def allowlist_flag(pool_label: str | None = None) -> str:
    """The kube-state-metrics flag that exports the labels the bot reads (and the policy's pool label)."""
    labels = [*CAPACITY_LABELS, *([pool_label] if pool_label else [])]
    return f"--metric-labels-allowlist=nodes=[{','.join(labels)}]"


@dataclass(frozen=True, order=True)
class Placement:
    """Where GPU-hours ran as the price list tells them apart: the capacity type, and the pool label's value when
    the policy prices that pool (``""``: priced by capacity type). Unknown nodes are on-demand."""

    capacity: CapacityType = ON_DEMAND
    pool: str = ""

    @property
    def on_demand(self) -> bool:
        """Priced at the on-demand price list (neither spot nor a pool)."""
        return self.capacity == ON_DEMAND and not self.pool


ON_DEMAND_PLACEMENT = Placement()


@dataclass(frozen=True)
class NodeReading:
    """What a node's labels say: its capacity type (None: no well-known label, or only values not understood),
    the (label, value) pairs not understood, and its pool label's value (None: no such label)."""

    capacity: CapacityType | None
    unknown: tuple[tuple[str, str], ...] = ()
    pool: str | None = None


def read_node(labels: Mapping[str, str], pool_label: str | None = None) -> NodeReading:
    """Read a node's capacity type and pool from its Kubernetes labels (label key -> value; an empty value is no
    label, as Prometheus has it)."""
    capacity: CapacityType | None = None
    unknown: list[tuple[str, str]] = []
    for label, values in CAPACITY_LABELS.items():
        value = labels.get(label, "")
        if not value:
            continue
        found = values.get(value.strip().lower())
        if found is None:
            unknown.append((label, value))
        elif capacity is None:
            capacity = found
    pool = labels.get(pool_label, "") if pool_label else ""
    return NodeReading(capacity, tuple(unknown), pool or None)


def placement_of(reading: NodeReading, priced_pools: Iterable[str] = ()) -> Placement:
    """The placement a node's GPU-hours are priced at: its pool when the policy prices that pool, else its capacity
    type (unknown: on-demand)."""
    if reading.pool is not None and reading.pool in set(priced_pools):
        return Placement(reading.capacity or ON_DEMAND, reading.pool)
    return Placement(reading.capacity or ON_DEMAND)


class SplitState(StrEnum):
    """Whether a day's GPU-hours could be told apart by node (recorded per ledger day and cluster)."""

    SPLIT = "split"  # kube_node_labels carries a capacity-type (or the pool) label on some node
    NO_NODE_LABELS = "no_node_labels"  # no kube_node_labels series at all (kube-state-metrics' nodes off or denied)
    NO_CAPACITY_LABELS = "no_capacity_labels"  # kube_node_labels without any of the labels (not in the allowlist)


def split_state(nodes: Iterable[Mapping[str, str]], pool_label: str | None = None) -> SplitState:
    """The state of the split from the label sets kube_node_labels holds (one per node, or per distinct set)."""
    seen = False
    for labels in nodes:
        seen = True
        reading = read_node(labels, pool_label)
        if reading.capacity is not None or reading.unknown or reading.pool is not None:
            return SplitState.SPLIT
    return SplitState.NO_CAPACITY_LABELS if seen else SplitState.NO_NODE_LABELS


@dataclass(frozen=True)
class SplitUnavailable:
    """Days of a cluster whose GPU-hours could not be told apart by node (all priced and counted on-demand): why
    (``NO_NODE_LABELS``: kube-state-metrics exports no kube_node_labels; ``NO_CAPACITY_LABELS``: it exports them
    without the capacity-type labels), and the kube-state-metrics flag that exports them. ``cluster``: its name in
    the policy ("" without clusters)."""

    state: SplitState
    days: tuple[date, ...]
    cluster: str
    flag: str


@dataclass(frozen=True)
class NodeLabelFacts:
    """What check-config says of the nodes' labels: the split's state, each value not understood (label, value)
    once, and each pool label value the policy does not price once."""

    state: SplitState
    unknown_values: tuple[tuple[str, str], ...] = ()
    unpriced_pools: tuple[str, ...] = ()


def node_label_facts(
    nodes: Iterable[Mapping[str, str]], *, pool_label: str | None = None, priced_pools: Iterable[str] = ()
) -> NodeLabelFacts:
    """The facts of ``nodes``' label sets, each unknown value and unpriced pool named once (sorted)."""
    every = list(nodes)
    priced = set(priced_pools)
    unknown: set[tuple[str, str]] = set()
    pools: set[str] = set()
    for labels in every:
        reading = read_node(labels, pool_label)
        unknown.update(reading.unknown)
        if reading.pool is not None and reading.pool not in priced:
            pools.add(reading.pool)
    return NodeLabelFacts(split_state(every, pool_label), tuple(sorted(unknown)), tuple(sorted(pools)))
