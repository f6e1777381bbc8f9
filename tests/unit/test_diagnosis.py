"""Why a pod is pending, from facts: each cause with its evidence and fix, the order, what makes others moot."""

from __future__ import annotations

import json
from datetime import datetime, timezone

from bot.domain.diagnosis import (
    KUEUE_GATE,
    Diagnosis,
    Facts,
    FitsNow,
    Gated,
    Mistake,
    NoCapacity,
    NodesUnavailable,
    NotAdvertised,
    Note,
    PriorityStanding,
    QueueFacts,
    QueueWait,
    QuotaFull,
    QuotaRefused,
    Scheduled,
    SelectorMismatch,
    UntoleratedTaint,
    diagnose,
    short_nodes,
    why_target,
)
from bot.domain.kueue import PendingWorkload, parse_shortfalls
from bot.domain.scheduling import (
    AutoscalerStatus,
    NodeFacts,
    NodeGroupStatus,
    PodFacts,
    PriorityClassFacts,
    Requirement,
    SchedulerEvent,
    SelectorTerm,
    Taint,
    Toleration,
)

GPU = "nvidia.com/gpu"
T0 = datetime(2026, 12, 1, 9, 0, tzinfo=timezone.utc)
INSUFFICIENT = (
    "0/2 nodes are available: 2 Insufficient nvidia.com/gpu. preemption: 0/2 nodes are available: "
    "2 No preemption victims found for incoming pod."
)


def node(
    name: str,
    gpus: int = 8,
    used: int = 0,
    *,
    resources: dict[str, int] | None = None,
    labels: dict[str, str] | None = None,
    taints: tuple[Taint, ...] = (),
    unschedulable: bool = False,
    ready: bool = True,
) -> NodeFacts:
    offered = {GPU: gpus, **(resources or {})}
    return NodeFacts(
        name,
        {"kubernetes.io/hostname": name, **(labels or {})},
        taints,
        offered,
        {GPU: used} if used else {},
        unschedulable,
        ready,
    )


def pod(name: str = "train", gpus: int = 2, **overrides: object) -> PodFacts:
    values: dict[str, object] = {
        "namespace": "ai-frontier-research",
        "name": name,
        "phase": "Pending",
        "requests": {GPU: gpus},
        "limited": True,
        "priority_class": "low-priority-experiment",
        "priority": 100,
        "created_at": T0,
    }
    values.update(overrides)
    return PodFacts(**values)  # type: ignore[arg-type]


def causes(facts: Facts) -> tuple[object, ...]:
    found = diagnose(facts)
    assert isinstance(found, Diagnosis)
    return found.causes


def test_a_running_pod_is_not_pending_and_says_where_since_when_and_how_many() -> None:
    running = pod(phase="Running", node_name="gpu-node-1", started_at=T0)
    assert diagnose(Facts(running, nodes=(node("gpu-node-1"),))) == Scheduled(
        "ai-frontier-research", "train", "gpu-node-1", "Running", T0, {GPU: 2}
    )


def test_a_misspelt_resource_names_the_close_match_and_makes_placement_and_capacity_moot() -> None:
    typo = pod(requests={"nvidia.com/gpus": 1})
    found = causes(Facts(typo, nodes=(node("a", 8, 8), node("b", 8, 8, taints=(Taint("x", "y", "NoSchedule"),)))))
    assert found == (NotAdvertised("nvidia.com/gpus", Mistake.TYPO, GPU, (GPU,)),)


def test_whole_gpus_on_a_cluster_of_mig_slices_names_the_profiles_the_nodes_offer() -> None:
    mig = {"nvidia.com/mig-1g.10gb": 7, "nvidia.com/mig-3g.40gb": 2}
    found = causes(Facts(pod(gpus=1), nodes=(node("mig-1", 0, resources=mig),)))
    assert found == (NotAdvertised(GPU, Mistake.WHOLE_GPU_ON_MIG, None, ("nvidia.com/mig-1g.10gb", "nvidia.com/mig-3g.40gb")),)


def test_a_mig_profile_no_node_offers_is_a_spec_problem_with_what_is_offered() -> None:
    wants = pod(requests={"nvidia.com/mig-2g.20gb": 1})
    found = causes(Facts(wants, nodes=(node("mig-1", 0, resources={"nvidia.com/mig-1g.10gb": 7}),)))
    assert len(found) == 1 and isinstance(found[0], NotAdvertised)
    assert found[0].mistake is Mistake.MIG_PROFILE and found[0].offered == ("nvidia.com/mig-1g.10gb",)


def test_gpu_nodes_advertising_nothing_point_at_the_device_plugin() -> None:
    labelled = node("gpu-node-3", 0, labels={"nvidia.com/gpu.present": "true"})
    found = causes(Facts(pod(), nodes=(labelled,)))
    assert found == (NotAdvertised(GPU, Mistake.NO_DEVICE_PLUGIN, None, ()),)


def test_a_taint_on_every_gpu_node_gives_the_toleration_to_add_and_no_capacity_cause() -> None:
    taint = Taint(GPU, "true", "NoSchedule")
    found = causes(Facts(pod(), nodes=(node("a", taints=(taint,)), node("b", taints=(taint,)))))
    assert found == (UntoleratedTaint(taint, ("a", "b"), True, ("a", "b"), Toleration(GPU, "Equal", "true", "NoSchedule")),)
    cause = found[0]
    assert isinstance(cause, UntoleratedTaint)
    assert cause.toleration == {"key": GPU, "operator": "Equal", "value": "true", "effect": "NoSchedule"}


def test_a_tolerated_taint_is_no_cause() -> None:
    taint = Taint(GPU, "true", "NoSchedule")
    tolerant = pod(tolerations=(Toleration(GPU, "Exists", "", "NoSchedule"),))
    assert causes(Facts(tolerant, nodes=(node("a", taints=(taint,)),))) == (FitsNow(("a",)),)


def test_a_taint_hiding_the_only_node_with_room_comes_before_capacity() -> None:
    taint = Taint("dedicated", "", "NoSchedule")
    found = causes(Facts(pod(), nodes=(node("full", 8, 8), node("spare", 8, 0, taints=(taint,)))))
    assert [type(c) for c in found] == [UntoleratedTaint, NoCapacity]
    assert found[0] == UntoleratedTaint(taint, ("spare",), False, ("spare",), Toleration("dedicated", "Exists", "", "NoSchedule"))


def test_a_node_selector_matching_no_gpu_node_names_the_values_that_exist() -> None:
    pools = {"a": {"gpu": "h100"}, "b": {"gpu": "a100"}}
    nodes = tuple(node(name, labels=labels) for name, labels in pools.items())
    found = causes(Facts(pod(node_selector={"gpu": "h200"}), nodes=nodes))
    assert len(found) == 1 and isinstance(found[0], SelectorMismatch)
    assert found[0].blocks_all and found[0].node_selector == (("gpu", "h200"),)
    assert [(p.key, p.values) for p in found[0].present] == [("gpu", ("a100", "h100"))]


def test_a_required_affinity_matching_no_node_names_its_key_and_the_values_present() -> None:
    term = SelectorTerm((Requirement("nvidia.com/gpu.product", "In", ("NVIDIA-H200",)),))
    nodes = (node("a", labels={"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}), node("b"))
    found = causes(Facts(pod(required_terms=(term,)), nodes=nodes))
    assert len(found) == 1 and isinstance(found[0], SelectorMismatch)
    assert found[0].terms == (term,)
    assert [(p.key, p.values) for p in found[0].present] == [("nvidia.com/gpu.product", ("NVIDIA-H100-80GB-HBM3",))]


def test_cordoned_or_not_ready_nodes_are_named_and_not_told_to_be_tolerated() -> None:
    cordon = node("a", unschedulable=True)
    sick = node("b", ready=False, taints=(Taint("node.kubernetes.io/not-ready", "", "NoSchedule"),))
    found = causes(Facts(pod(), nodes=(cordon, sick)))
    assert found == (NodesUnavailable(("a",), ("b",), True, ("a", "b")),)


def test_no_room_anywhere_gives_the_largest_free_block_per_pool_and_what_the_autoscaler_could_do() -> None:
    nodes = (
        node("h1", 8, 7, labels={"karpenter.sh/nodepool": "h100", "nvidia.com/gpu.product": "H100"}),
        node("h2", 8, 8, labels={"karpenter.sh/nodepool": "h100", "nvidia.com/gpu.product": "H100"}),
        node("a1", 4, 4, labels={"karpenter.sh/nodepool": "a100"}),
    )
    status = AutoscalerStatus(
        "Healthy",
        (
            NodeGroupStatus("h100", "Healthy", "NoActivity", registered=2, max_size=4),
            NodeGroupStatus("a100", "Healthy", "NoActivity", registered=1, max_size=1),
            NodeGroupStatus("spot", "Healthy", "Backoff", registered=0, max_size=3, backoff="OutOfResource: no capacity"),
        ),
    )
    found = causes(Facts(pod(), nodes=nodes, autoscaler=status))
    assert len(found) == 1 and isinstance(found[0], NoCapacity)
    capacity = found[0]
    assert [(b.pool, b.product, b.largest, b.nodes) for b in capacity.blocks] == [("h100", "H100", 1, 2), ("a100", None, 0, 1)]
    assert capacity.total_free == 1 and capacity.asks == 2
    assert capacity.scale_up is not None
    assert capacity.scale_up.can_grow == ("h100",) and capacity.scale_up.at_max == ("a100",)
    assert capacity.scale_up.backing_off == (("spot", "OutOfResource: no capacity"),)


def test_free_gpus_spread_over_nodes_are_counted_as_fragmented() -> None:
    found = causes(Facts(pod(gpus=4), nodes=(node("a", 8, 6), node("b", 8, 6))))
    assert isinstance(found[0], NoCapacity) and found[0].total_free == 4 and found[0].scale_up is None


def test_priority_says_nothing_lower_holds_the_gpus_and_counts_what_it_cannot_see() -> None:
    nodes = (node("a", 8, 8),)
    holders = (pod("serve", 6, phase="Running", node_name="a", priority_class="high-priority-business", priority=1000000),)
    found = causes(Facts(pod(), nodes=nodes, holders=holders))
    standing = found[-1]
    assert isinstance(standing, PriorityStanding)
    assert standing.lower == 0 and standing.unseen == 2 and standing.may_preempt
    assert [(h.priority_class, h.priority, h.gpus) for h in standing.held] == [("high-priority-business", 1000000, 6)]


def test_a_class_that_never_preempts_is_said_even_where_lower_priority_pods_hold_gpus() -> None:
    never = pod(priority_class="batch-never", priority=500, preemption_policy="Never")
    holders = (pod("exp", 8, phase="Running", node_name="a", priority=100),)
    classes = {"batch-never": PriorityClassFacts("batch-never", 500, "Never")}
    found = causes(Facts(never, nodes=(node("a", 8, 8),), holders=holders, classes=classes))
    standing = found[-1]
    assert isinstance(standing, PriorityStanding) and standing.lower == 8 and not standing.may_preempt


def test_a_nominated_node_is_carried_to_the_priority_cause() -> None:
    preempting = pod(nominated_node="a", priority=1000)
    holders = (pod("exp", 8, phase="Running", node_name="a", priority=100),)
    found = causes(Facts(preempting, nodes=(node("a", 8, 8),), holders=holders))
    assert isinstance(found[-1], PriorityStanding) and found[-1].nominated_node == "a"


def test_short_nodes_are_the_usable_nodes_when_none_has_room() -> None:
    taint = Taint("dedicated", "x", "NoSchedule")
    nodes = (node("a", 8, 8), node("b", 8, 7), node("c", 8, 0, taints=(taint,)))
    assert short_nodes(pod(), nodes) == ("a", "b")
    assert short_nodes(pod(), (*nodes, node("d", 8, 0))) == ()


def test_kueues_gate_without_a_queue_read_is_a_gate_and_capacity_is_not_judged() -> None:
    gated = pod(scheduling_gates=(KUEUE_GATE,))
    found = causes(Facts(gated, nodes=(node("a", 8, 8),)))
    assert found == (Gated((KUEUE_GATE,)),)
    assert isinstance(found[0], Gated) and found[0].kueue


def workload(message: str) -> PendingWorkload:
    return PendingWorkload(
        "ai-frontier-batch", "pod-train-1a2b3", "batch", T0, T0, "Pending", message, parse_shortfalls(message), {GPU: 2}
    )


def test_a_kueue_wait_gives_the_queues_quota_the_place_and_request_more_prefilled() -> None:
    message = (
        "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor h100, 2 more needed"
    )
    queue = QueueFacts("ai-frontier-batch", GPU, "frontier-cq", "h100", 8, 8, workload(message), 2, 3)
    gated = pod(namespace="ai-frontier-batch", scheduling_gates=(KUEUE_GATE,))
    found = causes(Facts(gated, nodes=(node("a", 8, 8),), queues=(queue,)))
    assert len(found) == 1 and isinstance(found[0], QueueWait)
    wait = found[0]
    assert (wait.cluster_queue, wait.flavor, wait.nominal, wait.reserved, wait.position, wait.waiting, wait.more) == (
        "frontier-cq",
        "h100",
        8,
        8,
        2,
        3,
        2,
    )
    assert wait.fix is not None
    assert json.loads(wait.fix.value) == {"namespace": "ai-frontier-batch", "gpus": "+2", "resource": GPU}


def test_a_quota_refusal_says_hard_used_holders_and_how_many_more_with_the_request_prefilled() -> None:
    refused = QuotaRefused("ai-frontier-research", GPU, 2, 4, 4, ("a", "b"))
    found = causes(Facts(pod(), nodes=(node("a", 8, 0),), refused=(refused,)))
    assert isinstance(found[0], QuotaFull)
    quota = found[0]
    assert (quota.asks, quota.hard, quota.used, quota.holders, quota.fix.amount) == (2, 4, 4, ("a", "b"), 2)
    assert json.loads(quota.fix.value) == {"namespace": "ai-frontier-research", "gpus": "+2", "resource": GPU}


def test_a_quota_with_some_room_asks_only_for_the_difference() -> None:
    refused = QuotaRefused("ns", GPU, 3, 8, 6, ())
    found = causes(Facts(pod(), refused=(refused,)))
    assert isinstance(found[0], QuotaFull) and found[0].fix.amount == 1


def test_causes_come_spec_first_then_quota_then_placement_then_capacity() -> None:
    taint = Taint("dedicated", "", "NoSchedule")
    two = pod(requests={GPU: 2, "nvidia.com/gpus": 1})
    refused = QuotaRefused("ns", GPU, 2, 4, 4, ())
    found = causes(Facts(two, nodes=(node("full", 8, 8), node("spare", 8, 0, taints=(taint,))), refused=(refused,)))
    assert [type(c) for c in found] == [NotAdvertised, QuotaFull, UntoleratedTaint, NoCapacity]


def test_a_node_with_room_and_nothing_else_wrong_fits_now() -> None:
    assert causes(Facts(pod(), nodes=(node("a", 8, 8), node("b", 8, 5)))) == (FitsNow(("b",)),)


def test_the_scheduler_s_latest_words_are_kept_else_the_pod_condition_s() -> None:
    event = SchedulerEvent(INSUFFICIENT, 7, T0)
    found = diagnose(Facts(pod(unschedulable_message="older words"), nodes=(node("a", 8, 8),), event=event))
    assert isinstance(found, Diagnosis) and found.said is not None
    assert (found.said.message, found.said.count, found.said.last_seen) == (INSUFFICIENT, 7, T0)
    assert Note.IMAGE_NOT_CHECKED in found.notes
    fallback = diagnose(Facts(pod(unschedulable_message="older words")))
    assert isinstance(fallback, Diagnosis) and fallback.said is not None and fallback.said.message == "older words"


def test_unread_nodes_leave_placement_and_capacity_out() -> None:
    assert causes(Facts(pod())) == ()


def test_the_target_is_a_namespace_or_a_pod_by_the_policy_s_clusters() -> None:
    managed = {"us-2/biz-model-serving-us", "ai-frontier-research"}.__contains__
    clusters = {"eu-1", "us-2"}

    def read(target: str, name: str | None = None) -> tuple[str, str | None]:
        found = why_target(target, name, clusters=clusters, managed=managed)
        return found.namespace, found.name

    assert read("ai-frontier-research/train") == ("ai-frontier-research", "train")
    assert read("us-2/biz-model-serving-us/serve-0") == ("us-2/biz-model-serving-us", "serve-0")
    assert read("ai-frontier-research") == ("ai-frontier-research", None)
    assert read("us-2/biz-model-serving-us") == ("us-2/biz-model-serving-us", None)
    assert read("us-2/train") == ("us-2", "train")  # no namespace us-2/train: namespace us-2, pod train
    assert read("us-2/biz-model-serving-us", "serve-0") == ("us-2/biz-model-serving-us", "serve-0")
