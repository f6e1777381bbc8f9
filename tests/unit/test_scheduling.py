"""The scheduler's matching rules as bot/domain/scheduling.py has them: tolerations, node selector requirements and
terms, a pod's selection of a node, a DaemonSet's placement, a node's free GPUs and blocking taints."""

from __future__ import annotations

import pytest

from bot.domain.scheduling import DaemonSetFacts, NodeFacts, PodFacts, Requirement, SelectorTerm, Taint, Toleration

GPU_TAINT = Taint("nvidia.com/gpu", "true", "NoSchedule")


def node(**overrides: object) -> NodeFacts:
    fields: dict[str, object] = {
        "name": "gpu-node-a",
        "labels": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "pool": "h100"},
        "taints": (),
        "allocatable": {"nvidia.com/gpu": 8},
        "requested": {"nvidia.com/gpu": 6},
    }
    return NodeFacts(**{**fields, **overrides})  # type: ignore[arg-type]


def pod(**overrides: object) -> PodFacts:
    fields: dict[str, object] = {
        "namespace": "ns",
        "name": "p",
        "phase": "Pending",
        "requests": {"nvidia.com/gpu": 2},
        "limited": True,
    }
    return PodFacts(**{**fields, **overrides})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("toleration", "tolerated"),
    [
        (Toleration("nvidia.com/gpu", "Exists", "", "NoSchedule"), True),
        (Toleration("nvidia.com/gpu", "Equal", "true", "NoSchedule"), True),
        (Toleration("nvidia.com/gpu", "", "true", ""), True),  # empty operator is Equal, empty effect every effect
        (Toleration("nvidia.com/gpu", "Equal", "false", "NoSchedule"), False),
        (Toleration("nvidia.com/gpu", "Exists", "", "NoExecute"), False),
        (Toleration("other", "Exists"), False),
        (Toleration("", "Exists"), True),  # tolerates everything
        (Toleration("nvidia.com/gpu", "Gt", "true", "NoSchedule"), False),  # no such operator for tolerations
    ],
)
def test_a_toleration_tolerates_as_the_api_says(toleration: Toleration, tolerated: bool) -> None:
    assert toleration.tolerates(GPU_TAINT) is tolerated


@pytest.mark.parametrize(
    ("requirement", "matches"),
    [
        (Requirement("pool", "In", ("h100", "a100")), True),
        (Requirement("pool", "In", ("a100",)), False),
        (Requirement("zone", "In", ("a",)), False),
        (Requirement("pool", "NotIn", ("a100",)), True),
        (Requirement("zone", "NotIn", ("a",)), True),  # absent is not in
        (Requirement("pool", "NotIn", ("h100",)), False),
        (Requirement("pool", "Exists"), True),
        (Requirement("zone", "Exists"), False),
        (Requirement("zone", "DoesNotExist"), True),
        (Requirement("pool", "DoesNotExist"), False),
        (Requirement("gpus", "Gt", ("4",)), True),
        (Requirement("gpus", "Gt", ("8",)), False),
        (Requirement("gpus", "Lt", ("9",)), True),
        (Requirement("pool", "Gt", ("1",)), False),  # not a number
        (Requirement("zone", "Lt", ("1",)), False),  # absent
        (Requirement("gpus", "Gt", ("1", "2")), False),  # Gt takes one value
        (Requirement("pool", "Near", ("h100",)), False),
    ],
)
def test_requirement_operators(requirement: Requirement, matches: bool) -> None:
    assert requirement.matches({"pool": "h100", "gpus": "8"}) is matches


def test_an_empty_term_matches_no_node_and_a_term_needs_all_its_requirements() -> None:
    labels = {"pool": "h100"}
    assert not SelectorTerm(()).matches(labels, "gpu-node-a")
    assert SelectorTerm((Requirement("pool", "In", ("h100",)), Requirement("metadata.name", "In", ("gpu-node-a",)))).matches(
        labels, "gpu-node-a"
    )
    assert not SelectorTerm((Requirement("pool", "In", ("h100",)), Requirement("metadata.name", "In", ("b",)))).matches(
        labels, "gpu-node-a"
    )


def test_a_pod_selects_a_node_by_its_node_selector_and_any_one_required_term() -> None:
    h100 = SelectorTerm((Requirement("pool", "In", ("h100",)),))
    a100 = SelectorTerm((Requirement("pool", "In", ("a100",)),))
    assert pod().selects(node())
    assert pod(node_selector={"pool": "h100"}, required_terms=(a100, h100)).selects(node())
    assert not pod(node_selector={"pool": "a100"}, required_terms=(h100,)).selects(node())
    assert not pod(required_terms=(a100,)).selects(node())
    assert not pod(required_terms=(SelectorTerm(()),)).selects(node())


def test_a_pod_is_pending_only_unbound_and_names_its_nvidia_resources() -> None:
    assert pod().pending and not pod(node_name="gpu-node-a").pending
    assert not pod(phase="Running", node_name="gpu-node-a").pending
    typo = pod(requests={"nvidia.com/gpus": 1, "example.com/fpga": 1, "nvidia.com/mig-1g.10gb": 0})
    assert typo.gpu_resources == ("nvidia.com/gpus",)
    assert pod(tolerations=(Toleration("nvidia.com/gpu", "Exists"),)).tolerates(GPU_TAINT)
    assert not pod().tolerates(GPU_TAINT)


def test_a_node_has_free_gpus_blocking_taints_and_a_cordon() -> None:
    soft = Taint("spot", "", "PreferNoSchedule")
    cordoned = node(taints=(GPU_TAINT, soft), unschedulable=True, requested={"nvidia.com/gpu": 10})
    assert node().free("nvidia.com/gpu") == 2 and cordoned.free("nvidia.com/gpu") == 0
    assert cordoned.scheduling_taints == (GPU_TAINT, Taint("node.kubernetes.io/unschedulable", "", "NoSchedule"))
    assert str(GPU_TAINT) == "nvidia.com/gpu=true:NoSchedule" and str(soft) == "spot:PreferNoSchedule"
    assert node().gpu_labelled and not node(labels={"nvidia.com/gpu.present": "false"}).gpu_labelled
    assert node(allocatable={"nvidia.com/gpu": 0, "nvidia.com/mig-1g.10gb": 7}).offered == ("nvidia.com/mig-1g.10gb",)


def test_a_cordon_the_api_stores_as_a_taint_is_counted_once() -> None:
    """The node lifecycle controller adds the unschedulable taint to a cordoned node; the API returns both."""
    cordon = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")
    cordoned = node(taints=(GPU_TAINT, cordon), unschedulable=True)
    assert cordoned.scheduling_taints == (GPU_TAINT, cordon)


def daemon_set(**overrides: object) -> DaemonSetFacts:
    fields: dict[str, object] = {
        "namespace": "gpu-operator",
        "name": "nvidia-device-plugin-daemonset",
        "labels": {},
        "desired": 1,
        "ready": 1,
        "available": 1,
    }
    return DaemonSetFacts(**{**fields, **overrides})  # type: ignore[arg-type]


def test_a_daemon_set_keeps_running_on_a_cordoned_or_pressured_node_as_its_controller_tolerates() -> None:
    cordoned = node(taints=(Taint("node.kubernetes.io/unschedulable", "", "NoSchedule"),), unschedulable=True)
    pressured = node(taints=(Taint("node.kubernetes.io/memory-pressure", "", "NoSchedule"),))
    not_ready = node(taints=(Taint("node.kubernetes.io/not-ready", "", "NoExecute"),))
    assert daemon_set().runs_on(cordoned) and daemon_set().runs_on(pressured) and daemon_set().runs_on(not_ready)
    assert not daemon_set().runs_on(node(taints=(GPU_TAINT,)))  # a taint of the platform's own still needs a toleration


def test_a_daemon_set_runs_where_its_selector_and_tolerations_allow_even_on_a_cordoned_node() -> None:
    tainted = node(taints=(GPU_TAINT, Taint("spot", "", "PreferNoSchedule")), unschedulable=True)
    tolerant = daemon_set(tolerations=(Toleration("nvidia.com/gpu", "Exists", "", "NoSchedule"),))
    assert tolerant.runs_on(tainted)
    assert not daemon_set().runs_on(tainted)
    assert daemon_set(node_selector={"pool": "h100"}).runs_on(node())
    assert not daemon_set(node_selector={"pool": "a100"}).runs_on(node())
    assert not daemon_set(required_terms=(SelectorTerm((Requirement("pool", "In", ("a100",)),)),)).runs_on(node())
