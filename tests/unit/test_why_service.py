"""The ``why`` use case over hand-written fakes: who may ask (refused before any read), what is found, each failed
read a "could not check" while the rest answers, and nothing written."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from bot.clock import ManualClock
from bot.domain.diagnosis import Diagnosis, NoCapacity, QueueWait, QuotaFull, Scheduled, UntoleratedTaint
from bot.domain.kueue import ClusterQueueSnapshot, PendingWorkload, parse_shortfalls
from bot.domain.policy import parse_policy
from bot.domain.priority import GpuPod
from bot.domain.quota import QuotaScope, QuotaSnapshot
from bot.domain.scheduling import (
    AutoscalerStatus,
    DaemonSetFacts,
    NodeFacts,
    PodFacts,
    PriorityClassFacts,
    SchedulerEvent,
    Taint,
    WorkloadPods,
)
from bot.errors import Forbidden, TemporaryError, Unreachable
from bot.services.access import Access
from bot.services.pods import PodView
from bot.services.ports import ActionKind, QuotaRefusal
from bot.services.quota_sync import QuotaSync
from bot.services.refusals import AmbiguousNamespace, NotManaged, NotYoursToDiagnose, Refused
from bot.services.why import Check, CouldNotCheck, PickAPod, Unanswered, Why, WhyAnswer
from tests.fakes import FakeCluster, FakeDirectory

GPU = "nvidia.com/gpu"
T0 = datetime(2026, 12, 1, 9, 0, tzinfo=timezone.utc)
FRONTIER = "ai-frontier-research"
POLICY = {
    "admins": {"usergroups": ["S0PLATFORM"]},
    "clusters": {"eu-1": {"home": True}, "us-2": {"context": "us-2"}},
    "teams": {
        "frontier": {
            "display_name": "Frontier research",
            "channel": "C0FRONTIER",
            "namespaces": [
                FRONTIER,
                {
                    "name": "ai-frontier-batch",
                    "resources": [{"name": GPU, "cluster_queue": {"name": "frontier-cq", "flavor": "h100"}}],
                },
            ],
            "members": {"users": ["U0ALICE"]},
            "approvers": {"users": ["U0LEE"]},
        },
        "business": {
            "display_name": "Business",
            "channel": "C0BIZ",
            "namespaces": ["biz-model-serving", "us-2/biz-model-serving"],
            "members": {"users": ["U0BOB"]},
            "approvers": {"users": ["U0MAYA"]},
        },
    },
}
INSUFFICIENT = (
    "0/2 nodes are available: 2 Insufficient nvidia.com/gpu. preemption: 0/2 nodes are available: "
    "2 No preemption victims found for incoming pod."
)


def pod(name: str, gpus: int = 2, namespace: str = FRONTIER, **overrides: Any) -> PodFacts:
    values: dict[str, Any] = {
        "namespace": namespace,
        "name": name,
        "phase": "Pending",
        "requests": {GPU: gpus} if gpus else {},
        "limited": True,
        "created_at": T0,
    }
    values.update(overrides)
    return PodFacts(**values)


def node(name: str, gpus: int = 8, used: int = 0, taints: tuple[Taint, ...] = ()) -> NodeFacts:
    return NodeFacts(name, {"kubernetes.io/hostname": name}, taints, {GPU: gpus}, {GPU: used} if used else {})


class FakeInspection:
    """``ClusterInspection`` in memory; every call is recorded, and ``failing`` makes a method raise."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self.pods_by_ns: dict[str, list[PodFacts]] = {}
        self.workloads: dict[tuple[str, str], WorkloadPods] = {}
        self.node_list: list[NodeFacts] = []
        self.events: dict[tuple[str, str], list[SchedulerEvent]] = {}
        self.classes: dict[str, PriorityClassFacts] = {}
        self.status: AutoscalerStatus | None = None
        self.failing: dict[str, Exception] = {}

    def _call(self, method: str, *args: Any) -> None:
        self.calls.append((method, args))
        if method in self.failing:
            raise self.failing[method]

    def add(self, *pods: PodFacts) -> None:
        for p in pods:
            self.pods_by_ns.setdefault(p.namespace, []).append(p)

    def pod(self, namespace: str, name: str) -> PodFacts | None:
        self._call("pod", namespace, name)
        return next((p for p in self.pods_by_ns.get(namespace, []) if p.name == name), None)

    def workload_pods(self, namespace: str, name: str) -> WorkloadPods | None:
        self._call("workload_pods", namespace, name)
        return self.workloads.get((namespace, name))

    def pods(self, namespace: str) -> list[PodFacts]:
        self._call("pods", namespace)
        return list(self.pods_by_ns.get(namespace, []))

    def nodes(self, cluster: str = "") -> list[NodeFacts]:
        self._call("nodes", cluster)
        return list(self.node_list)

    def scheduling_events(self, namespace: str, pod: str) -> list[SchedulerEvent]:
        self._call("scheduling_events", namespace, pod)
        return list(self.events.get((namespace, pod), []))

    def priority_class_facts(self, cluster: str = "") -> dict[str, PriorityClassFacts]:
        self._call("priority_class_facts", cluster)
        return dict(self.classes)

    def autoscaler_status(self, cluster: str = "") -> AutoscalerStatus | None:
        self._call("autoscaler_status", cluster)
        return self.status

    def daemon_sets(self, cluster: str = "") -> list[DaemonSetFacts]:
        self._call("daemon_sets", cluster)
        return []


class FakeTarget:
    """The quota target's reads (``QuotaSync.current``); a write would fail the test."""

    def __init__(self) -> None:
        self.snapshots: dict[QuotaScope, QuotaSnapshot] = {}
        self.reads: list[QuotaScope] = []

    def read(self, scope: QuotaScope, *, max_age: float = 0.0) -> QuotaSnapshot | None:
        self.reads.append(scope)
        return self.snapshots.get(scope)

    def name(self, scope: QuotaScope) -> str:
        return "compute-quota"

    def __getattr__(self, name: str) -> Callable[..., Any]:
        raise AssertionError(f"why must not use QuotaTarget.{name}")


class NoDatabase:
    """Any use of the database fails the test: why writes (and reads) nothing there."""

    def __getattr__(self, name: str) -> Callable[..., Any]:
        raise AssertionError(f"why must not use the database ({name})")


class FakeWorkloads:
    def __init__(self) -> None:
        self.pods: dict[tuple[str, str], list[GpuPod]] = {}

    def gpu_pods(self, namespace: str, resource: str) -> list[GpuPod]:
        return list(self.pods.get((namespace, resource), []))

    def priority_classes(self, cluster: str = "") -> dict[str, int]:
        return {}

    def scheduling_failures(self) -> list[Any]:
        return []


class FakeQueues:
    def __init__(self) -> None:
        self.waiting: list[PendingWorkload] = []
        self.asked: list[list[str]] = []

    def pending_workloads(self, namespaces: Any) -> list[PendingWorkload]:
        self.asked.append(list(namespaces))
        return list(self.waiting)


class Setup:
    def __init__(self, *, inspection: bool = True) -> None:
        self.policy = parse_policy(POLICY)
        self.inspection = FakeInspection()
        self.target = FakeTarget()
        self.cluster = FakeCluster()
        self.workloads = FakeWorkloads()
        self.queues = FakeQueues()
        sync = QuotaSync(policy=self.policy, target=self.target, database=NoDatabase(), clock=ManualClock(T0))  # type: ignore[arg-type]
        self.why = Why(
            policy=self.policy,
            access=Access(self.policy, FakeDirectory({"S0PLATFORM": frozenset({"U0PAT"})})),
            inspection=self.inspection if inspection else None,
            sync=sync,
            cluster=self.cluster,
            pods=PodView(workloads=self.workloads, policy=self.policy),
            queues=self.queues,  # type: ignore[arg-type]
        )

    def ask(self, target: str, name: str | None = None, user: str = "U0ALICE") -> Any:
        return self.why.answer(user=user, target=target, name=name)


@pytest.fixture
def setup() -> Setup:
    return Setup()


def test_an_unmanaged_namespace_is_refused_by_name_before_anything_is_read(setup: Setup) -> None:
    with pytest.raises(Refused) as refused:
        setup.ask("kube-system/coredns-1")
    assert refused.value.refusal == NotManaged("kube-system")
    assert setup.inspection.calls == [] and setup.target.reads == []


def test_another_teams_namespace_is_refused_before_anything_is_read(setup: Setup) -> None:
    with pytest.raises(Refused) as refused:
        setup.ask("eu-1/biz-model-serving/serve-0", user="U0ALICE")
    assert refused.value.refusal == NotYoursToDiagnose("Business", "biz-model-serving")
    assert setup.inspection.calls == []


def test_a_name_in_two_clusters_is_refused_as_ambiguous_before_anything_is_read(setup: Setup) -> None:
    with pytest.raises(Refused) as refused:
        setup.ask("biz-model-serving", user="U0BOB")
    assert isinstance(refused.value.refusal, AmbiguousNamespace)
    assert setup.inspection.calls == []


def test_an_admin_may_ask_about_any_team_and_a_cluster_prefixed_namespace_is_the_namespace(setup: Setup) -> None:
    setup.inspection.add(pod("serve-0", namespace="us-2/biz-model-serving"))
    picked = setup.ask("us-2/biz-model-serving", user="U0PAT")
    assert isinstance(picked, PickAPod) and picked.namespace == "us-2/biz-model-serving"
    assert [p.name for p in picked.pods] == ["serve-0"]


def test_a_pod_kept_off_by_a_taint_is_answered_with_the_toleration_and_the_scheduler_s_words(setup: Setup) -> None:
    taint = Taint(GPU, "true", "NoSchedule")
    setup.inspection.add(pod("train"))
    setup.inspection.node_list = [node("gpu-1", taints=(taint,))]
    setup.inspection.events[(FRONTIER, "train")] = [
        SchedulerEvent("0/1 nodes are available: 1 node(s) had untolerated taint {nvidia.com/gpu: true}.", 3, T0)
    ]
    answer = setup.ask(f"{FRONTIER}/train")
    assert isinstance(answer, WhyAnswer) and answer.kind == "Pod" and answer.unchecked == ()
    assert isinstance(answer.finding, Diagnosis)
    assert [type(c) for c in answer.finding.causes] == [UntoleratedTaint]
    assert answer.finding.said is not None and "untolerated taint" in answer.finding.said.message


def test_nodes_refused_by_rbac_is_a_could_not_check_naming_the_permission_and_the_rest_answers(setup: Setup) -> None:
    setup.inspection.add(pod("train"))
    setup.inspection.failing["nodes"] = Forbidden(
        "the cluster refused to let the bot list nodes (HTTP 403)", permission="list nodes"
    )
    setup.inspection.events[(FRONTIER, "train")] = [SchedulerEvent(INSUFFICIENT, 1, T0)]
    answer = setup.ask(FRONTIER, "train")
    assert isinstance(answer, WhyAnswer)
    assert answer.unchecked == (
        CouldNotCheck(Check.NODES, "the cluster refused to let the bot list nodes (HTTP 403)", "list nodes"),
    )
    assert isinstance(answer.finding, Diagnosis) and answer.finding.said is not None  # the events still answered


def test_events_unreachable_is_a_could_not_check_and_the_causes_still_answer(setup: Setup) -> None:
    setup.inspection.add(pod("train"), pod("big", 6, phase="Running", node_name="gpu-1", priority=1000))
    setup.inspection.node_list = [node("gpu-1", 8, 8)]
    setup.inspection.failing["scheduling_events"] = Unreachable("the Kubernetes API did not answer")
    setup.inspection.failing["autoscaler_status"] = TemporaryError("the Kubernetes API failed (HTTP 503)")
    answer = setup.ask(f"{FRONTIER}/train")
    assert isinstance(answer, WhyAnswer) and isinstance(answer.finding, Diagnosis)
    assert [u.check for u in answer.unchecked] == [Check.EVENTS, Check.AUTOSCALER]
    capacity = next(c for c in answer.finding.causes if isinstance(c, NoCapacity))
    assert capacity.scale_up is None


def test_holders_are_read_only_from_the_managed_namespaces_of_the_pod_s_cluster(setup: Setup) -> None:
    setup.inspection.add(pod("train"))
    setup.inspection.node_list = [node("gpu-1", 8, 8)]
    setup.ask(f"{FRONTIER}/train")
    listed = [args[0] for method, args in setup.inspection.calls if method == "pods"]
    assert listed == ["ai-frontier-batch", FRONTIER, "biz-model-serving"]


def test_a_running_pod_is_not_pending_and_nothing_more_is_read(setup: Setup) -> None:
    setup.inspection.add(pod("serve", phase="Running", node_name="gpu-1", started_at=T0))
    answer = setup.ask(f"{FRONTIER}/serve")
    assert isinstance(answer, WhyAnswer) and answer.finding == Scheduled(FRONTIER, "serve", "gpu-1", "Running", T0, {GPU: 2})
    assert [method for method, _ in setup.inspection.calls] == ["pod"]


def test_a_name_that_matches_nothing_offers_the_pending_gpu_pods_oldest_first(setup: Setup) -> None:
    setup.inspection.add(
        pod("newer", created_at=T0 + timedelta(hours=1)),
        pod("older", 1),
        pod("cpu-only", 0),
        pod("running", phase="Running", node_name="gpu-1"),
    )
    picked = setup.ask(f"{FRONTIER}/trian")
    assert isinstance(picked, PickAPod) and picked.missing == "trian"
    assert [(p.name, dict(p.asks)) for p in picked.pods] == [("older", {GPU: 1}), ("newer", {GPU: 2})]


def test_a_job_is_answered_for_its_first_pending_pod_and_counts_the_others(setup: Setup) -> None:
    pods = (pod("train-0", phase="Running", node_name="gpu-1"), pod("train-1"), pod("train-2"))
    setup.inspection.workloads[(FRONTIER, "train")] = WorkloadPods("Job", "train", pods)
    setup.inspection.node_list = [node("gpu-1", 8, 2)]
    answer = setup.ask(f"{FRONTIER}/train")
    assert isinstance(answer, WhyAnswer) and (answer.kind, answer.name, answer.others_pending) == ("Job", "train", 1)
    assert isinstance(answer.finding, Diagnosis) and answer.finding.pod == "train-1"


def test_a_deployment_without_pods_refused_by_the_quota_gets_request_more_prefilled(setup: Setup) -> None:
    setup.inspection.workloads[(FRONTIER, "serve")] = WorkloadPods("Deployment", "serve", ())
    setup.cluster.refusals = [
        QuotaRefusal(
            FRONTIER,
            "ReplicaSet",
            "serve-7d9f",
            "uid",
            GPU,
            'pods "serve-7d9f-x" is forbidden: exceeded quota: compute-quota, requested: requests.nvidia.com/gpu=2, '
            "used: requests.nvidia.com/gpu=4, limited: requests.nvidia.com/gpu=4",
            5,
            T0,
        )
    ]
    setup.target.snapshots[QuotaScope(FRONTIER, GPU)] = QuotaSnapshot(FRONTIER, "compute-quota", 4, 4, 4, "7", None)
    setup.workloads.pods[(FRONTIER, GPU)] = [
        GpuPod(FRONTIER, "b", 2, "", "Running", T0),
        GpuPod(FRONTIER, "a", 2, "", "Running", T0),
    ]
    answer = setup.ask(f"{FRONTIER}/serve")
    assert isinstance(answer, WhyAnswer) and isinstance(answer.finding, Diagnosis)
    (quota,) = answer.finding.causes
    assert isinstance(quota, QuotaFull)
    assert (quota.asks, quota.hard, quota.used, quota.holders, quota.fix.amount) == (2, 4, 4, ("a", "b"), 2)
    (action,) = answer.actions
    assert action.kind is ActionKind.REQUEST_MORE
    assert json.loads(action.value) == {"namespace": FRONTIER, "gpus": "+2", "resource": GPU}


def test_a_kueue_workload_without_pods_gets_its_queue_s_reservation_and_place(setup: Setup) -> None:
    batch = "ai-frontier-batch"
    setup.inspection.workloads[(batch, "train-wl")] = WorkloadPods("Workload", "train-wl", ())
    message = (
        "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor h100, 4 more needed"
    )

    def waiting(name: str, hour: int) -> PendingWorkload:
        return PendingWorkload(
            batch, name, "batch", T0 + timedelta(hours=hour), T0, "Pending", message, parse_shortfalls(message), {GPU: 4}
        )

    setup.queues.waiting = [waiting("train-wl", 2), waiting("older-wl", 1)]
    snapshot = ClusterQueueSnapshot(
        namespace=batch, name="frontier-cq", hard=8, used=8, limits=None, resource_version="3", bot_applied=None,
        flavor="h100", resource=GPU, group_index=0, flavor_index=0, resource_index=0, borrowing_limit=None, cohort=None,
        in_use=8, borrowed=0, pending_workloads=2, annotated=False,
    )  # fmt: skip
    setup.target.snapshots[QuotaScope(batch, GPU)] = snapshot
    answer = setup.ask(f"{batch}/train-wl")
    assert isinstance(answer, WhyAnswer) and isinstance(answer.finding, Diagnosis)
    (wait,) = answer.finding.causes
    assert isinstance(wait, QueueWait)
    assert (wait.cluster_queue, wait.nominal, wait.reserved, wait.position, wait.waiting, wait.more) == (
        "frontier-cq",
        8,
        8,
        2,
        2,
        4,
    )
    assert [a.kind for a in answer.actions] == [ActionKind.REQUEST_MORE]


def test_without_inspection_why_says_it_cannot_answer_after_the_access_check() -> None:
    bare = Setup(inspection=False)
    assert bare.ask(f"{FRONTIER}/train") == Unanswered(FRONTIER, "train")
    with pytest.raises(Refused):
        bare.ask("us-2/biz-model-serving/x", user="U0ALICE")


def test_the_pod_read_failing_is_unanswered_with_the_reason(setup: Setup) -> None:
    setup.inspection.failing["pod"] = Unreachable("the Kubernetes API did not answer")
    answer = setup.ask(f"{FRONTIER}/train")
    assert answer == Unanswered(FRONTIER, "train", CouldNotCheck(Check.POD, "the Kubernetes API did not answer"))


def test_nothing_is_written_anywhere(setup: Setup) -> None:
    setup.inspection.add(pod("train"))
    setup.inspection.node_list = [node("gpu-1", 8, 8)]
    setup.ask(f"{FRONTIER}/train")
    assert setup.cluster.writes == []  # the database is NoDatabase: any use would have failed
