"""Two clusters for the tests and the benchmark of several clusters (issue 21): eu-1, the home cluster
(the sandbox's seeded stand-in), and us-2, a second stand-in where frontier also has
ai-frontier-research (``us-2/ai-frontier-research``); one kubeconfig with a context for each."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from bot.sandbox.kube_api import KubeApiStandIn
from tests.integration.processes import SANDBOX_POLICY

RESEARCH, QUOTA = "ai-frontier-research", "compute-quota"
REMOTE_CLUSTER = "us-2"
REMOTE = f"{REMOTE_CLUSTER}/{RESEARCH}"


def two_cluster_policy_data(*, remote_timeout_seconds: float = 2) -> dict[str, Any]:
    """The sandbox policy with clusters eu-1 (home) and us-2, and frontier's namespace in us-2."""
    policy: dict[str, Any] = yaml.safe_load(SANDBOX_POLICY.read_text())
    policy["clusters"] = {
        "eu-1": {"home": True},
        REMOTE_CLUSTER: {"context": REMOTE_CLUSTER, "timeout_seconds": remote_timeout_seconds},
    }
    policy["teams"]["frontier"]["namespaces"].append(REMOTE)
    return policy


def seed_remote(remote: KubeApiStandIn) -> None:
    """us-2: one 8-GPU node and ai-frontier-research with a quota of 2 GPUs, 1 used."""
    remote.add_node("us-gpu-node-a", 8)
    remote.add_namespace(RESEARCH, {"team": "frontier"})
    remote.add_quota(RESEARCH, QUOTA, {"requests.nvidia.com/gpu": "2"}, used_gpus=1)


def kubeconfig(path: Path, home: KubeApiStandIn, remote: KubeApiStandIn, **more: KubeApiStandIn) -> Path:
    """One kubeconfig with a context per cluster, the home cluster's current (as an operator would merge them)."""
    clusters = [("eu-1", home), (REMOTE_CLUSTER, remote), *more.items()]
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": name, "cluster": {"server": kube.url}} for name, kube in clusters],
                "users": [{"name": name, "user": {"token": kube.token}} for name, kube in clusters],
                "contexts": [{"name": name, "context": {"cluster": name, "user": name}} for name, _ in clusters],
                "current-context": "eu-1",
            }
        )
    )
    return path
