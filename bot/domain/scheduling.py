"""What the scheduler weighs when it places a GPU pod, as values: pods, nodes, taints, selectors, priority classes.

Pure: the Kubernetes adapter reads these from the API (``bot.adapters.inspect``); ``why`` and ``doctor`` reason
on them (``bot.domain.diagnosis``, ``bot.domain.stack_health``). The matching rules are the API server's and the
scheduler's own (k8s.io/api/core/v1 ``Toleration.ToleratesTaint``, ``nodeaffinity``'s node selector terms), so a
pod the bot calls unplaceable is one the scheduler would not place either.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"  # GPU feature discovery
MIG_CONFIG_STATE_LABEL = "nvidia.com/mig.config.state"  # the MIG manager: success, pending, rebooting, failed
# Labels that mark a node as having NVIDIA GPUs whether or not its device plugin runs (GPU feature discovery,
# node feature discovery's PCI vendor 10de, the GPU operator's deploy labels).
GPU_NODE_LABELS = (
    "nvidia.com/gpu.present",
    GPU_PRODUCT_LABEL,
    "nvidia.com/gpu.count",
    "feature.node.kubernetes.io/pci-10de.present",
)
# What scheduling cannot ignore: PreferNoSchedule only steers.
BLOCKING_EFFECTS = frozenset({"NoSchedule", "NoExecute"})
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"  # what ``spec.unschedulable`` (a cordon) means to the scheduler


@dataclass(frozen=True)
class Taint:
    key: str
    value: str
    effect: str  # NoSchedule, PreferNoSchedule, NoExecute

    @property
    def blocks(self) -> bool:
        return self.effect in BLOCKING_EFFECTS

    def __str__(self) -> str:
        """As ``kubectl taint`` writes it: ``nvidia.com/gpu=true:NoSchedule``."""
        return f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"


@dataclass(frozen=True)
class Toleration:
    key: str = ""  # empty with operator Exists: every taint
    operator: str = "Equal"  # Equal or Exists
    value: str = ""
    effect: str = ""  # empty: every effect

    def tolerates(self, taint: Taint) -> bool:
        """The API's ``Toleration.ToleratesTaint``."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        return self.operator in ("Equal", "") and self.value == taint.value


@dataclass(frozen=True)
class Requirement:
    """One ``matchExpressions`` entry of a node selector term (``matchFields`` too, keyed ``metadata.name``)."""

    key: str
    operator: str  # In, NotIn, Exists, DoesNotExist, Gt, Lt
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key, "")
        if self.operator == "In":
            return present and value in self.values
        if self.operator == "NotIn":
            return not present or value not in self.values
        if self.operator == "Exists":
            return present
        if self.operator == "DoesNotExist":
            return not present
        if self.operator in ("Gt", "Lt") and present and len(self.values) == 1:
            try:
                mine, bound = int(value), int(self.values[0])
            except ValueError:
                return False
            return mine > bound if self.operator == "Gt" else mine < bound
        return False


@dataclass(frozen=True)
class SelectorTerm:
    """A ``nodeSelectorTerms`` entry: every requirement must hold. An empty term matches no node (the API's rule)."""

    requirements: tuple[Requirement, ...]

    def matches(self, labels: Mapping[str, str], node_name: str) -> bool:
        if not self.requirements:
            return False
        fields = {**labels, "metadata.name": node_name}
        return all(requirement.matches(fields) for requirement in self.requirements)


@dataclass(frozen=True)
class PodFacts:
    """A pod as the scheduler sees it. ``namespace`` is the namespace key (``us-2/ns`` outside the home cluster)."""

    namespace: str
    name: str
    phase: str  # Pending, Running, Unknown (finished pods are not read)
    requests: Mapping[str, int]  # extended resources (a "/" in the name) the pod requests: max(sum of containers, largest init)
    limited: bool  # every container asking for an extended resource has it in ``limits`` (the API requires it for nvidia.com/*)
    node_selector: Mapping[str, str] = field(default_factory=dict)
    required_terms: tuple[SelectorTerm, ...] = ()  # requiredDuringSchedulingIgnoredDuringExecution: any one term
    tolerations: tuple[Toleration, ...] = ()
    priority_class: str = ""  # spec.priorityClassName ("" none)
    priority: int = 0  # spec.priority, resolved by admission
    preemption_policy: str = "PreemptLowerPriority"  # spec.preemptionPolicy, resolved by admission from the class
    node_name: str | None = None  # spec.nodeName: bound
    nominated_node: str | None = None  # status.nominatedNodeName
    started_at: datetime | None = None  # status.startTime
    created_at: datetime | None = None
    scheduling_gates: tuple[str, ...] = ()  # spec.schedulingGates names (Kueue's kueue.x-k8s.io/admission)
    unschedulable_message: str | None = None  # the PodScheduled=False condition's message (reason Unschedulable)
    owner: tuple[str, str] | None = None  # the controller's (kind, name): ("Job", "train"), ("ReplicaSet", "serve-7d9f")
    labels: Mapping[str, str] = field(default_factory=dict)
    node_gpu_labelled: bool = False  # bound to a node carrying one of GPU_NODE_LABELS (set by the adapter)

    @property
    def pending(self) -> bool:
        return self.phase == "Pending" and self.node_name is None

    def asks(self, resource: str) -> int:
        return self.requests.get(resource, 0)

    @property
    def gpu_resources(self) -> tuple[str, ...]:
        """The NVIDIA resources it asks for (nvidia.com/gpu, MIG profiles, or a typo such as nvidia.com/gpus)."""
        return tuple(sorted(r for r, n in self.requests.items() if r.startswith("nvidia.com/") and n > 0))

    def tolerates(self, taint: Taint) -> bool:
        return any(toleration.tolerates(taint) for toleration in self.tolerations)

    def selects(self, node: NodeFacts) -> bool:
        """``nodeSelector`` and the required node affinity both allow ``node``."""
        if any(node.labels.get(key) != value for key, value in self.node_selector.items()):
            return False
        return not self.required_terms or any(term.matches(node.labels, node.name) for term in self.required_terms)


@dataclass(frozen=True)
class NodeFacts:
    """A node and what the pods bound to it (unfinished) request of each extended resource."""

    name: str
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    allocatable: Mapping[str, int]  # extended resources only
    requested: Mapping[str, int]  # by the unfinished pods bound to it
    unschedulable: bool = False  # spec.unschedulable (cordoned)
    ready: bool = True  # the Ready condition

    def free(self, resource: str) -> int:
        return max(self.allocatable.get(resource, 0) - self.requested.get(resource, 0), 0)

    @property
    def product(self) -> str | None:
        return self.labels.get(GPU_PRODUCT_LABEL)

    @property
    def mig_config_state(self) -> str | None:
        return self.labels.get(MIG_CONFIG_STATE_LABEL)

    @property
    def gpu_labelled(self) -> bool:
        return any(self.labels.get(label) not in (None, "", "false") for label in GPU_NODE_LABELS)

    @property
    def offered(self) -> tuple[str, ...]:
        """The NVIDIA resources it advertises (a count above 0)."""
        return tuple(sorted(r for r, n in self.allocatable.items() if r.startswith("nvidia.com/") and n > 0))

    @property
    def scheduling_taints(self) -> tuple[Taint, ...]:
        """Taints that keep pods off, a cordon included once (the API usually stores it as a taint too:
        the node lifecycle controller adds it to a cordoned node)."""
        blocking = tuple(t for t in self.taints if t.blocks)
        stored = any(t.key == UNSCHEDULABLE_TAINT for t in blocking)
        cordon = (Taint(UNSCHEDULABLE_TAINT, "", "NoSchedule"),) if self.unschedulable and not stored else ()
        return blocking + cordon


@dataclass(frozen=True)
class PriorityClassFacts:
    name: str
    value: int
    preemption_policy: str = "PreemptLowerPriority"  # or Never
    global_default: bool = False


@dataclass(frozen=True)
class SchedulerEvent:
    """A ``FailedScheduling`` event of a pod: the scheduler's own words."""

    message: str
    count: int
    last_seen: datetime | None


@dataclass(frozen=True)
class NodeGroupStatus:
    """A node group in the cluster autoscaler's status ConfigMap (``kube-system/cluster-autoscaler-status``)."""

    name: str
    health: str  # Healthy, Unhealthy
    scale_up: str  # NoActivity, InProgress, Backoff
    registered: int | None = None
    min_size: int | None = None
    max_size: int | None = None
    backoff: str = ""  # errorCode / errorMessage while backing off

    @property
    def at_max(self) -> bool:
        return self.registered is not None and self.max_size is not None and self.registered >= self.max_size


@dataclass(frozen=True)
class AutoscalerStatus:
    """What the cluster autoscaler last wrote of itself; ``node_groups`` empty when its format was not the YAML one."""

    health: str  # the cluster-wide health status, or the first line of an older plain-text status
    node_groups: tuple[NodeGroupStatus, ...] = ()
    written_at: str = ""  # its ``time`` field, as written


# What the DaemonSet controller adds to every daemon pod (pkg/controller/daemon/util AddOrUpdateDaemonPodTolerations):
# a cordoned, not-ready or pressured node keeps its daemons (network-unavailable only for host-network pods: left out).
DAEMON_TOLERATIONS = (
    Toleration("node.kubernetes.io/not-ready", "Exists", effect="NoExecute"),
    Toleration("node.kubernetes.io/unreachable", "Exists", effect="NoExecute"),
    Toleration("node.kubernetes.io/disk-pressure", "Exists", effect="NoSchedule"),
    Toleration("node.kubernetes.io/memory-pressure", "Exists", effect="NoSchedule"),
    Toleration("node.kubernetes.io/pid-pressure", "Exists", effect="NoSchedule"),
    Toleration(UNSCHEDULABLE_TAINT, "Exists", effect="NoSchedule"),
)


@dataclass(frozen=True)
class DaemonSetFacts:
    """A DaemonSet's spec and status, as the doctor reads a device plugin's."""

    namespace: str
    name: str
    labels: Mapping[str, str]
    desired: int  # status.desiredNumberScheduled
    ready: int  # status.numberReady
    available: int  # status.numberAvailable
    node_selector: Mapping[str, str] = field(default_factory=dict)
    required_terms: tuple[SelectorTerm, ...] = ()
    tolerations: tuple[Toleration, ...] = ()

    def runs_on(self, node: NodeFacts) -> bool:
        """Whether its pods would be placed on ``node`` (selector, affinity and taints; a cordon does not stop a DaemonSet)."""
        if any(node.labels.get(key) != value for key, value in self.node_selector.items()):
            return False
        if self.required_terms and not any(term.matches(node.labels, node.name) for term in self.required_terms):
            return False
        tolerations = self.tolerations + DAEMON_TOLERATIONS
        return all(any(t.tolerates(taint) for t in tolerations) for taint in node.taints if taint.blocks)


@dataclass(frozen=True)
class WorkloadPods:
    """A Job, Deployment, StatefulSet or Kueue Workload found by name, and its unfinished pods (none yet while Kueue
    holds a suspended Job)."""

    kind: str
    name: str
    pods: tuple[PodFacts, ...]
