"""The GPU stack's checklist (``doctor``) as typed results: each check ok, warning, broken or not checked, with its
evidence and its fix as data. Words are made at the edges (``bot.adapters.slack.doctor_words``, ``bot.doctor_cli``).

Pure: ``bot.services.doctor`` reads the facts (``bot.domain.scheduling``, the scrape side's ``ScrapeTarget`` and
series) and calls one function per check here. Must not: read anything, or word anything.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from bot.domain.clusters import HOME, split_key
from bot.domain.scheduling import DaemonSetFacts, NodeFacts, PodFacts

GPU_TAINT_KEY = "nvidia.com/gpu"
# The device plugin's DaemonSet by its well-known names and labels: the GPU operator's
# (nvidia-device-plugin-daemonset, app=nvidia-device-plugin-daemonset), the Helm chart's
# (app.kubernetes.io/name=nvidia-device-plugin, named after the release), the static manifest's
# (nvidia-device-plugin-daemonset, pods labelled name=nvidia-device-plugin-ds) and GKE's add-on.
DEVICE_PLUGIN_NAMES = frozenset({"nvidia-device-plugin-daemonset", "nvidia-device-plugin-ds", "nvidia-gpu-device-plugin"})
DEVICE_PLUGIN_LABELS = (
    ("app.kubernetes.io/name", "nvidia-device-plugin"),
    ("app", "nvidia-device-plugin-daemonset"),
    ("app", "nvidia-device-plugin"),
    ("name", "nvidia-device-plugin-ds"),
    ("k8s-app", "nvidia-gpu-device-plugin"),
)
# The chart and the operator label their MPS control daemon like the plugin: it is not the plugin.
NOT_THE_PLUGIN = ("mps-control-daemon",)
MIG_SETTLING = frozenset({"pending", "rebooting"})
MIG_FAILED = "failed"

DCGM_UTIL = "DCGM_FI_DEV_GPU_UTIL"
DCGM_PROFILING = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
KSM_REQUESTS = "kube_pod_container_resource_requests"
NAMESPACE_LABELS = ("namespace", "exported_namespace")  # DCGM's pod mapping, as scraped with honorLabels true / false
# How far a target's scrape interval may be from metrics.sample_interval before it is worth a warning (jitter-free:
# both are configured values).
INTERVAL_TOLERANCE = 0.03


class Status(StrEnum):
    OK = "ok"
    WARNING = "warning"
    BROKEN = "broken"
    UNCHECKED = "unchecked"  # the facts could not be read


class Check(StrEnum):
    DEVICE_PLUGIN = "device_plugin"
    NODE_GPUS = "node_gpus"
    MIG = "mig"
    DCGM_TARGET = "dcgm_target"
    KSM_TARGET = "ksm_target"
    DCGM_SERIES = "dcgm_series"
    PROFILING_SERIES = "profiling_series"
    KSM_SERIES = "ksm_series"
    PRIORITY_CLASSES = "priority_classes"
    QUOTA_OBJECTS = "quota_objects"
    UNLIMITED_PODS = "unlimited_pods"


CLUSTER_CHECKS = (Check.DEVICE_PLUGIN, Check.NODE_GPUS, Check.MIG)  # from the nodes and DaemonSets
SCRAPE_CHECKS = (Check.DCGM_TARGET, Check.KSM_TARGET, Check.DCGM_SERIES, Check.PROFILING_SERIES, Check.KSM_SERIES)


class Fix(StrEnum):
    INSTALL_DEVICE_PLUGIN = "install_device_plugin"  # none found and nodes advertise no GPU
    NAME_DEVICE_PLUGIN = "name_device_plugin"  # none found by its known names, yet nodes advertise GPUs
    READY_DEVICE_PLUGIN = "ready_device_plugin"  # desired != ready: its pods on the nodes named
    PLACE_DEVICE_PLUGIN = "place_device_plugin"  # its nodeSelector / affinity / tolerations leave GPU nodes out
    RESTART_DEVICE_PLUGIN = "restart_device_plugin"  # a GPU node advertises none: the plugin's pod there
    WAIT_MIG = "wait_mig"  # the MIG manager is applying a layout
    REPAIR_MIG = "repair_mig"  # the MIG manager failed: its logs, the layout label
    SCRAPE_EXPORTER = "scrape_exporter"  # no target: a ServiceMonitor / scrape config
    REPAIR_TARGET = "repair_target"  # targets down: their last error
    SET_SAMPLE_INTERVAL = "set_sample_interval"  # metrics.sample_interval differs from the scrape interval
    MAP_PODS = "map_pods"  # DCGM series without a namespace: the exporter's Kubernetes pod mapping
    LOAD_PROFILING = "load_profiling"  # no profiling metric: DCGM's profiling module (not on every GPU)
    CREATE_PRIORITY_CLASS = "create_priority_class"
    CREATE_QUOTA = "create_quota"
    ADD_GPU_LIMITS = "add_gpu_limits"
    GRANT_PERMISSION = "grant_permission"  # could not check: RBAC


class Exporter(StrEnum):
    DCGM = "dcgm"
    KSM = "kube-state-metrics"


class Cause(StrEnum):
    """Why a check could not be done."""

    UNREACHABLE = "unreachable"  # the API server or Prometheus did not answer (or failed for now)
    FORBIDDEN = "forbidden"  # RBAC: ``Unchecked.permission`` names what to grant
    FAILED = "failed"  # a permanent refusal other than RBAC
    NOT_CONNECTED = "not_connected"  # no cluster reader / no Prometheus configured


@dataclass(frozen=True)
class ScrapeTarget:
    """One active target of Prometheus's targets API (``/api/v1/targets?state=active``)."""

    pool: str  # scrapePool: "serviceMonitor/gpu-operator/nvidia-dcgm-exporter/0", "kube-state-metrics"
    job: str  # its job label
    url: str  # scrapeUrl
    health: str  # up, down, unknown
    last_error: str = ""
    interval_seconds: float | None = None  # scrapeInterval (Prometheus 2.30+)

    def of(self, exporter: Exporter) -> bool:
        words = (self.pool.lower(), self.job.lower())
        needle = "dcgm" if exporter is Exporter.DCGM else "kube-state-metrics"
        return any(needle in word for word in words)


@dataclass(frozen=True)
class SeriesFacts:
    """Whether a metric has series, and which of the label names asked about they carry (non-empty)."""

    metric: str
    present: bool
    labels: tuple[str, ...] = ()


# --- evidence, one shape per check -------------------------------------------------------------


@dataclass(frozen=True)
class DevicePluginEvidence:
    daemon_sets: tuple[str, ...]  # "namespace/name" of each found, in its cluster
    desired: int
    ready: int
    gpu_nodes: int
    not_covered: tuple[str, ...] = ()  # GPU nodes none of them runs on
    not_ready_namespace: str = ""  # where to look at its pods (in its cluster)


@dataclass(frozen=True)
class NodeGpusEvidence:
    gpu_nodes: int
    silent: tuple[str, ...] = ()  # GPU-labelled nodes advertising no nvidia.com/* resource


@dataclass(frozen=True)
class NodeState:
    node: str
    state: str


@dataclass(frozen=True)
class MigEvidence:
    mig_nodes: int
    unsettled: tuple[NodeState, ...] = ()  # state not success


@dataclass(frozen=True)
class DownTarget:
    url: str
    health: str
    last_error: str


@dataclass(frozen=True)
class TargetEvidence:
    exporter: Exporter
    up: int
    down: tuple[DownTarget, ...] = ()
    intervals: tuple[float, ...] = ()  # the distinct scrape intervals of its targets (seconds)
    expected_seconds: float = 0.0  # metrics.sample_interval


@dataclass(frozen=True)
class SeriesEvidence:
    metric: str
    present: bool
    namespace_labels: tuple[str, ...] = ()  # which of NAMESPACE_LABELS its series carry (DCGM only)


@dataclass(frozen=True)
class MissingClass:
    name: str
    namespaces: tuple[str, ...]  # the namespace keys whose policy names it


@dataclass(frozen=True)
class PriorityClassEvidence:
    named: tuple[str, ...]
    missing: tuple[MissingClass, ...] = ()


class QuotaKind(StrEnum):
    RESOURCE_QUOTA = "ResourceQuota"
    CLUSTER_QUEUE = "ClusterQueue"
    FEDERATED = "FederatedResourceQuota"


class QuotaGap(StrEnum):
    NAMESPACE = "namespace"  # the namespace itself does not exist
    OBJECT = "object"  # no such quota object
    RESOURCE = "resource"  # the object does not count the resource (no requests.<resource>; a flavor lacking it)


@dataclass(frozen=True)
class MissingQuota:
    namespace: str  # key
    resource: str
    kind: QuotaKind
    name: str
    gap: QuotaGap


@dataclass(frozen=True)
class QuotaEvidence:
    scopes: int
    missing: tuple[MissingQuota, ...] = ()


@dataclass(frozen=True)
class UnlimitedPod:
    pod: str  # "namespace key/name"
    node: str | None  # bound to; None: pending
    running_on_gpu_node: bool


@dataclass(frozen=True)
class UnlimitedPodsEvidence:
    pods_read: int
    unlimited: tuple[UnlimitedPod, ...] = ()


@dataclass(frozen=True)
class Unchecked:
    cause: Cause
    detail: str = ""  # the error's sentence (safe to show: the adapters' messages hold no secret)
    permission: str | None = None  # Forbidden: what to grant (``kubectl auth can-i`` form)


Evidence = (
    DevicePluginEvidence
    | NodeGpusEvidence
    | MigEvidence
    | TargetEvidence
    | SeriesEvidence
    | PriorityClassEvidence
    | QuotaEvidence
    | UnlimitedPodsEvidence
    | Unchecked
)


@dataclass(frozen=True)
class CheckResult:
    check: Check
    status: Status
    evidence: Evidence
    fix: Fix | None = None
    cluster: str = HOME  # a namespace key's cluster part

    @property
    def key(self) -> str:
        """What the weekly run remembers it by: the check and its cluster."""
        return f"{self.check.value}@{self.cluster}"


@dataclass(frozen=True)
class Checkup:
    """Every check of a run, in the order run (per cluster: the cluster's checks, then its Prometheus's)."""

    results: tuple[CheckResult, ...]

    @property
    def broken(self) -> bool:
        return any(result.status is Status.BROKEN for result in self.results)

    def statuses(self) -> dict[str, Status]:
        return {result.key: result.status for result in self.results}


def unchecked(check: Check, cause: Cause, *, detail: str = "", permission: str | None = None, cluster: str = HOME) -> CheckResult:
    fix = Fix.GRANT_PERMISSION if permission else None
    return CheckResult(check, Status.UNCHECKED, Unchecked(cause, detail, permission), fix, cluster)


def newly_broken(before: Mapping[str, str], now: Checkup) -> tuple[CheckResult, ...]:
    """The checks broken now that were not broken in the run remembered (a check not run then counts as not broken)."""
    return tuple(r for r in now.results if r.status is Status.BROKEN and before.get(r.key) != Status.BROKEN.value)


# --- the cluster's checks ----------------------------------------------------------------------


def is_device_plugin(daemon_set: DaemonSetFacts) -> bool:
    """The NVIDIA device plugin's DaemonSet, by its known names or labels (not the MPS control daemon)."""
    if any(part in daemon_set.name for part in NOT_THE_PLUGIN):
        return False
    return daemon_set.name in DEVICE_PLUGIN_NAMES or any(daemon_set.labels.get(k) == v for k, v in DEVICE_PLUGIN_LABELS)


def gpu_nodes(nodes: Iterable[NodeFacts]) -> list[NodeFacts]:
    """Nodes with NVIDIA GPUs: labelled so (feature discovery) or advertising an nvidia.com/* resource."""
    return [node for node in nodes if node.gpu_labelled or node.offered]


def device_plugin_check(daemon_sets: Sequence[DaemonSetFacts], nodes: Sequence[NodeFacts], *, cluster: str = HOME) -> CheckResult:
    """Desired = ready, and on every GPU node (``DaemonSetFacts.runs_on``)."""
    plugins = [ds for ds in daemon_sets if is_device_plugin(ds)]
    gpus = gpu_nodes(nodes)
    evidence = DevicePluginEvidence(
        daemon_sets=tuple(sorted(f"{split_key(ds.namespace)[1]}/{ds.name}" for ds in plugins)),
        desired=sum(ds.desired for ds in plugins),
        ready=sum(ds.ready for ds in plugins),
        gpu_nodes=len(gpus),
        not_covered=tuple(sorted(n.name for n in gpus if not any(ds.runs_on(n) for ds in plugins))) if plugins else (),
        not_ready_namespace=next((split_key(ds.namespace)[1] for ds in plugins if ds.ready < ds.desired), ""),
    )

    def result(status: Status, fix: Fix | None = None) -> CheckResult:
        return CheckResult(Check.DEVICE_PLUGIN, status, evidence, fix, cluster)

    if not plugins:
        if not gpus:
            return result(Status.WARNING)  # no GPU node at all: nothing for a plugin to do
        if any(node.offered for node in gpus):
            return result(Status.WARNING, Fix.NAME_DEVICE_PLUGIN)
        return result(Status.BROKEN, Fix.INSTALL_DEVICE_PLUGIN)
    if evidence.ready < evidence.desired:
        return result(Status.BROKEN, Fix.READY_DEVICE_PLUGIN)
    if evidence.not_covered:
        return result(Status.BROKEN, Fix.PLACE_DEVICE_PLUGIN)
    return result(Status.OK)


def node_gpus_check(nodes: Sequence[NodeFacts], *, cluster: str = HOME) -> CheckResult:
    """Every GPU-labelled node advertises GPUs (whole or MIG) in its allocatable."""
    labelled = [node for node in nodes if node.gpu_labelled]
    silent = tuple(sorted(node.name for node in labelled if not node.offered))
    evidence = NodeGpusEvidence(gpu_nodes=len(gpu_nodes(nodes)), silent=silent)
    if silent:
        return CheckResult(Check.NODE_GPUS, Status.BROKEN, evidence, Fix.RESTART_DEVICE_PLUGIN, cluster)
    return CheckResult(Check.NODE_GPUS, Status.OK, evidence, None, cluster)


def mig_check(nodes: Sequence[NodeFacts], *, cluster: str = HOME) -> CheckResult:
    """MIG nodes (those with ``nvidia.com/mig.config.state``) settled in success; pending / rebooting is a warning,
    failed (or a state the MIG manager does not write) broken."""
    mig = [node for node in nodes if node.mig_config_state is not None]
    unsettled = tuple(
        NodeState(n.name, n.mig_config_state or "") for n in sorted(mig, key=lambda n: n.name) if n.mig_config_state != "success"
    )
    evidence = MigEvidence(mig_nodes=len(mig), unsettled=unsettled)
    if any(state.state not in MIG_SETTLING for state in unsettled):
        return CheckResult(Check.MIG, Status.BROKEN, evidence, Fix.REPAIR_MIG, cluster)
    if unsettled:
        return CheckResult(Check.MIG, Status.WARNING, evidence, Fix.WAIT_MIG, cluster)
    return CheckResult(Check.MIG, Status.OK, evidence, None, cluster)


def priority_class_check(named: Mapping[str, Sequence[str]], known: Iterable[str], *, cluster: str = HOME) -> CheckResult:
    """Every PriorityClass the policy names (class -> the namespaces naming it) exists in the cluster."""
    present = set(known)
    missing = tuple(MissingClass(name, tuple(sorted(named[name]))) for name in sorted(named) if name not in present)
    evidence = PriorityClassEvidence(named=tuple(sorted(named)), missing=missing)
    if missing:
        return CheckResult(Check.PRIORITY_CLASSES, Status.BROKEN, evidence, Fix.CREATE_PRIORITY_CLASS, cluster)
    return CheckResult(Check.PRIORITY_CLASSES, Status.OK, evidence, None, cluster)


def quota_check(scopes: int, missing: Sequence[MissingQuota], *, cluster: str = HOME) -> CheckResult:
    """Every governed scope has its quota object counting its resource: without one the namespace's GPUs are unlimited."""
    evidence = QuotaEvidence(scopes=scopes, missing=tuple(missing))
    if missing:
        return CheckResult(Check.QUOTA_OBJECTS, Status.BROKEN, evidence, Fix.CREATE_QUOTA, cluster)
    return CheckResult(Check.QUOTA_OBJECTS, Status.OK, evidence, None, cluster)


def tolerates_gpu_taint(pod: PodFacts) -> bool:
    """The pod tolerates the GPU nodes' usual taint (``nvidia.com/gpu``, whatever its value and effect) by its key."""
    return any(toleration.key == GPU_TAINT_KEY for toleration in pod.tolerations)


def unlimited_pods_check(pods: Sequence[PodFacts], *, cluster: str = HOME) -> CheckResult:
    """GPU pods without an nvidia.com/* limit: on a GPU-labelled node or tolerating the GPU taint, asking for no NVIDIA
    resource. Such a pod escapes the quota and sees no GPU (or, with the NVIDIA runtime as the default, every GPU of
    its node): broken when one runs on a GPU node, a warning while they only could land there."""
    unlimited = tuple(
        UnlimitedPod(f"{pod.namespace}/{pod.name}", pod.node_name, pod.node_gpu_labelled and pod.phase == "Running")
        for pod in sorted(pods, key=lambda p: (p.namespace, p.name))
        if not pod.gpu_resources and (pod.node_gpu_labelled or tolerates_gpu_taint(pod))
    )
    evidence = UnlimitedPodsEvidence(pods_read=len(pods), unlimited=unlimited)
    if any(pod.running_on_gpu_node for pod in unlimited):
        return CheckResult(Check.UNLIMITED_PODS, Status.BROKEN, evidence, Fix.ADD_GPU_LIMITS, cluster)
    if unlimited:
        return CheckResult(Check.UNLIMITED_PODS, Status.WARNING, evidence, Fix.ADD_GPU_LIMITS, cluster)
    return CheckResult(Check.UNLIMITED_PODS, Status.OK, evidence, None, cluster)


# --- the scrape side ---------------------------------------------------------------------------


def target_check(
    exporter: Exporter, targets: Sequence[ScrapeTarget], *, expected_seconds: float, cluster: str = HOME
) -> CheckResult:
    """The exporter's targets up: none at all is broken, all down broken, some down a warning (a DCGM exporter runs
    per node: that node's GPUs go unmeasured); a scrape interval other than metrics.sample_interval a warning."""
    check = Check.DCGM_TARGET if exporter is Exporter.DCGM else Check.KSM_TARGET
    mine = [target for target in targets if target.of(exporter)]
    down = tuple(DownTarget(t.url, t.health, t.last_error) for t in mine if t.health != "up")
    intervals = tuple(sorted({t.interval_seconds for t in mine if t.interval_seconds is not None}))
    evidence = TargetEvidence(
        exporter, up=len(mine) - len(down), down=down, intervals=intervals, expected_seconds=expected_seconds
    )
    if not mine:
        return CheckResult(check, Status.BROKEN, evidence, Fix.SCRAPE_EXPORTER, cluster)
    if len(down) == len(mine):
        return CheckResult(check, Status.BROKEN, evidence, Fix.REPAIR_TARGET, cluster)
    if down:
        return CheckResult(check, Status.WARNING, evidence, Fix.REPAIR_TARGET, cluster)
    if any(abs(seconds - expected_seconds) > INTERVAL_TOLERANCE * expected_seconds for seconds in intervals):
        return CheckResult(check, Status.WARNING, evidence, Fix.SET_SAMPLE_INTERVAL, cluster)
    return CheckResult(check, Status.OK, evidence, None, cluster)


def dcgm_series_check(series: SeriesFacts, *, cluster: str = HOME) -> CheckResult:
    """DCGM_FI_DEV_GPU_UTIL present, with the pod's namespace (``namespace`` or ``exported_namespace``): without it
    no GPU's use can be told per namespace."""
    evidence = SeriesEvidence(series.metric, series.present, tuple(n for n in NAMESPACE_LABELS if n in series.labels))
    if not series.present:
        return CheckResult(Check.DCGM_SERIES, Status.BROKEN, evidence, Fix.SCRAPE_EXPORTER, cluster)
    if not evidence.namespace_labels:
        return CheckResult(Check.DCGM_SERIES, Status.WARNING, evidence, Fix.MAP_PODS, cluster)
    return CheckResult(Check.DCGM_SERIES, Status.OK, evidence, None, cluster)


def profiling_series_check(series: SeriesFacts, *, cluster: str = HOME) -> CheckResult:
    """DCGM_FI_PROF_GR_ENGINE_ACTIVE: a warning only when absent (the profiling module is not on every GPU; the bot
    falls back to GPU_UTIL)."""
    evidence = SeriesEvidence(series.metric, series.present)
    if not series.present:
        return CheckResult(Check.PROFILING_SERIES, Status.WARNING, evidence, Fix.LOAD_PROFILING, cluster)
    return CheckResult(Check.PROFILING_SERIES, Status.OK, evidence, None, cluster)


def ksm_series_check(series: SeriesFacts, *, cluster: str = HOME) -> CheckResult:
    """kube_pod_container_resource_requests present: allocation and cost are counted from it."""
    evidence = SeriesEvidence(series.metric, series.present)
    if not series.present:
        return CheckResult(Check.KSM_SERIES, Status.BROKEN, evidence, Fix.SCRAPE_EXPORTER, cluster)
    return CheckResult(Check.KSM_SERIES, Status.OK, evidence, None, cluster)
