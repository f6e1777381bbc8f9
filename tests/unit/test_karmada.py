"""The pure parts of the Karmada target: a member's assignment as a snapshot (bot/domain/karmada.py), the JSON
Patch a write sends (bot/adapters/karmada.py ``write_operations``), the stamp keys per member, the missing
objects' plain lines (``KarmadaObjectMissing``), and ``FederatedQuotaTarget`` over a hand-written fake plane."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import pytest

from bot.adapters.karmada import write_operations
from bot.domain.karmada import FederatedQuotaRef, FederatedQuotaSnapshot, MemberAssignment
from bot.domain.quota import QuotaScope, QuotaSnapshot, stamp_annotations
from bot.errors import KarmadaObjectMissing, KarmadaPart, PermanentError
from bot.services.quota_target import FederatedQuotaTarget

GPU = "nvidia.com/gpu"
NAMESPACE = "ai-frontier-research"
US_KEY, EU_KEY = f"us-2/{NAMESPACE}", f"eu-1/{NAMESPACE}"


def snapshot(**changes: Any) -> FederatedQuotaSnapshot:
    """us-2's 12 of 24 GPUs overall, eu-1 holding 8 (4 unassigned), at resourceVersion 41."""
    base = FederatedQuotaSnapshot(
        namespace=US_KEY,
        name="team-quota",
        hard=12,
        used=5,
        limits=None,
        resource_version="41",
        bot_applied=None,
        member="us-2",
        resource=GPU,
        assignment_index=1,
        overall=24,
        assignments=(MemberAssignment("eu-1", 8), MemberAssignment("us-2", 12)),
        enforced=12,
        annotated=False,
    )
    return replace(base, **changes)


# --- the snapshot's maths -------------------------------------------------------------------------------


def test_what_overall_leaves_unassigned_and_a_member_without_a_limit_counts_nothing() -> None:
    assert snapshot().unassigned == 4
    unlimited = snapshot(assignments=(MemberAssignment("eu-1", None), MemberAssignment("us-2", 12)))
    assert unlimited.unassigned == 12


@pytest.mark.parametrize(("gpus", "overall"), [(16, 28), (12, 24), (3, 15), (0, 12)])
def test_overall_moves_by_what_the_members_assignment_moves(gpus: int, overall: int) -> None:
    moved = snapshot()
    assert moved.overall_for(gpus) == overall
    assert overall - (8 + gpus) == moved.unassigned  # the webhook's rule keeps holding: nothing unassigned is taken


def test_the_snapshot_is_a_quota_snapshot_the_sync_can_read() -> None:
    assert isinstance(snapshot(), QuotaSnapshot) and snapshot().limits is None


# --- the write's JSON Patch -----------------------------------------------------------------------------


def test_one_patch_sets_the_assignment_and_moves_overall_on_the_version_read() -> None:
    assert write_operations(snapshot(), gpus=16, applied_by="GQ-17") == [
        {"op": "replace", "path": "/metadata/resourceVersion", "value": "41"},
        {"op": "test", "path": "/spec/staticAssignments/1/clusterName", "value": "us-2"},
        {"op": "replace", "path": "/spec/staticAssignments/1/hard/requests.nvidia.com~1gpu", "value": "16"},
        {"op": "replace", "path": "/spec/overall/requests.nvidia.com~1gpu", "value": "28"},
        {
            "op": "add",
            "path": "/metadata/annotations",
            "value": {
                "gpu-quota-bot.io/applied.us-2.nvidia.com_gpu": "16",
                "gpu-quota-bot.io/applied-by.us-2.nvidia.com_gpu": "GQ-17",
            },
        },
    ]


def test_an_annotated_quota_gets_its_stamps_added_one_by_one_with_the_keys_escaped() -> None:
    operations = write_operations(
        snapshot(annotated=True, assignment_index=0, member="eu-1", hard=8), gpus=2, applied_by="reconcile"
    )
    assert operations[1:4] == [
        {"op": "test", "path": "/spec/staticAssignments/0/clusterName", "value": "eu-1"},
        {"op": "replace", "path": "/spec/staticAssignments/0/hard/requests.nvidia.com~1gpu", "value": "2"},
        {"op": "replace", "path": "/spec/overall/requests.nvidia.com~1gpu", "value": "18"},
    ]
    assert operations[4:] == [
        {"op": "add", "path": "/metadata/annotations/gpu-quota-bot.io~1applied.eu-1.nvidia.com_gpu", "value": "2"},
        {"op": "add", "path": "/metadata/annotations/gpu-quota-bot.io~1applied-by.eu-1.nvidia.com_gpu", "value": "reconcile"},
    ]


def test_a_mig_profile_is_written_under_its_own_key() -> None:
    mig = "nvidia.com/mig-1g.10gb"
    operations = write_operations(snapshot(resource=mig, hard=7, overall=14), gpus=9, applied_by="GQ-2")
    assert operations[2]["path"] == "/spec/staticAssignments/1/hard/requests.nvidia.com~1mig-1g.10gb"
    assert operations[3] == {"op": "replace", "path": "/spec/overall/requests.nvidia.com~1mig-1g.10gb", "value": "16"}


def test_each_member_has_its_own_stamp_keys() -> None:
    assert stamp_annotations(GPU, qualifier="us-2") != stamp_annotations(GPU, qualifier="eu-1")
    assert stamp_annotations(GPU, qualifier="us-2") == (
        "gpu-quota-bot.io/applied.us-2.nvidia.com_gpu",
        "gpu-quota-bot.io/applied-by.us-2.nvidia.com_gpu",
    )


# --- what is missing --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("missing", "present", "line"),
    [
        (
            KarmadaPart.KARMADA,
            (),
            "Karmada is not installed on the plane or serves no version the bot speaks (policy.karmada.io (present: none))",
        ),
        (KarmadaPart.FEDERATED_QUOTA, (), f"the FederatedResourceQuota {NAMESPACE}/team-quota does not exist"),
        (
            KarmadaPart.MEMBER,
            ("eu-1",),
            f"the FederatedResourceQuota {NAMESPACE}/team-quota assigns nothing to the member cluster us-2 (present: eu-1)",
        ),
        (
            KarmadaPart.RESOURCE,
            ("cpu",),
            f"the FederatedResourceQuota {NAMESPACE}/team-quota does not limit {GPU} in the member cluster us-2 (present: cpu)",
        ),
    ],
)
def test_each_missing_part_has_a_plain_line_and_its_typed_fields(
    missing: KarmadaPart, present: tuple[str, ...], line: str
) -> None:
    error = KarmadaObjectMissing(
        missing, namespace=NAMESPACE, federated_quota="team-quota", member="us-2", resource=GPU, present=present
    )
    assert str(error) == line and isinstance(error, PermanentError)
    assert (error.missing, error.namespace, error.federated_quota, error.member, error.resource, error.present) == (
        missing,
        NAMESPACE,
        "team-quota",
        "us-2",
        GPU,
        present,
    )


# --- the target over a fake plane -------------------------------------------------------------------------


@dataclass
class FakePlane:
    """A ``FederatedQuotas`` that answers ``snapshot()`` and records what it was asked."""

    reads: list[tuple[str, ...]] = field(default_factory=list)
    writes: list[dict[str, Any]] = field(default_factory=list)

    def api_version(self) -> str | None:
        return "v1alpha1"

    def read_federated_quota(
        self, namespace_key: str, namespace: str, name: str, member: str, resource: str
    ) -> FederatedQuotaSnapshot:
        self.reads.append((namespace_key, namespace, name, member, resource))
        return snapshot(namespace=namespace_key, name=name, member=member, resource=resource)

    def write_federated_quota(
        self,
        namespace_key: str,
        namespace: str,
        name: str,
        member: str,
        resource: str,
        *,
        gpus: int,
        previous: FederatedQuotaSnapshot,
        dry_run: bool,
        applied_by: str,
    ) -> FederatedQuotaSnapshot:
        self.writes.append(
            {"at": (namespace_key, namespace, name, member, resource), "gpus": gpus, "dry_run": dry_run, "applied_by": applied_by}
        )
        return replace(previous, hard=gpus, overall=previous.overall_for(gpus), bot_applied=gpus)


REFS = {
    QuotaScope(US_KEY, GPU): FederatedQuotaRef("team-quota", "us-2", "karmada"),
    QuotaScope(EU_KEY, GPU): FederatedQuotaRef("team-quota", "eu-1", "karmada"),
    QuotaScope("us-2/other", GPU): FederatedQuotaRef("team-quota", "us-2", "karmada"),
}


def target(plane: FakePlane) -> FederatedQuotaTarget:
    return FederatedQuotaTarget(refs=REFS.get, planes={"karmada": plane})


def test_every_members_scope_of_one_federated_quota_shares_its_critical_section() -> None:
    quotas = target(FakePlane())
    us, eu = quotas.lock_name(QuotaScope(US_KEY, GPU)), quotas.lock_name(QuotaScope(EU_KEY, GPU))
    assert us == eu == f"federatedresourcequota/{NAMESPACE}/team-quota"
    assert quotas.lock_name(QuotaScope("us-2/other", GPU)) == "federatedresourcequota/other/team-quota"
    assert quotas.name(QuotaScope(EU_KEY, GPU)) == "team-quota"


def test_a_read_asks_the_plane_for_the_members_assignment_in_the_namespace_of_the_keys_name() -> None:
    plane = FakePlane()
    read = target(plane).read(QuotaScope(EU_KEY, GPU), max_age=30.0)
    assert plane.reads == [(EU_KEY, NAMESPACE, "team-quota", "eu-1", GPU)]
    assert isinstance(read, FederatedQuotaSnapshot) and read.namespace == EU_KEY and read.member == "eu-1"


def test_a_dry_run_then_the_write_carry_the_stamp_and_the_read() -> None:
    plane, scope = FakePlane(), QuotaScope(US_KEY, GPU)
    quotas = target(plane)
    previous = quotas.read(scope)
    stamp = quotas.stamp(16, request_id=17)
    checked = quotas.dry_run(scope, stamp, previous=previous)
    written = quotas.write(scope, stamp, previous=previous)
    assert [(w["gpus"], w["dry_run"], w["applied_by"]) for w in plane.writes] == [(16, True, "GQ-17"), (16, False, "GQ-17")]
    assert plane.writes[1]["at"] == (US_KEY, NAMESPACE, "team-quota", "us-2", GPU)
    assert isinstance(written, FederatedQuotaSnapshot) and (checked.hard, written.hard, written.overall) == (16, 16, 28)
    assert quotas.stamp(3, request_id=None).applied_by == "reconcile"


def test_a_federated_quota_is_never_created() -> None:
    quotas = target(FakePlane())
    with pytest.raises(AssertionError, match="never created"):
        quotas.write(QuotaScope(US_KEY, GPU), quotas.stamp(4, request_id=1), previous=None)
