"""A namespace whose ResourceQuota governs several GPU resources (issue 20): signed Slack HTTP into the real
Bolt app, the real kubernetes client over HTTP against the API stand-in, SQLite and PostgreSQL.

The policy here is the sandbox's with two changes: ai-frontier-research governs whole GPUs and the MIG
profile 3g.40gb of H100s in MIG mode (both in its ResourceQuota compute-quota), and ai-frontier-inference
governs two MIG profiles, 1g.10gb (2 in its quota, 1 in use) and 3g.40gb (4, 3 in use).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from bot.adapters.slack import ids
from bot.clock import ManualClock
from bot.domain.entities import Namespace, Request
from bot.domain.lifecycle import RequestState
from bot.domain.policy import Policy, parse_policy
from bot.domain.quota import APPLIED_ANNOTATION, APPLIED_BY_ANNOTATION, stamp_annotations
from bot.domain.records import AuditEntry
from bot.sandbox.kube_api import KubeApiStandIn
from bot.sandbox.session import Sandbox
from tests.integration.conftest import SlackOverHttp, served
from tests.integration.processes import SANDBOX_POLICY

ALICE, LEE = "U0ALICE", "U0LEE"
RESEARCH, INFERENCE, QUOTA = "ai-frontier-research", "ai-frontier-inference", "compute-quota"
GPU, MIG_3G, MIG_1G = "nvidia.com/gpu", "nvidia.com/mig-3g.40gb", "nvidia.com/mig-1g.10gb"


def mig_policy() -> Policy:
    policy = yaml.safe_load(SANDBOX_POLICY.read_text())
    policy["teams"]["frontier"]["namespaces"] = [
        {"name": RESEARCH, "resources": [GPU, MIG_3G]},
        {"name": INFERENCE, "resources": [MIG_1G, MIG_3G]},
        "ai-frontier-batch",
    ]
    return parse_policy(policy, source="the MIG test policy")


def seed_mig(kube: KubeApiStandIn) -> None:
    """An H100 node in MIG mode (mixed strategy: 8 GPUs as 16 slices of 3g.40gb); the two namespaces' quotas."""
    kube.add_node("gpu-node-h100-mig", 0, product="NVIDIA-H100-80GB-HBM3", resources={MIG_3G: 16})
    hard = {
        f"requests.{GPU}": "4",
        f"limits.{GPU}": "4",
        f"requests.{MIG_3G}": "2",
        "requests.cpu": "20",
        "pods": "20",
    }
    kube.add_quota(RESEARCH, QUOTA, hard, used_gpus=3)
    kube.set_used(RESEARCH, 1, resource=MIG_3G)
    kube.add_quota(INFERENCE, QUOTA, {f"requests.{MIG_1G}": "2", f"requests.{MIG_3G}": "4", "pods": "20"})
    kube.set_used(INFERENCE, 1, resource=MIG_1G)
    kube.set_used(INFERENCE, 3, resource=MIG_3G)


@pytest.fixture
def slack(database_url: str, clock: ManualClock) -> Iterator[SlackOverHttp]:
    box = Sandbox(policy=mig_policy(), clock=clock, kube_timeout=(2.0, 2.0), database_url=database_url).start()
    assert box.kube is not None
    seed_mig(box.kube)
    with served(box) as slack:
        yield slack


def kube(slack: SlackOverHttp) -> KubeApiStandIn:
    assert slack.sandbox.kube is not None
    return slack.sandbox.kube


def quota(slack: SlackOverHttp, namespace: str = RESEARCH) -> dict[str, Any]:
    return kube(slack).quotas[(namespace, QUOTA)]


def approve(slack: SlackOverHttp, text: str) -> None:
    slack.command(ALICE, text)
    card = slack.request_message()
    slack.click(LEE, slack.buttons(card)["Approve"], card)
    assert slack.responses()[-1].endswith("it is applied."), slack.responses()


def stored(slack: SlackOverHttp) -> tuple[list[Request], list[AuditEntry], list[Namespace]]:
    """Everything the bot recorded: requests, audit entries, namespaces."""
    database = slack.sandbox.database
    assert database is not None
    return database.run(
        lambda repo: (
            list(repo.session.query(Request).all()),
            list(repo.session.query(AuditEntry).all()),
            list(repo.session.query(Namespace).all()),
        )
    )


def test_a_mig_request_changes_only_its_own_key_and_stamp(slack: SlackOverHttp) -> None:
    approve(slack, f"request {RESEARCH} +1 gpu for 1d a whole GPU first")  # stamps the whole GPUs' annotations
    before = json.loads(json.dumps(quota(slack)))
    assert before["spec"]["hard"][f"requests.{GPU}"] == "5"
    assert before["metadata"]["annotations"] == {APPLIED_ANNOTATION: "5", APPLIED_BY_ANNOTATION: "GQ-1"}

    approve(slack, f"request {RESEARCH} +2 mig-3g.40gb for 1d inference eval")

    after = quota(slack)
    expected = dict(before["spec"]["hard"], **{f"requests.{MIG_3G}": "4"})
    assert after["spec"]["hard"] == expected  # the GPU key, its limits, cpu and pods as they were; no limits.<mig> added
    applied, applied_by = stamp_annotations(MIG_3G)
    assert applied == "gpu-quota-bot.io/applied.nvidia.com_mig-3g.40gb"
    assert after["metadata"]["annotations"] == {
        APPLIED_ANNOTATION: "5",  # the whole GPUs' stamp, untouched
        APPLIED_BY_ANNOTATION: "GQ-1",
        applied: "4",
        applied_by: "GQ-2",
    }
    assert after["status"]["used"][f"requests.{MIG_3G}"] == "1"
    applied_line = slack.thread(slack.request_message())[-1]
    assert applied_line.startswith(
        f":white_check_mark: Applied: `requests.{MIG_3G}` in *{RESEARCH}* ({QUOTA}) 2 MIG 3g.40gb slices → *4 MIG 3g.40gb slices*."
    )
    requests, _, namespaces = stored(slack)
    assert [(r.id, r.resource, r.delta, RequestState(r.state)) for r in requests] == [
        (1, GPU, 1, RequestState.APPLIED),
        (2, MIG_3G, 2, RequestState.APPLIED),
    ]
    assert sorted((n.resource, n.base_gpus) for n in namespaces if n.name == RESEARCH) == [(GPU, 4), (MIG_3G, 2)]

    slack.command(ALICE, f"status {RESEARCH}")  # each resource with its own figures
    status = slack.responses()[-1]
    gpus, mig = status.split("\n*")
    assert gpus.startswith(f"*{RESEARCH}* (Frontier research, quota `{QUOTA}`): *5* hard / 3 used")
    assert mig.startswith(f"{RESEARCH}* · MIG 3g.40gb (Frontier research, quota `{QUOTA}`): *4* hard / 1 used")
    assert "GQ-2: +2 MIG 3g.40gb slices" in mig and "GQ-2" not in gpus


def select_of(view: dict[str, Any]) -> dict[str, Any]:
    (block,) = [b for b in view["blocks"] if b.get("block_id") == ids.RESOURCE_BLOCK]
    return block["element"]


@pytest.mark.parametrize("word", ["", " mig"])
def test_a_request_naming_no_resource_or_an_ambiguous_one_opens_the_form_with_the_choice(slack: SlackOverHttp, word: str) -> None:
    slack.command(ALICE, f"request {INFERENCE} +1{word} for 1d eval")

    (opened,) = slack.records("view_open")
    assert opened.view is not None and opened.view["callback_id"] == ids.REQUEST_FORM
    select = select_of(opened.view)
    assert select["type"] == "static_select" and "initial_option" not in select  # nothing chosen for the person
    options = [(o["value"], o["text"]["text"]) for o in select["options"]]
    assert options == [(MIG_1G, "mig-1g.10gb: 1 of 2 in use"), (MIG_3G, "mig-3g.40gb: 3 of 4 in use")]
    prefilled = {b["block_id"]: b["element"].get("initial_value") for b in opened.view["blocks"] if b["type"] == "input"}
    assert (prefilled[ids.GPUS_BLOCK], prefilled[ids.DURATION_BLOCK], prefilled[ids.REASON_BLOCK]) == ("+1", "1d", "eval")
    assert stored(slack) == ([], [], [])
    assert kube(slack).quota_writes() == 0

    form = opened.view
    values = {
        ids.NAMESPACE_BLOCK: INFERENCE,
        ids.RESOURCE_BLOCK: MIG_3G,
        ids.GPUS_BLOCK: "+1",
        ids.TERM_BLOCK: ids.TEMPORARY,
        ids.DURATION_BLOCK: "1d",
        ids.REASON_BLOCK: "eval",
    }
    assert slack.submit(ALICE, form, values).json()["response_action"] == "update"
    (request,), _, _ = stored(slack)
    assert (request.namespace, request.resource, request.delta) == (INFERENCE, MIG_3G, 1)


def test_a_word_naming_no_governed_resource_is_refused_with_what_is_governed(slack: SlackOverHttp) -> None:
    slack.command(ALICE, f"request {INFERENCE} +1 gpu for 1d eval")

    assert slack.records("view_open") == []
    assert slack.responses()[-1] == (
        f":no_entry_sign: Not submitted: `{INFERENCE}` does not govern `gpu`. It governs: mig-1g.10gb, mig-3g.40gb."
    )
    assert stored(slack) == ([], [], [])
    assert kube(slack).quota_writes() == 0
