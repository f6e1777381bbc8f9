"""A cluster with Kueue for the Kueue tests: two namespaces, three flavors, two ClusterQueues in one cohort,
a LocalQueue and two Workloads (one waiting for quota, one admitted)."""

from __future__ import annotations

from datetime import datetime, timezone

from bot.sandbox.kube_api import KubeApiStandIn
from bot.sandbox.kueue_api import resource_group

RESEARCH = "ml-research"
PROD = "ml-prod"
RESEARCH_QUEUE = "research-cq"
PROD_QUEUE = "prod-cq"
COHORT = "gpu-pool"
GPU = "nvidia.com/gpu"
CREATED = datetime(2026, 11, 30, 8, 0, tzinfo=timezone.utc)
WAITING_MESSAGE = f"couldn't assign flavors to pod set main: insufficient unused quota for {GPU} in flavor h100, 2 more needed"


def seed_kueue(kube: KubeApiStandIn) -> None:
    """``research-cq``: cpu/memory in ``default-flavor``, GPUs in ``h100`` (8, may borrow 4) then ``a100`` (4);
    6 of its h100 GPUs reserved, one workload waiting for 2 more. ``prod-cq``: 16 h100 GPUs, same cohort."""
    kube.add_namespace(RESEARCH, {"team": "research"})
    kube.add_namespace(PROD, {"team": "prod"})
    for flavor in ("default-flavor", "h100", "a100"):
        kube.add_resource_flavor(flavor, node_labels={} if flavor == "default-flavor" else {"nvidia.com/gpu.product": flavor})
    kube.add_cluster_queue(
        RESEARCH_QUEUE,
        [
            resource_group(["cpu", "memory"], {"default-flavor": {"cpu": 64, "memory": "256Gi"}}),
            resource_group([GPU], {"h100": {GPU: {"nominalQuota": 8, "borrowingLimit": 4}}, "a100": {GPU: 4}}),
        ],
        cohort=COHORT,
    )
    kube.add_cluster_queue(PROD_QUEUE, [resource_group([GPU], {"h100": {GPU: 16}})], cohort=COHORT)
    kube.add_local_queue(RESEARCH, "research-lq", RESEARCH_QUEUE)
    kube.add_workload(RESEARCH, "job-train-a", queue="research-lq", requests={GPU: 6}, created=CREATED)
    kube.add_workload(RESEARCH, "job-sweep-1", queue="research-lq", requests={GPU: 4}, pending=WAITING_MESSAGE, created=CREATED)
    kube.set_cluster_queue_status(RESEARCH_QUEUE, "h100", GPU, reserved=6, pending_workloads=1)
