"""``ClusterInspector`` (bot/adapters/inspect.py) and its routing over clusters (bot/adapters/inspect_clusters.py)
with the real ``kubernetes`` client over HTTP against the Kubernetes API stand-in: every read as scheduling facts,
RBAC refusals naming the permission, a missing object, a failing and an unreachable API server, two clusters
with one down, and nothing ever written."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import config

from bot.adapters.clusters import ClusterDown
from bot.adapters.inspect import ClusterInspector
from bot.adapters.kueue import KueueCluster
from bot.bootstrap import connect_clusters, connect_inspection
from bot.domain.scheduling import Requirement, SelectorTerm, Taint, Toleration
from bot.errors import Forbidden, TemporaryError, Unreachable
from bot.sandbox.kube_api import KubeApiStandIn, failed_scheduling_event, scheduling_failure_event, write_kubeconfig
from bot.sandbox.kueue_api import resource_group
from bot.sandbox.world import sandbox_policy

NS, OTHER = "ai-frontier-research", "biz-model-serving"
GPU, H100 = "nvidia.com/gpu", "NVIDIA-H100-80GB-HBM3"
TAINT_MESSAGE = (
    "0/3 nodes are available: 1 node(s) had untolerated taint {nvidia.com/gpu: true}, 2 Insufficient nvidia.com/gpu. "
    "preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, 2 No preemption victims found for incoming pod."
)
AFFINITY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "In", "values": [H100]}]},
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["gpu-node-b"]}]},
            ]
        },
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 1, "preference": {"matchExpressions": [{"key": "zone", "operator": "Exists"}]}}
        ],
    }
}
AUTOSCALER_YAML = """\
time: 2025-11-03 09:12:44.171 +0000 UTC
autoscalerStatus: Running
clusterWide:
  health:
    status: Healthy
    nodeCounts:
      registered: {total: 3, ready: 3, notStarted: 0}
      longUnregistered: 0
      unregistered: 0
    lastProbeTime: "2025-11-03T09:12:44Z"
  scaleUp: {status: NoActivity}
  scaleDown: {status: NoCandidates}
nodeGroups:
- name: h100-pool
  health:
    status: Healthy
    nodeCounts: {registered: {total: 2, ready: 2, notStarted: 0}, longUnregistered: 0, unregistered: 0}
    cloudProviderTarget: 2
    minSize: 0
    maxSize: 2
  scaleUp:
    status: Backoff
    backoffInfo: {errorCode: OUT_OF_RESOURCES, errorMessage: "Instance type p5.48xlarge is out of capacity"}
  scaleDown: {status: NoCandidates}
"""
AUTOSCALER_TEXT = """\
Cluster-autoscaler status at 2022-06-12 12:11:02.152766082 +0000 UTC:
Cluster-wide:
  Health:      Healthy (ready=3 unready=0 notStarted=0 longNotStarted=0 registered=3 longUnregistered=0)
               LastProbeTime:      2022-06-12 12:11:02.151651586 +0000 UTC m=+54.671652928
  ScaleUp:     NoActivity (ready=3 registered=3)
"""


def seed(kube: KubeApiStandIn) -> None:
    kube.add_priority_class("low-priority-experiment", 100, preemption_policy="Never")
    kube.add_priority_class("high-priority-business", 1000000)
    kube.add_node("gpu-node-a", 8, product="NVIDIA-A100-SXM4-80GB")
    kube.add_node("gpu-node-b", 8, product=H100, taints=["nvidia.com/gpu=true:NoSchedule"], labels={"pool": "h100"})
    kube.add_node("gpu-node-c", 8, unschedulable=True, ready=False)
    kube.add_node("cpu-node", 0)
    for namespace in (NS, OTHER):
        kube.add_namespace(namespace)
    kube.add_pod(NS, "notebook", gpus=1, node="gpu-node-a")
    kube.add_pod(OTHER, "ranker", gpus=4, node="gpu-node-a", priority_class="high-priority-business")
    kube.add_pod(OTHER, "done", gpus=3, node="gpu-node-a")
    kube.set_pod_phase(OTHER, "done", "Succeeded")
    kube.add_job(NS, "train")
    kube.add_pod(
        NS,
        "train-x7k2p",
        gpus=2,
        phase="Pending",
        priority_class="low-priority-experiment",
        owner=("Job", "train"),
        node_selector={"pool": "h100"},
        affinity=AFFINITY,
        tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        unschedulable_message=TAINT_MESSAGE,
    )
    kube.add_event(failed_scheduling_event(NS, "train-x7k2p", TAINT_MESSAGE, count=3))


@pytest.fixture
def kube() -> Iterator[KubeApiStandIn]:
    stand_in = KubeApiStandIn().start()
    seed(stand_in)
    yield stand_in
    stand_in.stop()


@pytest.fixture
def inspector(kube: KubeApiStandIn, tmp_path: Path) -> ClusterInspector:
    api = config.new_client_from_config(config_file=str(kube.write_kubeconfig(tmp_path / "kubeconfig")))
    return ClusterInspector(api, timeout=(2.0, 5.0), kueue=KueueCluster(api))


@pytest.fixture(autouse=True)
def nothing_written(kube: KubeApiStandIn) -> Iterator[None]:
    yield
    assert kube.writes() == []


def gets(kube: KubeApiStandIn) -> list[str]:
    return [path for method, path, _, _ in kube.log if method == "GET"]


def test_a_pending_pod_is_read_with_what_the_scheduler_weighs(inspector: ClusterInspector) -> None:
    pod = inspector.pod(NS, "train-x7k2p")
    assert pod is not None and pod.pending
    assert (pod.namespace, pod.requests, pod.limited, pod.node_name) == (NS, {GPU: 2}, True, None)
    assert (pod.priority_class, pod.priority, pod.preemption_policy) == ("low-priority-experiment", 100, "Never")
    assert pod.node_selector == {"pool": "h100"}
    assert pod.required_terms == (
        SelectorTerm((Requirement("nvidia.com/gpu.product", "In", (H100,)),)),
        SelectorTerm((Requirement("metadata.name", "In", ("gpu-node-b",)),)),
    )
    assert Toleration("nvidia.com/gpu", "Exists", "", "NoSchedule") in pod.tolerations
    assert pod.tolerates(Taint("nvidia.com/gpu", "true", "NoSchedule"))
    assert pod.unschedulable_message == TAINT_MESSAGE
    assert pod.owner == ("Job", "train")
    assert pod.labels["batch.kubernetes.io/job-name"] == "train"


def test_a_running_pod_knows_its_node_and_whether_that_node_is_a_gpu_node(
    kube: KubeApiStandIn, inspector: ClusterInspector
) -> None:
    pod = inspector.pod(NS, "notebook")
    assert pod is not None and not pod.pending
    assert (pod.phase, pod.node_name, pod.node_gpu_labelled, pod.started_at is not None) == ("Running", "gpu-node-a", True, True)
    kube.add_pod(NS, "on-cpu", node="cpu-node")
    on_cpu = inspector.pod(NS, "on-cpu")
    assert on_cpu is not None and (on_cpu.node_gpu_labelled, on_cpu.requests) == (False, {})


def test_a_pod_not_there_or_finished_is_none(inspector: ClusterInspector) -> None:
    assert inspector.pod(NS, "no-such-pod") is None
    assert inspector.pod(OTHER, "done") is None


def test_the_pods_of_a_namespace_are_its_unfinished_ones(inspector: ClusterInspector) -> None:
    assert sorted(p.name for p in inspector.pods(NS)) == ["notebook", "train-x7k2p"]
    assert [p.name for p in inspector.pods(OTHER)] == ["ranker"]


def test_a_job_is_found_with_its_pods(kube: KubeApiStandIn, inspector: ClusterInspector) -> None:
    kube.add_job(NS, "other-train")
    kube.add_pod(NS, "other-train-1", gpus=1, phase="Pending", owner=("Job", "other-train"))
    found = inspector.workload_pods(NS, "train")
    assert found is not None
    assert (found.kind, found.name, [p.name for p in found.pods]) == ("Job", "train", ["train-x7k2p"])


def test_a_deployment_and_a_stateful_set_are_found_by_their_selector(kube: KubeApiStandIn, inspector: ClusterInspector) -> None:
    kube.add_deployment(NS, "serve", match_labels={"app": "serve"})
    kube.add_stateful_set(NS, "shard", match_labels={"app": "shard"})
    kube.add_pod(NS, "serve-7d9f-abcde", gpus=1, phase="Pending", labels={"app": "serve"}, owner=("ReplicaSet", "serve-7d9f"))
    kube.add_pod(NS, "shard-0", gpus=1, labels={"app": "shard"}, owner=("StatefulSet", "shard"))
    serve, shard = inspector.workload_pods(NS, "serve"), inspector.workload_pods(NS, "shard")
    assert serve is not None and (serve.kind, [p.name for p in serve.pods]) == ("Deployment", ["serve-7d9f-abcde"])
    assert serve.pods[0].owner == ("ReplicaSet", "serve-7d9f")
    assert shard is not None and (shard.kind, [p.name for p in shard.pods]) == ("StatefulSet", ["shard-0"])


def test_a_kueue_workload_is_found_with_its_jobs_pods(kube: KubeApiStandIn, inspector: ClusterInspector) -> None:
    kube.add_resource_flavor("h100")
    kube.add_cluster_queue("research", [resource_group([GPU], {"h100": {GPU: 4}})])
    kube.add_local_queue(NS, "training", "research")
    kube.add_job(NS, "sweep", suspend=True, pod_labels={"kueue.x-k8s.io/queue-name": "training"})
    kube.add_workload(NS, "job-sweep-3b7c1", queue="training", requests={GPU: 2}, pending="insufficient quota", job="sweep")
    held = inspector.workload_pods(NS, "job-sweep-3b7c1")
    assert held is not None and (held.kind, held.name, held.pods) == ("Workload", "job-sweep-3b7c1", ())
    kube.add_pod(NS, "sweep-0", gpus=2, phase="Pending", owner=("Job", "sweep"), scheduling_gates=["kueue.x-k8s.io/admission"])
    admitted = inspector.workload_pods(NS, "job-sweep-3b7c1")
    assert admitted is not None and [(p.name, p.scheduling_gates) for p in admitted.pods] == [
        ("sweep-0", ("kueue.x-k8s.io/admission",))
    ]


def test_a_name_nothing_has_is_none_and_without_kueue_no_workload_is_asked(
    kube: KubeApiStandIn, inspector: ClusterInspector
) -> None:
    kube.serve_kueue()
    assert inspector.workload_pods(NS, "nothing") is None
    assert not [path for path in gets(kube) if "/workloads/" in path]


def test_a_workload_lookup_the_chart_did_not_grant_reads_as_no_such_workload(
    kube: KubeApiStandIn, inspector: ClusterInspector
) -> None:
    # Kueue is installed but the chart was told it is not used (kueue.enabled false): no workloads grant. The
    # lookup is the last of the names tried, so the name is not a workload the bot governs, not a failure.
    kube.fail("GET", r"/workloads/", 403, times=5, message='workloads.kueue.x-k8s.io "x" is forbidden')
    assert inspector.workload_pods(NS, "nothing") is None
    assert [path for path in gets(kube) if "/workloads/" in path]  # asked, and refused


def test_nodes_carry_taints_labels_state_and_what_their_bound_pods_request(
    kube: KubeApiStandIn, inspector: ClusterInspector
) -> None:
    kube.log.clear()
    nodes = {node.name: node for node in inspector.nodes()}
    assert gets(kube) == ["/api/v1/nodes", "/api/v1/pods"]  # two calls, whatever the number of nodes
    a, b, c = nodes["gpu-node-a"], nodes["gpu-node-b"], nodes["gpu-node-c"]
    assert (a.allocatable[GPU], a.requested, a.free(GPU), a.product) == (8, {GPU: 5}, 3, "NVIDIA-A100-SXM4-80GB")
    assert b.taints == (Taint("nvidia.com/gpu", "true", "NoSchedule"),) and b.labels["pool"] == "h100"
    assert b.requested == {}  # the pending pod is bound to no node
    assert (c.unschedulable, c.ready) == (True, False)
    assert Taint("node.kubernetes.io/unschedulable", "", "NoSchedule") in c.taints
    assert nodes["cpu-node"].offered == ()


def test_a_taint_added_and_removed_is_read_back(kube: KubeApiStandIn, inspector: ClusterInspector) -> None:
    kube.taint_node("gpu-node-a", "dedicated=research:NoExecute")
    assert {n.name: n.taints for n in inspector.nodes()}["gpu-node-a"] == (Taint("dedicated", "research", "NoExecute"),)
    kube.untaint_node("gpu-node-a", "dedicated")
    assert {n.name: n.taints for n in inspector.nodes()}["gpu-node-a"] == ()


def test_scheduling_events_are_the_pods_failed_scheduling_latest_first(kube: KubeApiStandIn, inspector: ClusterInspector) -> None:
    older = failed_scheduling_event(NS, "train-x7k2p", "0/4 nodes are available: 4 Insufficient nvidia.com/gpu.")
    older["lastTimestamp"], older["metadata"]["name"] = "2020-01-01T00:00:00Z", "train-x7k2p.old"
    kube.add_event(older)
    kube.add_event(scheduling_failure_event(NS, "notebook", nodes=4))
    other_reason = failed_scheduling_event(NS, "train-x7k2p", "Successfully assigned")
    other_reason["reason"] = "Scheduled"
    kube.add_event(other_reason)
    events = inspector.scheduling_events(NS, "train-x7k2p")
    assert [(e.message, e.count) for e in events] == [(TAINT_MESSAGE, 3), (older["message"], 1)]


def test_priority_classes_with_their_preemption_policy(inspector: ClusterInspector) -> None:
    classes = inspector.priority_class_facts()
    assert (classes["low-priority-experiment"].value, classes["low-priority-experiment"].preemption_policy) == (100, "Never")
    assert classes["high-priority-business"].preemption_policy == "PreemptLowerPriority"


def test_the_autoscaler_status_in_its_yaml_and_its_older_text_form(kube: KubeApiStandIn, inspector: ClusterInspector) -> None:
    assert inspector.autoscaler_status() is None
    kube.add_config_map("kube-system", "cluster-autoscaler-status", {"status": AUTOSCALER_YAML})
    status = inspector.autoscaler_status()
    assert status is not None and (status.health, status.written_at) == ("Healthy", "2025-11-03 09:12:44.171 +0000 UTC")
    (pool,) = status.node_groups
    assert (pool.name, pool.health, pool.scale_up, pool.registered, pool.min_size, pool.max_size, pool.at_max) == (
        "h100-pool",
        "Healthy",
        "Backoff",
        2,
        0,
        2,
        True,
    )
    assert pool.backoff == "OUT_OF_RESOURCES: Instance type p5.48xlarge is out of capacity"
    kube.add_config_map("kube-system", "cluster-autoscaler-status", {"status": AUTOSCALER_TEXT})
    old = inspector.autoscaler_status()
    assert old is not None and old.node_groups == ()
    assert old.health.startswith("Healthy (ready=3")
    assert old.written_at == "2022-06-12 12:11:02.152766082 +0000 UTC"


def test_daemon_sets_of_every_namespace_and_a_device_plugin_that_stops_on_a_node(
    kube: KubeApiStandIn, inspector: ClusterInspector
) -> None:
    kube.add_namespace("gpu-operator")
    tolerate = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    kube.add_daemon_set(
        "gpu-operator",
        "nvidia-device-plugin-daemonset",
        labels={"app": "nvidia-device-plugin-daemonset"},
        desired=2,
        ready=2,
        node_selector={"nvidia.com/gpu.present": "true"},
        tolerations=tolerate,
    )
    kube.add_daemon_set("kube-system", "kube-proxy", desired=4, ready=4)
    kube.break_device_plugin("gpu-node-a")
    kube.break_device_plugin("gpu-node-a")  # once per node
    sets = {d.name: d for d in inspector.daemon_sets()}
    plugin = sets["nvidia-device-plugin-daemonset"]
    assert (plugin.namespace, plugin.desired, plugin.ready, plugin.available) == ("gpu-operator", 2, 1, 1)
    assert plugin.node_selector == {"nvidia.com/gpu.present": "true"}
    assert plugin.tolerations == (Toleration("nvidia.com/gpu", "Exists", "", "NoSchedule"),)
    assert sets["kube-proxy"].ready == 4
    node = {n.name: n for n in inspector.nodes()}["gpu-node-a"]
    assert (node.allocatable[GPU], node.offered) == (0, ())


@pytest.mark.parametrize(
    ("path", "read", "permission"),
    [
        (r"/apis/apps/v1/daemonsets$", lambda i: i.daemon_sets(), "list daemonsets.apps"),
        (
            r"/configmaps/cluster-autoscaler-status$",
            lambda i: i.autoscaler_status(),
            "get configmaps/cluster-autoscaler-status -n kube-system",
        ),
        (r"/pods/train-x7k2p$", lambda i: i.pod(NS, "train-x7k2p"), f"get pods -n {NS}"),
        (r"/jobs/train$", lambda i: i.workload_pods(NS, "train"), f"get jobs.batch -n {NS}"),
        (r"^/api/v1/pods$", lambda i: i.nodes(), "list pods -A"),
        (r"/namespaces/[^/]+/events$", lambda i: i.scheduling_events(NS, "x"), f"list events -n {NS}"),
        (r"/priorityclasses$", lambda i: i.priority_class_facts(), "list priorityclasses.scheduling.k8s.io"),
    ],
)
def test_an_rbac_refusal_names_the_permission(kube: KubeApiStandIn, inspector: ClusterInspector, path, read, permission) -> None:  # type: ignore[no-untyped-def]
    kube.fail("GET", path, 403, message="forbidden: User cannot do that")
    with pytest.raises(Forbidden) as refused:
        read(inspector)
    assert refused.value.permission == permission
    assert "HTTP 403" in str(refused.value)


def test_a_failing_api_server_is_temporary_and_one_that_does_not_answer_unreachable(
    kube: KubeApiStandIn, inspector: ClusterInspector
) -> None:
    kube.fail("GET", r"/api/v1/nodes$", 500)
    with pytest.raises(TemporaryError, match="HTTP 500"):
        inspector.nodes()
    kube.refuse_connections()
    with pytest.raises(Unreachable):
        inspector.pods(NS)
    kube.accept_connections()
    assert inspector.pods(NS)


def test_two_clusters_answer_with_keys_and_a_down_one_fails_only_its_own_calls(tmp_path: Path) -> None:
    home, us = KubeApiStandIn().start(), KubeApiStandIn().start()
    try:
        seed(home)
        us.add_namespace("biz-model-serving-us")
        us.add_node("us-gpu-node-a", 8, product=H100)
        us.add_pod("biz-model-serving-us", "ranker-us", gpus=6, node="us-gpu-node-a")
        us.add_daemon_set("gpu-operator", "nvidia-device-plugin-daemonset", desired=1, ready=1)
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", {"eu-1": home, "us-2": us}, current="eu-1")
        inspection = connect_inspection(connect_clusters(sandbox_policy(two_clusters=True), kubeconfig, timeout=(2.0, 5.0)))
        (remote,) = inspection.pods("us-2/biz-model-serving-us")
        assert (remote.namespace, remote.name, remote.node_gpu_labelled) == ("us-2/biz-model-serving-us", "ranker-us", True)
        assert [d.namespace for d in inspection.daemon_sets("us-2")] == ["us-2/gpu-operator"]
        assert [n.name for n in inspection.nodes("us-2")] == ["us-gpu-node-a"]
        pod = inspection.pod(NS, "notebook")
        assert pod is not None and pod.namespace == NS
        found = inspection.workload_pods(NS, "train")
        assert found is not None and [p.namespace for p in found.pods] == [NS]
        us.refuse_connections()
        with pytest.raises(Unreachable):
            inspection.nodes("us-2")
        with pytest.raises(ClusterDown):  # down now: refused at once, no second wait
            inspection.pod("us-2/biz-model-serving-us", "ranker-us")
        assert sorted(p.name for p in inspection.pods(NS)) == ["notebook", "train-x7k2p"]
        assert len(inspection.nodes()) == 4
        assert home.writes() == [] and us.writes() == []
    finally:
        home.stop()
        us.stop()
