"""``KueueCluster`` (bot/adapters/kueue.py) over HTTP with the real ``kubernetes`` client against the Kubernetes
API stand-in serving Kueue: a ClusterQueue's nominalQuota raised and lowered, a hand edit or a reorder of
the flavors between read and write refused (nothing written), dry runs, other flavors untouched, a
v1beta1-only cluster, no Kueue at all, and the Workloads waiting for quota."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import config

from bot.adapters.kueue import KueueCluster
from bot.domain.kueue import Lack
from bot.domain.quota import stamp_annotations
from bot.errors import KueueObjectMissing, KueuePart, PermanentError, QuotaConflict, TemporaryError
from bot.sandbox.kube_api import KubeApiStandIn
from tests.integration.kueue_world import COHORT, CREATED, GPU, PROD, RESEARCH, RESEARCH_QUEUE, seed_kueue

APPLIED, APPLIED_BY = stamp_annotations(GPU, qualifier="h100")


@pytest.fixture
def kube() -> Iterator[KubeApiStandIn]:
    stand_in = KubeApiStandIn().start()
    seed_kueue(stand_in)
    yield stand_in
    stand_in.stop()


@pytest.fixture
def kubeconfig(kube: KubeApiStandIn, tmp_path: Path) -> Path:
    return kube.write_kubeconfig(tmp_path / "kubeconfig")


@pytest.fixture
def kueue(kubeconfig: Path) -> KueueCluster:
    return KueueCluster(config.new_client_from_config(config_file=str(kubeconfig)))


def patches(kube: KubeApiStandIn) -> list[tuple[str, dict[str, str], list[dict[str, object]]]]:
    return [(path, query, body) for method, path, query, body in kube.writes() if method == "PATCH"]


def test_the_version_comes_from_discovery_once_per_process(kube: KubeApiStandIn, kueue: KueueCluster) -> None:
    assert kueue.api_version() == "v1beta2"
    assert kueue.api_version() == "v1beta2"
    kueue.read_cluster_queue(RESEARCH, RESEARCH_QUEUE, "h100", GPU)
    assert [path for method, path, _, _ in kube.log if method == "GET" and path == "/apis/kueue.x-k8s.io"] == [
        "/apis/kueue.x-k8s.io"
    ]


def test_a_read_is_the_flavor_and_resource_as_a_quota_snapshot(kueue: KueueCluster) -> None:
    snapshot = kueue.read_cluster_queue(RESEARCH, RESEARCH_QUEUE, "h100", GPU)
    assert (snapshot.namespace, snapshot.name, snapshot.hard, snapshot.used, snapshot.limits) == (
        RESEARCH,
        RESEARCH_QUEUE,
        8,
        6,
        None,
    )
    assert (snapshot.group_index, snapshot.flavor_index, snapshot.resource_index) == (1, 0, 0)
    assert (snapshot.borrowing_limit, snapshot.cohort, snapshot.in_use, snapshot.borrowed) == (4, COHORT, 6, 0)
    assert (snapshot.pending_workloads, snapshot.bot_applied, snapshot.annotated) == (1, None, False)
    a100 = kueue.read_cluster_queue(RESEARCH, RESEARCH_QUEUE, "a100", GPU)
    assert (a100.hard, a100.used, a100.flavor_index, a100.borrowing_limit) == (4, 0, 1, None)


def test_nominal_quota_raised_then_lowered_stamped_and_nothing_else_touched(kube: KubeApiStandIn, kueue: KueueCluster) -> None:
    before = kueue.read_cluster_queue(RESEARCH, RESEARCH_QUEUE, "h100", GPU)
    dry = kueue.write_cluster_queue(
        RESEARCH, RESEARCH_QUEUE, "h100", GPU, gpus=12, previous=before, dry_run=True, applied_by="GQ-17"
    )
    assert dry.hard == 12 and dry.bot_applied == 12
    assert kube.nominal_quota(RESEARCH_QUEUE, "h100", GPU) == 8 and kube.kueue_writes() == 0
    raised = kueue.write_cluster_queue(
        RESEARCH, RESEARCH_QUEUE, "h100", GPU, gpus=12, previous=before, dry_run=False, applied_by="GQ-17"
    )
    assert (raised.hard, raised.bot_applied, raised.used) == (12, 12, 6)
    assert raised.resource_version != before.resource_version
    stored = kube.cluster_queue(RESEARCH_QUEUE)
    assert stored is not None
    assert stored["metadata"]["annotations"] == {APPLIED: "12", APPLIED_BY: "GQ-17"}
    assert (
        kube.nominal_quota(RESEARCH_QUEUE, "a100", GPU) == 4 and kube.nominal_quota(RESEARCH_QUEUE, "default-flavor", "cpu") == 64
    )
    assert stored["spec"]["resourceGroups"][1]["flavors"][0]["resources"][0]["borrowingLimit"] == 4
    (_, query, body), (_, real_query, _) = patches(kube)
    assert query["dryRun"] == "All" and "dryRun" not in real_query and real_query["fieldManager"] == "gpu-quota-bot"
    assert body[:4] == [
        {"op": "replace", "path": "/metadata/resourceVersion", "value": before.resource_version},
        {"op": "test", "path": "/spec/resourceGroups/1/flavors/0/name", "value": "h100"},
        {"op": "test", "path": "/spec/resourceGroups/1/flavors/0/resources/0/name", "value": GPU},
        {"op": "replace", "path": "/spec/resourceGroups/1/flavors/0/resources/0/nominalQuota", "value": 12},
    ]
    lowered = kueue.write_cluster_queue(
        RESEARCH, RESEARCH_QUEUE, "h100", GPU, gpus=5, previous=raised, dry_run=False, applied_by="reconcile"
    )
    assert lowered.hard == 5 and kube.nominal_quota(RESEARCH_QUEUE, "h100", GPU) == 5
    assert patches(kube)[-1][2][-1] == {
        "op": "add",
        "path": "/metadata/annotations/gpu-quota-bot.io~1applied-by.h100.nvidia.com_gpu",
        "value": "reconcile",
    }
    assert kueue.read_cluster_queue(RESEARCH, RESEARCH_QUEUE, "h100", GPU).bot_applied == 5


def test_the_borrowing_limit_moves_with_the_quota_when_asked_never_below_zero(kube: KubeApiStandIn, kueue: KueueCluster) -> None:
    snapshot = kueue.read_cluster_queue(RESEARCH, RESEARCH_QUEUE, "h100", GPU)
    raised = kueue.write_cluster_queue(
        RESEARCH,
        RESEARCH_QUEUE,
        "h100",
        GPU,
        gpus=10,
        previous=snapshot,
        dry_run=False,
        applied_by="GQ-3",
        borrowing_limit_delta=True,
    )
    assert (raised.hard, raised.borrowing_limit) == (10, 6)
    lowered = kueue.write_cluster_queue(
        RESEARCH,
        RESEARCH_QUEUE,
        "h100",
        GPU,
        gpus=1,
        previous=raised,
        dry_run=False,
        applied_by="GQ-4",
        borrowing_limit_delta=True,
    )
    assert (lowered.hard, lowered.borrowing_limit) == (1, 0)
    unlimited = kueue.read_cluster_queue(RESEARCH, RESEARCH_QUEUE, "a100", GPU)
    written = kueue.write_cluster_queue(
        RESEARCH,
        RESEARCH_QUEUE,
        "a100",
        GPU,
        gpus=6,
        previous=unlimited,
        dry_run=False,
        applied_by="GQ-5",
        borrowing_limit_delta=True,
    )
    assert written.borrowing_limit is None  # no limit stays no limit


def test_a_hand_edit_between_read_and_write_is_a_conflict_and_nothing_is_written(
    kube: KubeApiStandIn, kueue: KueueCluster
) -> None:
    snapshot = kueue.read_cluster_queue(RESEARCH, RESEARCH_QUEUE, "h100", GPU)
    kube.edit_cluster_queue(RESEARCH_QUEUE, "h100", GPU, nominal_quota=9)  # kubectl edit
    with pytest.raises(QuotaConflict):
        kueue.write_cluster_queue(
            RESEARCH, RESEARCH_QUEUE, "h100", GPU, gpus=12, previous=snapshot, dry_run=False, applied_by="GQ-1"
        )
    assert kube.nominal_quota(RESEARCH_QUEUE, "h100", GPU) == 9 and kube.kueue_writes() == 0
    again = kueue.read_cluster_queue(RESEARCH, RESEARCH_QUEUE, "h100", GPU)
    assert (again.hard, again.bot_applied) == (9, None)


def test_flavors_reordered_between_read_and_write_fail_the_test_and_write_nothing(
    kube: KubeApiStandIn, kueue: KueueCluster
) -> None:
    snapshot = kueue.read_cluster_queue(RESEARCH, RESEARCH_QUEUE, "h100", GPU)
    kube.reorder_flavors(RESEARCH_QUEUE, ["a100", "h100"], group=1)
    with pytest.raises(QuotaConflict):
        kueue.write_cluster_queue(
            RESEARCH, RESEARCH_QUEUE, "h100", GPU, gpus=12, previous=snapshot, dry_run=False, applied_by="GQ-1"
        )
    assert kube.nominal_quota(RESEARCH_QUEUE, "a100", GPU) == 4 and kube.nominal_quota(RESEARCH_QUEUE, "h100", GPU) == 8
    assert kube.kueue_writes() == 0
    fresh = kueue.read_cluster_queue(RESEARCH, RESEARCH_QUEUE, "h100", GPU)
    assert fresh.flavor_index == 1
    written = kueue.write_cluster_queue(
        RESEARCH, RESEARCH_QUEUE, "h100", GPU, gpus=12, previous=fresh, dry_run=False, applied_by="GQ-1"
    )
    assert written.hard == 12 and kube.nominal_quota(RESEARCH_QUEUE, "a100", GPU) == 4


def test_a_flavor_removed_between_read_and_write_is_the_missing_error(kube: KubeApiStandIn, kueue: KueueCluster) -> None:
    snapshot = kueue.read_cluster_queue(RESEARCH, RESEARCH_QUEUE, "h100", GPU)
    kube.remove_flavor(RESEARCH_QUEUE, "h100")
    with pytest.raises(KueueObjectMissing) as missing:
        kueue.write_cluster_queue(
            RESEARCH, RESEARCH_QUEUE, "h100", GPU, gpus=12, previous=snapshot, dry_run=False, applied_by="GQ-1"
        )
    assert (missing.value.missing, missing.value.present) == (KueuePart.FLAVOR, ("default-flavor", "a100"))
    assert kube.kueue_writes() == 0


def test_a_missing_queue_flavor_or_resource_is_a_typed_error_naming_what_is_there(kueue: KueueCluster) -> None:
    with pytest.raises(KueueObjectMissing) as queue:
        kueue.read_cluster_queue(RESEARCH, "nope-cq", "h100", GPU)
    assert (queue.value.missing, queue.value.cluster_queue) == (KueuePart.CLUSTER_QUEUE, "nope-cq")
    with pytest.raises(KueueObjectMissing) as flavor:
        kueue.read_cluster_queue(RESEARCH, RESEARCH_QUEUE, "b200", GPU)
    assert (flavor.value.missing, flavor.value.present) == (KueuePart.FLAVOR, ("default-flavor", "h100", "a100"))
    assert str(flavor.value) == "the ClusterQueue research-cq has no flavor b200 (present: default-flavor, h100, a100)"
    with pytest.raises(KueueObjectMissing) as resource:
        kueue.read_cluster_queue(RESEARCH, RESEARCH_QUEUE, "h100", "nvidia.com/mig-3g.40gb")
    assert (resource.value.missing, resource.value.flavor, resource.value.present) == (KueuePart.RESOURCE, "h100", (GPU,))
    assert isinstance(resource.value, PermanentError)


def test_a_cluster_serving_only_v1beta1_is_read_and_written_there(kube: KubeApiStandIn, kueue: KueueCluster) -> None:
    kube.serve_kueue("v1beta1")
    assert kueue.api_version() == "v1beta1"
    snapshot = kueue.read_cluster_queue(RESEARCH, RESEARCH_QUEUE, "h100", GPU)
    assert snapshot.cohort == COHORT and snapshot.hard == 8
    kueue.write_cluster_queue(RESEARCH, RESEARCH_QUEUE, "h100", GPU, gpus=11, previous=snapshot, dry_run=False, applied_by="GQ-2")
    assert kube.nominal_quota(RESEARCH_QUEUE, "h100", GPU) == 11
    assert patches(kube)[-1][0] == f"/apis/kueue.x-k8s.io/v1beta1/clusterqueues/{RESEARCH_QUEUE}"


def test_without_kueue_there_is_no_version_a_typed_error_and_no_waiting_workload(
    kube: KubeApiStandIn, kueue: KueueCluster
) -> None:
    kube.serve_kueue()
    assert kueue.api_version() is None
    with pytest.raises(KueueObjectMissing) as missing:
        kueue.read_cluster_queue(RESEARCH, RESEARCH_QUEUE, "h100", GPU)
    assert (missing.value.missing, missing.value.present) == (KueuePart.KUEUE, ())
    assert kueue.pending_workloads([RESEARCH]) == []


def test_an_annotated_queue_keeps_its_annotations_and_gets_the_stamps_added(kube: KubeApiStandIn, kueue: KueueCluster) -> None:
    kube.add_cluster_queue(
        "annotated-cq",
        [{"coveredResources": [GPU], "flavors": [{"name": "h100", "resources": [{"name": GPU, "nominalQuota": "2"}]}]}],
        annotations={"team": "x"},
    )
    snapshot = kueue.read_cluster_queue(RESEARCH, "annotated-cq", "h100", GPU)
    assert snapshot.annotated and snapshot.hard == 2 and snapshot.cohort is None and snapshot.used == 0
    kueue.write_cluster_queue(RESEARCH, "annotated-cq", "h100", GPU, gpus=3, previous=snapshot, dry_run=False, applied_by="GQ-9")
    stored = kube.cluster_queue("annotated-cq")
    assert stored is not None and stored["metadata"]["annotations"] == {"team": "x", APPLIED: "3", APPLIED_BY: "GQ-9"}


def test_refusals_and_failures_become_the_bots_error_kinds(kube: KubeApiStandIn, kueue: KueueCluster, kubeconfig: Path) -> None:
    snapshot = kueue.read_cluster_queue(RESEARCH, RESEARCH_QUEUE, "h100", GPU)
    with pytest.raises(PermanentError, match="the cluster rejected the change") as denied:
        kueue.write_cluster_queue(
            RESEARCH, RESEARCH_QUEUE, "h100", GPU, gpus=-1, previous=snapshot, dry_run=True, applied_by="GQ-1"
        )
    assert "must be greater than or equal to 0" in str(denied.value) and "RBAC" not in str(denied.value)
    kube.fail("GET", r"/clusterqueues/", 403, message="clusterqueues.kueue.x-k8s.io is forbidden")
    with pytest.raises(PermanentError, match="RBAC"):
        kueue.read_cluster_queue(RESEARCH, RESEARCH_QUEUE, "h100", GPU)
    kube.fail("PATCH", r"/clusterqueues/", 503)
    with pytest.raises(TemporaryError) as unavailable:
        kueue.write_cluster_queue(
            RESEARCH, RESEARCH_QUEUE, "h100", GPU, gpus=9, previous=snapshot, dry_run=False, applied_by="GQ-1"
        )
    assert not isinstance(unavailable.value, QuotaConflict)
    stalled = KueueCluster(config.new_client_from_config(config_file=str(kubeconfig)), timeout=(1.0, 0.2))
    kube.fail("GET", r"/clusterqueues/", 0, delay=1.0, times=4)  # the client retries a read that timed out
    with pytest.raises(TemporaryError, match="did not answer"):
        stalled.read_cluster_queue(RESEARCH, RESEARCH_QUEUE, "h100", GPU)
    assert kube.kueue_writes() == 0


def test_workloads_waiting_for_quota_with_what_they_lack(kube: KubeApiStandIn, kueue: KueueCluster) -> None:
    kube.add_workload(
        PROD,
        "job-multi",
        queue="prod-lq",
        requests={GPU: 2, "cpu": 1},
        count=4,
        pending="couldn't assign flavors to pod set launcher: insufficient unused quota for cpu in flavor default-flavor, 500m more needed; "
        f"couldn't assign flavors to pod set workers: insufficient quota for {GPU} in flavor a100, request > maximum capacity (8 > 4), "
        f"insufficient unused quota for {GPU} in flavor h100, 3 more needed",
        created=CREATED,
    )
    waiting = {w.name: w for w in kueue.pending_workloads([RESEARCH, PROD])}
    assert sorted(waiting) == ["job-multi", "job-sweep-1"]
    sweep = waiting["job-sweep-1"]
    assert (sweep.namespace, sweep.queue_name, sweep.reason, sweep.created_at, sweep.waiting_since) == (
        RESEARCH,
        "research-lq",
        "Pending",
        CREATED,
        CREATED,
    )
    assert sweep.requests == {GPU: 4} and sweep.more_needed(GPU, "h100") == 2
    [shortfall] = sweep.shortfalls
    assert (shortfall.pod_set, shortfall.resource, shortfall.flavor, shortfall.lack) == ("main", GPU, "h100", Lack.UNUSED_QUOTA)
    multi = waiting["job-multi"]
    assert multi.requests == {GPU: 8}
    assert [(s.pod_set, s.resource, s.flavor, s.more_needed) for s in multi.shortfalls] == [
        ("launcher", "cpu", "default-flavor", None),
        ("workers", GPU, "a100", 4),
        ("workers", GPU, "h100", 3),
    ]
    assert multi.more_needed(GPU) == 4 and multi.more_needed(GPU, "h100") == 3
