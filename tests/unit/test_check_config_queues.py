"""check-config's checks of the ClusterQueues the policy keeps quota in, over a hand-written Kueue reader
(the reads of ``ports.KueueQuotas``, as the bot's writes make them)."""

from __future__ import annotations

from dataclasses import dataclass, field

from bot.check_config import cluster_queue_problems, unadvertised_resources
from bot.domain.kueue import ClusterQueueSnapshot
from bot.domain.policy import Policy, parse_policy
from bot.errors import KueueObjectMissing, KueuePart

GPU, MIG = "nvidia.com/gpu", "nvidia.com/mig-3g.40gb"


@dataclass(frozen=True)
class ClusterQueueSpec:
    flavors: dict[str, frozenset[str]]  # flavor -> the resources it has a nominalQuota for
    cohort: str | None


@dataclass
class FakeKueue:
    queues: dict[str, ClusterQueueSpec] = field(default_factory=dict)
    installed: bool = True

    def api_version(self) -> str | None:
        return "v1beta2" if self.installed else None

    def read_cluster_queue(self, namespace: str, name: str, flavor: str, resource: str) -> ClusterQueueSnapshot:
        spec = self.queues.get(name)
        where = {"cluster_queue": name, "flavor": flavor, "resource": resource}
        if spec is None:
            raise KueueObjectMissing(KueuePart.CLUSTER_QUEUE, **where)
        if flavor not in spec.flavors:
            raise KueueObjectMissing(KueuePart.FLAVOR, **where, present=tuple(spec.flavors))
        if resource not in spec.flavors[flavor]:
            raise KueueObjectMissing(KueuePart.RESOURCE, **where, present=tuple(spec.flavors[flavor]))
        return ClusterQueueSnapshot(
            namespace,
            name,
            4,
            0,
            None,
            "1",
            None,
            flavor=flavor,
            resource=resource,
            group_index=0,
            flavor_index=0,
            resource_index=0,
            borrowing_limit=None,
            cohort=spec.cohort,
            in_use=0,
            borrowed=0,
            pending_workloads=0,
            annotated=False,
        )


def policy(*queues: dict) -> Policy:
    namespaces = [
        {"name": f"ns-{i}", "resources": [{"name": queue.pop("resource", GPU), "cluster_queue": queue}]}
        for i, queue in enumerate(queues)
    ]
    return parse_policy({"teams": {"t": {"channel": "C1", "namespaces": namespaces or ["ns-0"], "approvers": {"users": ["U1"]}}}})


def test_sound_cluster_queues_have_no_problems() -> None:
    kueue = FakeKueue({"cq": ClusterQueueSpec({"h100": frozenset({GPU, MIG})}, cohort="all")})
    sound = policy(
        {"name": "cq", "flavor": "h100", "adjust_borrowing_limit": True}, {"name": "cq", "flavor": "h100", "resource": MIG}
    )
    assert cluster_queue_problems(kueue, sound) == []
    assert cluster_queue_problems(FakeKueue(installed=False), policy()) == []  # no queue in the policy: Kueue is not needed


def test_each_missing_queue_flavor_or_resource_is_named_with_what_exists() -> None:
    kueue = FakeKueue(
        {
            "cq": ClusterQueueSpec({"h100": frozenset({GPU}), "a100": frozenset()}, cohort=None),
        }
    )
    broken = policy(
        {"name": "gone", "flavor": "h100"},
        {"name": "cq", "flavor": "b200"},
        {"name": "cq", "flavor": "h100", "resource": MIG},
        {"name": "cq", "flavor": "h100", "adjust_borrowing_limit": True},
    )
    assert cluster_queue_problems(kueue, broken) == [
        f"ClusterQueue gone (policy: {GPU} of ns-0) does not exist in the cluster",
        f"ClusterQueue cq has no flavor b200 (policy: {GPU} of ns-1); it has a100, h100",
        f"ClusterQueue cq flavor h100 has no quota of {MIG} (policy: {MIG} of ns-2); it lists {GPU}",
        f"ClusterQueue cq is in no cohort, so it has no borrowingLimit to move (policy: {GPU} of ns-3):"
        " set adjust_borrowing_limit: false",
    ]


def test_kueue_not_installed_is_one_problem_naming_the_queues() -> None:
    two = policy({"name": "cq-b", "flavor": "h100"}, {"name": "cq-a", "flavor": "h100"})
    assert cluster_queue_problems(FakeKueue(installed=False), two) == [
        "Kueue is not installed (the cluster serves no kueue.x-k8s.io) but the policy keeps quota in ClusterQueues cq-a, cq-b"
    ]


def test_a_resource_advertised_by_no_node_is_named_once_with_its_namespaces() -> None:
    governed = parse_policy(
        {
            "teams": {
                "t": {"channel": "C1", "namespaces": ["ns-a", "ns-b"], "approvers": {"users": ["U1"]}, "resources": [GPU, MIG]}
            }
        }
    )
    assert unadvertised_resources(governed, {GPU: 24, MIG: 2}) == []
    assert unadvertised_resources(governed, {GPU: 24, "nvidia.com/mig-1g.10gb": 3, MIG: 0}) == [
        f"no node advertises {MIG} (governed in ns-a, ns-b); the nodes offer {GPU}, nvidia.com/mig-1g.10gb"
    ]
    assert unadvertised_resources(governed, {}) == [
        f"no node advertises {GPU} (governed in ns-a, ns-b); the nodes offer no extended resources",
        f"no node advertises {MIG} (governed in ns-a, ns-b); the nodes offer no extended resources",
    ]
