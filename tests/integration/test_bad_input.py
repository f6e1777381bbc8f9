"""Bad input over signed Slack HTTP into the real app: typos never become permanent changes, user text
is cleaned, forged buttons are refused, and decisions read user-group membership fresh."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from bot.adapters.slack import ids
from bot.adapters.slack.http import WebApp
from bot.clock import ManualClock
from bot.sandbox.session import Sandbox
from tests.integration.conftest import SlackOverHttp, buttons_of, serve

ALICE, LEE, BOB, PAT = "U0ALICE", "U0LEE", "U0BOB", "U0PAT"


def stored_requests(slack: SlackOverHttp) -> list[Any]:
    database = slack.sandbox.database
    assert database is not None
    return database.run(lambda repo: [repo.request(i) for i in range(1, 10) if repo.request(i) is not None])


def form_inputs(view: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {b["block_id"]: b["element"] for b in view["blocks"] if b["type"] == "input"}


@pytest.mark.parametrize("duration", ["-3d", "99y", "400d", "99999999999999999999w"])
def test_a_bad_duration_is_refused_by_name_and_nothing_is_requested(slack: SlackOverHttp, duration: str) -> None:
    response = slack.command(ALICE, f"request ai-frontier-research +4 for {duration} x")
    assert response.status_code == 200
    shown = duration if len(duration) <= 30 else duration[:30] + "…"
    assert f"`{shown}` is not a duration" in response.text or f"`{shown}` is too long" in response.text
    assert "use 90m, 12h, 3d or 2w, at most 366d" in response.text
    assert slack.records("view_open") == []  # no form that an Enter could submit as permanent
    assert stored_requests(slack) == []
    assert slack.channel_messages("C0FRONTIER") == []


def test_permanent_only_by_the_word(slack: SlackOverHttp) -> None:
    slack.command(ALICE, "request ai-frontier-research +4 train on new data")  # neither `for` nor `permanent`
    assert stored_requests(slack) == []
    form = slack.records("view_open")[-1].view
    assert form is not None and form["callback_id"] == ids.REQUEST_FORM
    term = form_inputs(form)[ids.TERM_BLOCK]
    assert term["type"] == "radio_buttons" and "initial_option" not in term
    assert any("`permanent`" in e["text"] for b in form["blocks"] if b["type"] == "context" for e in b["elements"])

    slack.command(ALICE, "request ai-frontier-research +4 permanent hiring two researchers")
    assert slack.responses()[-1].startswith(":inbox_tray: GQ-1 submitted")
    (request,) = stored_requests(slack)
    assert request.permanent and request.reason == "hiring two researchers"


def test_the_form_needs_an_explicit_choice(slack: SlackOverHttp) -> None:
    slack.command(ALICE, "request ai-frontier-research +4")
    form = slack.records("view_open")[-1].view
    assert form is not None
    values = {"namespace": "ai-frontier-research", "gpus": "+4", "duration": "", "reason": "hiring"}

    answer = slack.submit(ALICE, form, values).json()  # no choice made, duration empty
    assert answer["response_action"] == "errors" and set(answer["errors"]) == {ids.TERM_BLOCK}
    answer = slack.submit(ALICE, form, values | {ids.TERM_BLOCK: ids.TEMPORARY, "duration": "-3d"}).json()
    assert answer["errors"] == {"duration": "`-3d` is not a duration: use 90m, 12h, 3d or 2w, at most 366d"}
    answer = slack.submit(ALICE, form, values | {ids.TERM_BLOCK: ids.TEMPORARY}).json()
    assert set(answer["errors"]) == {"duration"}
    answer = slack.submit(ALICE, form, values | {ids.TERM_BLOCK: ids.PERMANENT, "duration": "3d"}).json()
    assert set(answer["errors"]) == {"duration"}
    assert stored_requests(slack) == []

    answer = slack.submit(ALICE, form, values | {ids.TERM_BLOCK: ids.PERMANENT}).json()
    assert answer["response_action"] == "update"
    (request,) = stored_requests(slack)
    assert request.permanent


def test_a_typed_duration_preselects_temporary(slack: SlackOverHttp) -> None:
    slack.command(ALICE, "request ai-frontier-research +4 for 3d")
    form = slack.records("view_open")[-1].view
    assert form is not None
    assert form_inputs(form)[ids.TERM_BLOCK]["initial_option"]["value"] == ids.TEMPORARY


@pytest.fixture
def postgres_slack(clock: ManualClock, postgres_url: str) -> Iterator[SlackOverHttp]:
    box = Sandbox(clock=clock, kube_timeout=(2.0, 2.0), database_url=postgres_url).start()
    assert box.app is not None
    url, server = serve(WebApp(box.app))
    yield SlackOverHttp(box, url)
    server.close()
    box.stop()


def test_control_characters_are_removed_from_user_text_on_postgres(
    postgres_slack: SlackOverHttp, caplog: pytest.LogCaptureFixture
) -> None:
    slack = postgres_slack
    slack.command(ALICE, "request ai-frontier-research +4 for 3d fine\x00tune\x07 on\tthe corpus")
    assert slack.responses()[-1].startswith(":inbox_tray: GQ-1 submitted")
    slack.command(ALICE, "request ai-frontier-research +1")
    form = slack.records("view_open")[-1].view
    assert form is not None
    values = {"namespace": "ai-frontier-research", "gpus": "+1", ids.TERM_BLOCK: ids.PERMANENT, "reason": "a\x00b\x1bc\nd"}
    assert slack.submit(ALICE, form, values).json()["response_action"] == "update"
    first, second = stored_requests(slack)
    assert first.reason == "finetune on the corpus"
    assert second.reason == "abc\nd"
    assert not [r for r in caplog.records if r.exc_info]


@pytest.mark.parametrize("value", [str(10**23), "abc", "0", "-1", "²"])
def test_forged_button_values_get_a_clear_answer(slack: SlackOverHttp, value: str, caplog: pytest.LogCaptureFixture) -> None:
    slack.command(ALICE, "request ai-frontier-research +4 for 3d fine-tune")
    message = slack.request_message()
    approve = dict(slack.buttons(message)["Approve"], value=value)
    with caplog.at_level(logging.INFO):
        slack.click(LEE, approve, message)
    assert (
        slack.responses()[-1]
        == ":no_entry_sign: This button is not valid (it does not name a request the bot made); nothing was done."
    )
    assert [r for r in caplog.records if "invalid" in r.getMessage() and "button" in r.getMessage()]
    assert not [r for r in caplog.records if r.exc_info]
    assert slack.sandbox.kube is not None and slack.sandbox.kube.hard("ai-frontier-research", "compute-quota") == "4"


def test_extend_on_a_grant_that_ended_during_downtime_opens_no_form(slack: SlackOverHttp, clock: ManualClock) -> None:
    slack.command(ALICE, "request ai-frontier-research +4 for 3d fine-tune")
    message = slack.request_message()
    slack.click(LEE, slack.buttons(message)["Approve"], message)
    clock.advance(timedelta(hours=71, minutes=30))
    slack.sandbox.services.reconciler.tick()
    reminder = [r for r in slack.records("message") if r.channel == "D" + ALICE][-1]
    clock.advance(timedelta(hours=2))  # the bot was down: the grant's end passed without a reconcile
    slack.click(ALICE, buttons_of(reminder.blocks)["Extend"], reminder)
    assert slack.records("view_open") == []
    assert slack.responses()[-1] == ":no_entry_sign: GQ-1 has no active grant to extend."
    slack.command(ALICE, "extend GQ-1")  # the typed form of the same
    assert slack.records("view_open") == []
    assert "GQ-1 has no active grant" in slack.responses()[-1]


def test_user_group_changes_take_effect_on_the_very_next_decision(slack: SlackOverHttp) -> None:
    groups = slack.sandbox.slack.usergroups
    slack.command(ALICE, "request ai-frontier-research +4 for 3d first")
    first = slack.request_message()
    slack.click(PAT, slack.buttons(first)["Approve"], first)  # pat approves as an admin (@platform)
    assert slack.responses()[-1] == "You approved GQ-1; it is applied."

    slack.command(ALICE, "request ai-frontier-research +4 for 3d second")
    second = slack.request_message()
    groups["S0PLATFORM"] = ["U0DANA"]  # pat leaves the group
    slack.click(PAT, slack.buttons(second)["Approve"], second)
    assert "not an approver" in slack.responses()[-1]
    groups["S0PLATFORM"] = ["U0DANA", BOB]  # bob joins it
    slack.click(BOB, slack.buttons(second)["Approve"], second)
    assert slack.responses()[-1] == "You approved GQ-2; it is applied."
