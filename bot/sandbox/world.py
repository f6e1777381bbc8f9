"""The sandbox's people, channels and clusters, seeded from the source document's scenario.

The shell's sandbox has two clusters: eu-1, the home cluster (``seed_cluster``), and us-2, where the
business team also serves its models (``seed_us_cluster``). ``sandbox_policy()`` alone is the one-cluster
policy of ``policy.yaml``, as the tests and ``shell --kubeconfig`` use it. ``shell --lang zh-CN`` makes it a Chinese
workplace: the policy and its teams speak zh-CN, the teams have Chinese names and every person's Slack locale is zh-CN."""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from importlib import resources

import yaml

from bot.adapters.i18n import N_
from bot.domain.clusters import HOME, namespace_key
from bot.domain.languages import Language
from bot.domain.policy import Policy, parse_policy
from bot.sandbox.kube_api import KubeApiStandIn, failed_scheduling_event
from bot.sandbox.kueue_api import resource_group
from bot.sandbox.slack_api import SlackApiStandIn


@dataclass(frozen=True)
class Person:
    """``role``: what they do, a catalog sentence the shell fills with ``{namespace}``, ``{team}`` (the display
    name of the policy team ``team``) and ``{group}`` (``PLATFORM_GROUP``)."""

    user_id: str
    name: str
    role: str
    team: str = ""
    namespace: str = ""


PLATFORM_GROUP = "@platform"
PEOPLE = (
    Person("U0ALICE", "alice", N_("researcher in {namespace}"), team="frontier", namespace="ai-frontier-research"),
    Person("U0LEE", "lee", N_("approver for {team}"), team="frontier"),
    Person("U0BOB", "bob", N_("engineer in {namespace}"), team="business", namespace="biz-model-serving"),
    Person("U0MAYA", "maya", N_("approver for {team}"), team="business"),
    Person("U0PAT", "pat", N_("platform admin (user group {group})")),
    Person("U0DANA", "dana", N_("head of platform, admin (user group {group})")),
)
# The Slack locale each of the shell's languages gives the sandbox's people (Slack's own default is en-US).
SLACK_LOCALES = {Language.EN: "en-US", Language.ZH_CN: "zh-CN"}
# What a Chinese platform team calls its teams (names, as the policy's display_name: not catalog sentences).
TEAM_NAMES = {Language.ZH_CN: {"frontier": "前沿研究", "business": "模型服务"}}
CHANNELS = {
    "C0GENERAL": "general",
    "C0FRONTIER": "frontier-approvals",
    "C0BIZ": "biz-approvals",
    "C0PLATFORM": "gpu-platform",
}
USERGROUPS = {"S0PLATFORM": ["U0PAT", "U0DANA"]}
QUOTA = "compute-quota"
MIG_SLICE = "nvidia.com/mig-1g.10gb"
BATCH_QUEUE = "frontier-batch"
HOME_CLUSTER, US_CLUSTER = "eu-1", "us-2"
US_SERVING = "biz-model-serving-us"  # in us-2 only, so no bare name of the sandbox names two namespaces
PRIORITY_CLASSES = (("high-priority-business", 1000000), ("low-priority-experiment", 100))
GPU_OPERATOR, DEVICE_PLUGIN = "gpu-operator", "nvidia-device-plugin-daemonset"
# What the GPU operator and node feature discovery put on a GPU node (the product label is left to the MIG node:
# the whole-GPU nodes are priced at the default price, as they always were in the sandbox).
GPU_NODE = {"nvidia.com/gpu.present": "true", "feature.node.kubernetes.io/pci-10de.present": "true"}
H100 = "NVIDIA-H100-80GB-HBM3"
# The scheduler's words for a pod whose node selector no node matches (Kubernetes 1.27+).
NO_NODE_MATCHES = (
    "0/5 nodes are available: 5 node(s) didn't match Pod's node affinity/selector. "
    "preemption: 0/5 nodes are available: 5 Preemption is not helpful for scheduling."
)


def sandbox_policy(*, two_clusters: bool = False, language: Language = Language.EN) -> Policy:
    """``policy.yaml``; ``two_clusters``: with eu-1 (home) and us-2, and business's ``us-2/biz-model-serving-us``;
    ``language`` other than English: the policy's and every team's language, and the teams' names in it
    (English leaves ``policy.yaml`` as it is: no ``language`` key, the bot's default)."""
    document = yaml.safe_load(resources.files("bot.sandbox").joinpath("policy.yaml").read_text(encoding="utf-8"))
    if two_clusters:
        document["clusters"] = {HOME_CLUSTER: {"home": True}, US_CLUSTER: {"context": US_CLUSTER, "timeout_seconds": 2}}
        document["teams"]["business"]["namespaces"].append(namespace_key(US_CLUSTER, US_SERVING))
    if language != Language.EN:
        document["language"] = language.value
        for key, team in document["teams"].items():
            team["language"] = language.value
            team["display_name"] = TEAM_NAMES.get(language, {}).get(key, team["display_name"])
    return parse_policy(document, source="sandbox policy")


def sandbox_slack(token: str, *, tls: ssl.SSLContext | None = None, locale: str | None = None) -> SlackApiStandIn:
    """The Slack stand-in with the sandbox's people, channels and user group; ``locale``: every person's Slack
    locale (users.info with include_locale), else Slack's default."""
    slack = SlackApiStandIn(
        token=token, users={p.user_id: p.name for p in PEOPLE}, channels=dict(CHANNELS), usergroups=USERGROUPS, tls=tls
    )
    if locale is not None:
        slack.locales.update({p.user_id: locale for p in PEOPLE})
    return slack


def seed_cluster(kube: KubeApiStandIn) -> None:
    """Frontier 4 GPUs (3 in use), business 16 (12 in use), on four 8-GPU nodes; the source document's
    two PriorityClasses, and running pods that account for the quotas' usage. Frontier's inference runs on
    MIG slices of an A100 in MIG mode (2 of 1g.10gb, 1 in use), its batch training in the Kueue ClusterQueue
    frontier-batch (4 GPUs of the a100 flavor, on an 8-GPU node of its own). The NVIDIA device plugin runs on
    every GPU node; something to ask ``why`` about: frontier's fine-tune pod waits for an H100 this cluster does
    not have (its node selector matches no node)."""
    for node in ("gpu-node-a", "gpu-node-b", "gpu-node-c", "gpu-node-d"):
        kube.add_node(node, 8, labels={**GPU_NODE, "nvidia.com/gpu.count": "8"})
    mig = {
        **GPU_NODE,
        "nvidia.com/gpu.count": "1",
        "nvidia.com/mig.config": "all-1g.10gb",
        "nvidia.com/mig.config.state": "success",
    }
    kube.add_node("gpu-node-mig", 0, product="NVIDIA-A100-SXM4-80GB", resources={MIG_SLICE: 7}, labels=mig)
    _add_device_plugin(kube, nodes=5)
    _seed_inference_and_batch(kube)
    kube.add_namespace("ai-frontier-research", {"team": "frontier", "cost-center": "frontier-ai"})
    kube.add_namespace("biz-model-serving", {"team": "business", "cost-center": "core-business"})
    for namespace, gpus, used in (("ai-frontier-research", 4, 3), ("biz-model-serving", 16, 12)):
        kube.add_quota(
            namespace,
            QUOTA,
            {"requests.nvidia.com/gpu": str(gpus), "limits.nvidia.com/gpu": str(gpus), "requests.cpu": "20", "pods": "20"},
            used_gpus=used,
        )
    _add_priority_classes(kube)
    started = datetime.now(timezone.utc)
    for namespace, pod, gpus, priority_class, age in (
        ("ai-frontier-research", "llm-sweep-0", 2, "low-priority-experiment", timedelta(hours=7)),
        ("ai-frontier-research", "notebook-alice", 1, "", timedelta(days=2)),
        ("biz-model-serving", "ranker-serving-0", 8, "high-priority-business", timedelta(days=12)),
        ("biz-model-serving", "ranker-train-nightly", 4, "high-priority-business", timedelta(hours=3)),
    ):
        kube.add_pod(namespace, pod, gpus=gpus, priority_class=priority_class, started=started - age)
    _seed_pending_fine_tune(kube, started - timedelta(minutes=40))


def seed_us_cluster(kube: KubeApiStandIn) -> None:
    """us-2: business serves models in biz-model-serving-us, 8 GPUs (6 in use) on two 8-GPU H100 nodes."""
    for node in ("us-gpu-node-a", "us-gpu-node-b"):
        kube.add_node(node, 8, product=H100, labels={**GPU_NODE, "nvidia.com/gpu.count": "8"})
    _add_device_plugin(kube, nodes=2)
    _add_priority_classes(kube)
    kube.add_namespace(US_SERVING, {"team": "business", "cost-center": "core-business"})
    hard = {"requests.nvidia.com/gpu": "8", "limits.nvidia.com/gpu": "8", "requests.cpu": "20", "pods": "20"}
    kube.add_quota(US_SERVING, QUOTA, hard, used_gpus=6)
    started = datetime.now(timezone.utc) - timedelta(days=5)
    kube.add_pod(US_SERVING, "ranker-serving-us-0", gpus=6, priority_class="high-priority-business", started=started)


def seed_clusters(kubes: Mapping[str, KubeApiStandIn]) -> None:
    """Each stand-in by its key part: the home cluster's (HOME) and us-2's; another cluster's is left empty."""
    for part, kube in kubes.items():
        if part == HOME:
            seed_cluster(kube)
        elif part == US_CLUSTER:
            seed_us_cluster(kube)


def _add_priority_classes(kube: KubeApiStandIn) -> None:
    """The source document's two PriorityClasses."""
    for name, value in PRIORITY_CLASSES:
        kube.add_priority_class(name, value)


def _add_device_plugin(kube: KubeApiStandIn, *, nodes: int) -> None:
    """The GPU operator's NVIDIA device plugin DaemonSet, ready on each of the ``nodes`` GPU nodes."""
    kube.add_namespace(GPU_OPERATOR)
    kube.add_daemon_set(
        GPU_OPERATOR,
        DEVICE_PLUGIN,
        labels={"app": DEVICE_PLUGIN},
        desired=nodes,
        ready=nodes,
        node_selector={"nvidia.com/gpu.present": "true"},
        tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
    )


def _seed_pending_fine_tune(kube: KubeApiStandIn, created: datetime) -> None:
    """Job llm-finetune's pod asks for 2 GPUs on an H100 node (they are in us-2): the scheduler places it nowhere."""
    kube.add_job("ai-frontier-research", "llm-finetune")
    kube.add_pod(
        "ai-frontier-research",
        "llm-finetune-x2k9p",
        gpus=2,
        priority_class="low-priority-experiment",
        phase="Pending",
        started=created,
        owner=("Job", "llm-finetune"),
        node_selector={"nvidia.com/gpu.product": H100},
        unschedulable_message=NO_NODE_MATCHES,
    )
    kube.add_event(failed_scheduling_event("ai-frontier-research", "llm-finetune-x2k9p", NO_NODE_MATCHES, count=4))


def _seed_inference_and_batch(kube: KubeApiStandIn) -> None:
    kube.add_namespace("ai-frontier-inference", {"team": "frontier", "cost-center": "frontier-ai"})
    kube.add_quota("ai-frontier-inference", QUOTA, {f"requests.{MIG_SLICE}": "2", "pods": "20"})
    kube.set_used("ai-frontier-inference", 1, resource=MIG_SLICE)
    kube.add_namespace("ai-frontier-batch", {"team": "frontier", "cost-center": "frontier-ai"})
    kube.add_resource_flavor("a100", node_labels={"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"})
    kube.add_cluster_queue(BATCH_QUEUE, [resource_group(["cpu", "nvidia.com/gpu"], {"a100": {"cpu": 64, "nvidia.com/gpu": 4}})])
    kube.add_local_queue("ai-frontier-batch", "training", BATCH_QUEUE)
