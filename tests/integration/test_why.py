"""``/gpu-quota why``: signed Slack HTTP into the real Bolt app, the real kubernetes client over HTTP against the API
stand-in (pods with tolerations, selectors, priorities; nodes with taints, labels, allocatable; events in the
scheduler's real wording), SQLite. Each cause found with its evidence and fix, refusals before any read, a failing
read said while the rest answers, and nothing written: no cluster write, no database row."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import text

from bot.adapters.db.models import Base
from bot.clock import ManualClock
from bot.sandbox.kube_api import KubeApiStandIn, failed_scheduling_event, quota_refusal_event
from bot.sandbox.session import Sandbox
from tests.integration.conftest import SlackOverHttp, buttons_of, served
from tests.integration.test_languages import texts
from tests.language_checks import catalog_misses, foreign_words

ALICE, BOB, PAT = "U0ALICE", "U0BOB", "U0PAT"  # PAT: an admin (the sandbox's S0PLATFORM)
RESEARCH, BIZ, QUOTA = "ai-frontier-research", "biz-model-serving", "compute-quota"
GPU_LABELS = {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.count": "4"}
TAINTED = (
    "0/3 nodes are available: 1 node(s) had untolerated taint {nvidia.com/gpu: true}, 2 Insufficient nvidia.com/gpu. "
    "preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, 2 No preemption victims found for incoming pod."
)
SELECTOR = (
    "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. "
    "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
)
INSUFFICIENT = (
    "0/4 nodes are available: 4 Insufficient nvidia.com/gpu. preemption: 0/4 nodes are available: "
    "4 No preemption victims found for incoming pod."
)
AUTOSCALER_STATUS = """time: 2026-11-30 08:59:00.000000 +0000 UTC
autoscalerStatus: Running
clusterWide:
  health:
    status: Healthy
nodeGroups:
- name: a100-pool
  health:
    status: Healthy
    nodeCounts:
      registered:
        total: 3
    minSize: 1
    maxSize: 6
  scaleUp:
    status: NoActivity
"""


def seed(kube: KubeApiStandIn) -> None:
    """Three 4-GPU A100 nodes: gpu-node-1 and -2 full of business's serving pods, gpu-node-3 free but tainted
    ``nvidia.com/gpu=true:NoSchedule``; frontier's quota 4 (4 in use), business's 16 (8)."""
    for namespace in (RESEARCH, BIZ):
        kube.add_namespace(namespace)
    kube.add_quota(RESEARCH, QUOTA, {"requests.nvidia.com/gpu": "4", "pods": "20"}, used_gpus=4)
    kube.add_quota(BIZ, QUOTA, {"requests.nvidia.com/gpu": "16", "pods": "20"}, used_gpus=8)
    kube.add_priority_class("low-priority-experiment", 100)
    kube.add_priority_class("high-priority-business", 1000000)
    kube.add_priority_class("batch-never", 500, preemption_policy="Never")
    for name in ("gpu-node-1", "gpu-node-2", "gpu-node-3"):
        taints = ["nvidia.com/gpu=true:NoSchedule"] if name == "gpu-node-3" else None
        kube.add_node(name, 4, product="NVIDIA-A100-SXM4-80GB", labels=GPU_LABELS, taints=taints)
    for index, node in ((0, "gpu-node-1"), (1, "gpu-node-2")):
        kube.add_pod(BIZ, f"ranker-serving-{index}", gpus=4, priority_class="high-priority-business", node=node)


@pytest.fixture
def slack(clock: ManualClock) -> Iterator[SlackOverHttp]:
    box = Sandbox(clock=clock, kube_timeout=(2.0, 2.0), seed=False).start()
    assert box.kube is not None
    seed(box.kube)
    with served(box) as served_slack:
        yield served_slack


def kube(slack: SlackOverHttp) -> KubeApiStandIn:
    assert slack.sandbox.kube is not None
    return slack.sandbox.kube


def rows(slack: SlackOverHttp) -> dict[str, int]:
    """Every table's row count: why must add none."""
    database = slack.sandbox.database
    assert database is not None
    with database.engine.connect() as connection:
        return {
            t.name: connection.execute(text(f'SELECT count(*) FROM "{t.name}"')).scalar_one() for t in Base.metadata.sorted_tables
        }


def why(slack: SlackOverHttp, words: str, user: str = ALICE) -> tuple[str, list[dict[str, Any]]]:
    """Ask, check nothing was written, and return the ephemeral answer's text (its blocks' mrkdwn) and blocks."""
    before, writes = rows(slack), len(kube(slack).writes())
    slack.command(user, f"why {words}")
    assert rows(slack) == before and len(kube(slack).writes()) == writes
    answer = slack.records("response")[-1]
    shown = [b["text"]["text"] for b in answer.blocks if "text" in b]
    shown += [e["text"] for b in answer.blocks if b["type"] == "context" for e in b["elements"]]
    return "\n".join(shown) or answer.text, answer.blocks


def test_a_taint_not_tolerated_gets_the_toleration_to_add_capacity_priority_and_the_scheduler_s_words(
    slack: SlackOverHttp,
) -> None:
    kube(slack).add_pod(
        RESEARCH, "train", gpus=2, priority_class="low-priority-experiment", phase="Pending", unschedulable_message=TAINTED
    )
    kube(slack).add_event(failed_scheduling_event(RESEARCH, "train", TAINTED, count=4))
    answer, _ = why(slack, f"{RESEARCH}/train")
    assert "*Why `ai-frontier-research/train` is pending*" in answer
    assert (
        "`gpu-node-3` has room for it but the taint `nvidia.com/gpu=true:NoSchedule`, which the pod does not tolerate" in answer
    )
    assert '```- key: nvidia.com/gpu\n  operator: Equal\n  value: "true"\n  effect: NoSchedule```' in answer
    assert "*Capacity*: no node it may use has 2 GPUs free" in answer
    assert "`high-priority-business` (1000000): 8" in answer and "preemption cannot help" in answer
    assert "No cluster autoscaler status" in answer
    assert "*The scheduler's words* (4 times" in answer and "> 0/3 nodes are available: 1 node(s) had untolerated taint" in answer
    assert answer.index("*Placement*") < answer.index("*Capacity*") < answer.index("*Priority*")


def test_a_node_selector_matching_no_gpu_node_names_the_values_that_exist(slack: SlackOverHttp) -> None:
    kube(slack).add_pod(
        RESEARCH, "finetune", gpus=2, phase="Pending", node_selector={"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
    )
    kube(slack).add_event(failed_scheduling_event(RESEARCH, "finetune", SELECTOR))
    answer, _ = why(slack, f"{RESEARCH} finetune")
    assert "its `nodeSelector` `nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3` matches no node offering the resource" in answer
    assert "Those nodes have `nvidia.com/gpu.product`: `NVIDIA-A100-SXM4-80GB`" in answer
    assert "*Capacity*" not in answer  # no node it may use: capacity is moot


def test_required_node_affinity_is_read_from_the_pod_spec(slack: SlackOverHttp) -> None:
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "pool", "operator": "In", "values": ["h100"]}]}]
            }
        }
    }
    kube(slack).add_pod(RESEARCH, "pinned", gpus=1, phase="Pending", affinity=affinity)
    answer, _ = why(slack, f"{RESEARCH}/pinned")
    assert "its required node affinity `pool In (h100)` matches no node offering the resource" in answer
    assert "Those nodes have no `pool` label." in answer


def test_a_misspelt_resource_names_what_the_nodes_offer(slack: SlackOverHttp) -> None:
    kube(slack).add_pod(RESEARCH, "typo", phase="Pending", resources={"nvidia.com/gpus": 1})
    answer, _ = why(slack, f"{RESEARCH}/typo")
    assert "it asks for `nvidia.com/gpus`, which no node advertises. Did you mean `nvidia.com/gpu`?" in answer
    assert "*Placement*" not in answer and "*Capacity*" not in answer


def test_the_autoscaler_status_and_a_class_that_never_preempts_are_said(slack: SlackOverHttp) -> None:
    kube(slack).add_config_map("kube-system", "cluster-autoscaler-status", {"status": AUTOSCALER_STATUS})
    kube(slack).add_pod(RESEARCH, "batch", gpus=4, priority_class="batch-never", phase="Pending",
                        tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists"}])  # fmt: skip
    kube(slack).add_pod(RESEARCH, "exp-0", gpus=4, priority_class="low-priority-experiment", node="gpu-node-3",
                        tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists"}])  # fmt: skip
    kube(slack).add_event(failed_scheduling_event(RESEARCH, "batch", INSUFFICIENT))
    answer, _ = why(slack, f"{RESEARCH}/batch")
    assert "Cluster autoscaler (health Healthy): it could add a node to `a100-pool`" in answer
    assert "Pods of lower priority hold 4 of them, but its class never preempts (`preemptionPolicy: Never`)" in answer


def test_a_job_refused_by_the_quota_offers_request_more_prefilled_and_the_button_opens_the_form(slack: SlackOverHttp) -> None:
    kube(slack).add_job(RESEARCH, "eval")
    kube(slack).add_pod(RESEARCH, "holder-a", gpus=2, node="gpu-node-3", tolerations=[{"operator": "Exists"}])
    kube(slack).add_event(quota_refusal_event(RESEARCH, "Job", "eval", requested=2, used=4, limited=4, count=3))
    answer, blocks = why(slack, f"{RESEARCH}/eval")
    assert "*Why Job `ai-frontier-research/eval` has no pods*" in answer
    assert "A pod asks 2 GPUs; the quota of `ai-frontier-research` allows 4 and 4 are in use (pods `holder-a`)" in answer
    button = buttons_of(blocks)["Request +2 GPUs"]
    assert json.loads(button["value"]) == {"namespace": RESEARCH, "gpus": "+2", "resource": "nvidia.com/gpu"}
    slack.click(ALICE, button)
    opened = slack.records("view_open")[-1].view
    assert opened is not None and "+2" in json.dumps(opened)


def test_a_running_pod_is_not_pending(slack: SlackOverHttp) -> None:
    answer, _ = why(slack, f"{BIZ}/ranker-serving-0", user=BOB)
    assert "not pending" in answer and "Running on node `gpu-node-1`" in answer and "4 GPUs" in answer


def test_another_team_s_namespace_and_an_unmanaged_one_are_refused_before_anything_is_read(slack: SlackOverHttp) -> None:
    before = len(kube(slack).log)
    slack.command(BOB, f"why {RESEARCH}/train")
    slack.command(ALICE, "why kube-system/coredns-0")
    assert len(kube(slack).log) == before
    refused = slack.responses()[-2:]
    assert "Only the people of Frontier research and admins can ask why pods of `ai-frontier-research` are pending." in refused[0]
    assert "`kube-system` is not managed by gpu-quota-bot." in refused[1]


def test_an_admin_may_ask_about_any_team(slack: SlackOverHttp) -> None:
    answer, _ = why(slack, f"{BIZ}/ranker-serving-1", user=PAT)
    assert "Running on node `gpu-node-2`" in answer


def test_rbac_missing_for_the_nodes_is_said_with_the_permission_and_the_scheduler_s_words_still_answer(
    slack: SlackOverHttp,
) -> None:
    kube(slack).add_pod(RESEARCH, "train", gpus=2, phase="Pending")
    kube(slack).add_event(failed_scheduling_event(RESEARCH, "train", INSUFFICIENT))
    kube(slack).fail(
        "GET",
        r"^/api/v1/nodes$",
        403,
        message='nodes is forbidden: User "system:serviceaccount:gpu:bot" cannot list resource "nodes"',
    )
    answer, _ = why(slack, f"{RESEARCH}/train")
    assert ":warning: Could not check the nodes:" in answer and "The bot needs the permission `list nodes`." in answer
    assert "> 0/4 nodes are available: 4 Insufficient nvidia.com/gpu." in answer


def test_the_api_server_failing_a_read_is_said_and_the_rest_answers(slack: SlackOverHttp) -> None:
    kube(slack).add_pod(RESEARCH, "train", gpus=2, phase="Pending")
    kube(slack).fail("GET", rf"^/api/v1/namespaces/{RESEARCH}/events$", 503, message="etcdserver: request timed out")
    answer, _ = why(slack, f"{RESEARCH}/train")
    assert ":warning: Could not check the scheduler's events:" in answer
    assert "*Placement*" in answer  # the taint on the free node, found all the same


def test_the_scheduler_s_words_are_escaped(slack: SlackOverHttp) -> None:
    hostile = "0/3 nodes are available: <!channel> <https://evil.example|click here> *now*"
    kube(slack).add_pod(RESEARCH, "train", gpus=2, phase="Pending")
    kube(slack).add_event(failed_scheduling_event(RESEARCH, "train", hostile))
    answer, _ = why(slack, f"{RESEARCH}/train")
    assert "<!channel>" not in answer and "<https://" not in answer and "&lt;!channel&gt;" in answer


def test_a_name_that_matches_nothing_opens_the_form_and_its_submission_becomes_the_answer(slack: SlackOverHttp) -> None:
    kube(slack).add_pod(RESEARCH, "train", gpus=2, phase="Pending")
    kube(slack).add_pod(RESEARCH, "eval", gpus=1, phase="Pending")
    before, writes = rows(slack), len(kube(slack).writes())
    slack.command(ALICE, f"why {RESEARCH}/trian")
    opened = slack.records("view_open")[-1].view
    assert opened is not None
    (select,) = [b for b in opened["blocks"] if b["type"] == "input"]
    assert sorted(o["value"] for o in select["element"]["options"]) == ["eval", "train"]
    assert "Nothing is called `trian`" in json.dumps(opened)
    slack.submit(ALICE, opened, {select["block_id"]: "train"})
    shown = json.dumps(slack.records("view_update")[-1].view)
    assert "Why `ai-frontier-research/train` is pending" in shown and "tolerations" in shown
    assert rows(slack) == before and len(kube(slack).writes()) == writes


def test_the_form_s_submission_is_checked_again(slack: SlackOverHttp) -> None:
    kube(slack).add_pod(RESEARCH, "train", gpus=2, phase="Pending")
    slack.command(ALICE, f"why {RESEARCH}")
    opened = slack.records("view_open")[-1].view
    assert opened is not None
    (select,) = [b for b in opened["blocks"] if b["type"] == "input"]
    slack.submit(BOB, opened, {select["block_id"]: "train"})  # someone else submits the same form
    assert "Only the people of Frontier research" in json.dumps(slack.records("view_update")[-1].view)


def test_a_namespace_without_pending_gpu_pods_says_so(slack: SlackOverHttp) -> None:
    answer, _ = why(slack, BIZ, user=BOB)
    assert "No GPU pod is pending in `biz-model-serving`." in answer


# --- a Chinese person -----------------------------------------------------------------------------

# What a Chinese answer shows as it is: the cluster's names, the scheduler's words, the label and its values.
SHOWN_AS_IS = (
    RESEARCH, BIZ, QUOTA, "train", "eval", "trian", "holder-a", "gpu-node-1", "gpu-node-2", "gpu-node-3", TAINTED,
    "low-priority-experiment", "high-priority-business", "nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB",
)  # fmt: skip


def test_a_chinese_person_reads_why_in_chinese_with_the_scheduler_s_words_as_they_are(slack: SlackOverHttp) -> None:
    slack.sandbox.slack.locales[ALICE] = "zh-CN"
    kube(slack).add_pod(
        RESEARCH, "train", gpus=2, priority_class="low-priority-experiment", phase="Pending", unschedulable_message=TAINTED
    )
    kube(slack).add_event(failed_scheduling_event(RESEARCH, "train", TAINTED, count=4))
    kube(slack).add_job(RESEARCH, "eval")
    kube(slack).add_pod(RESEARCH, "holder-a", gpus=2, node="gpu-node-3", tolerations=[{"operator": "Exists"}])
    kube(slack).add_event(quota_refusal_event(RESEARCH, "Job", "eval", requested=2, used=4, limited=4, count=3))
    with catalog_misses() as missed:
        pending, _ = why(slack, f"{RESEARCH}/train")
        refused, blocks = why(slack, f"{RESEARCH}/eval")
    assert missed == set()
    assert "*为什么 `ai-frontier-research/train` 仍在等待调度*" in pending
    assert "`gpu-node-3` 有空余容量，但带有污点 `nvidia.com/gpu=true:NoSchedule`" in pending
    assert '```- key: nvidia.com/gpu\n  operator: Equal\n  value: "true"\n  effect: NoSchedule```' in pending
    assert "*调度器的原话*（4 次" in pending and "> 0/3 nodes are available: 1 node(s) had untolerated taint" in pending
    assert "*为什么 Job `ai-frontier-research/eval` 没有 Pod*" in refused
    assert foreign_words(pending, values=SHOWN_AS_IS) == [] and foreign_words(refused, values=SHOWN_AS_IS) == []
    assert "申请 +2 块 GPU" in buttons_of(blocks)


def test_a_chinese_person_s_pick_form_and_its_answer_are_in_chinese(slack: SlackOverHttp) -> None:
    slack.sandbox.slack.locales[ALICE] = "zh-CN"
    kube(slack).add_pod(RESEARCH, "train", gpus=2, phase="Pending")
    kube(slack).add_pod(RESEARCH, "eval", gpus=1, phase="Pending")
    with catalog_misses() as missed:
        slack.command(ALICE, f"why {RESEARCH}/trian")
        opened = slack.records("view_open")[-1].view
        assert opened is not None
        (select,) = [b for b in opened["blocks"] if b["type"] == "input"]
        slack.submit(ALICE, opened, {select["block_id"]: "train"})
        shown = slack.records("view_update")[-1].view
    assert missed == set() and shown is not None
    assert opened["title"]["text"] == "为什么在等待调度？" and shown["title"]["text"] == "为什么在等待调度？"
    assert "`ai-frontier-research` 中没有名为 `trian` 的对象。" in json.dumps(opened, ensure_ascii=False)
    assert "*为什么 `ai-frontier-research/train` 仍在等待调度*" in json.dumps(shown, ensure_ascii=False)
    for view in (opened, shown):
        words = [w for text in texts(view) if (w := foreign_words(text, values=SHOWN_AS_IS))]
        assert words == [], view
