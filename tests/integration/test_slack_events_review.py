"""Adversarial review of typed decisions, the App Home tab and the deny form, over signed HTTP."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlencode

import pytest

from bot.adapters.slack import ids
from bot.adapters.slack.http import WebApp
from bot.clock import ManualClock
from bot.sandbox.session import Sandbox
from tests.integration.conftest import SlackOverHttp, buttons_of, serve
from tests.integration.test_slack_events import ALICE, LEE, REQUEST, quota, reply


def test_a_typed_deny_without_a_reason_asks_for_one_and_denies_nothing(slack: SlackOverHttp) -> None:
    slack.command(ALICE, REQUEST)
    reply(slack, LEE, "deny")
    assert quota(slack) == "4"
    thread = slack.thread(slack.request_message())
    assert thread == [
        "<@U0LEE> :no_entry_sign: Say why: type `deny &lt;reason&gt;`; the requester reads it. Nothing was decided."
    ]
    assert slack.dms(ALICE) == []
    reply(slack, LEE, "deny the corpus is not cleaned yet")
    assert ":no_entry: Denied by <@U0LEE>. Reason: the corpus is not cleaned yet" in slack.thread(slack.request_message())


def test_a_reply_addressed_to_someone_else_is_not_the_writers_decision(slack: SlackOverHttp) -> None:
    slack.command(ALICE, "request ai-frontier-research +2 for 1d two more")
    reply(slack, LEE, "<@U0PAT> approve")  # Lee asks Pat to approve
    reply(slack, LEE, "<@U0PAT|pat> deny")
    assert slack.thread(slack.request_message()) == []
    reply(slack, LEE, "<@UBOT> approve")  # addressed to the bot: Lee's own decision
    assert slack.thread(slack.request_message())[0] == ":+1: Approved by <@U0LEE> — 1 of 1."


@pytest.mark.parametrize("metadata", ['{"request_id": "abc"}', '{"request_id": 99999999999999}', "{}"])
def test_a_deny_form_with_forged_metadata_is_refused_inline(slack: SlackOverHttp, metadata: str) -> None:
    slack.command(ALICE, REQUEST)
    message = slack.request_message()
    slack.click(LEE, slack.buttons(message)["Deny"], message)
    form = dict(slack.records("view_open")[-1].view, private_metadata=metadata)
    response = slack.submit(LEE, form, {"reason": "no budget"})
    assert response.status_code == 200
    assert response.json() == {
        "response_action": "errors",
        "errors": {ids.REASON_BLOCK: "This form is not valid; use the Deny button again."},
    }
    assert quota(slack) == "4" and slack.thread(message) == []


def test_a_deny_click_on_the_app_home_whose_form_cannot_open_says_so_on_the_tab(slack: SlackOverHttp) -> None:
    slack.command(ALICE, REQUEST)
    slack.post(slack.side.event({"type": "app_home_opened", "user": LEE, "channel": "DLEE", "tab": "home", "event_ts": "1.0"}))
    deny = buttons_of(slack.sandbox.slack.homes[LEE]["blocks"])["Deny"]
    body = slack.side.home_click(user_id=LEE, action_id=deny["action_id"], value=deny["value"])
    payload = json.loads(parse_qs(body)["payload"][0])
    payload["trigger_id"] = ""  # Slack refuses an expired trigger the same way (views.open fails)
    assert slack.post(urlencode({"payload": json.dumps(payload)})).status_code == 200
    home = json.dumps(slack.sandbox.slack.homes[LEE])
    assert "Could not open the form" in home
    assert quota(slack) == "4"


def test_slacks_app_rate_limited_notice_is_answered_200_and_logged(
    slack: SlackOverHttp, caplog: pytest.LogCaptureFixture
) -> None:
    """Slack posts it to the events URL when it drops events; it has no inner event (Bolt found no listener: 404)."""
    notice = {
        "token": "legacy-verification-token",
        "type": "app_rate_limited",
        "team_id": "TSANDBOX",
        "minute_rate_limited": 1796029200,
        "api_app_id": "ASANDBOX",
    }
    with caplog.at_level("WARNING"):
        assert slack.post(json.dumps(notice)).status_code == 200
    assert any("rate limit" in r.getMessage() and "2026-11-30 09:00 UTC" in r.getMessage() for r in caplog.records)


@pytest.mark.postgres
def test_an_event_id_longer_than_slacks_is_answered_200_and_still_claimed_once(postgres_url: str, clock: ManualClock) -> None:
    box = Sandbox(clock=clock, database_url=postgres_url).start()
    assert box.app is not None
    url, server = serve(WebApp(box.app))
    try:
        slack = SlackOverHttp(box, url)
        event = {"type": "reaction_added", "user": LEE, "reaction": "eyes", "item": {"type": "message"}, "event_ts": "1.0"}
        assert slack.post(slack.side.event(event, event_id="Ev" + "X" * 98)).status_code == 200
        assert box.services.inbox.first_delivery("Ev" + "X" * 98) is False
        assert box.services.inbox.first_delivery("Ev" + "X" * 97 + "Y") is True
    finally:
        server.close()
        box.stop()
