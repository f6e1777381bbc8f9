"""Limits hold when the change is made, not only when it was asked; the card shows the change made
(issue 8, item 3). Signed Slack HTTP into the real Bolt app, the real kubernetes client over HTTP."""

from __future__ import annotations

from sqlalchemy import text

from bot.adapters.slack import blocks
from bot.adapters.slack.reasons import render_detail
from bot.domain.failure_reasons import AboveLimit, AsSaid, RefusedWhenApproved, from_text
from bot.sandbox.slack_api import Recorded
from bot.services.cards import card_for
from tests.integration.conftest import SlackOverHttp

ALICE, LEE, PAT = "U0ALICE", "U0LEE", "U0PAT"
NAMESPACE, QUOTA = "ai-frontier-research", "compute-quota"


def test_a_change_that_breaks_the_limit_by_now_is_refused_at_approval(slack: SlackOverHttp) -> None:
    kube = slack.sandbox.kube
    assert kube is not None
    slack.command(ALICE, f"request {NAMESPACE} +12 for 1d big sweep")  # 4 + 12 = 16, the maximum
    message = slack.request_message()
    approve_by_form(slack, LEE, message)  # 1 of 2 (a large change: approved through the confirmation form)
    kube.edit_quota(NAMESPACE, QUOTA, "requests.nvidia.com/gpu", "5")  # a person, by hand

    approve_by_form(slack, PAT, message)

    assert kube.hard(NAMESPACE, QUOTA) == "5"
    refusal = slack.thread(message)[-1]
    assert refusal.startswith(":x: Could not apply GQ-1: refused when approved:")
    assert "may be at most 16; 5 +12 = 17" in refusal
    assert any("GQ-1 could not be applied" in dm and "5 +12 = 17" in dm for dm in slack.dms(ALICE))
    assert "Approve" not in slack.buttons(message)
    assert slack.sandbox.database is not None
    failed = slack.sandbox.database.run(
        lambda repo: [e.detail for e in repo.audit_trail(request_id=1) if e.action == "request_failed"]
    )
    assert failed and "5 +12 = 17" in render_detail(failed[0])


def test_a_reason_the_version_before_stored_as_text_is_shown_as_it_was_stored(slack: SlackOverHttp) -> None:
    kube, database, services = slack.sandbox.kube, slack.sandbox.database, slack.sandbox.services
    assert kube is not None and database is not None and services is not None
    slack.command(ALICE, f"request {NAMESPACE} +12 for 1d big sweep")
    message = slack.request_message()
    approve_by_form(slack, LEE, message)
    kube.edit_quota(NAMESPACE, QUOTA, "requests.nvidia.com/gpu", "5")
    approve_by_form(slack, PAT, message)
    old = "the cluster refused to let the bot patch <compute-quota> (HTTP 403)"
    with database.engine.begin() as connection:
        stored = connection.execute(text("SELECT failure_reason FROM requests WHERE id = 1")).scalar_one()
        connection.execute(text("UPDATE requests SET failure_reason = :old WHERE id = 1"), {"old": old})

    assert stored.startswith('{"reason":') and from_text(stored) == RefusedWhenApproved(AboveLimit(5, 12, 16))
    request = database.run(lambda repo: repo.request(1))
    assert request is not None and request.failure_reason == AsSaid(old)
    card = str(database.run(lambda repo: blocks.request_message(card_for(repo.request(1), services.policy))))
    assert ":x: Failed: the cluster refused to let the bot patch &lt;compute-quota&gt; (HTTP 403)" in card


def test_the_card_shows_the_change_actually_made(slack: SlackOverHttp) -> None:
    kube = slack.sandbox.kube
    assert kube is not None
    slack.command(ALICE, f"request {NAMESPACE} +4 for 3d fine-tune")
    message = slack.request_message()
    assert "4 → *8* (+4)" in slack.current_text(message)
    kube.edit_quota(NAMESPACE, QUOTA, "requests.nvidia.com/gpu", "6")  # 4 -> 6 by hand before the approval

    slack.click(LEE, slack.buttons(message)["Approve"], message)

    assert kube.hard(NAMESPACE, QUOTA) == "10"
    card = slack.current_text(message)
    assert "6 → *10* (+4)" in card and "4 → *8*" not in card
    applied = slack.thread(message)[1]
    assert "6 GPUs → *10 GPUs*" in applied and "outside the bot by +2" in applied


def approve_by_form(slack: SlackOverHttp, user: str, message: Recorded) -> None:
    slack.click(user, slack.buttons(message)["Approve"], message)
    slack.submit(user, slack.records("view_open")[-1].view, {})
