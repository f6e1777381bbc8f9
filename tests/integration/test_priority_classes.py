"""Priority classes in view, end to end: the real kubernetes client lists pods and PriorityClasses from the
API stand-in over HTTP, ``status`` and the request card (signed Slack HTTP into the real Bolt app) show
them, the card warns about classes above what borrowed GPUs are for, and a GPU pod waiting for the
scheduler gets an alert that says so instead of blaming the quota."""

from __future__ import annotations

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from bot.clock import ManualClock
from bot.domain.policy import parse_policy
from bot.sandbox.kube_api import KubeApiStandIn, quota_refusal_event, scheduling_failure_event
from bot.sandbox.session import Sandbox
from bot.sandbox.world import seed_cluster
from tests.integration.conftest import START, SlackOverHttp

ALICE, LEE = "U0ALICE", "U0LEE"
FRONTIER = "ai-frontier-research"


def kube(slack: SlackOverHttp) -> KubeApiStandIn:
    assert slack.sandbox.kube is not None
    return slack.sandbox.kube


def pod_lists(stand_in: KubeApiStandIn) -> int:
    return sum(1 for method, path, _, _ in stand_in.log if method == "GET" and path.endswith("/pods"))


def test_status_shows_the_priority_classes_of_the_running_gpu_pods(slack: SlackOverHttp) -> None:
    kube(slack).add_pod(FRONTIER, "finished-run", gpus=4, priority_class="high-priority-business", phase="Succeeded")
    kube(slack).add_pod(FRONTIER, "cpu-only", gpus=0, priority_class="high-priority-business")
    seeded = sum(1 for (ns, _), pod in kube(slack).pods.items() if ns == FRONTIER and pod["status"]["phase"] == "Pending")
    kube(slack).add_pod(FRONTIER, "waiting", gpus=2, priority_class="low-priority-experiment", phase="Pending")
    slack.command(ALICE, f"status {FRONTIER}")
    answer = slack.responses()[-1]
    pending = f"{seeded + 1} GPU pod{'s' if seeded else ''} pending"  # the world's waiting pods and this one
    assert f"running: 3 GPUs in 2 pods — 2 × low-priority-experiment, 1 × default; {pending}" in answer
    # The list asked the API server to leave finished pods out, as the real one does with this selector.
    lists = [q for method, path, q, _ in kube(slack).log if method == "GET" and path == f"/api/v1/namespaces/{FRONTIER}/pods"]
    assert lists and all(q["fieldSelector"] == "status.phase!=Succeeded,status.phase!=Failed" for q in lists)


def test_status_says_when_the_pods_cannot_be_read(slack: SlackOverHttp) -> None:
    kube(slack).fail(
        "GET", r"/pods$", 403, times=5, message='pods is forbidden: User "gpu-quota-bot" cannot list resource "pods"'
    )
    slack.command(ALICE, f"status {FRONTIER}")
    answer = slack.responses()[-1]
    assert "*4* hard / 3 used" in answer
    assert "GPU pods unreadable: the cluster refused to let the bot list pods in ai-frontier-research (HTTP 403" in answer


def test_the_card_warns_when_running_pods_outrank_the_classes_for_borrowed_gpus(slack: SlackOverHttp) -> None:
    kube(slack).add_pod(FRONTIER, "urgent-eval", gpus=1, priority_class="high-priority-business")
    slack.command(ALICE, f"request {FRONTIER} +2 for 2d evaluation sweep")
    text = slack.current_text(slack.request_message())
    assert "GPU pods in ai-frontier-research now" in text
    assert "running: 4 GPUs in 3 pods — 2 × low-priority-experiment, 1 × default, 1 × high-priority-business" in text
    assert (
        ":warning: 1 GPU in 1 pod run as high-priority-business (priority 1000000), higher than borrowed GPUs allow "
        "(low-priority-experiment: at most 100)" in text
    )


def test_no_warning_for_pods_of_a_lower_class_than_borrowed_gpus_allow(slack: SlackOverHttp) -> None:
    # The sandbox's pods: low-priority-experiment (allowed) and one without a class (priority 0 < 100).
    slack.command(ALICE, f"request {FRONTIER} +2 for 2d evaluation sweep")
    text = slack.current_text(slack.request_message())
    assert "running: 3 GPUs in 2 pods" in text and ":warning:" not in text


def test_no_warning_on_a_permanent_request(slack: SlackOverHttp) -> None:
    kube(slack).add_pod(FRONTIER, "urgent-eval", gpus=1, priority_class="high-priority-business")
    slack.command(ALICE, f"request {FRONTIER} +1 permanent the team grows")
    text = slack.current_text(slack.request_message())
    assert "1 × high-priority-business" in text and ":warning:" not in text


def test_a_pod_waiting_for_gpus_is_reported_as_capacity_not_quota(slack: SlackOverHttp) -> None:
    box = slack.sandbox
    kube(slack).add_pod(FRONTIER, "sweep-7", gpus=2, priority_class="low-priority-experiment", phase="Pending")
    kube(slack).add_pod(FRONTIER, "sweep-8", gpus=1, phase="Pending", nominated_node="gpu-node-b")
    kube(slack).add_pod(FRONTIER, "since-scheduled", gpus=1)  # its old event outlives the wait
    for pod in ("sweep-7", "sweep-8", "since-scheduled"):
        kube(slack).add_event(scheduling_failure_event(FRONTIER, pod, nodes=3))
    kube(slack).add_event(quota_refusal_event(FRONTIER, "Job", "finetune", requested=2, used=4, limited=4))

    lists_before = pod_lists(kube(slack))
    reported = box.services.blocked.check()
    assert pod_lists(kube(slack)) == lists_before + 1  # one fresh list of the namespace for its three events
    assert reported == [f"{FRONTIER}/Job/finetune", f"{FRONTIER}/Pod/sweep-7", f"{FRONTIER}/Pod/sweep-8"]
    assert box.services.blocked.check() == []
    # Only the quota's refusal counts as the quota blocking the team (the weekly proposals cite it).
    today = box.clock.now().astimezone(box.policy.schedules.zone).date()
    assert box.database.run(lambda repo: repo.quota_blocks(today, today)) == {FRONTIER: 1}
    texts = [m.text for m in slack.channel_messages("C0FRONTIER")]
    quota_alert = next(t for t in texts if "finetune" in t)
    capacity_alert = next(t for t in texts if "sweep-7" in t)
    assert "the GPU quota is full" in quota_alert
    assert "2 GPU pods in *ai-frontier-research* wait for the scheduler, not the quota (`Insufficient nvidia.com/gpu`)" in (
        capacity_alert
    )
    assert "*sweep-7* (2 GPUs, low-priority-experiment): no free GPU, and no lower-priority pod to preempt" in capacity_alert
    assert "*sweep-8* (1 GPU, default): lower-priority pods are being preempted to make room for it" in capacity_alert
    assert "since-scheduled" not in capacity_alert and "More quota would not help" in capacity_alert
    capacity_message = next(m for m in slack.channel_messages("C0FRONTIER") if "sweep-7" in m.text)
    assert "Request more" not in str(capacity_message.blocks)


def test_a_pod_with_two_scheduling_events_is_alerted_once(slack: SlackOverHttp) -> None:
    """The scheduler records a new event when its message changes (here a node joined): two events, one pod."""
    box = slack.sandbox
    kube(slack).add_pod(FRONTIER, "sweep-7", gpus=2, priority_class="low-priority-experiment", phase="Pending")
    kube(slack).add_event(scheduling_failure_event(FRONTIER, "sweep-7", nodes=3))
    kube(slack).add_event(scheduling_failure_event(FRONTIER, "sweep-7", nodes=4, count=2))

    assert box.services.blocked.check() == [f"{FRONTIER}/Pod/sweep-7"]
    assert box.services.blocked.check() == []
    [alert] = [m.text for m in slack.channel_messages("C0FRONTIER") if "sweep-7" in m.text]
    assert alert.count("*sweep-7*") == 1


def test_the_stand_in_selects_pods_as_the_api_server_does() -> None:
    stand_in = KubeApiStandIn().start()
    try:
        _select_pods(stand_in)
    finally:
        stand_in.stop()


def _select_pods(stand_in: KubeApiStandIn) -> None:
    seed_cluster(stand_in)
    stand_in.add_pod(FRONTIER, "a", gpus=1, labels={"app": "train", "tier": "gpu"})
    stand_in.add_pod(FRONTIER, "b", gpus=1, labels={"app": "eval"}, phase="Pending")
    stand_in.add_pod(FRONTIER, "c", gpus=1, labels={"app": "train"}, phase="Failed")
    configuration = client.Configuration(host=stand_in.url, api_key={"authorization": f"Bearer {stand_in.token}"})
    api = client.CoreV1Api(client.ApiClient(configuration))

    def names(**selectors: str) -> list[str]:
        pods = api.list_namespaced_pod(FRONTIER, **selectors)
        assert pods.metadata.resource_version
        return sorted(p.metadata.name for p in pods.items if p.metadata.name in ("a", "b", "c"))

    assert names(label_selector="app=train") == ["a", "c"]
    assert names(label_selector="app in (train,eval),tier") == ["a"]
    assert names(label_selector="app!=train") == ["b"]
    assert names(label_selector="!tier,app notin (eval)") == ["c"]
    assert names(field_selector="status.phase!=Succeeded,status.phase!=Failed") == ["a", "b"]
    assert names(field_selector="status.phase=Pending") == ["b"]
    with pytest.raises(ApiException) as refused:
        api.list_namespaced_pod(FRONTIER, field_selector="spec.priorityClassName=x")
    assert refused.value.status == 400 and "field label not supported: spec.priorityClassName" in str(refused.value.body)
    stand_in.add_event(scheduling_failure_event(FRONTIER, "b", nodes=3))
    stand_in.add_event(quota_refusal_event(FRONTIER, "Job", "j", requested=1, used=4, limited=4))
    events = api.list_event_for_all_namespaces(field_selector="reason!=FailedCreate,source=default-scheduler")
    mine = [(e.reason, e.involved_object.name) for e in events.items if e.involved_object.name in ("a", "b", "c")]
    assert mine == [("FailedScheduling", "b")]
    classes = client.SchedulingV1Api(api.api_client).list_priority_class()
    assert {c.metadata.name: c.value for c in classes.items} == {
        "high-priority-business": 1000000,
        "low-priority-experiment": 100,
    }


@pytest.mark.postgres
def test_the_longest_names_are_alerted_once_on_postgresql(postgres_url: str) -> None:
    namespace = "research-" + "n" * 54  # 63 characters, the most a namespace may have
    policy = parse_policy({"teams": {"t": {"channel": "C0FRONTIER", "namespaces": [namespace], "approvers": {"users": [LEE]}}}})
    box = Sandbox(policy=policy, database_url=postgres_url, clock=ManualClock(START)).start()
    try:
        assert box.kube is not None
        box.kube.add_namespace(namespace)
        name = "sweep-" + "x" * 247  # 253 characters
        box.kube.add_pod(namespace, name, gpus=1, phase="Pending")
        box.kube.add_event(scheduling_failure_event(namespace, name, nodes=3))
        (key,) = box.services.blocked.check()
        assert key.startswith(f"{namespace}/Pod/sha256:") and len(key) <= 300
        assert box.services.blocked.check() == []
    finally:
        box.stop()
