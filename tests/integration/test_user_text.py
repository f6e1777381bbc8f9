"""What a person types is data: Slack receives it escaped, never as a live mention or link."""

from __future__ import annotations

import json

from bot.adapters.slack.http import WebApp
from bot.clock import ManualClock
from bot.sandbox.session import Sandbox
from tests.integration.conftest import START, SlackOverHttp, serve

ALICE, LEE = "U0ALICE", "U0LEE"
HOSTILE = (
    "<!channel>",
    "<!here>",
    "<!everyone>",
    "<!subteam^S123>",
    "<@U123>",
    "<#C123>",
    "<http://evil.example|click here>",
)
REASON = "fine-tune " + " ".join(HOSTILE) + " &amp; nul\x00 bell\x07 end"


def everything_slack_received(slack: SlackOverHttp) -> str:
    """Every text and block Slack was sent (messages, updates, responses), as one string."""
    parts = []
    for record in slack.records():
        parts.append(record.text)
        parts.append(json.dumps(record.blocks, ensure_ascii=False))
        if record.view is not None:
            parts.append(json.dumps(record.view, ensure_ascii=False))
    for method in ("chat.postMessage", "chat.update"):
        for params in slack.sandbox.slack.calls_of(method):
            parts.append(str(params.get("text", "")))
    return "\n".join(parts)


def assert_inert(received: str) -> None:
    for token in HOSTILE:
        assert token not in received, f"{token} reached Slack live"
    assert "\x00" not in received and "\x07" not in received


def test_a_hostile_reason_reaches_slack_escaped(slack: SlackOverHttp) -> None:
    slack.command(ALICE, "request ai-frontier-research +4 for 3d " + REASON)
    message = slack.request_message()
    card = slack.current_text(message)
    assert "&lt;!channel&gt;" in card and "&lt;http://evil.example|click here&gt;" in card
    assert "&amp;amp;" in card  # the typed entity is shown as typed, not decoded
    slack.click(LEE, slack.buttons(message)["Approve"], message)
    assert len(slack.thread(message)) >= 2 and slack.dms(ALICE)
    slack.command(ALICE, "status ai-frontier-research")
    slack.command(ALICE, "audit GQ-1")
    assert "&lt;!here&gt;" in slack.responses()[-1]  # the audit shows the reason, escaped
    assert_inert(everything_slack_received(slack))


def test_hostile_words_in_commands_stay_inert_in_errors_and_forms(slack: SlackOverHttp) -> None:
    acks = [
        slack.command(ALICE, "status <@U123>").text,  # refused at once, in the acknowledgement
        slack.command(ALICE, "status <!channel>-ns").text,
        slack.command(ALICE, "audit <!everyone>").text,
    ]
    slack.command(ALICE, "request <!here> +1 for 1d x")  # opens the form, saying what was wrong
    slack.command(ALICE, "cancel GQ-1 <http://evil.example|click here>")
    assert "&lt;@U123&gt;" in acks[0]
    assert_inert("\n".join(acks) + everything_slack_received(slack))


def test_a_hostile_reason_typed_in_the_form_reaches_slack_escaped(slack: SlackOverHttp) -> None:
    slack.command(ALICE, "request ai-frontier-research +4 for 3d")  # no reason: the form opens
    form = slack.records("view_open")[-1].view
    assert form is not None
    values = {"namespace": "ai-frontier-research", "gpus": "+4", "term": "temporary", "duration": "3d", "reason": REASON}
    assert slack.submit(ALICE, form, values).json()["response_action"] == "update"
    message = slack.request_message()
    slack.click(LEE, slack.buttons(message)["Deny"], message)
    assert "&lt;!subteam^S123&gt;" in slack.current_text(message)
    assert_inert(everything_slack_received(slack))


def test_control_characters_never_reach_postgresql(postgres_url: str) -> None:
    """A NUL in a reason used to end in "Something went wrong": PostgreSQL text cannot hold it."""
    box = Sandbox(clock=ManualClock(START), database_url=postgres_url).start()
    url, server = serve(WebApp(box.app))
    try:
        slack = SlackOverHttp(box, url)
        slack.command(ALICE, "request ai-frontier-research +1 for 1d nul\x00 bell\x07 tab\tend")
        assert slack.responses()[-1].startswith(":inbox_tray: GQ-1 submitted")
        assert box.database is not None
        request = box.database.run(lambda repo: repo.request(1))
        assert request is not None and request.reason == "nul bell tab end"
    finally:
        server.close()
        box.stop()


def test_a_hostile_deny_reason_and_api_error_reach_slack_escaped(slack: SlackOverHttp) -> None:
    slack.command(ALICE, "request ai-frontier-research +4 for 3d first")
    first = slack.request_message()
    slack.click(LEE, slack.buttons(first)["Deny"], first)
    slack.submit(LEE, slack.records("view_open")[-1].view, {"reason": REASON})  # by the form
    assert any("&lt;!channel&gt;" in t for t in slack.thread(first))
    slack.command(ALICE, "request ai-frontier-research +2 for 1d second")
    second = slack.request_message()
    event = slack.side.thread_reply(
        user_id=LEE, channel_id=second.channel or "", thread_ts=second.ts or "", text="deny " + REASON
    )
    slack.post(slack.side.event(event))  # typed in the thread
    assert any("&lt;@U123&gt;" in t for t in slack.thread(second))
    # The API server's words in a failure are text too.
    assert slack.sandbox.kube is not None
    slack.sandbox.kube.fail("PATCH", "resourcequotas", 403, message="forbidden <!channel> <http://evil.example|click here>")
    slack.command(ALICE, "request ai-frontier-research +1 for 1h third")  # small and short: auto-approved
    third = slack.request_message()
    assert any(t.startswith(":x: Could not apply GQ-3") for t in slack.thread(third))
    assert "Reason: fine-tune" in " ".join(slack.dms(ALICE))
    assert_inert(everything_slack_received(slack))


def test_a_reason_longer_than_a_card_can_show_is_refused(slack: SlackOverHttp) -> None:
    slack.command(ALICE, "request ai-frontier-research +4 for 3d " + "x" * 60_000)
    assert "The reason is 60,000 characters long; say it in at most 2,000." in slack.responses()[-1]
    assert slack.channel_messages("C0FRONTIER") == []
    slack.command(ALICE, "request ai-frontier-research +4 for 3d short")
    message = slack.request_message()
    event = slack.side.thread_reply(
        user_id=LEE, channel_id=message.channel or "", thread_ts=message.ts or "", text="deny " + "y" * 5000
    )
    slack.post(slack.side.event(event))
    assert "say it in at most 2,000" in slack.thread(message)[-1]
    assert slack.buttons(message)  # still pending
