"""The Kubernetes API's JSON as scheduling facts (bot/adapters/inspect.py): effective requests, limits, affinity
terms, owners, scheduling conditions, events, label selectors and the cluster autoscaler's status."""

from __future__ import annotations

from typing import Any

from bot.adapters.inspect import (
    effective_requests,
    is_limited,
    label_selector,
    parse_autoscaler_status,
    pod_facts,
    scheduler_event,
)
from bot.domain.scheduling import Requirement, SelectorTerm

GPU, SLICE = "nvidia.com/gpu", "nvidia.com/mig-1g.10gb"


def container(requests: dict[str, str] | None = None, limits: dict[str, str] | None = None) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if requests is not None:
        resources["requests"] = requests
    if limits is not None:
        resources["limits"] = limits
    return {"name": "c", "resources": resources}


def test_effective_requests_are_the_containers_sum_or_the_largest_init_container() -> None:
    spec = {
        "containers": [container({GPU: "1", "cpu": "4"}, {GPU: "1"}), container({GPU: "2", SLICE: "1"}, {GPU: "2", SLICE: "1"})],
        "initContainers": [container({GPU: "4"}, {GPU: "4"}), container({SLICE: "0"}, {SLICE: "0"})],
    }
    assert effective_requests(spec) == {GPU: 4, SLICE: 1}  # cpu is not an extended resource
    assert effective_requests(
        {"containers": [container({GPU: "3"}, {GPU: "3"})], "initContainers": [container({GPU: "1"}, {GPU: "1"})]}
    ) == {GPU: 3}


def test_a_limit_alone_is_the_request_and_a_request_without_limit_is_not_limited() -> None:
    assert effective_requests({"containers": [container(limits={GPU: "2"})]}) == {GPU: 2}
    assert is_limited({"containers": [container(limits={GPU: "2"})]})
    assert not is_limited({"containers": [container({GPU: "2"})]})
    assert not is_limited({"containers": [container({"cpu": "1"})], "initContainers": [container({SLICE: "1"}, {})]})
    assert is_limited({"containers": [container({"cpu": "1"})]})


def test_sidecar_init_containers_add_to_the_containers_as_the_scheduler_counts_them() -> None:
    sidecar = {**container({GPU: "1"}, {GPU: "1"}), "restartPolicy": "Always"}
    assert effective_requests({"containers": [container({GPU: "1"}, {GPU: "1"})], "initContainers": [sidecar]}) == {GPU: 2}
    # An ordinary init container after the sidecar runs beside it: the init phase's peak is 1 + 3.
    later = container({GPU: "3"}, {GPU: "3"})
    spec = {"containers": [container({GPU: "1"}, {GPU: "1"})], "initContainers": [sidecar, later]}
    assert effective_requests(spec) == {GPU: 4}
    # Before the sidecar starts it does not count: 3, then 1 + 1 running.
    assert effective_requests({**spec, "initContainers": [later, sidecar]}) == {GPU: 3}


def test_a_pod_is_read_with_its_affinity_owner_gates_and_unschedulable_condition() -> None:
    item = {
        "metadata": {
            "name": "p",
            "namespace": "ns",
            "creationTimestamp": "2025-11-03T09:00:00Z",
            "ownerReferences": [
                {"kind": "Workload", "name": "not-the-controller"},
                {"kind": "Job", "name": "train", "controller": True},
            ],
        },
        "spec": {
            "containers": [container({GPU: "2"}, {GPU: "2"})],
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [{"key": "gpus", "operator": "Gt", "values": ["4"]}],
                                "matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["bad"]}],
                            }
                        ]
                    }
                }
            },
            "schedulingGates": [{"name": "kueue.x-k8s.io/admission"}],
        },
        "status": {
            "phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated", "message": "blocked"}],
        },
    }
    facts = pod_facts(item)
    assert facts.required_terms == (
        SelectorTerm((Requirement("gpus", "Gt", ("4",)), Requirement("metadata.name", "NotIn", ("bad",)))),
    )
    assert (facts.owner, facts.scheduling_gates, facts.unschedulable_message) == (
        ("Job", "train"),
        ("kueue.x-k8s.io/admission",),
        None,
    )
    assert (facts.preemption_policy, facts.priority, facts.created_at is not None) == ("PreemptLowerPriority", 0, True)
    item["status"]["conditions"] = [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/3 nodes"}
    ]
    assert pod_facts(item).unschedulable_message == "0/3 nodes"


def test_an_event_recorded_through_events_k8s_io_has_its_count_and_time_in_its_series() -> None:
    event = scheduler_event(
        {
            "message": "m",
            "count": None,
            "eventTime": "2025-11-03T09:00:00.000000Z",
            "series": {"count": 7, "lastObservedTime": "2025-11-03T10:00:00.000000Z"},
        }
    )
    assert (event.count, event.last_seen is not None and event.last_seen.hour) == (7, 10)
    assert scheduler_event({"message": "m"}).count == 1


def test_a_label_selector_as_the_query_takes_it() -> None:
    selector = {
        "matchLabels": {"app": "serve", "tier": "gpu"},
        "matchExpressions": [
            {"key": "track", "operator": "In", "values": ["a", "b"]},
            {"key": "canary", "operator": "DoesNotExist"},
            {"key": "owner", "operator": "Exists"},
            {"key": "zone", "operator": "NotIn", "values": ["x"]},
        ],
    }
    assert label_selector(selector) == "app=serve,tier=gpu,track in (a,b),!canary,owner,zone notin (x)"
    assert label_selector({}) is None and label_selector(None) is None


def test_an_autoscaler_status_that_is_neither_form_keeps_its_first_line() -> None:
    status = parse_autoscaler_status("\n  something odd: [\n")
    assert (status.health, status.node_groups, status.written_at) == ("something odd: [", (), "")
    assert parse_autoscaler_status("").health == ""
    initializing = parse_autoscaler_status("time: now\nautoscalerStatus: Initializing\n")
    assert (initializing.health, initializing.written_at, initializing.node_groups) == ("", "now", ())
