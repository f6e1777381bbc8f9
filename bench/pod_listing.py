"""Listing a namespace's GPU pods with the official client: typed models vs the raw JSON the bot reads.

The Kubernetes API stand-in (``bot/sandbox/kube_api.py``) serves 100 and 1,000 pods on loopback, each
padded to the size of a real pod (managedFields, env, volumes, conditions, container statuses: about
5 KB of JSON). Each size is listed with ``CoreV1Api.list_namespaced_pod`` and the bot's field selector,
once deserialised into ``V1Pod`` objects and once with ``_preload_content=False`` + ``json.loads`` +
``bot.adapters.kube.gpu_pod`` (what ``KubernetesCluster.gpu_pods`` does). Prints the median of
``--repeat`` runs per size and way, the ratio, and the transfer alone (the stand-in serving the list
over loopback, no parsing), which both ways pay.

    .venv/bin/python bench/pod_listing.py
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

from kubernetes import client

from bot.adapters.kube import ACTIVE_PODS, gpu_pod
from bot.sandbox.kube_api import KubeApiStandIn

NAMESPACE = "ai-frontier-research"


def realistic(pod: dict[str, Any], index: int) -> None:
    """Pad a stand-in pod with what a real one carries."""
    container = pod["spec"]["containers"][0]
    container["env"] = [{"name": f"VAR_{i}", "value": f"value-{i}-" + "x" * 20} for i in range(20)]
    container["volumeMounts"] = [{"name": f"vol-{i}", "mountPath": f"/data/{i}"} for i in range(5)]
    container["command"] = ["python", "-m", "train", "--config", f"/configs/run-{index}.yaml"]
    pod["spec"]["volumes"] = [{"name": f"vol-{i}", "persistentVolumeClaim": {"claimName": f"claim-{i}"}} for i in range(5)]
    pod["spec"]["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    pod["metadata"]["labels"] = {"app": "train", "run": f"run-{index}", "team": "frontier"}
    pod["metadata"]["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": f"run-{index}", "uid": f"u-{index}"}]
    pod["metadata"]["managedFields"] = [
        {
            "manager": "kube-controller-manager",
            "operation": "Update",
            "apiVersion": "v1",
            "time": "2026-11-30T08:00:00Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {f"f:field{i}": {} for i in range(60)},
        }
    ]
    pod["status"]["conditions"] = [
        {"type": kind, "status": "True", "lastTransitionTime": "2026-11-30T08:00:00Z"}
        for kind in ("Initialized", "Ready", "ContainersReady", "PodScheduled")
    ]
    pod["status"]["containerStatuses"] = [
        {
            "name": "main",
            "ready": True,
            "restartCount": 0,
            "image": "registry.example/train:1",
            "imageID": "registry.example/train@sha256:" + "0" * 64,
            "containerID": "containerd://" + "a" * 64,
            "state": {"running": {"startedAt": "2026-11-30T08:01:00Z"}},
        }
    ]


def timed(call: Callable[[], int], repeat: int) -> tuple[float, int]:
    seconds, count = [], 0
    for _ in range(repeat):
        start = time.perf_counter()
        count = call()
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds), count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    kube = KubeApiStandIn().start()
    try:
        kube.add_namespace(NAMESPACE)
        kube.add_priority_class("low-priority-experiment", 100)
        configuration = client.Configuration(host=kube.url, api_key={"authorization": f"Bearer {kube.token}"})
        api = client.CoreV1Api(client.ApiClient(configuration))

        def typed() -> int:
            pods = api.list_namespaced_pod(NAMESPACE, field_selector=ACTIVE_PODS)
            return len(pods.items)

        def raw() -> int:
            response = api.list_namespaced_pod(NAMESPACE, field_selector=ACTIVE_PODS, _preload_content=False)
            return sum(1 for item in json.loads(response.data)["items"] if gpu_pod(item) is not None)

        def transfer() -> int:
            response = api.list_namespaced_pod(NAMESPACE, field_selector=ACTIVE_PODS, _preload_content=False)
            return len(response.data)

        print(f"{'pods':>6} {'JSON/pod':>9} {'transfer only':>14} {'typed (V1Pod)':>14} {'raw JSON':>10} {'typed/raw':>10}")
        for size in (100, 1000):
            for index in range(len(kube.pods), size):
                kube.add_pod(NAMESPACE, f"run-{index}-0", gpus=1, priority_class="low-priority-experiment")
                realistic(kube.pods[(NAMESPACE, f"run-{index}-0")], index)
            per_pod = len(json.dumps(next(iter(kube.pods.values()))))
            typed_s, typed_n = timed(typed, args.repeat)
            raw_s, raw_n = timed(raw, args.repeat)
            transfer_s, _ = timed(transfer, args.repeat)
            assert typed_n == raw_n == size, (typed_n, raw_n, size)
            print(
                f"{size:>6} {per_pod:>8}B {transfer_s * 1000:>12.1f}ms {typed_s * 1000:>12.1f}ms {raw_s * 1000:>8.1f}ms"
                f" {typed_s / raw_s:>9.1f}x"
            )
    finally:
        kube.stop()


if __name__ == "__main__":
    main()
