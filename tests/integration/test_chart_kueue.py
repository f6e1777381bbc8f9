"""The chart's Kueue RBAC, rendered by the real helm: ``get`` and ``patch`` on the ClusterQueues the policy
names in effect, by name (the bot reads and patches them one by name and never lists or watches them,
which ``resourceNames`` could not limit), and ``get`` and ``list`` of Workloads in the managed namespaces (the
blocked-workload job lists them per namespace, ``why`` reads one by name) when Kueue is in use:
``kueue.enabled``, or a ClusterQueue named. With an existing policy ConfigMap the ClusterQueues are
``managedClusterQueues``. That these are exactly the grants the calls need is test_chart's
``test_rbac_is_exactly_what_the_code_calls``."""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.test_chart import EXISTING, ONE_CLUSTER_QUEUE, checksum, notes, of, refused, render

KUEUE = "kueue.x-k8s.io"
WORKLOADS_READ = {"apiGroups": [KUEUE], "resources": ["workloads"], "verbs": ["get", "list"]}


def queue_rule(*names: str) -> dict[str, Any]:
    return {"apiGroups": [KUEUE], "resources": ["clusterqueues"], "resourceNames": list(names), "verbs": ["get", "patch"]}


def rules_on(objects: list[dict[str, Any]], resource: str) -> list[tuple[str, str | None, dict[str, Any]]]:
    """(kind, namespace, rule) of every Role or ClusterRole rule on ``resource``."""
    return [
        (o["kind"], o["metadata"].get("namespace"), rule)
        for o in objects
        if o["kind"] in ("ClusterRole", "Role")
        for rule in o["rules"]
        if resource in rule["resources"]
    ]


def bound_to_the_bot(objects: list[dict[str, Any]], cluster_role: str) -> bool:
    return any(
        b["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": cluster_role}
        and b["subjects"] == [{"kind": "ServiceAccount", "name": "gpu-gpu-quota-bot", "namespace": "gpu-system"}]
        for b in of(objects, "ClusterRoleBinding")
    )


def queue(name: str, flavor: str = "a100") -> dict[str, str]:
    return {"name": name, "flavor": flavor}


@pytest.mark.helm
@pytest.mark.parametrize("sets", [[], ["rbac.clusterWideWrites=true"]], ids=["roles", "cluster-wide-writes"])
def test_one_cluster_queue_gets_get_and_patch_on_its_name_only(sets: list[str]) -> None:
    objects = render(*sets, values=ONE_CLUSTER_QUEUE)
    # By name in a ClusterRole of its own (a ClusterQueue is cluster-scoped), also with clusterWideWrites.
    assert rules_on(objects, "clusterqueues") == [("ClusterRole", None, queue_rule("frontier-batch"))]
    (role,) = [o for o in of(objects, "ClusterRole") if queue_rule("frontier-batch") in o["rules"]]
    assert role["rules"] == [queue_rule("frontier-batch")]
    assert bound_to_the_bot(objects, role["metadata"]["name"])


# Policies that keep no quota in Kueue: no ClusterQueue rule (an empty resourceNames would grant them all).
NO_QUEUE = {
    "example": None,
    "string entries": {"policy": {"teams": {"frontier": {"resources": ["nvidia.com/gpu", "nvidia.com/mig-3g.40gb"]}}}},
    "mappings without one": {"policy": {"teams": {"business": {"resources": [{"name": "nvidia.com/gpu", "max_gpus": 4}]}}}},
    "the team's replaced": {
        "policy": {
            "teams": {
                "frontier": {
                    "resources": [{"name": "nvidia.com/gpu", "cluster_queue": queue("unused")}],
                    "namespaces": [{"name": "ai-frontier-research", "resources": ["nvidia.com/gpu"]}],
                }
            }
        }
    },
}


@pytest.mark.helm
@pytest.mark.parametrize("values", NO_QUEUE.values(), ids=NO_QUEUE.keys())
def test_no_cluster_queue_in_the_policy_renders_no_kueue_rule(values: dict[str, Any] | None) -> None:
    objects = render(values=values)
    assert rules_on(objects, "clusterqueues") == []
    assert rules_on(objects, "workloads") == []  # kueue.enabled is false by default
    assert len(of(objects, "ClusterRole")) == len(of(objects, "ClusterRoleBinding")) == 1


MIXED = {
    "policy": {
        "teams": {
            "frontier": {
                "resources": [{"name": "nvidia.com/gpu", "cluster_queue": queue("frontier-team", "h100")}],
                "namespaces": [
                    "ai-frontier-research",  # the team's resources: frontier-team
                    {
                        "name": "ai-frontier-batch",
                        "resources": [
                            "nvidia.com/gpu",
                            {"name": "nvidia.com/mig-3g.40gb", "cluster_queue": queue("frontier-batch")},
                        ],
                    },
                ],
            },
            "business": {
                "namespaces": [
                    {"name": "biz-model-serving", "quota_name": "gpu"},
                    {"name": "biz-batch", "resources": [{"name": "amd.com/gpu", "cluster_queue": queue("biz-amd", "mi300")}]},
                    {"name": "biz-batch-2", "resources": [{"name": "nvidia.com/gpu", "cluster_queue": queue("biz-amd", "h100")}]},
                ]
            },
        }
    }
}


@pytest.mark.helm
def test_the_cluster_queues_in_effect_are_granted_from_team_and_namespace_resources() -> None:
    # A team's queue counts for its namespaces without resources of their own; each name once, sorted.
    assert rules_on(render(values=MIXED), "clusterqueues") == [
        ("ClusterRole", None, queue_rule("biz-amd", "frontier-batch", "frontier-team"))
    ]


@pytest.mark.helm
@pytest.mark.parametrize(
    ("sets", "values"), [([], ONE_CLUSTER_QUEUE), (["kueue.enabled=true"], None)], ids=["a-cluster-queue", "kueue-enabled"]
)
def test_workloads_are_listed_in_each_managed_namespace_when_kueue_is_used(
    sets: list[str], values: dict[str, Any] | None
) -> None:
    objects = render(*sets, values=values)
    namespaces = sorted(r["metadata"]["namespace"] for r in of(objects, "Role") if r["metadata"]["namespace"] != "kube-system")
    assert len(namespaces) == 2
    assert rules_on(objects, "workloads") == [("Role", namespace, WORKLOADS_READ) for namespace in namespaces]
    cluster_wide = render(*sets, "rbac.clusterWideWrites=true", values=values)
    assert rules_on(cluster_wide, "workloads") == [("ClusterRole", None, WORKLOADS_READ)]  # like pods
    assert [r["metadata"]["namespace"] for r in of(cluster_wide, "Role")] == ["kube-system"]  # the autoscaler status


@pytest.mark.helm
def test_kueue_enabled_alone_grants_no_cluster_queue() -> None:
    assert rules_on(render("kueue.enabled=true"), "clusterqueues") == []


WITH_QUEUES = [*EXISTING, "managedClusterQueues={serving-queue,research-queue}"]


@pytest.mark.helm
def test_an_existing_policy_configmap_grants_its_managed_cluster_queues() -> None:
    # The inline policy is not in use: its ClusterQueue is not granted.
    objects = render(*WITH_QUEUES, values=ONE_CLUSTER_QUEUE)
    assert rules_on(objects, "clusterqueues") == [("ClusterRole", None, queue_rule("research-queue", "serving-queue"))]
    assert rules_on(objects, "workloads") == [("Role", "research-a", WORKLOADS_READ), ("Role", "serving-b", WORKLOADS_READ)]
    assert "Kueue ClusterQueues the bot may read and patch: research-queue, serving-queue" in notes(*WITH_QUEUES)
    without = render(*EXISTING, values=ONE_CLUSTER_QUEUE)
    assert rules_on(without, "clusterqueues") == rules_on(without, "workloads") == []
    assert "Kueue ClusterQueues" not in notes(*EXISTING)


@pytest.mark.helm
def test_the_policy_checksum_follows_the_managed_cluster_queues() -> None:
    assert checksum(*WITH_QUEUES) != checksum(*EXISTING)
    assert checksum(*EXISTING, "managedClusterQueues={research-queue}") != checksum(*WITH_QUEUES)


@pytest.mark.helm
def test_managed_cluster_queues_without_an_existing_configmap_or_a_queue_without_a_name_are_refused() -> None:
    assert "managedClusterQueues is only read with existingPolicyConfigMap" in refused("managedClusterQueues={q}")
    nameless = "policy.teams.frontier.resources[0].cluster_queue.flavor=a100"
    assert "a resource's cluster_queue needs a name" in refused(
        nameless, "policy.teams.frontier.resources[0].name=nvidia.com/gpu"
    )
