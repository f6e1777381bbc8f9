"""Concurrent approvals on one Kueue ClusterQueue from two replicas land exactly once (issue 20): two real
``gpu-quota-bot run`` processes sharing the machine's PostgreSQL, signed HTTP clicks released together, the
Kubernetes API stand-in serving Kueue over HTTP.

The ClusterQueue frontier-batch holds the GPUs of two namespaces, each in its own flavor: the sandbox's
ai-frontier-batch in a100 (4 to start with) and, here, ai-frontier-pretrain in h100 (8). Their writes patch
the same object, so they share its critical section: no replica's write may race another's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from bot.sandbox.kube_api import KubeApiStandIn
from bot.sandbox.kueue_api import resource_group
from tests.integration.bot_process import BotProcess, Driver, Ledger, roomy_policy
from tests.integration.processes import run_env, wait_for

BATCH, PRETRAIN, QUEUE, GPU = "ai-frontier-batch", "ai-frontier-pretrain", "frontier-batch", "nvidia.com/gpu"
FLAVORS = {BATCH: "a100", PRETRAIN: "h100"}
PER_NAMESPACE = 12


def two_namespaces_one_queue(tmp_path: Path, kube: KubeApiStandIn) -> Path:
    """The policy with ai-frontier-pretrain kept in the h100 flavor of frontier-batch, and the cluster to match."""
    path = roomy_policy(tmp_path)
    policy = yaml.safe_load(path.read_text())
    queue = {"name": QUEUE, "flavor": FLAVORS[PRETRAIN]}
    policy["teams"]["frontier"]["namespaces"].append({"name": PRETRAIN, "resources": [{"name": GPU, "cluster_queue": queue}]})
    path.write_text(yaml.safe_dump(policy))
    kube.add_namespace(PRETRAIN, {"team": "frontier"})
    kube.add_resource_flavor("h100", node_labels={"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"})
    kube.add_cluster_queue(QUEUE, [resource_group(["cpu", GPU], {"a100": {"cpu": 64, GPU: 4}, "h100": {"cpu": 32, GPU: 8}})])
    kube.add_local_queue(PRETRAIN, "training", QUEUE)
    return path


def patches_sent(kube: KubeApiStandIn) -> int:
    """The bot's real (not dry-run) patches of the queue: persisted or refused (a 409 or a failed test)."""
    return sum(1 for _, path, query, _ in kube.writes() if path.endswith(f"/clusterqueues/{QUEUE}") and "dryRun" not in query)


@pytest.fixture
def bots() -> Iterator[list[BotProcess]]:
    started: list[BotProcess] = []
    yield started
    for bot in started:
        bot.stop()


@pytest.mark.postgres
def test_two_replicas_approving_every_request_twice_write_the_queue_once_per_change(
    tmp_path: Path, stand_ins: tuple, bots: list[BotProcess], postgres_url: str
) -> None:
    slack, kube = stand_ins
    policy = two_namespaces_one_queue(tmp_path, kube)
    env = dict(DATABASE_URL=postgres_url, GPU_QUOTA_CONFIG=str(policy), LEADER_CHECK_SECONDS="0.5")
    for name in ("a", "b"):
        bots.append(BotProcess(name, run_env(tmp_path, slack, kube, **env), tmp_path))
    a, b = (bot.ready() for bot in bots)
    driver, ledger = Driver(slack), Ledger(postgres_url)
    try:
        namespaces = [BATCH, PRETRAIN] * PER_NAMESPACE  # GQ-1 for batch, GQ-2 for pretrain, ...
        for n, namespace in enumerate(namespaces, start=1):
            driver.submit(a if n % 2 else b, f"request {namespace} +1 for 1d burst {n}")
        ids = list(range(1, len(namespaces) + 1))
        for request_id in ids:
            driver.card(request_id)
        kube.edit_cluster_queue(QUEUE, "a100", GPU, nominal_quota=6)  # a person adds 2 to batch's, by hand
        writes, sent = kube.kueue_writes("clusterqueues", QUEUE), patches_sent(kube)

        driver.approve_all_at_once((replica, request_id) for request_id in ids for replica in (a, b))
        wait_for(lambda: ledger.count("applied") + ledger.count("failed") == len(ids), timeout=120, what="every request decided")

        writes, sent = kube.kueue_writes("clusterqueues", QUEUE) - writes, patches_sent(kube) - sent
        print(f"\n{len(ids)} requests x 2 clicks on 2 replicas, one ClusterQueue: {writes} writes, {sent - writes} refused")
        assert ledger.count("applied") == len(ids) and ledger.count("failed") == 0
        assert kube.nominal_quota(QUEUE, "a100", GPU) == 6 + PER_NAMESPACE == ledger.desired(BATCH)
        assert kube.nominal_quota(QUEUE, "h100", GPU) == 8 + PER_NAMESPACE == ledger.desired(PRETRAIN)
        assert (ledger.base(BATCH), ledger.base(PRETRAIN)) == (6, 8)  # the hand edit is in batch's base, once
        adopted = ledger.audit("manual_change_adopted")
        assert [(e.namespace, e.after["base_gpus"] - e.before["base_gpus"]) for e in adopted] == [(BATCH, 2)]
        assert ledger.per_request("request_applied") == {request_id: 1 for request_id in ids}
        assert ledger.per_request("request_approved") == {request_id: 1 for request_id in ids}  # the second click: "already"
        assert 2 <= writes <= len(ids)  # at most one write per change
        assert sent == writes  # and none refused: no replica wrote while another did (no 409, no failed test)
        queue = kube.cluster_queue(QUEUE)
        assert queue is not None
        annotations = queue["metadata"]["annotations"]
        assert annotations["gpu-quota-bot.io/applied.a100.nvidia.com_gpu"] == str(6 + PER_NAMESPACE)
        assert annotations["gpu-quota-bot.io/applied.h100.nvidia.com_gpu"] == str(8 + PER_NAMESPACE)
        assert (kube.nominal_quota(QUEUE, "a100", "cpu"), kube.nominal_quota(QUEUE, "h100", "cpu")) == (64, 32)
    finally:
        ledger.close()
