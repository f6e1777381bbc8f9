"""A Karmada plane and two member clusters for the Karmada tests: one namespace propagated to both, its
FederatedResourceQuota giving each member a share of the GPUs (and of the CPUs) with some left unassigned."""

from __future__ import annotations

from bot.sandbox.karmada_api import KarmadaApiStandIn

NAMESPACE = "ai-frontier-research"
FRQ = "team-quota"
EU, US = "eu-1", "us-2"
GPU = "nvidia.com/gpu"
GPU_KEY = f"requests.{GPU}"  # what a member's ResourceQuota enforces for GPUs
GPU_TOKEN = "requests.nvidia.com~1gpu"  # the key as a JSON Pointer token


def seed_karmada(plane: KarmadaApiStandIn) -> None:
    """``team-quota``: 24 GPUs overall, 8 assigned to eu-1 and 12 to us-2 (4 unassigned); 100 CPUs, 40 and 60."""
    plane.add_namespace(NAMESPACE, {"team": "frontier"})
    plane.add_federated_quota(
        NAMESPACE,
        FRQ,
        overall={GPU_KEY: 24, "cpu": "100"},
        assignments={EU: {GPU_KEY: 8, "cpu": "40"}, US: {GPU_KEY: 12, "cpu": "60"}},
    )
