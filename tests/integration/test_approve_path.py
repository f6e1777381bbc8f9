"""Approve -> quota PATCH (issue 9): the quota is written first, from one read of it taken in the
namespace's critical section; the thread reply, card update and DM follow. Signed Slack HTTP into
the real Bolt app, the real kubernetes client over HTTP against the stand-in."""

from __future__ import annotations

from datetime import timedelta

from bot.clock import ManualClock
from bot.sandbox.kube_api import KubeApiStandIn
from bot.sandbox.slack_api import Recorded
from tests.integration.conftest import SlackOverHttp

ALICE, LEE = "U0ALICE", "U0LEE"
NAMESPACE, QUOTA = "ai-frontier-research", "compute-quota"
QUOTA_PATH = f"/namespaces/{NAMESPACE}/resourcequotas/{QUOTA}"


def kube_of(slack: SlackOverHttp) -> KubeApiStandIn:
    assert slack.sandbox.kube is not None
    return slack.sandbox.kube


def quota_calls(kube: KubeApiStandIn, since: int) -> list[str]:
    """The calls on the namespace's quota after the first ``since`` of the log: "GET", "dry run", "PATCH"."""
    calls = []
    for method, path, query, _body in kube.log[since:]:
        if path.endswith(QUOTA_PATH):
            calls.append("dry run" if method == "PATCH" and query.get("dryRun") else method)
    return calls


def submitted(slack: SlackOverHttp, text: str = f"request {NAMESPACE} +4 for 3d fine-tune") -> Recorded:
    slack.command(ALICE, text)
    return slack.request_message()


def test_the_quota_is_patched_before_anything_is_said_in_slack(slack: SlackOverHttp) -> None:
    kube = kube_of(slack)
    message = submitted(slack)
    before_click = len(slack.records())
    writes_at = WritesAtEachRecord(kube, slack.sandbox.slack.records)
    slack.sandbox.slack.records = writes_at

    slack.click(LEE, slack.buttons(message)["Approve"], message)

    assert kube.hard(NAMESPACE, QUOTA) == "8"
    told = [(r.kind, written) for r, written in zip(writes_at[before_click:], writes_at.writes, strict=True)]
    assert {kind for kind, _ in told} >= {"message", "update", "response"}  # thread replies, DM, card, the answer
    assert [written for _, written in told] == [1] * len(told)  # each after the quota was written
    assert slack.thread(message)[0] == ":+1: Approved by <@U0LEE> — 1 of 1."
    assert slack.thread(message)[1].startswith(":white_check_mark: Applied")
    assert "now has 8 GPUs" in slack.dms(ALICE)[0]


class WritesAtEachRecord(list[Recorded]):
    """The Slack stand-in's record list, noting how many quota writes the Kubernetes stand-in had
    persisted when each new record (a message, an update, a response) came in."""

    def __init__(self, kube: KubeApiStandIn, records: list[Recorded]) -> None:
        super().__init__(records)
        self._kube = kube
        self._first = kube.quota_writes(NAMESPACE)
        self.writes: list[int] = []

    def append(self, record: Recorded) -> None:
        self.writes.append(self._kube.quota_writes(NAMESPACE) - self._first)
        super().append(record)


def test_an_approval_reads_the_quota_once_and_writes_it_with_that_read(slack: SlackOverHttp) -> None:
    kube = kube_of(slack)
    message = submitted(slack)
    since = len(kube.log)

    slack.click(LEE, slack.buttons(message)["Approve"], message)

    assert quota_calls(kube, since) == ["GET", "dry run", "PATCH"]
    assert kube.hard(NAMESPACE, QUOTA) == "8"
    assert slack.responses()[-1] == "You approved GQ-1; it is applied."


def test_an_absolute_amount_is_rechecked_against_the_read_the_write_uses(slack: SlackOverHttp) -> None:
    """The request asks for 8 in all; a person set 6 by hand since: +2 is approved and written, from one read."""
    kube = kube_of(slack)
    message = submitted(slack, f"request {NAMESPACE} 8 for 3d fine-tune")
    kube.edit_quota(NAMESPACE, QUOTA, "requests.nvidia.com/gpu", "6")
    since = len(kube.log)

    slack.click(LEE, slack.buttons(message)["Approve"], message)

    assert quota_calls(kube, since) == ["GET", "dry run", "PATCH"]
    assert kube.hard(NAMESPACE, QUOTA) == "8"
    assert "6 → *8* (+2)" in slack.current_text(message)
    assert slack.sandbox.database is not None
    audit = slack.sandbox.database.run(lambda repo: [(e.action, e.after) for e in repo.audit_trail(request_id=1)])
    assert (
        "quota_patched",
        {"quota_gpus": 8, "resource_version": kube.quotas[(NAMESPACE, QUOTA)]["metadata"]["resourceVersion"]},
    ) in audit
    assert [action for action, _ in audit].index("request_approved") < [action for action, _ in audit].index("quota_patched")


def test_a_conflict_after_the_approvals_read_is_read_again_and_written(slack: SlackOverHttp) -> None:
    """The resourceVersion of the approval's read guards the write: a 409 means read again, not overwrite."""
    kube = kube_of(slack)
    message = submitted(slack)
    kube.fail("PATCH", QUOTA_PATH, 409, dry_run=False)
    since = len(kube.log)

    slack.click(LEE, slack.buttons(message)["Approve"], message)

    assert quota_calls(kube, since) == ["GET", "dry run", "PATCH", "GET", "dry run", "PATCH"]
    assert kube.hard(NAMESPACE, QUOTA) == "8"
    assert slack.responses()[-1] == "You approved GQ-1; it is applied."


def test_an_approval_whose_quota_cannot_be_read_waits_for_the_cluster(slack: SlackOverHttp) -> None:
    kube = kube_of(slack)
    message = submitted(slack)
    kube.fail("GET", QUOTA_PATH, 503, times=2)

    slack.click(LEE, slack.buttons(message)["Approve"], message)

    assert kube.hard(NAMESPACE, QUOTA) == "4"
    assert slack.responses()[-1] == "You approved GQ-1; it is approved."
    assert "waiting for the cluster" in slack.thread(message)[-1]


def test_waiting_for_the_cluster_is_never_said_after_applied(slack: SlackOverHttp, clock: ManualClock) -> None:
    """The approver's worker times out on the write, then is slow to tell the thread (its "Approved by" is
    answered late); a reconcile tick meanwhile applies the request. The thread must end with "Applied".
    (The worker used to hand the request to the reconcile before telling "waiting for the cluster", so a
    tick that came before that notice was recorded put "waiting" after "Applied": under load,
    test_outages_during_approvals_heal_without_an_admin could see it.)"""
    kube = kube_of(slack)
    message = submitted(slack)
    kube.fail("PATCH", QUOTA_PATH, 0, delay=3.0, dry_run=False)  # the write outlasts the client's 2 s read timeout
    approved_by = slack.sandbox.slack.hold("chat.postMessage")  # the worker's next Slack post: "Approved by"
    click = slack.side.block_action(
        user_id=LEE,
        action_id=slack.buttons(message)["Approve"]["action_id"],
        value="1",
        channel_id=message.channel,
        message_ts=message.ts,
    )
    assert slack.http.post(f"{slack.base_url}/slack/events", data=click.encode(), headers=slack.side.sign(click)).ok
    assert approved_by.reached.wait(timeout=30)  # the write timed out; the worker is telling the thread

    clock.advance(timedelta(seconds=5))  # past the first backoff (at most 1 s)
    assert slack.sandbox.services is not None
    slack.sandbox.services.reconciler.tick()
    approved_by.release()
    assert slack.sandbox.executor.wait_idle(timeout=30)
    clock.advance(timedelta(seconds=5))
    slack.sandbox.services.reconciler.tick()  # the next tick applies it, if the one before did not

    thread = slack.thread(message)
    assert thread[0] == ":+1: Approved by <@U0LEE> — 1 of 1."
    assert ["waiting for the cluster" in t for t in thread[1:]] == [True, False], thread
    assert thread[-1].startswith(":white_check_mark: Applied")
    assert kube.hard(NAMESPACE, QUOTA) == "8"
