"""The pure part of the Kueue target (bot/domain/kueue.py): Kueue's pending messages read, the stamp keys, and
the JSON Patch a ClusterQueue write sends (bot/adapters/kueue.py ``write_operations``, ``pending_workload``)."""

from __future__ import annotations

import re

import pytest

from bot.adapters.kueue import pending_workload, write_operations
from bot.domain.kueue import ClusterQueueSnapshot, Lack, PendingWorkload, QuotaShortfall, parse_shortfalls
from bot.domain.quota import QuotaSnapshot, stamp_annotations

GPU = "nvidia.com/gpu"
# A name part of an annotation key: at most 63 characters, alphanumeric at both ends, [-_.] and alphanumerics within.
ANNOTATION_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")

# Messages as Kueue's scheduler writes them (flavorassigner.go's formats; examples seen in Kueue's issues,
# its docs and the logs of real clusters).
REAL = [
    (
        "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor h100, 2 more needed",
        [QuotaShortfall("main", GPU, "h100", Lack.UNUSED_QUOTA, 2)],
    ),
    (
        "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default-flavor, 100m more needed",
        [QuotaShortfall("main", "cpu", "default-flavor", Lack.UNUSED_QUOTA, None)],
    ),
    (
        "couldn't assign flavors to pod set worker: borrowing limit for nvidia.com/gpu in flavor ml.g5.8xlarge exceeded",
        [QuotaShortfall("worker", GPU, "ml.g5.8xlarge", Lack.BORROWING_LIMIT, None)],
    ),
    (
        "couldn't assign flavors to pod set main: insufficient quota for cpu in flavor default-flavor in ClusterQueue",
        [QuotaShortfall("main", "cpu", "default-flavor", Lack.CAPACITY, None)],
    ),
    (
        "couldn't assign flavors to pod set main: insufficient quota for nvidia.com/gpu in flavor gpu-flavor, "
        "request > maximum capacity (24 > 16)",
        [QuotaShortfall("main", GPU, "gpu-flavor", Lack.CAPACITY, 8)],
    ),
    (
        "couldn't assign flavors to pod set main: insufficient quota for nvidia.com/gpu in flavor h100, previously considered "
        "podsets requests (2) + current podset request (4) > maximum capacity (4)",
        [QuotaShortfall("main", GPU, "h100", Lack.CAPACITY, 2)],
    ),
    (
        "couldn't assign flavors to pod set main: insufficient unused quota in cohort for nvidia.com/gpu in flavor a100, 4 more needed",
        [QuotaShortfall("main", GPU, "a100", Lack.UNUSED_QUOTA, 4)],
    ),
    (
        "couldn't assign flavors to pod set pathways-head: resource memory unavailable in ClusterQueue",
        [QuotaShortfall("pathways-head", "memory", None, Lack.NOT_COVERED, None)],
    ),
    (
        "couldn't assign flavors to pod set leader: insufficient unused quota for nvidia.com/gpu in flavor tas-gpu-flavor, 32 more "
        "needed; couldn't assign flavors to pod set worker: insufficient unused quota for nvidia.com/gpu in flavor tas-gpu-flavor, "
        "32 more needed",
        [
            QuotaShortfall("leader", GPU, "tas-gpu-flavor", Lack.UNUSED_QUOTA, 32),
            QuotaShortfall("worker", GPU, "tas-gpu-flavor", Lack.UNUSED_QUOTA, 32),
        ],
    ),
    (
        "couldn't assign flavors to pod set leader: topology \"cloud.provider.com/topology-block\" doesn't allow to fit any of 1 "
        "pod(s); couldn't assign flavors to pod set workers: insufficient quota for nvidia.com/gpu",
        [QuotaShortfall("workers", GPU, None, Lack.CAPACITY, None)],
    ),
    (
        "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor gpu-flavor, 8 more needed. "
        "Pending the preemption of 2 workload(s)",
        [QuotaShortfall("main", GPU, "gpu-flavor", Lack.UNUSED_QUOTA, 8)],
    ),
    ("LocalQueue user-queue doesn't exist", []),
    ("failed to assign flavors to pod set main: flavor h100 not found", []),
]


@pytest.mark.parametrize(("message", "expected"), REAL)
def test_kueues_pending_messages_are_read_per_pod_set_resource_and_flavor(message: str, expected: list[QuotaShortfall]) -> None:
    assert list(parse_shortfalls(message)) == expected


def test_several_flavors_tried_are_each_a_shortfall_in_the_order_said() -> None:
    message = (
        "couldn't assign flavors to pod set main: insufficient quota for nvidia.com/gpu in flavor a100, request > maximum "
        "capacity (8 > 4), insufficient unused quota for nvidia.com/gpu in flavor h100, 3 more needed, insufficient unused "
        "quota for nvidia.com/mig-3g.40gb in flavor h100-mig, 1 more needed"
    )
    assert [(s.resource, s.flavor, s.lack, s.more_needed) for s in parse_shortfalls(message)] == [
        (GPU, "a100", Lack.CAPACITY, 4),
        (GPU, "h100", Lack.UNUSED_QUOTA, 3),
        ("nvidia.com/mig-3g.40gb", "h100-mig", Lack.UNUSED_QUOTA, 1),
    ]


def waiting(message: str) -> PendingWorkload:
    return PendingWorkload("ns", "wl", "lq", None, None, "Pending", message, parse_shortfalls(message))


def test_more_needed_is_the_largest_figure_for_the_resource_and_none_when_unsaid() -> None:
    message = (
        "couldn't assign flavors to pod set a: insufficient unused quota for nvidia.com/gpu in flavor h100, 1 more needed; "
        "couldn't assign flavors to pod set b: insufficient unused quota for nvidia.com/gpu in flavor h100, 5 more needed, "
        "insufficient unused quota for nvidia.com/gpu in flavor a100, 7 more needed"
    )
    assert waiting(message).more_needed(GPU, "h100") == 5
    assert waiting(message).more_needed(GPU) == 7
    assert waiting(message).more_needed("amd.com/gpu") is None
    limited = "couldn't assign flavors to pod set main: borrowing limit for nvidia.com/gpu in flavor h100 exceeded"
    assert waiting(limited).more_needed(GPU) is None and not waiting(limited).preemption_pending
    assert waiting(REAL[10][0]).preemption_pending


def test_stamp_annotations_name_the_flavor_and_resource_and_are_valid_annotation_keys() -> None:
    assert stamp_annotations(GPU, qualifier="h100") == (
        "gpu-quota-bot.io/applied.h100.nvidia.com_gpu",
        "gpu-quota-bot.io/applied-by.h100.nvidia.com_gpu",
    )
    for flavor, resource in (
        ("h100", "nvidia.com/mig-1g.10gb.me"),
        ("f" * 40, "nvidia.com/mig-3g.40gb"),
        ("a." * 126 + "b", GPU),
    ):
        applied, applied_by = stamp_annotations(resource, qualifier=flavor)
        names = [key.removeprefix("gpu-quota-bot.io/") for key in (applied, applied_by)]
        assert all(ANNOTATION_NAME.fullmatch(name) for name in names), names
        assert names[0].removeprefix("applied.") == names[1].removeprefix("applied-by.")  # the two keys of one stamp pair up
    long_a, long_b = stamp_annotations(GPU, qualifier="f" * 60), stamp_annotations("amd.com/gpu", qualifier="f" * 60)
    assert long_a != long_b and long_a == stamp_annotations(GPU, qualifier="f" * 60)  # shortened keys stay distinct and stable


def snapshot(*, annotated: bool, borrowing_limit: int | None = None) -> ClusterQueueSnapshot:
    return ClusterQueueSnapshot(
        namespace="ns",
        name="cq",
        hard=8,
        used=6,
        limits=None,
        resource_version="41",
        bot_applied=None,
        flavor="h100",
        resource=GPU,
        group_index=1,
        flavor_index=2,
        resource_index=0,
        borrowing_limit=borrowing_limit,
        cohort="pool",
        in_use=6,
        borrowed=0,
        pending_workloads=0,
        annotated=annotated,
    )


def test_a_cluster_queue_snapshot_is_a_quota_snapshot() -> None:
    assert isinstance(snapshot(annotated=False), QuotaSnapshot)


def test_the_write_is_the_versions_precondition_the_name_tests_the_quota_and_the_stamps() -> None:
    operations = write_operations(snapshot(annotated=True), gpus=10, applied_by="GQ-17", borrowing_limit_delta=False)
    quota = "/spec/resourceGroups/1/flavors/2/resources/0"
    assert operations == [
        {"op": "replace", "path": "/metadata/resourceVersion", "value": "41"},
        {"op": "test", "path": "/spec/resourceGroups/1/flavors/2/name", "value": "h100"},
        {"op": "test", "path": f"{quota}/name", "value": GPU},
        {"op": "replace", "path": f"{quota}/nominalQuota", "value": 10},
        {"op": "add", "path": "/metadata/annotations/gpu-quota-bot.io~1applied.h100.nvidia.com_gpu", "value": "10"},
        {"op": "add", "path": "/metadata/annotations/gpu-quota-bot.io~1applied-by.h100.nvidia.com_gpu", "value": "GQ-17"},
    ]
    bare = write_operations(
        snapshot(annotated=False, borrowing_limit=2), gpus=3, applied_by="reconcile", borrowing_limit_delta=True
    )
    assert bare[4] == {"op": "replace", "path": f"{quota}/borrowingLimit", "value": 0}  # 2 + (3 - 8), never below 0
    assert bare[5] == {
        "op": "add",
        "path": "/metadata/annotations",
        "value": {
            "gpu-quota-bot.io/applied.h100.nvidia.com_gpu": "3",
            "gpu-quota-bot.io/applied-by.h100.nvidia.com_gpu": "reconcile",
        },
    }


def workload(*conditions: tuple[str, str], active: bool = True) -> dict[str, object]:
    return {
        "metadata": {"name": "wl", "namespace": "ns", "creationTimestamp": "2026-11-30T08:00:00Z"},
        "spec": {"queueName": "lq", "active": active, "podSets": []},
        "status": {"conditions": [{"type": t, "status": s, "message": "m", "reason": "r"} for t, s in conditions]},
    }


def test_only_workloads_whose_quota_is_not_reserved_are_pending() -> None:
    assert pending_workload(workload(("QuotaReserved", "False"))) is not None
    assert pending_workload(workload(("QuotaReserved", "True"), ("Admitted", "True"))) is None
    assert pending_workload(workload()) is None  # not yet seen by Kueue's scheduler
    assert pending_workload(workload(("QuotaReserved", "False"), ("Finished", "True"))) is None
    assert pending_workload(workload(("QuotaReserved", "False"), active=False)) is None
