"""The real ``kubernetes`` client over HTTP against the Kubernetes API stand-in (through a kubeconfig)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from prometheus_client import REGISTRY
from sqlalchemy import text

from bot.adapters.kube import KubernetesCluster
from bot.adapters.slack import blocks, prices, reasons
from bot.adapters.slack.replies import reply_text
from bot.clock import ManualClock
from bot.domain.commands import parse_command
from bot.domain.lifecycle import RequestState, Verdict
from bot.domain.resources import GPU
from bot.errors import NamespaceNotFound, UserError
from bot.sandbox.kube_api import KubeApiStandIn
from bot.sandbox.session import Sandbox
from bot.sandbox.world import seed_cluster
from bot.services.cards import card_for

QUOTA_PATH = r"/namespaces/ai-frontier-research/resourcequotas/compute-quota$"


def submit(sandbox: Sandbox, text: str, user: str = "U0ALICE") -> int:
    assert sandbox.services is not None
    return sandbox.services.submissions.submit(requester=user, draft=parse_command(text).draft).request_id  # type: ignore[union-attr]


def approve(sandbox: Sandbox, request_id: int, user: str = "U0LEE") -> str:
    assert sandbox.services is not None
    return reply_text(sandbox.services.decisions.decide(user=user, request_id=request_id, verdict=Verdict.APPROVE))


def state(sandbox: Sandbox, request_id: int) -> tuple[RequestState, str | None]:
    assert sandbox.database is not None
    row = sandbox.database.run(lambda repo: repo.request(request_id))
    return RequestState(row.state), reasons.render(row.failure_reason) if row.failure_reason else None  # as the card shows it


def kube(sandbox: Sandbox) -> KubeApiStandIn:
    assert sandbox.kube is not None
    return sandbox.kube


def writes(sandbox: Sandbox) -> list[tuple[str, str]]:
    return [(method, query.get("dryRun", "")) for method, path, query, _ in kube(sandbox).writes()]


def test_dry_run_then_patch_with_the_read_resource_version(sandbox: Sandbox) -> None:
    version = kube(sandbox).quotas[("ai-frontier-research", "compute-quota")]["metadata"]["resourceVersion"]
    approve(sandbox, submit(sandbox, "request ai-frontier-research +4 for 3d train"))
    assert writes(sandbox) == [("PATCH", "All"), ("PATCH", "")]
    _, path, query, body = kube(sandbox).writes()[-1]
    assert query["fieldManager"] == "gpu-quota-bot"
    assert body["metadata"]["resourceVersion"] == version
    assert body["spec"]["hard"] == {"requests.nvidia.com/gpu": "8", "limits.nvidia.com/gpu": "8"}
    quota = kube(sandbox).quotas[("ai-frontier-research", "compute-quota")]
    assert quota["spec"]["hard"]["requests.cpu"] == "20"  # other resources untouched
    assert quota["metadata"]["annotations"]["gpu-quota-bot.io/applied-by"] == "GQ-1"


def test_a_write_between_read_and_patch_is_a_409_then_adopted(sandbox: Sandbox) -> None:
    request_id = submit(sandbox, "request ai-frontier-research +4 for 3d train")
    # The dry run passes; just before the real patch someone runs kubectl edit, so the patch's
    # resourceVersion is stale and the stand-in answers 409 like the API server.
    original = kube(sandbox)._patch_quota

    def patch_after_an_edit(incoming, body, ns, name):  # type: ignore[no-untyped-def]
        if incoming.query.get("dryRun") != "All" and not getattr(patch_after_an_edit, "done", False):
            patch_after_an_edit.done = True  # type: ignore[attr-defined]
            kube(sandbox).edit_quota(ns, name, "requests.nvidia.com/gpu", "5")
        return original(incoming, body, ns, name)

    kube(sandbox)._patch_quota = patch_after_an_edit  # type: ignore[method-assign]
    approve(sandbox, request_id)
    assert state(sandbox, request_id)[0] == RequestState.APPLIED
    assert kube(sandbox).hard("ai-frontier-research", "compute-quota") == "9"
    assert writes(sandbox) == [("PATCH", "All"), ("PATCH", ""), ("PATCH", "All"), ("PATCH", "")]


def test_forbidden_fails_the_request_and_an_admin_retries(sandbox: Sandbox) -> None:
    refused_before = REGISTRY.get_sample_value("gpu_quota_errors_total", {"system": "kubernetes", "kind": "permanent"}) or 0
    request_id = submit(sandbox, "request ai-frontier-research +4 for 3d train")
    kube(sandbox).fail(
        "PATCH",
        QUOTA_PATH,
        403,
        message='resourcequotas "compute-quota" is forbidden: User "system:serviceaccount:gpu:bot" cannot patch resource',
    )
    approve(sandbox, request_id)
    current, reason = state(sandbox, request_id)
    assert current == RequestState.FAILED and "HTTP 403" in (reason or "") and "RBAC" in (reason or "")
    assert kube(sandbox).hard("ai-frontier-research", "compute-quota") == "4"
    assert (
        REGISTRY.get_sample_value("gpu_quota_errors_total", {"system": "kubernetes", "kind": "permanent"}) == refused_before + 1
    )
    assert reply_text(sandbox.services.lifecycle.retry(user="U0PAT", request_id=request_id)) == "GQ-1 is applied."
    assert kube(sandbox).hard("ai-frontier-research", "compute-quota") == "8"


def test_invalid_is_reported_with_the_api_servers_words(sandbox: Sandbox) -> None:
    request_id = submit(sandbox, "request ai-frontier-research +4 for 3d train")
    kube(sandbox).fail("PATCH", QUOTA_PATH, 422, message='ResourceQuota "compute-quota" is invalid: spec.hard: Invalid value')
    approve(sandbox, request_id)
    current, reason = state(sandbox, request_id)
    assert current == RequestState.FAILED and "HTTP 422" in (reason or "") and "is invalid" in (reason or "")


def test_server_errors_keep_the_request_approved_until_the_reconcile_applies_it(sandbox: Sandbox, clock: ManualClock) -> None:
    request_id = submit(sandbox, "request ai-frontier-research +4 for 3d train")
    kube(sandbox).fail("PATCH", QUOTA_PATH, 500, times=2)
    approve(sandbox, request_id)
    assert state(sandbox, request_id)[0] == RequestState.APPROVED
    assert kube(sandbox).hard("ai-frontier-research", "compute-quota") == "4"
    assert sandbox.services is not None
    for _ in range(2):  # each tick past the backoff tries again: the second 500, then the write
        clock.advance(timedelta(seconds=5))
        sandbox.services.reconciler.tick()
    assert state(sandbox, request_id)[0] == RequestState.APPLIED
    assert kube(sandbox).hard("ai-frontier-research", "compute-quota") == "8"


def test_a_stalled_api_times_out_and_is_retried(sandbox: Sandbox) -> None:
    request_id = submit(sandbox, "request ai-frontier-research +4 for 3d train")
    kube(sandbox).fail("GET", QUOTA_PATH, 0, delay=3.0)  # longer than the client's 2 s read timeout
    approve(sandbox, request_id)
    assert state(sandbox, request_id)[0] == RequestState.APPLIED


def test_a_namespace_without_a_quota_gets_one(sandbox: Sandbox) -> None:
    del kube(sandbox).quotas[("biz-model-serving", "compute-quota")]
    request_id = submit(sandbox, "request biz-model-serving +2 for 1d canary", user="U0BOB")
    approve(sandbox, request_id, user="U0MAYA")
    assert writes(sandbox) == [("POST", "All"), ("POST", "")]
    created = kube(sandbox).quotas[("biz-model-serving", "compute-quota")]
    assert created["spec"]["hard"] == {"requests.nvidia.com/gpu": "2"}
    assert created["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "gpu-quota-bot"


def test_a_deleted_namespace_fails_the_apply(sandbox: Sandbox) -> None:
    request_id = submit(sandbox, "request ai-frontier-research +4 for 3d train")
    kube(sandbox).delete_namespace("ai-frontier-research")
    approve(sandbox, request_id)
    current, reason = state(sandbox, request_id)
    assert current == RequestState.FAILED and "does not exist" in (reason or "")


def test_expiry_reverts_through_the_api(sandbox: Sandbox, clock: ManualClock) -> None:
    approve(sandbox, submit(sandbox, "request ai-frontier-research +4 for 3d train"))
    kube(sandbox).edit_quota("ai-frontier-research", "compute-quota", "requests.nvidia.com/gpu", "10")  # someone adds 2
    clock.advance(timedelta(days=3))
    sandbox.services.reconciler.tick()
    assert kube(sandbox).hard("ai-frontier-research", "compute-quota") == "6"  # 10 - the grant's 4
    assert kube(sandbox).hard("ai-frontier-research", "compute-quota", "limits.nvidia.com/gpu") == "6"


@pytest.mark.parametrize("status", [401, 403])
def test_status_refused_on_read_is_a_clear_message(sandbox: Sandbox, status: int) -> None:
    kube(sandbox).fail("GET", QUOTA_PATH, status)
    with pytest.raises(UserError, match=f"HTTP {status}"):
        submit(sandbox, "request ai-frontier-research +4 for 3d train")


def test_a_requests_cost_is_priced_by_the_dearest_gpu_model_on_the_nodes(sandbox: Sandbox) -> None:
    """Read through the real client from the nodes' ``nvidia.com/gpu.product`` label (GPU feature discovery)."""
    kube(sandbox).add_node("gpu-node-h100", 8, product="NVIDIA-H100-80GB-HBM3")
    kube(sandbox).add_node("gpu-node-t4", 4, product="Tesla-T4")  # not in the price list: ignored
    assert sandbox.database is not None
    request_id = submit(sandbox, "request ai-frontier-research +2 for 5h eval")
    row = sandbox.database.run(lambda repo: repo.request(request_id))
    assert row.cost == 48.0  # 2 x 5 h x 4.80 (the sandbox's H100 price), not 25.00 at its default 2.50
    assert (
        prices.render_basis(row.cost_basis, row.namespace)
        == "for the grant, at 4.80 USD/h, the NVIDIA H100 80GB HBM3 price (the most expensive GPU this namespace may get)"
    )


def test_a_cost_basis_the_version_before_stored_as_text_is_shown_as_stored(sandbox: Sandbox) -> None:
    assert sandbox.database is not None and sandbox.services is not None
    request_id = submit(sandbox, "request ai-frontier-research +2 for 5h eval")
    old = "for the grant, at 2.50 USD/h, the <default> price"
    with sandbox.database.engine.begin() as connection:
        stored = connection.execute(text("SELECT cost_basis FROM requests WHERE id = :id"), {"id": request_id}).scalar_one()
        connection.execute(text("UPDATE requests SET cost_basis = :old WHERE id = :id"), {"old": old, "id": request_id})

    assert stored.startswith('{"cost_basis":')
    policy = sandbox.services.policy
    card = sandbox.database.run(lambda repo: str(blocks.request_message(card_for(repo.request(request_id), policy))))
    assert "for the grant, at 2.50 USD/h, the &lt;default&gt; price" in card


def test_the_cluster_wide_reads_through_the_real_client(tmp_path: Path) -> None:
    """Nodes, all quotas, FailedCreate events and namespaces, read by ``KubernetesCluster`` over HTTP."""
    stand_in = KubeApiStandIn().start()
    try:
        seed_cluster(stand_in)
        stand_in.add_event(
            {
                "metadata": {"name": "train.1", "namespace": "ai-frontier-research"},
                "involvedObject": {"kind": "Job", "name": "train", "namespace": "ai-frontier-research", "uid": "u-1"},
                "reason": "FailedCreate",
                "message": 'pods "train-x" is forbidden: exceeded quota: compute-quota, requested: requests.nvidia.com/gpu=2',
                "count": 3,
            }
        )
        stand_in.add_event(
            {
                "metadata": {"name": "other.1", "namespace": "biz-model-serving"},
                "involvedObject": {"kind": "Job", "name": "web", "namespace": "biz-model-serving"},
                "reason": "FailedCreate",
                "message": "exceeded quota: compute-quota, requested: pods=1",
            }
        )
        cluster = KubernetesCluster.from_environment(stand_in.write_kubeconfig(tmp_path / "kubeconfig"))
        nodes = cluster.gpu_nodes()
        assert (nodes.of(GPU), nodes.of("nvidia.com/mig-1g.10gb")) == (32, 7)  # the MIG node offers slices, no GPU
        assert nodes.models_of("nvidia.com/mig-1g.10gb") == {"NVIDIA-A100-SXM4-80GB"} and not nodes.models_of(GPU)
        names = {"ai-frontier-research": "compute-quota", "biz-model-serving": "compute-quota"}
        assert cluster.gpu_quota_totals(names) == {"ai-frontier-research": {GPU: 4}, "biz-model-serving": {GPU: 16}}
        [refusal] = cluster.quota_refusals()
        assert (refusal.namespace, refusal.kind, refusal.name, refusal.uid, refusal.resource, refusal.count) == (
            "ai-frontier-research",
            "Job",
            "train",
            "u-1",
            GPU,
            3,
        )
        assert cluster.namespace_exists("biz-model-serving") and not cluster.namespace_exists("no-such-namespace")
        assert cluster.read_quota("ai-frontier-research", "missing-quota", GPU) is None
        with pytest.raises(NamespaceNotFound):
            cluster.read_quota("no-such-namespace", "compute-quota", GPU)
    finally:
        stand_in.stop()
