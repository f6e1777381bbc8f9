"""``QuotaSync`` keeping two member clusters' scopes in one FederatedResourceQuota (``FederatedQuotaTarget`` over
``KarmadaPlane``, the real kubernetes client against the Karmada plane stand-in, SQLite and PostgreSQL): a
base raised lands as the member's assignment with ``overall`` moved in the same patch, one member's write is
not taken for a hand edit of the other's, and a person's edit of one member's assignment is adopted into that
member's base only."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import config

from bot.adapters.db.database import Database
from bot.adapters.karmada import KarmadaPlane
from bot.clock import ManualClock
from bot.domain.karmada import FederatedQuotaRef
from bot.domain.policy import parse_policy
from bot.domain.quota import QuotaScope
from bot.sandbox.karmada_api import KarmadaApiStandIn
from bot.services.ports import Repository
from bot.services.quota_sync import QuotaSync
from bot.services.quota_target import FederatedQuotaTarget
from tests.integration.karmada_world import EU, FRQ, GPU, GPU_KEY, NAMESPACE, US, seed_karmada

US_SCOPE, EU_SCOPE = QuotaScope(f"{US}/{NAMESPACE}", GPU), QuotaScope(f"{EU}/{NAMESPACE}", GPU)
POLICY = parse_policy(
    {"teams": {"frontier": {"channel": "C0FRONTIER", "namespaces": [NAMESPACE], "approvers": {"users": ["U0LEE"]}}}}
)


@pytest.fixture
def plane() -> Iterator[KarmadaApiStandIn]:
    stand_in = KarmadaApiStandIn().start()
    seed_karmada(stand_in)
    yield stand_in
    stand_in.stop()


@pytest.fixture
def sync(plane: KarmadaApiStandIn, database: Database, clock: ManualClock, tmp_path: Path) -> QuotaSync:
    karmada = KarmadaPlane(config.new_client_from_config(config_file=str(plane.write_kubeconfig(tmp_path / "karmada.config"))))
    refs = {US_SCOPE: FederatedQuotaRef(FRQ, US, "karmada"), EU_SCOPE: FederatedQuotaRef(FRQ, EU, "karmada")}
    target = FederatedQuotaTarget(refs=refs.get, planes={"karmada": karmada})
    return QuotaSync(policy=POLICY, target=target, database=database, clock=clock, sleep=lambda _: None)


def set_base(database: Database, scope: QuotaScope, gpus: int) -> None:
    def change(repo: Repository) -> None:
        row = repo.namespace(scope.namespace, scope.resource)
        assert row is not None, "the scope was converged before"
        row.base_gpus = gpus

    database.run(change)


def test_a_raised_base_moves_the_members_assignment_and_overall_together(
    plane: KarmadaApiStandIn, sync: QuotaSync, database: Database
) -> None:
    first = sync.converge(US_SCOPE)  # the first sight: the base is what the cluster holds, stamped
    assert (first.before, first.after, first.changed) == (12, 12, False)
    set_base(database, US_SCOPE, 16)
    raised = sync.converge(US_SCOPE, request_id=7)
    assert (raised.before, raised.after, raised.quota_name) == (12, 16, FRQ)
    assert (plane.assignment(NAMESPACE, FRQ, US, GPU_KEY), plane.overall(NAMESPACE, FRQ, GPU_KEY)) == ("16", "28")
    assert plane.assignment(NAMESPACE, FRQ, EU, GPU_KEY) == 8
    stored = plane.federated_quota(NAMESPACE, FRQ)
    assert stored is not None and stored["metadata"]["annotations"]["gpu-quota-bot.io/applied-by.us-2.nvidia.com_gpu"] == "GQ-7"


def test_one_members_write_is_not_a_hand_edit_of_the_other(plane: KarmadaApiStandIn, sync: QuotaSync, database: Database) -> None:
    sync.converge(US_SCOPE)
    sync.converge(EU_SCOPE)
    writes = plane.federated_quota_writes()
    set_base(database, EU_SCOPE, 5)
    sync.converge(EU_SCOPE)  # a write of eu-1 moves the object's resourceVersion under us-2's record
    again = sync.converge(US_SCOPE)
    assert (again.after, again.drift, again.changed) == (12, 0, False)
    assert plane.federated_quota_writes() == writes + 1
    assert (plane.assignment(NAMESPACE, FRQ, EU, GPU_KEY), plane.overall(NAMESPACE, FRQ, GPU_KEY)) == ("5", "21")


def test_a_hand_edit_of_one_members_assignment_is_adopted_into_its_base_only(
    plane: KarmadaApiStandIn, sync: QuotaSync, database: Database
) -> None:
    sync.converge(US_SCOPE)
    sync.converge(EU_SCOPE)
    plane.edit_federated_quota(NAMESPACE, FRQ, assignments={EU: {GPU_KEY: "6"}})  # kubectl edit
    adopted = sync.converge(EU_SCOPE)
    assert (adopted.after, adopted.drift) == (6, -2)
    assert sync.converge(US_SCOPE).drift == 0
    bases = database.run(lambda repo: [repo.namespace(s.namespace, s.resource).base_gpus for s in (EU_SCOPE, US_SCOPE)])
    assert bases == [6, 12]
