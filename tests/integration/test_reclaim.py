"""Gradual reclaim over signed Slack HTTP, the real kubernetes client and the Kubernetes API stand-in:
a quota lowered below usage evicts nothing; the bot follows ``status.used`` and says once, in the
request's thread, when usage is within the new quota."""

from __future__ import annotations

from datetime import timedelta

from bot.adapters.slack.reasons import render_detail
from bot.clock import ManualClock
from bot.domain.resources import GPU
from bot.sandbox.kube_api import KubeApiStandIn
from tests.integration.conftest import SlackOverHttp

ALICE, LEE, DANA = "U0ALICE", "U0LEE", "U0DANA"
FRONTIER = "ai-frontier-research"


def kube(slack: SlackOverHttp) -> KubeApiStandIn:
    assert slack.sandbox.kube is not None
    return slack.sandbox.kube


def lower_frontier_to_one(slack: SlackOverHttp) -> None:
    """The source document's strategy shift: frontier 4 -> 1 while its jobs use all 4 GPUs (2 approvals, by form)."""
    kube(slack).set_used(FRONTIER, 4)
    slack.command(ALICE, f"request {FRONTIER} 1 permanent slow down frontier work, shift GPUs to business")
    message = slack.request_message()
    for approver in (LEE, DANA):
        slack.click(approver, slack.buttons(message)["Approve"], message)
        slack.submit(approver, slack.records("view_open")[-1].view, {})
    assert kube(slack).hard(FRONTIER, "compute-quota") == "1"


def status(slack: SlackOverHttp) -> str:
    slack.command(ALICE, f"status {FRONTIER}")
    return slack.responses()[-1]


def check(slack: SlackOverHttp) -> list[str]:
    assert slack.sandbox.services is not None
    return slack.sandbox.services.reclaims.check().finished


def freed_messages(slack: SlackOverHttp) -> list[str]:
    return [text for text in slack.thread(slack.request_message()) if "freed" in text]


def test_the_reclaim_is_announced_once_when_usage_falls_under_the_lowered_quota(slack: SlackOverHttp, clock: ManualClock) -> None:
    lower_frontier_to_one(slack)
    assert "*1* hard / 4 used, over quota by 3, reclaiming since <!date^" in status(slack)
    assert check(slack) == [] and freed_messages(slack) == []

    clock.advance(timedelta(days=1))
    kube(slack).set_used(FRONTIER, 2)  # a job finished; one still runs on 2 GPUs
    assert check(slack) == []
    assert "over quota by 1, reclaiming since" in status(slack)

    clock.advance(timedelta(days=1, hours=4))
    kube(slack).set_used(FRONTIER, 1)
    assert check(slack) == [FRONTIER]
    assert check(slack) == []  # closed: the next runs say nothing
    assert freed_messages(slack) == [
        ":white_check_mark: *3 GPUs freed over 2 days 4 h as jobs finished* in *ai-frontier-research*: "
        "usage is within the quota of 1 GPU now. No pod was evicted."
    ]
    assert "*1* hard / 1 used" in status(slack) and "over quota" not in status(slack)
    # The bot only ever patched the quota: no pod was deleted or evicted.
    assert {(method, path.rsplit("/", 2)[-2]) for method, path, _, _ in kube(slack).log if method != "GET"} == {
        ("PATCH", "resourcequotas")
    }
    trail = slack.sandbox.database.run(lambda repo: [a.action for a in repo.audit_trail(namespace=FRONTIER)])
    assert "reclaim_started" in trail


def test_a_quota_raised_over_usage_ends_the_reclaim_without_a_freed_message(slack: SlackOverHttp, clock: ManualClock) -> None:
    lower_frontier_to_one(slack)
    clock.advance(timedelta(hours=2))
    slack.command(ALICE, f"request {FRONTIER} +4 for 1d the shift was premature")
    message = slack.request_message()
    slack.click(LEE, slack.buttons(message)["Approve"], message)
    assert kube(slack).hard(FRONTIER, "compute-quota") == "5"
    assert "over quota" not in status(slack)
    assert check(slack) == []
    assert not [r for r in slack.records("message") if "freed" in r.text]
    row = slack.sandbox.database.run(lambda repo: repo.open_reclaim(FRONTIER, GPU))
    assert row is None


def test_usage_within_the_quota_at_the_write_opens_no_reclaim(slack: SlackOverHttp) -> None:
    kube(slack).set_used(FRONTIER, 1)
    slack.command(ALICE, f"request {FRONTIER} 2 permanent fewer experiments")
    message = slack.request_message()
    for approver in (LEE, DANA):
        slack.click(approver, slack.buttons(message)["Approve"], message)
        slack.submit(approver, slack.records("view_open")[-1].view, {})
    assert kube(slack).hard(FRONTIER, "compute-quota") == "2"
    assert slack.sandbox.database.run(lambda repo: repo.open_reclaim(FRONTIER, GPU)) is None
    assert "over quota" not in status(slack)


def last_audit_detail(slack: SlackOverHttp) -> str:
    assert slack.sandbox.database is not None
    return render_detail(slack.sandbox.database.run(lambda repo: repo.audit_trail(namespace=FRONTIER, limit=1)[0].detail))


def test_a_quota_raised_by_hand_over_usage_ends_the_reclaim_quietly(slack: SlackOverHttp) -> None:
    lower_frontier_to_one(slack)
    kube(slack).edit_quota(FRONTIER, "compute-quota", "requests.nvidia.com/gpu", "6")  # kubectl edit
    assert check(slack) == [FRONTIER]
    assert freed_messages(slack) == [] and last_audit_detail(slack) == "the quota was raised over usage by hand"


def test_a_deleted_namespace_ends_the_reclaim_quietly(slack: SlackOverHttp) -> None:
    lower_frontier_to_one(slack)
    kube(slack).delete_namespace(FRONTIER)
    assert check(slack) == [FRONTIER]
    assert freed_messages(slack) == [] and last_audit_detail(slack) == "the quota or the namespace is gone"


def test_a_hand_edit_below_usage_is_followed_and_told_in_the_team_channel(slack: SlackOverHttp, clock: ManualClock) -> None:
    kube(slack).set_used(FRONTIER, 4)
    for resource in ("requests.nvidia.com/gpu", "limits.nvidia.com/gpu"):  # the source document's kubectl edit
        kube(slack).edit_quota(FRONTIER, "compute-quota", resource, "1")
    assert slack.sandbox.services is not None
    slack.sandbox.services.reconciler.sweep()  # adopts the edit into the base and stamps it: a write of 1, no request
    assert kube(slack).hard(FRONTIER, "compute-quota") == "1"
    assert "over quota by 3, reclaiming since" in status(slack)
    clock.advance(timedelta(hours=5, minutes=10))
    kube(slack).set_used(FRONTIER, 0)
    assert check(slack) == [FRONTIER]
    assert [r.text for r in slack.channel_messages("C0FRONTIER") if "freed" in r.text] == [
        ":white_check_mark: *4 GPUs freed over 5 h 10 min as jobs finished* in *ai-frontier-research*: "
        "usage is within the quota of 1 GPU now. No pod was evicted."
    ]
