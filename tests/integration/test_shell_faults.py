"""The sandbox as ``why`` and ``doctor`` find it, read through the wired ``ClusterInspection`` (the real client over
HTTP): a healthy GPU stack and a pending pod to ask about, then the shell's ``break device-plugin``, ``taint`` and
``untaint`` breaking and mending it."""

from __future__ import annotations

import io
from collections.abc import Iterator

import pytest

from bot.domain.scheduling import Taint
from bot.sandbox.session import Sandbox
from bot.sandbox.world import DEVICE_PLUGIN, H100, NO_NODE_MATCHES, sandbox_policy
from bot.services.ports import ClusterInspection
from bot.shell import Shell

FRONTIER = "ai-frontier-research"


@pytest.fixture
def sandbox() -> Iterator[Sandbox]:
    box = Sandbox(policy=sandbox_policy(two_clusters=True)).start()
    yield box
    box.stop()


def inspection(sandbox: Sandbox) -> ClusterInspection:
    assert sandbox.services is not None and sandbox.services.inspection is not None
    return sandbox.services.inspection


def run(sandbox: Sandbox, *lines: str) -> str:
    out = io.StringIO()
    shell = Shell(sandbox, out=out)
    for line in lines:
        shell.execute(line)
    return out.getvalue()


def test_the_sandbox_has_a_healthy_gpu_stack_in_both_clusters(sandbox: Sandbox) -> None:
    for cluster, count in (("", 5), ("us-2", 2)):
        (plugin,) = [d for d in inspection(sandbox).daemon_sets(cluster) if d.name == DEVICE_PLUGIN]
        gpu_nodes = [n for n in inspection(sandbox).nodes(cluster) if n.gpu_labelled]
        assert (plugin.desired, plugin.ready, len(gpu_nodes)) == (count, count, count)
        assert all(plugin.runs_on(node) and node.offered for node in gpu_nodes)
    assert {n.mig_config_state for n in inspection(sandbox).nodes() if n.mig_config_state} == {"success"}


def test_the_sandbox_has_a_pending_pod_whose_node_selector_matches_no_node(sandbox: Sandbox) -> None:
    found = inspection(sandbox).workload_pods(FRONTIER, "llm-finetune")
    assert found is not None and found.kind == "Job"
    (pod,) = found.pods
    assert (pod.name, pod.pending, pod.requests, pod.node_selector) == (
        "llm-finetune-x2k9p",
        True,
        {"nvidia.com/gpu": 2},
        {"nvidia.com/gpu.product": H100},
    )
    assert not any(pod.selects(node) for node in inspection(sandbox).nodes())
    assert [e.message for e in inspection(sandbox).scheduling_events(FRONTIER, pod.name)] == [NO_NODE_MATCHES]


def test_break_device_plugin_taint_and_untaint_change_what_the_bot_reads(sandbox: Sandbox) -> None:
    said = run(
        sandbox,
        "break device-plugin gpu-node-b",
        "taint gpu-node-c nvidia.com/gpu=true:NoSchedule",
        "taint us-gpu-node-a dedicated=serving:NoExecute",
    )
    assert "The NVIDIA device plugin stopped on gpu-node-b" in said
    assert "node/gpu-node-c tainted nvidia.com/gpu=true:NoSchedule" in said
    nodes = {n.name: n for n in inspection(sandbox).nodes()}
    assert (nodes["gpu-node-b"].offered, nodes["gpu-node-b"].gpu_labelled) == ((), True)
    assert nodes["gpu-node-c"].taints == (Taint("nvidia.com/gpu", "true", "NoSchedule"),)
    (plugin,) = [d for d in inspection(sandbox).daemon_sets() if d.name == DEVICE_PLUGIN]
    assert (plugin.desired, plugin.ready) == (5, 4)
    assert {n.name: n.taints for n in inspection(sandbox).nodes("us-2")}["us-gpu-node-a"] == (
        Taint("dedicated", "serving", "NoExecute"),
    )
    assert "node/gpu-node-c untainted" in run(sandbox, "untaint gpu-node-c nvidia.com/gpu")
    assert {n.name: n.taints for n in inspection(sandbox).nodes()}["gpu-node-c"] == ()
    assert all(kube.writes() == [] for kube in sandbox.kubes.values())


@pytest.mark.parametrize(
    "line",
    [
        "break device-plugin no-such-node",
        "break gpu-node-a",
        "taint gpu-node-a nvidia.com/gpu=true:Sometimes",
        "taint gpu-node-a",
        "untaint nope key",
    ],
)
def test_a_shell_fault_that_does_not_apply_says_how(sandbox: Sandbox, line: str) -> None:
    said = run(sandbox, line)
    assert "Usage (sandbox only)" in said and "gpu-node-a" in said
    assert all(t == () for t in (n.taints for n in inspection(sandbox).nodes()))
