"""``KarmadaPlane`` (bot/adapters/karmada.py) over HTTP with the real ``kubernetes`` client against the Karmada
plane stand-in, with two member clusters on their own ports: a member's assignment raised and lowered with
``overall`` moved in the same patch (the other member and the other resources untouched, what is left
unassigned kept), the member's propagated ResourceQuota read back from its own cluster, a hand edit or a
reorder between read and write refused (nothing written), dry runs, and what is missing (Karmada, the
FederatedResourceQuota, the member's entry, its resource) as a typed error."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import config

from bot.adapters.karmada import KarmadaPlane
from bot.adapters.kube import KubernetesCluster
from bot.domain.karmada import MemberAssignment
from bot.domain.quota import stamp_annotations
from bot.errors import KarmadaObjectMissing, KarmadaPart, PermanentError, QuotaConflict, TemporaryError
from bot.sandbox.karmada_api import KarmadaApiStandIn
from bot.sandbox.kube_api import KubeApiStandIn
from tests.integration.karmada_world import EU, FRQ, GPU, GPU_KEY, GPU_TOKEN, NAMESPACE, US, seed_karmada

US_KEY = f"{US}/{NAMESPACE}"  # the namespace key the bot governs us-2's assignment for
EU_KEY = f"{EU}/{NAMESPACE}"
APPLIED, APPLIED_BY = stamp_annotations(GPU, qualifier=US)


@pytest.fixture
def plane() -> Iterator[KarmadaApiStandIn]:
    stand_in = KarmadaApiStandIn().start()
    seed_karmada(stand_in)
    yield stand_in
    stand_in.stop()


@pytest.fixture
def members() -> Iterator[dict[str, KubeApiStandIn]]:
    started = {EU: KubeApiStandIn().start(), US: KubeApiStandIn().start()}
    for member in started.values():
        member.add_namespace(NAMESPACE)
    yield started
    for member in started.values():
        member.stop()


@pytest.fixture
def kubeconfig(plane: KarmadaApiStandIn, tmp_path: Path) -> Path:
    return plane.write_kubeconfig(tmp_path / "karmada.config")


@pytest.fixture
def karmada(kubeconfig: Path) -> KarmadaPlane:
    return KarmadaPlane(config.new_client_from_config(config_file=str(kubeconfig)))


def patches(plane: KarmadaApiStandIn) -> list[tuple[str, dict[str, str], list[dict[str, object]]]]:
    return [(path, query, body) for method, path, query, body in plane.writes() if method == "PATCH"]


def test_karmada_is_found_through_discovery_once_per_process(plane: KarmadaApiStandIn, karmada: KarmadaPlane) -> None:
    assert karmada.api_version() == "v1alpha1"
    karmada.read_federated_quota(US_KEY, NAMESPACE, FRQ, US, GPU)
    karmada.read_federated_quota(EU_KEY, NAMESPACE, FRQ, EU, GPU)
    assert [path for method, path, _, _ in plane.log if method == "GET" and path == "/apis/policy.karmada.io"] == [
        "/apis/policy.karmada.io"
    ]


def test_a_read_is_the_members_assignment_with_overall_and_what_karmada_reports(
    plane: KarmadaApiStandIn, members: dict[str, KubeApiStandIn], karmada: KarmadaPlane
) -> None:
    snapshot = karmada.read_federated_quota(US_KEY, NAMESPACE, FRQ, US, GPU)
    assert (snapshot.namespace, snapshot.name, snapshot.hard, snapshot.used, snapshot.limits) == (US_KEY, FRQ, 12, 0, None)
    assert (snapshot.member, snapshot.assignment_index, snapshot.overall, snapshot.unassigned) == (US, 1, 24, 4)
    assert snapshot.assignments == (MemberAssignment(EU, 8), MemberAssignment(US, 12))
    assert (snapshot.enforced, snapshot.bot_applied, snapshot.annotated) == (None, None, False)
    members[US].set_used(NAMESPACE, 5)
    plane.sync_members(members)
    reported = karmada.read_federated_quota(US_KEY, NAMESPACE, FRQ, US, GPU)
    assert (reported.used, reported.enforced) == (5, 12)
    assert reported.resource_version != snapshot.resource_version  # the status controller wrote the status


def test_raised_then_lowered_with_overall_moved_in_one_patch_and_nothing_else_touched(
    plane: KarmadaApiStandIn, karmada: KarmadaPlane
) -> None:
    before = karmada.read_federated_quota(US_KEY, NAMESPACE, FRQ, US, GPU)
    dry = karmada.write_federated_quota(
        US_KEY, NAMESPACE, FRQ, US, GPU, gpus=16, previous=before, dry_run=True, applied_by="GQ-17"
    )
    assert (dry.hard, dry.overall, dry.bot_applied) == (16, 28, 16)
    assert plane.assignment(NAMESPACE, FRQ, US, GPU_KEY) == 12 and plane.federated_quota_writes() == 0
    raised = karmada.write_federated_quota(
        US_KEY, NAMESPACE, FRQ, US, GPU, gpus=16, previous=before, dry_run=False, applied_by="GQ-17"
    )
    assert (raised.hard, raised.overall, raised.unassigned, raised.bot_applied) == (16, 28, 4, 16)
    assert raised.resource_version != before.resource_version and raised.namespace == US_KEY
    assert (plane.overall(NAMESPACE, FRQ, GPU_KEY), plane.assignment(NAMESPACE, FRQ, US, GPU_KEY)) == ("28", "16")
    assert plane.assignment(NAMESPACE, FRQ, EU, GPU_KEY) == 8
    assert (plane.overall(NAMESPACE, FRQ, "cpu"), plane.assignment(NAMESPACE, FRQ, US, "cpu")) == ("100", "60")
    stored = plane.federated_quota(NAMESPACE, FRQ)
    assert stored is not None and stored["metadata"]["annotations"] == {APPLIED: "16", APPLIED_BY: "GQ-17"}
    (_, dry_query, _), (path, query, body) = patches(plane)
    assert dry_query["dryRun"] == "All" and "dryRun" not in query and query["fieldManager"] == "gpu-quota-bot"
    assert path == f"/apis/policy.karmada.io/v1alpha1/namespaces/{NAMESPACE}/federatedresourcequotas/{FRQ}"
    assert body[:4] == [
        {"op": "replace", "path": "/metadata/resourceVersion", "value": before.resource_version},
        {"op": "test", "path": "/spec/staticAssignments/1/clusterName", "value": US},
        {"op": "replace", "path": f"/spec/staticAssignments/1/hard/{GPU_TOKEN}", "value": "16"},
        {"op": "replace", "path": f"/spec/overall/{GPU_TOKEN}", "value": "28"},
    ]
    lowered = karmada.write_federated_quota(
        US_KEY, NAMESPACE, FRQ, US, GPU, gpus=3, previous=raised, dry_run=False, applied_by="reconcile"
    )
    assert (lowered.hard, lowered.overall, lowered.unassigned) == (3, 15, 4)
    assert plane.assignment(NAMESPACE, FRQ, EU, GPU_KEY) == 8 and plane.federated_quota_writes() == 2
    assert patches(plane)[-1][2][-1] == {
        "op": "add",
        "path": "/metadata/annotations/gpu-quota-bot.io~1applied-by.us-2.nvidia.com_gpu",
        "value": "reconcile",
    }


def test_the_member_cluster_enforces_the_new_assignment_once_karmada_propagates_it(
    plane: KarmadaApiStandIn, members: dict[str, KubeApiStandIn], karmada: KarmadaPlane, tmp_path: Path
) -> None:
    plane.sync_members(members)
    member = KubernetesCluster.from_environment(members[US].write_kubeconfig(tmp_path / "us-2.config"))
    propagated = member.read_quota(NAMESPACE, FRQ, GPU)
    assert propagated is not None and propagated.hard == 12
    snapshot = karmada.read_federated_quota(US_KEY, NAMESPACE, FRQ, US, GPU)
    karmada.write_federated_quota(US_KEY, NAMESPACE, FRQ, US, GPU, gpus=20, previous=snapshot, dry_run=False, applied_by="GQ-4")
    plane.sync_members(members)
    enforced = member.read_quota(NAMESPACE, FRQ, GPU)
    assert enforced is not None and enforced.hard == 20
    assert members[EU].hard(NAMESPACE, FRQ) == "8"
    assert karmada.read_federated_quota(US_KEY, NAMESPACE, FRQ, US, GPU).enforced == 20


def test_each_members_write_keeps_its_own_stamp(karmada: KarmadaPlane) -> None:
    eu = karmada.read_federated_quota(EU_KEY, NAMESPACE, FRQ, EU, GPU)
    karmada.write_federated_quota(EU_KEY, NAMESPACE, FRQ, EU, GPU, gpus=6, previous=eu, dry_run=False, applied_by="GQ-1")
    us = karmada.read_federated_quota(US_KEY, NAMESPACE, FRQ, US, GPU)
    assert (us.hard, us.bot_applied, us.annotated, us.overall) == (12, None, True, 22)
    karmada.write_federated_quota(US_KEY, NAMESPACE, FRQ, US, GPU, gpus=13, previous=us, dry_run=False, applied_by="GQ-2")
    eu_again = karmada.read_federated_quota(EU_KEY, NAMESPACE, FRQ, EU, GPU)
    assert (eu_again.hard, eu_again.bot_applied, eu_again.overall, eu_again.unassigned) == (6, 6, 23, 4)
    assert karmada.read_federated_quota(US_KEY, NAMESPACE, FRQ, US, GPU).bot_applied == 13


def test_a_hand_edit_between_read_and_write_is_a_conflict_and_nothing_is_written(
    plane: KarmadaApiStandIn, karmada: KarmadaPlane
) -> None:
    snapshot = karmada.read_federated_quota(US_KEY, NAMESPACE, FRQ, US, GPU)
    plane.edit_federated_quota(NAMESPACE, FRQ, assignments={US: {GPU_KEY: "10"}})  # kubectl edit
    with pytest.raises(QuotaConflict):
        karmada.write_federated_quota(
            US_KEY, NAMESPACE, FRQ, US, GPU, gpus=16, previous=snapshot, dry_run=False, applied_by="GQ-1"
        )
    assert plane.assignment(NAMESPACE, FRQ, US, GPU_KEY) == "10" and plane.overall(NAMESPACE, FRQ, GPU_KEY) == 24
    assert plane.federated_quota_writes() == 0
    again = karmada.read_federated_quota(US_KEY, NAMESPACE, FRQ, US, GPU)
    assert (again.hard, again.bot_applied, again.unassigned) == (10, None, 6)


def test_assignments_reordered_between_read_and_write_fail_the_test_and_write_nothing(
    plane: KarmadaApiStandIn, karmada: KarmadaPlane
) -> None:
    snapshot = karmada.read_federated_quota(EU_KEY, NAMESPACE, FRQ, EU, GPU)
    plane.reorder_assignments(NAMESPACE, FRQ, [US, EU])
    with pytest.raises(QuotaConflict):
        karmada.write_federated_quota(
            EU_KEY, NAMESPACE, FRQ, EU, GPU, gpus=2, previous=snapshot, dry_run=False, applied_by="GQ-1"
        )
    assert plane.assignment(NAMESPACE, FRQ, US, GPU_KEY) == 12 and plane.assignment(NAMESPACE, FRQ, EU, GPU_KEY) == 8
    assert plane.federated_quota_writes() == 0
    fresh = karmada.read_federated_quota(EU_KEY, NAMESPACE, FRQ, EU, GPU)
    assert fresh.assignment_index == 1
    written = karmada.write_federated_quota(
        EU_KEY, NAMESPACE, FRQ, EU, GPU, gpus=2, previous=fresh, dry_run=False, applied_by="GQ-1"
    )
    assert (written.hard, written.overall) == (2, 18) and plane.assignment(NAMESPACE, FRQ, US, GPU_KEY) == 12


def test_a_member_taken_out_between_read_and_write_is_the_missing_error(plane: KarmadaApiStandIn, karmada: KarmadaPlane) -> None:
    snapshot = karmada.read_federated_quota(US_KEY, NAMESPACE, FRQ, US, GPU)
    plane.remove_assignment(NAMESPACE, FRQ, US)
    with pytest.raises(KarmadaObjectMissing) as missing:
        karmada.write_federated_quota(
            US_KEY, NAMESPACE, FRQ, US, GPU, gpus=16, previous=snapshot, dry_run=False, applied_by="GQ-1"
        )
    assert (missing.value.missing, missing.value.member, missing.value.present) == (KarmadaPart.MEMBER, US, (EU,))
    assert plane.federated_quota_writes() == 0


def test_what_is_missing_is_a_typed_error_naming_what_is_there(plane: KarmadaApiStandIn, karmada: KarmadaPlane) -> None:
    with pytest.raises(KarmadaObjectMissing) as quota:
        karmada.read_federated_quota(US_KEY, NAMESPACE, "nope", US, GPU)
    assert (quota.value.missing, quota.value.namespace, quota.value.federated_quota) == (
        KarmadaPart.FEDERATED_QUOTA,
        NAMESPACE,
        "nope",
    )
    assert str(quota.value) == f"the FederatedResourceQuota {NAMESPACE}/nope does not exist"
    with pytest.raises(KarmadaObjectMissing) as member:
        karmada.read_federated_quota("ap-3/x", NAMESPACE, FRQ, "ap-3", GPU)
    assert (member.value.missing, member.value.present) == (KarmadaPart.MEMBER, (EU, US))
    assert str(member.value) == (
        f"the FederatedResourceQuota {NAMESPACE}/{FRQ} assigns nothing to the member cluster ap-3 (present: eu-1, us-2)"
    )
    mig = "nvidia.com/mig-3g.40gb"
    with pytest.raises(KarmadaObjectMissing) as resource:
        karmada.read_federated_quota(US_KEY, NAMESPACE, FRQ, US, mig)
    assert (resource.value.missing, resource.value.resource, resource.value.present) == (
        KarmadaPart.RESOURCE,
        mig,
        (GPU_KEY, "cpu"),
    )
    assert isinstance(resource.value, PermanentError)


def test_without_karmada_there_is_no_version_and_a_typed_error(plane: KarmadaApiStandIn, karmada: KarmadaPlane) -> None:
    plane.serve_karmada(False)
    assert karmada.api_version() is None
    with pytest.raises(KarmadaObjectMissing) as missing:
        karmada.read_federated_quota(US_KEY, NAMESPACE, FRQ, US, GPU)
    assert (missing.value.missing, missing.value.present) == (KarmadaPart.KARMADA, ())
    assert str(missing.value).startswith("Karmada is not installed on the plane")


def test_an_annotated_quota_keeps_its_annotations_and_gets_the_stamps_added(
    plane: KarmadaApiStandIn, karmada: KarmadaPlane
) -> None:
    plane.add_federated_quota(
        NAMESPACE, "annotated", overall={GPU_KEY: "4"}, assignments={US: {GPU_KEY: "2"}}, annotations={"team": "x"}
    )
    snapshot = karmada.read_federated_quota(US_KEY, NAMESPACE, "annotated", US, GPU)
    assert snapshot.annotated and (snapshot.hard, snapshot.overall, snapshot.unassigned) == (2, 4, 2)
    karmada.write_federated_quota(
        US_KEY, NAMESPACE, "annotated", US, GPU, gpus=3, previous=snapshot, dry_run=False, applied_by="GQ-9"
    )
    stored = plane.federated_quota(NAMESPACE, "annotated")
    assert stored is not None and stored["metadata"]["annotations"] == {"team": "x", APPLIED: "3", APPLIED_BY: "GQ-9"}
    assert stored["spec"]["overall"] == {GPU_KEY: "5"}


def test_refusals_and_failures_become_the_bots_error_kinds(plane: KarmadaApiStandIn, karmada: KarmadaPlane) -> None:
    snapshot = karmada.read_federated_quota(US_KEY, NAMESPACE, FRQ, US, GPU)
    with pytest.raises(PermanentError, match="the cluster rejected the change") as denied:
        karmada.write_federated_quota(
            US_KEY, NAMESPACE, FRQ, US, GPU, gpus=-1, previous=snapshot, dry_run=True, applied_by="GQ-1"
        )
    assert 'admission webhook "federatedresourcequota.karmada.io" denied the request' in str(denied.value)
    assert "must be greater than or equal to 0" in str(denied.value)
    plane.fail("GET", r"/federatedresourcequotas/", 403, message="federatedresourcequotas.policy.karmada.io is forbidden")
    with pytest.raises(PermanentError, match="RBAC"):
        karmada.read_federated_quota(US_KEY, NAMESPACE, FRQ, US, GPU)
    plane.fail("PATCH", r"/federatedresourcequotas/", 503)
    with pytest.raises(TemporaryError) as unavailable:
        karmada.write_federated_quota(
            US_KEY, NAMESPACE, FRQ, US, GPU, gpus=9, previous=snapshot, dry_run=False, applied_by="GQ-1"
        )
    assert not isinstance(unavailable.value, QuotaConflict)
    assert plane.federated_quota_writes() == 0
