"""Approving a permanent or large change takes a confirmation form; auto-approval stays within its caps.

Signed Slack HTTP requests into the real Bolt app; the Web API and Kubernetes are the sandbox stand-ins.
"""

from __future__ import annotations

import json

from bot.adapters.slack import ids
from bot.domain.lifecycle import RequestState
from tests.integration.conftest import SlackOverHttp

ALICE, LEE, BOB, PAT, DANA = "U0ALICE", "U0LEE", "U0BOB", "U0PAT", "U0DANA"
NAMESPACE = "ai-frontier-research"


def quota(slack: SlackOverHttp) -> str | None:
    assert slack.sandbox.kube is not None
    return slack.sandbox.kube.hard(NAMESPACE, "compute-quota")


def edit_by_hand(slack: SlackOverHttp, gpus: int) -> None:
    assert slack.sandbox.kube is not None
    for resource in ("requests.nvidia.com/gpu", "limits.nvidia.com/gpu"):
        slack.sandbox.kube.edit_quota(NAMESPACE, "compute-quota", resource, str(gpus))


def state(slack: SlackOverHttp, request_id: int) -> tuple[RequestState, int]:
    row = slack.sandbox.database.run(lambda r: r.request(request_id))
    assert row is not None
    return RequestState(row.state), len(row.approvals)


def forms_opened(slack: SlackOverHttp) -> list[dict]:
    return [r.view for r in slack.records("view_open") if r.view is not None]


def test_approving_a_permanent_change_opens_a_confirmation_form(slack: SlackOverHttp) -> None:
    slack.command(PAT, "request ai-frontier-research 6 permanent hiring two researchers")  # permanent: two approvals
    message = slack.request_message()
    edit_by_hand(slack, 5)  # the quota moved since the request was posted: the form shows it as of now

    slack.click(LEE, slack.buttons(message)["Approve"], message)
    form = forms_opened(slack)[-1]
    assert form["callback_id"] == ids.CONFIRM_APPROVAL_FORM
    text = json.dumps(form, ensure_ascii=False)
    assert "5 → *6* (+1)" in text  # before -> after as of now: a total of 6 asked for stays 6
    assert "1,825.00 USD per month" in text  # 1 GPU x 730 h x 2.50
    assert "permanent" in text
    assert state(slack, 1) == (RequestState.PENDING, 0)  # the button alone records nothing
    assert slack.thread(message) == []

    answer = slack.submit(LEE, form, {}).json()
    assert answer["response_action"] == "update"
    assert state(slack, 1) == (RequestState.PENDING, 1)
    assert "You approved GQ-1 (1 of 2)" in json.dumps(slack.records("view_update")[-1].view)
    assert slack.thread(message)[0] == ":+1: Approved by <@U0LEE> — 1 of 2."

    slack.click(DANA, slack.buttons(message)["Approve"], message)
    slack.submit(DANA, forms_opened(slack)[-1], {})
    assert state(slack, 1) == (RequestState.APPLIED, 2)
    assert quota(slack) == "6"


def test_a_large_temporary_change_needs_the_form_too(slack: SlackOverHttp) -> None:
    slack.command(ALICE, "request ai-frontier-research +9 for 1d big sweep")  # above large_change.above_gpus (8)
    message = slack.request_message()
    slack.click(LEE, slack.buttons(message)["Approve"], message)
    form = forms_opened(slack)[-1]
    text = json.dumps(form, ensure_ascii=False)
    assert "4 → *13* (+9)" in text and "16,425.00 USD per month" in text and "540.00 USD for the grant" in text
    assert state(slack, 1) == (RequestState.PENDING, 0)


def test_a_small_temporary_change_stays_one_click(slack: SlackOverHttp) -> None:
    slack.command(ALICE, "request ai-frontier-research +4 for 3d fine-tune")
    message = slack.request_message()
    slack.click(LEE, slack.buttons(message)["Approve"], message)
    assert forms_opened(slack) == []
    assert state(slack, 1) == (RequestState.APPLIED, 1) and quota(slack) == "8"


def test_no_form_for_people_who_may_not_approve(slack: SlackOverHttp) -> None:
    slack.command(PAT, "request ai-frontier-research 6 permanent hiring two researchers")
    message = slack.request_message()
    slack.click(BOB, slack.buttons(message)["Approve"], message)
    assert "not an approver for Frontier research" in slack.responses()[-1]
    slack.click(PAT, slack.buttons(message)["Approve"], message)
    assert "cannot approve your own request" in slack.responses()[-1]
    assert forms_opened(slack) == []


def test_a_form_submitted_after_someone_else_decided_records_nothing_twice(slack: SlackOverHttp) -> None:
    slack.command(PAT, "request ai-frontier-research 6 permanent hiring two researchers")
    message = slack.request_message()
    slack.click(LEE, slack.buttons(message)["Approve"], message)
    form = forms_opened(slack)[-1]
    slack.click(DANA, slack.buttons(message)["Deny"], message)
    slack.submit(DANA, slack.records("view_open")[-1].view, {"reason": "not this quarter"})
    slack.submit(LEE, form, {})
    assert "already denied" in json.dumps(slack.records("view_update")[-1].view)
    assert state(slack, 1) == (RequestState.DENIED, 0)


def test_four_small_requests_get_one_auto_approval_over_http(slack: SlackOverHttp) -> None:
    for _ in range(4):
        slack.command(ALICE, "request ai-frontier-research +1 for 4h quick test")
    answers = slack.responses()
    assert answers[0].startswith(":white_check_mark: GQ-1 was auto-approved and applied")
    assert all(":inbox_tray:" in a and "1 approval needed" in a for a in answers[1:]), answers
    assert quota(slack) == "5"
    first = slack.channel_messages("C0FRONTIER")[0]
    assert "auto-approved: 1 GPU for 4h within auto_approve (max 1 GPU active, 4h)" in slack.current_text(first)
    assert "not auto-approved: the namespace already has 1 auto-approved GPU active" in slack.current_text(
        slack.request_message()
    )
