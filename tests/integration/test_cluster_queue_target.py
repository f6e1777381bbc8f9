"""A namespace whose GPU quota is a Kueue ClusterQueue's nominalQuota (issue 20): signed Slack HTTP into the real
Bolt app, the real kubernetes client over HTTP against the API stand-in serving Kueue, SQLite and PostgreSQL.

The sandbox's ai-frontier-batch keeps nvidia.com/gpu in the a100 flavor of the ClusterQueue frontier-batch.
Here that queue has a second flavor before it, h100, and both flavors cover cpu too: the bot may change
exactly one number, spec.resourceGroups[0].flavors[1].resources[1].nominalQuota (4 to start with).
"""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
import yaml

from bot.adapters.slack import ids
from bot.clock import ManualClock
from bot.domain.entities import Request
from bot.domain.lifecycle import RequestState
from bot.domain.policy import Policy, parse_policy
from bot.domain.records import AuditEntry
from bot.sandbox.httpserver import Incoming, Outgoing
from bot.sandbox.kube_api import KubeApiStandIn
from bot.sandbox.kueue_api import resource_group
from bot.sandbox.session import Sandbox
from tests.integration.conftest import SlackOverHttp, buttons_of, served
from tests.integration.processes import SANDBOX_POLICY

ALICE, LEE, DANA = "U0ALICE", "U0LEE", "U0DANA"
BATCH, QUEUE, FLAVOR, GPU = "ai-frontier-batch", "frontier-batch", "a100", "nvidia.com/gpu"
APPLIED = "gpu-quota-bot.io/applied.a100.nvidia.com_gpu"
APPLIED_BY = "gpu-quota-bot.io/applied-by.a100.nvidia.com_gpu"
WAITING = "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor a100, 2 more needed"


class KueueWithAPerson(KubeApiStandIn):
    """The stand-in, where a person's ``kubectl edit`` (``between``) lands just before the bot's next real
    (not dry-run) write of a ClusterQueue: after the bot read the queue and its dry run passed."""

    between: Callable[[], None] | None = None

    def _handle(self, incoming: Incoming) -> Outgoing:
        edit = self.between
        if edit and incoming.method == "PATCH" and "/clusterqueues/" in incoming.path and "dryRun" not in incoming.query:
            self.between = None
            edit()
        return super()._handle(incoming)


def seed_two_flavors(kube: KubeApiStandIn) -> None:
    kube.add_resource_flavor("h100", node_labels={"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"})
    kube.add_cluster_queue(
        QUEUE,
        [resource_group(["cpu", GPU], {"h100": {"cpu": 32, GPU: 8}, FLAVOR: {"cpu": 64, GPU: 4}})],
        annotations={"owner": "platform-team"},
    )


def started(database_url: str, clock: ManualClock, policy: Policy | None = None) -> Sandbox:
    box = Sandbox(policy=policy, clock=clock, kube_timeout=(2.0, 2.0), database_url=database_url)
    box.kube = KueueWithAPerson()
    box.start()
    seed_two_flavors(box.kube)
    return box


@pytest.fixture
def slack(database_url: str, clock: ManualClock) -> Iterator[SlackOverHttp]:
    with served(started(database_url, clock)) as slack:
        yield slack


def kube(slack: SlackOverHttp) -> KueueWithAPerson:
    assert isinstance(slack.sandbox.kube, KueueWithAPerson)
    return slack.sandbox.kube


def nominal(slack: SlackOverHttp, flavor: str = FLAVOR, resource: str = GPU) -> Any:
    return kube(slack).nominal_quota(QUEUE, flavor, resource)


def queue(slack: SlackOverHttp) -> dict[str, Any]:
    found = kube(slack).cluster_queue(QUEUE)
    assert found is not None
    return found


def spec_but_the_quota(slack: SlackOverHttp) -> dict[str, Any]:
    """The queue's spec with the one number the bot may change blanked out."""
    spec = copy.deepcopy(queue(slack)["spec"])
    for group in spec["resourceGroups"]:
        for flavor in group["flavors"]:
            for quota in flavor["resources"]:
                if (flavor["name"], quota["name"]) == (FLAVOR, GPU):
                    quota["nominalQuota"] = "the bot's"
    return spec


def state(slack: SlackOverHttp, request_id: int) -> RequestState:
    database = slack.sandbox.database
    assert database is not None
    row = database.run(lambda repo: repo.request(request_id))
    assert row is not None
    return RequestState(row.state)


def audit(slack: SlackOverHttp, action: str) -> list[AuditEntry]:
    database = slack.sandbox.database
    assert database is not None
    return database.run(lambda repo: list(repo.session.query(AuditEntry).filter(AuditEntry.action == action).all()))


def requests_recorded(slack: SlackOverHttp) -> int:
    database = slack.sandbox.database
    assert database is not None
    return database.run(lambda repo: repo.session.query(Request).count())


def submit(slack: SlackOverHttp, text: str) -> Any:
    slack.command(ALICE, f"request {BATCH} {text}")
    assert slack.responses()[-1].startswith(":inbox_tray:"), slack.responses()[-1]
    return slack.request_message()


def approve_once(slack: SlackOverHttp, card: Any) -> None:
    slack.click(LEE, slack.buttons(card)["Approve"], card)


def approve_permanent(slack: SlackOverHttp, card: Any) -> None:
    """A permanent change: two approvals, each through the confirmation form."""
    for approver in (LEE, DANA):
        slack.click(approver, slack.buttons(card)["Approve"], card)
        form = slack.records("view_open")[-1].view
        assert form is not None and form["callback_id"] == ids.CONFIRM_APPROVAL_FORM
        assert slack.submit(approver, form, {}).json()["response_action"] == "update"


def test_nominal_quota_raised_and_lowered_adopting_a_hand_edit_and_touching_nothing_else(slack: SlackOverHttp) -> None:
    untouched = spec_but_the_quota(slack)
    raised = submit(slack, "+2 for 1d batch sweep")
    assert "4 → *6* (+2)" in slack.current_text(raised)
    kube(slack).edit_cluster_queue(QUEUE, FLAVOR, GPU, nominal_quota=5)  # a person, by hand, before the approval

    approve_once(slack, raised)

    assert state(slack, 1) == RequestState.APPLIED
    assert nominal(slack) == 7  # the hand edit's +1 kept, the grant's +2 on top
    applied = slack.thread(raised)[-1]
    assert f"in *{BATCH}* ({QUEUE}) 5 GPUs → *7 GPUs*" in applied
    assert "changed this quota outside the bot by +1" in applied and "adopted" in applied
    assert spec_but_the_quota(slack) == untouched  # cpu, the h100 flavor, everything else as it was
    assert queue(slack)["metadata"]["annotations"] == {"owner": "platform-team", APPLIED: "7", APPLIED_BY: "GQ-1"}
    (adopted,) = audit(slack, "manual_change_adopted")
    assert (adopted.before["base_gpus"], adopted.after["base_gpus"]) == (4, 5)

    lowered = submit(slack, "-1 permanent fewer sweeps")
    approve_permanent(slack, lowered)

    assert state(slack, 2) == RequestState.APPLIED
    assert nominal(slack) == 6  # base 5 - 1, and the grant's 2
    assert f"in *{BATCH}* ({QUEUE}) 7 GPUs → *6 GPUs*" in slack.thread(lowered)[-1]
    assert spec_but_the_quota(slack) == untouched
    assert queue(slack)["metadata"]["annotations"] == {"owner": "platform-team", APPLIED: "6", APPLIED_BY: "GQ-2"}
    assert len(audit(slack, "manual_change_adopted")) == 1  # the bot's own write is not taken for an edit
    assert kube(slack).kueue_writes("clusterqueues", QUEUE) == 2


def test_a_temporary_grant_on_a_cluster_queue_is_reverted_on_time(slack: SlackOverHttp, clock: ManualClock) -> None:
    card = submit(slack, "+2 for 1d batch sweep")
    approve_once(slack, card)
    assert nominal(slack) == 6
    kube(slack).edit_cluster_queue(QUEUE, FLAVOR, GPU, nominal_quota=8)  # someone adds 2 during the grant

    clock.advance(timedelta(hours=23, minutes=59))
    slack.sandbox.services.reconciler.tick()
    assert nominal(slack) == 8  # not yet

    clock.advance(timedelta(minutes=2))
    report = slack.sandbox.services.reconciler.tick()

    assert report.grants_ended == [1] and report.errors == []
    assert nominal(slack) == 6  # the grant's 2 go back, the person's 2 stay
    assert queue(slack)["metadata"]["annotations"][APPLIED] == "6"
    assert slack.thread(card)[-1] == f":hourglass: The grant expired: *{BATCH}* 8 GPUs → *6 GPUs*."
    assert nominal(slack, "h100") == 8 and nominal(slack, FLAVOR, "cpu") == 64
    slack.sandbox.services.reconciler.tick()
    assert kube(slack).kueue_writes("clusterqueues", QUEUE) == 2  # the grant, its revert; nothing again


def test_a_workload_waiting_for_quota_is_alerted_once_with_request_more_prefilled(slack: SlackOverHttp) -> None:
    kube(slack).add_workload(BATCH, "train-7b", queue="training", requests={GPU: 6}, pending=WAITING)
    kube(slack).add_local_queue("ai-frontier-research", "default", "elsewhere")  # not a namespace kept in Kueue
    kube(slack).add_workload("ai-frontier-research", "stray", queue="default", requests={GPU: 1}, pending=WAITING)
    blocked = slack.sandbox.services.blocked

    assert blocked.check() == [f"{BATCH}/Workload/train-7b"]
    assert blocked.check() == []  # still waiting: not again

    (alert,) = slack.channel_messages("C0FRONTIER")
    assert "*train-7b* in *ai-frontier-batch*" in alert.text and "needs 2 GPUs more" in alert.text
    button = buttons_of(alert.blocks)["Request more"]
    assert json.loads(button["value"]) == {"namespace": BATCH, "gpus": "+2", "resource": GPU}

    slack.click(ALICE, button, alert)
    (opened,) = slack.records("view_open")
    assert opened.view is not None and opened.view["callback_id"] == ids.REQUEST_FORM
    inputs = {b["block_id"]: b["element"] for b in opened.view["blocks"] if b["type"] == "input"}
    assert inputs[ids.NAMESPACE_BLOCK]["initial_option"]["value"] == BATCH
    assert inputs[ids.GPUS_BLOCK]["initial_value"] == "+2"
    assert ids.RESOURCE_BLOCK not in inputs  # the namespace governs one resource: nothing to choose
    assert requests_recorded(slack) == 0  # the click alone records nothing

    values = {ids.NAMESPACE_BLOCK: BATCH, ids.GPUS_BLOCK: "+2", ids.TERM_BLOCK: ids.TEMPORARY, ids.DURATION_BLOCK: "1d"}
    assert slack.submit(ALICE, opened.view, values | {ids.REASON_BLOCK: "train-7b waits"}).json()["response_action"] == "update"
    assert "4 → *6* (+2)" in slack.current_text(slack.request_message())
    assert len(slack.channel_messages("C0FRONTIER")) == 2  # the alert and the request, nothing else


def test_a_workload_short_in_two_flavors_is_offered_what_the_governed_flavor_lacks(slack: SlackOverHttp) -> None:
    # Kueue tried both flavors of the queue and says what each lacks, its reasons sorted.
    both = (
        "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor a100, 2 more needed,"
        " insufficient unused quota for nvidia.com/gpu in flavor h100, 5 more needed"
    )
    kube(slack).add_workload(BATCH, "train-70b", queue="training", requests={GPU: 6}, pending=both)
    only_h100 = (
        "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor h100, 5 more needed"
    )
    kube(slack).add_workload(BATCH, "train-h100-only", queue="training", requests={GPU: 6}, pending=only_h100)

    assert slack.sandbox.services.blocked.check() == [f"{BATCH}/Workload/train-70b"]  # more a100 quota cannot help the other

    (alert,) = slack.channel_messages("C0FRONTIER")
    assert "needs 2 GPUs more" in alert.text
    assert json.loads(buttons_of(alert.blocks)["Request more"]["value"])["gpus"] == "+2"  # the a100 quota the bot governs


# --- bad input: nothing written, a clear message --------------------------------------------------------------


def refused_at_submission(slack: SlackOverHttp, caplog: pytest.LogCaptureFixture) -> str:
    """What the person is told of a request for ai-frontier-batch that is refused: nothing recorded, nothing written,
    and a log line saying the same."""
    with caplog.at_level(logging.INFO):
        slack.command(ALICE, f"request {BATCH} +2 for 1d batch sweep")
    said = slack.responses()[-1]
    assert [r for r in caplog.records if r.getMessage().startswith(f"refused request for {ALICE}")], caplog.text
    assert requests_recorded(slack) == 0 and slack.channel_messages("C0FRONTIER") == []
    assert kube(slack).kueue_writes() == 0
    return said


def test_a_cluster_queue_missing_from_the_cluster_is_refused_at_submission(
    database_url: str, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    policy = yaml.safe_load(SANDBOX_POLICY.read_text())
    (batch,) = [n for n in policy["teams"]["frontier"]["namespaces"] if isinstance(n, dict) and n["name"] == BATCH]
    batch["resources"][0]["cluster_queue"]["name"] = "frontier-btach"  # a typo: no such queue in the cluster
    with served(started(database_url, clock, parse_policy(policy, source="a policy naming a missing queue"))) as slack:
        said = refused_at_submission(slack, caplog)
    assert said == (
        f":no_entry_sign: Not submitted: the policy keeps nvidia.com/gpu of `{BATCH}` in Kueue, but the ClusterQueue"
        " `frontier-btach` does not exist. A platform admin needs to fix the policy or the queue"
        " (`gpu-quota-bot check-config` names it)."
    )


def test_a_missing_flavor_is_refused_at_submission_naming_the_flavors_there(
    slack: SlackOverHttp, caplog: pytest.LogCaptureFixture
) -> None:
    kube(slack).remove_flavor(QUEUE, FLAVOR)
    said = refused_at_submission(slack, caplog)
    assert f"the ClusterQueue `{QUEUE}` has no flavor `{FLAVOR}` (it has h100)" in said


def test_without_kueue_a_request_is_refused(slack: SlackOverHttp, caplog: pytest.LogCaptureFixture) -> None:
    kube(slack).serve_kueue()  # no kueue.x-k8s.io in discovery
    said = refused_at_submission(slack, caplog)
    assert "Kueue is not installed" in said and BATCH in said


def test_flavors_reordered_between_read_and_write_are_read_again_and_written_at_their_new_place(slack: SlackOverHttp) -> None:
    card = submit(slack, "+2 for 1d batch sweep")
    untouched = spec_but_the_quota(slack)
    kube(slack).between = lambda: kube(slack).reorder_flavors(QUEUE, [FLAVOR, "h100"])

    approve_once(slack, card)

    assert kube(slack).between is None  # the person's reorder did land between the bot's read and its write
    assert state(slack, 1) == RequestState.APPLIED
    assert queue(slack)["spec"]["resourceGroups"][0]["flavors"][0]["name"] == FLAVOR
    assert nominal(slack) == 6 and nominal(slack, "h100") == 8  # written at a100's new place, h100 untouched
    reordered = untouched["resourceGroups"][0]["flavors"][::-1]
    assert spec_but_the_quota(slack) == dict(untouched, resourceGroups=[dict(untouched["resourceGroups"][0], flavors=reordered)])
    assert kube(slack).kueue_writes("clusterqueues", QUEUE) == 1
    patches = [w for w in kube(slack).writes() if "/clusterqueues/" in w[1]]
    assert len(patches) == 4  # dry run, the write refused by its test op, dry run again, the write
    assert not audit(slack, "manual_change_adopted")  # a reorder changed no quota


def test_a_flavor_removed_between_read_and_write_fails_the_request_and_writes_nothing(slack: SlackOverHttp) -> None:
    card = submit(slack, "+2 for 1d batch sweep")
    kube(slack).between = lambda: kube(slack).remove_flavor(QUEUE, FLAVOR)

    approve_once(slack, card)

    assert state(slack, 1) == RequestState.FAILED
    assert kube(slack).kueue_writes() == 0
    thread = slack.thread(card)
    assert thread[-1].startswith(f":x: Could not apply GQ-1: the ClusterQueue {QUEUE} has no flavor {FLAVOR} (present: h100)")
    assert "nothing of it is counted" in thread[-1]
    assert slack.dms(ALICE)[-1].startswith("GQ-1 could not be applied: the ClusterQueue")
    assert APPLIED not in (queue(slack)["metadata"].get("annotations") or {})
