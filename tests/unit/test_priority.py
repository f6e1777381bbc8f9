"""Priority classes: the pod mix a namespace runs, warnings for borrowed GPUs, why a GPU pod waits,
the policy's ``borrowed_priority_classes``, the cached pod view, and a pod's GPUs as the API sends it."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from bot.adapters.kube import gpu_pod
from bot.adapters.slack import pod_words
from bot.adapters.slack.mrkdwn import render
from bot.domain.policy import PolicyError, parse_policy
from bot.domain.priority import (
    ClassWarning,
    GpuPod,
    PodMix,
    WaitCause,
    borrowed_class_warnings,
    pod_mix,
    wait_cause,
)
from bot.domain.quota import QuotaScope
from bot.errors import TemporaryError
from bot.services.blocked import KEY_LIMIT, alert_key
from bot.services.pods import PodView
from bot.services.ports import SchedulingFailure

VALUES = {"high-priority-business": 1_000_000, "research-low": 100, "research-mid": 500}


def pod(name: str, gpus: int, priority_class: str = "", phase: str = "Running") -> GpuPod:
    return GpuPod("ns-a", name, gpus, priority_class, phase, None)


def describe_mix(mix: PodMix) -> str:
    return render(pod_words.mix_notice(mix))


def describe_warning(warning: ClassWarning, allowed: list[str]) -> str:
    return render(pod_words.warning_notice(warning, allowed))


def test_the_mix_counts_gpus_per_class_of_running_pods_most_first() -> None:
    mix = pod_mix([pod("a", 1, "research-low"), pod("b", 1, ""), pod("c", 1, "research-low"), pod("d", 4, "x", "Pending")])
    assert describe_mix(mix) == "running: 3 GPUs in 3 pods — 2 × research-low, 1 × default; 1 GPU pod pending"
    assert describe_mix(pod_mix([])) == "running: no GPU pods"
    assert describe_mix(pod_mix([pod("a", 1)])) == "running: 1 GPU in 1 pod — 1 × default"


def test_classes_at_or_below_the_highest_allowed_are_fine() -> None:
    pods = [pod("a", 2, "research-low"), pod("b", 1, ""), pod("c", 1, "research-low")]
    assert borrowed_class_warnings(pods, allowed=["research-mid"], values=VALUES) == []


def test_a_higher_class_is_warned_with_its_gpus_and_values() -> None:
    pods = [pod("a", 2, "high-priority-business"), pod("b", 1, "high-priority-business"), pod("c", 4, "research-low")]
    (warning,) = borrowed_class_warnings(pods, allowed=["research-low"], values=VALUES)
    assert (warning.priority_class, warning.gpus, warning.pods, warning.higher) == ("high-priority-business", 3, 2, True)
    assert describe_warning(warning, ["research-low"]) == (
        ":warning: 3 GPUs in 2 pods run as high-priority-business (priority 1000000), higher than borrowed GPUs allow "
        "(research-low: at most 100)"
    )


def test_an_unknown_class_cannot_be_compared_and_is_warned() -> None:
    (warning,) = borrowed_class_warnings([pod("a", 1, "gone-class")], allowed=["research-low"], values=VALUES)
    assert not warning.higher
    assert describe_warning(warning, ["research-low"]) == (
        ":warning: 1 GPU in 1 pod run as gone-class, not one of the classes borrowed GPUs are meant for (research-low)"
    )


def test_pods_without_a_class_have_priority_zero_and_pending_pods_do_not_count() -> None:
    assert borrowed_class_warnings([pod("a", 1, "")], allowed=["research-low"], values=VALUES) == []
    pending = [pod("a", 8, "high-priority-business", "Pending")]
    assert borrowed_class_warnings(pending, allowed=["research-low"], values=VALUES) == []
    assert borrowed_class_warnings([pod("a", 1, "high-priority-business")], allowed=[], values=VALUES) == []


# The kube-scheduler's messages (Kubernetes 1.24+).
NO_VICTIMS = (
    "0/3 nodes are available: 3 Insufficient nvidia.com/gpu. preemption: 0/3 nodes are available: "
    "3 No preemption victims found for incoming pod."
)
NEVER = "0/3 nodes are available: 3 Insufficient nvidia.com/gpu. preemption: not eligible due to preemptionPolicy=Never."
MIXED = (
    "0/4 nodes are available: 1 node(s) had untolerated taint {dedicated: infra}, 3 Insufficient nvidia.com/gpu. "
    "preemption: 0/4 nodes are available: 1 Preemption is not helpful for scheduling, 3 No preemption victims found for incoming pod."
)


@pytest.mark.parametrize(
    ("message", "nominated", "cause"),
    [
        (NO_VICTIMS, None, WaitCause.NO_VICTIMS),
        (NO_VICTIMS, "gpu-node-b", WaitCause.PREEMPTING),
        (NEVER, None, WaitCause.NEVER_PREEMPTS),
        (MIXED, None, WaitCause.NO_VICTIMS),
        ("0/3 nodes are available: 3 Insufficient nvidia.com/gpu.", None, WaitCause.NO_CAPACITY),
        ("0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: 3 No preemption victims", None, None),
    ],
)
def test_why_a_gpu_pod_waits(message: str, nominated: str | None, cause: WaitCause | None) -> None:
    assert wait_cause(message, nominated_node=nominated) == cause


def test_the_namespace_list_overrides_the_team_list() -> None:
    policy = parse_policy(
        {
            "teams": {
                "t": {
                    "channel": "C1",
                    "approvers": {"users": ["U1"]},
                    "borrowed_priority_classes": ["research-low"],
                    "namespaces": ["ns-a", {"name": "ns-b", "borrowed_priority_classes": ["research-mid"]}, "ns-c"],
                },
                "u": {"channel": "C2", "approvers": {"users": ["U2"]}, "namespaces": ["ns-d"]},
            }
        }
    )
    assert policy.borrowed_priority_classes("ns-a") == ("research-low",)
    assert policy.borrowed_priority_classes("ns-b") == ("research-mid",)
    assert policy.borrowed_priority_classes("ns-d") == ()
    assert policy.borrowed_priority_classes("unmanaged") == ()


def test_a_class_name_that_cannot_exist_is_a_policy_error() -> None:
    team = {
        "channel": "C1",
        "approvers": {"users": ["U1"]},
        "namespaces": ["ns-a"],
        "borrowed_priority_classes": ["Research_Low"],
    }
    with pytest.raises(PolicyError, match="not PriorityClass names: Research_Low"):
        parse_policy({"teams": {"t": team}})


class CountingWorkloads:
    def __init__(self) -> None:
        self.pod_lists = 0
        self.class_lists = 0
        self.fail_next = False

    def gpu_pods(self, namespace: str, resource: str) -> list[GpuPod]:
        self.pod_lists += 1
        if self.fail_next:
            self.fail_next = False
            raise TemporaryError("the Kubernetes API did not answer")
        return [pod("a", 1, "high-priority-business")]

    def priority_classes(self, cluster: str = "") -> dict[str, int]:
        self.class_lists += 1
        return dict(VALUES)

    def scheduling_failures(self) -> list[SchedulingFailure]:
        return []


def test_the_view_reads_each_namespace_once_per_ttl_and_remembers_a_failure_briefly() -> None:
    policy = parse_policy(
        {
            "teams": {
                "t": {
                    "channel": "C1",
                    "approvers": {"users": ["U1"]},
                    "namespaces": ["ns-a"],
                    "borrowed_priority_classes": ["research-low"],
                }
            }
        }
    )
    now = [0.0]
    workloads = CountingWorkloads()
    view = PodView(workloads=workloads, policy=policy, ttl=30.0, failure_ttl=5.0, monotonic=lambda: now[0])
    workloads.fail_next = True
    assert view.in_view(QuotaScope("ns-a")).error == "the Kubernetes API did not answer"
    now[0] = 4.0
    assert view.in_view(QuotaScope("ns-a")).error == "the Kubernetes API did not answer"
    assert workloads.pod_lists == 1  # a hung API server is not asked again for every card
    now[0] = 5.0
    first = view.in_view(QuotaScope("ns-a"))
    assert first.error is None and first.warnings[0].priority_class == "high-priority-business"
    assert [(p.name, p.gpus, p.priority_class) for p in first.pods] == [("a", 1, "high-priority-business")]
    now[0] = 34.0
    view.in_view(QuotaScope("ns-a"))
    assert (workloads.pod_lists, workloads.class_lists) == (2, 1)
    now[0] = 36.0
    view.in_view(QuotaScope("ns-a"))
    assert (workloads.pod_lists, workloads.class_lists) == (3, 2)
    assert len(view.pods(QuotaScope("ns-a"), fresh=True)) == 1 and workloads.pod_lists == 4


def test_a_pods_gpus_are_its_containers_sum_or_its_largest_init_container() -> None:
    item = {
        "metadata": {"name": "train-0", "namespace": "ns-a", "creationTimestamp": "2026-11-30T08:00:00Z"},
        "spec": {
            "priorityClassName": "research-low",
            "priority": 100,
            "initContainers": [{"name": "warm", "resources": {"requests": {"nvidia.com/gpu": "3"}}}],
            "containers": [
                {"name": "main", "resources": {"requests": {"nvidia.com/gpu": "1", "cpu": "4"}}},
                {"name": "side", "resources": {"requests": {"nvidia.com/gpu": "1"}}},
            ],
        },
        "status": {"phase": "Running", "startTime": "2026-11-30T08:01:00Z"},
    }
    parsed = gpu_pod(item)
    assert parsed is not None
    assert (parsed.gpus, parsed.priority_class, parsed.priority, parsed.phase) == (3, "research-low", 100, "Running")
    assert parsed.started_at == datetime(2026, 11, 30, 8, 1, tzinfo=timezone.utc)
    assert gpu_pod({"metadata": {"name": "web"}, "spec": {"containers": [{"name": "c", "resources": {}}]}}) is None


def test_alert_keys_fit_their_column_whatever_the_name() -> None:
    assert alert_key("ns-a", "Pod", "sweep-7") == "ns-a/Pod/sweep-7"
    long = alert_key("n" * 63, "Pod", "p" * 253)
    assert len(long) <= KEY_LIMIT and long != alert_key("n" * 63, "Pod", "p" * 252 + "q")
