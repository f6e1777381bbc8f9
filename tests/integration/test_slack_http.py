"""Signed Slack HTTP requests into the real Bolt app; the Web API is a recording stand-in on loopback."""

from __future__ import annotations

import json
import re
import time
from datetime import timedelta

from bot.adapters.slack import ids
from bot.clock import ManualClock
from bot.domain.quota import QuotaScope
from tests.integration.conftest import SlackOverHttp, buttons_of

ALICE, LEE, BOB, PAT, DANA = "U0ALICE", "U0LEE", "U0BOB", "U0PAT", "U0DANA"
REQUEST = "request ai-frontier-research +4 for 3d fine-tune on the new corpus"


def quota(slack: SlackOverHttp, namespace: str = "ai-frontier-research") -> str | None:
    assert slack.sandbox.kube is not None
    return slack.sandbox.kube.hard(namespace, "compute-quota")


def test_the_whole_story_over_http(slack: SlackOverHttp, clock: ManualClock) -> None:
    response = slack.command(ALICE, REQUEST)
    assert response.status_code == 200
    assert slack.responses() == [":inbox_tray: GQ-1 submitted and posted in <#C0FRONTIER> for approval (1 approval needed)."]
    message = slack.request_message()
    text = slack.current_text(message)
    assert "GPU quota request GQ-1" in text and "4 hard / 3 used" in text and "4 → *8* (+4)" in text
    assert set(slack.buttons(message)) == {"Approve", "Deny"}

    slack.click(LEE, slack.buttons(message)["Approve"], message)
    assert quota(slack) == "8"
    assert slack.sandbox.kube.hard("ai-frontier-research", "compute-quota", "limits.nvidia.com/gpu") == "8"
    thread = slack.thread(message)
    assert thread[0] == ":+1: Approved by <@U0LEE> — 1 of 1."
    assert thread[1].startswith(":white_check_mark: Applied: `requests.nvidia.com/gpu` in *ai-frontier-research*")
    assert slack.buttons(message) == {}  # the parent shows its final state without buttons
    assert "Applied" in slack.current_text(message)
    assert "now has 8 GPUs" in slack.dms(ALICE)[0]
    assert slack.responses()[-1] == "You approved GQ-1; it is applied."

    clock.advance(timedelta(days=3))
    slack.sandbox.services.reconciler.tick()
    assert quota(slack) == "4"
    assert "The grant expired" in slack.thread(message)[-1]


def test_forged_and_stale_signatures_are_refused(slack: SlackOverHttp) -> None:
    body = slack.side.slash_command(user_id=ALICE, text=REQUEST)
    forged = dict(slack.side.sign(body), **{"x-slack-signature": "v0=" + "0" * 64})
    assert slack.post(body, headers=forged).status_code == 401
    assert slack.post(body, timestamp=int(time.time()) - 6 * 60).status_code == 401
    tampered = slack.side.sign(body)
    assert slack.post(body.replace("%2B4", "%2B9"), headers=tampered).status_code == 401
    assert [r for r in slack.records() if r.kind == "message" and "GQ-" in r.text and "+9" in r.text] == []


def test_malformed_commands_are_answered_at_once(slack: SlackOverHttp) -> None:
    response = slack.command(ALICE, "frobnicate now")
    assert response.status_code == 200
    # A bare-text acknowledgement is shown to the person as an ephemeral message.
    assert "I don't know `frobnicate`" in response.text and "/gpu-quota request" in response.text
    assert "gpu-quota-bot" in slack.command(ALICE, "help").text


def test_the_word_payload_does_not_swallow_a_command(slack: SlackOverHttp) -> None:
    slack.command(ALICE, "request ai-frontier-research +1 for 1d payload tests")
    assert slack.responses()[-1].startswith(":inbox_tray: GQ-1 submitted")


def test_people_who_may_not_decide_are_told_why(slack: SlackOverHttp) -> None:
    slack.command(ALICE, REQUEST)
    message = slack.request_message()
    approve = slack.buttons(message)["Approve"]
    slack.click(ALICE, approve, message)
    assert "cannot approve your own request" in slack.responses()[-1]
    slack.click(BOB, approve, message)
    assert "not an approver for Frontier research" in slack.responses()[-1]
    slack.click(LEE, slack.buttons(message)["Deny"], message)
    form = slack.records("view_open")[-1].view
    assert (
        form["callback_id"] == ids.DENY_FORM
        and slack.sandbox.services.queries.status_of(QuotaScope("ai-frontier-research")).pending
    )
    slack.submit(LEE, form, {"reason": "the corpus is not ready"})
    assert "You denied GQ-1." in json.dumps(slack.records("view_update")[-1].view)
    slack.click(PAT, approve, message)  # an old copy of the message, clicked after the decision
    assert "already denied by <@U0LEE>" in slack.responses()[-1]
    assert quota(slack) == "4"
    assert "was denied by <@U0LEE>. Reason: the corpus is not ready" in slack.dms(ALICE)[0]
    assert ":no_entry: Denied by <@U0LEE>. Reason: the corpus is not ready" in slack.thread(message)


def test_deny_refuses_at_the_click_those_who_may_not_deny(slack: SlackOverHttp) -> None:
    slack.command(PAT, "request ai-frontier-research 6 permanent hiring two researchers")  # 2 approvals
    message = slack.request_message()
    deny = slack.buttons(message)["Deny"]

    slack.click(BOB, deny, message)  # a stranger: not in Frontier research's approvers
    assert slack.responses()[-1] == ":no_entry_sign: You are not an approver for Frontier research, so you cannot decide GQ-1."
    slack.click(PAT, deny, message)  # the requester
    assert "You cannot deny your own request GQ-1" in slack.responses()[-1]
    slack.click(LEE, slack.buttons(message)["Approve"], message)
    slack.submit(LEE, slack.records("view_open")[-1].view, {})
    opened = len(slack.sandbox.slack.calls_of("views.open"))
    slack.click(LEE, deny, message)  # approved already: a denial would be refused too
    assert slack.responses()[-1] == ":no_entry_sign: You already approved GQ-1."
    assert len(slack.sandbox.slack.calls_of("views.open")) == opened

    slack.click(DANA, deny, message)  # an admin may decide: the form opens
    assert len(slack.sandbox.slack.calls_of("views.open")) == opened + 1
    assert slack.records("view_open")[-1].view["callback_id"] == ids.DENY_FORM
    slack.submit(DANA, slack.records("view_open")[-1].view, {"reason": "not this quarter"})
    slack.click(BOB, deny, message)  # an old copy, after the decision: Approve's answer
    assert "already denied by <@U0DANA>" in slack.responses()[-1]
    assert len(slack.sandbox.slack.calls_of("views.open")) == opened + 1


def test_a_stranger_pressing_deny_gets_no_form(slack: SlackOverHttp) -> None:
    slack.command(ALICE, REQUEST)
    message = slack.request_message()
    slack.click(BOB, slack.buttons(message)["Deny"], message)
    assert "not an approver for Frontier research" in slack.responses()[-1]
    assert slack.sandbox.slack.calls_of("views.open") == []
    slack.click(LEE, slack.buttons(message)["Deny"], message)
    assert len(slack.sandbox.slack.calls_of("views.open")) == 1
    assert slack.records("view_open")[-1].view["callback_id"] == ids.DENY_FORM


def test_double_click_counts_once(slack: SlackOverHttp) -> None:
    slack.command(PAT, "request ai-frontier-research 6 permanent hiring two researchers")  # 2 approvals, each by form
    message = slack.request_message()
    approve = slack.buttons(message)["Approve"]
    slack.click(LEE, approve, message)
    form = slack.records("view_open")[-1].view
    slack.submit(LEE, form, {})
    slack.submit(LEE, form, {})
    assert "You already approved GQ-1" in json.dumps(slack.records("view_update")[-1].view)
    slack.click(LEE, approve, message)
    assert "You already approved GQ-1" in slack.responses()[-1]
    assert quota(slack) == "4"
    slack.click(DANA, approve, message)
    slack.submit(DANA, slack.records("view_open")[-1].view, {})
    assert quota(slack) == "6"


def test_unknown_and_missing_namespaces(slack: SlackOverHttp) -> None:
    slack.command(ALICE, "request nonexistent +1 for 1d x")
    assert "`nonexistent` is not managed by gpu-quota-bot" in slack.responses()[-1]
    slack.sandbox.kube.delete_namespace("biz-model-serving")
    slack.command(BOB, "request biz-model-serving +1 for 1d x")
    assert "does not exist in the cluster" in slack.responses()[-1]


def test_the_bot_reads_no_namespace_the_policy_does_not_name(slack: SlackOverHttp) -> None:
    """The chart grants ``namespaces get`` for the policy's names only (the stand-in enforces no RBAC:
    its request log is what an API server would authorise)."""
    slack.command(ALICE, "request nonexistent +1 for 1d x")
    slack.command(ALICE, "request kube-system +1 for 1d x")
    slack.sandbox.kube.delete_namespace("biz-model-serving")
    slack.command(BOB, "request biz-model-serving +1 for 1d x")
    slack.command(ALICE, REQUEST)
    slack.click(LEE, slack.buttons(slack.request_message())["Approve"], slack.request_message())
    slack.command(ALICE, "status")
    slack.sandbox.services.reconciler.tick()
    assert "does not exist in the cluster" in slack.responses()[2]  # the namespace was read, by name
    reads = [path for method, path, _, _ in slack.sandbox.kube.log if re.fullmatch(r"/api/v1/namespaces(/[^/]+)?", path)]
    assert reads and set(reads) <= {"/api/v1/namespaces/ai-frontier-research", "/api/v1/namespaces/biz-model-serving"}
    assert all(method != "GET" or path != "/api/v1/namespaces" for method, path, _, _ in slack.sandbox.kube.log)


def test_incomplete_command_opens_the_prefilled_form(slack: SlackOverHttp) -> None:
    slack.command(ALICE, "request ai-frontier-research +4 for 3d")
    opened = slack.records("view_open")[-1].view
    assert opened["callback_id"] == ids.REQUEST_FORM
    inputs = {b["block_id"]: b["element"] for b in opened["blocks"] if b["type"] == "input"}
    assert inputs["namespace"]["initial_option"]["value"] == "ai-frontier-research"
    # alice may request in her team's namespaces only
    assert [o["value"] for o in inputs["namespace"]["options"]] == [
        "ai-frontier-batch",
        "ai-frontier-inference",
        "ai-frontier-research",
    ]
    assert inputs["gpus"]["initial_value"] == "+4" and inputs["duration"]["initial_value"] == "3d"

    assert inputs["term"]["initial_option"]["value"] == "temporary"  # the typed `for 3d` chose it
    values = {"namespace": "ai-frontier-research", "gpus": "+4", "term": "temporary", "duration": "3 days", "reason": ""}
    answer = slack.submit(ALICE, opened, values).json()
    assert answer["response_action"] == "errors" and set(answer["errors"]) == {"duration", "reason"}

    values.update(duration="3d", reason="fine-tune")
    answer = slack.submit(ALICE, opened, values).json()
    assert answer["response_action"] == "update"
    outcome = slack.records("view_update")[-1].view
    assert "GQ-1 submitted" in json.dumps(outcome)
    assert "GPU quota request GQ-1" in slack.current_text(slack.request_message())


def test_slack_refusing_the_post_keeps_the_request(slack: SlackOverHttp) -> None:
    slack.sandbox.slack.fail("chat.postMessage", "channel_not_found")
    slack.command(ALICE, REQUEST)
    assert "GQ-1 is saved, but Slack would not post it" in slack.responses()[-1]
    assert "channel_not_found" in slack.responses()[-1]
    assert slack.sandbox.services.reconciler.tick().reposted == [1]
    assert "GPU quota request GQ-1" in slack.current_text(slack.request_message())


def test_a_rate_limited_card_is_posted_once_its_retry_after_is_over(slack: SlackOverHttp, clock: ManualClock) -> None:
    """No worker sleeps through a 429: the requester hears the card is coming, the reconcile posts it."""
    slack.sandbox.slack.fail("chat.postMessage", "ratelimited", status=429, retry_after=20)
    slack.command(ALICE, REQUEST)
    assert slack.responses()[-1].startswith(":hourglass_flowing_sand: GQ-1 is saved; Slack asked the bot to slow down")
    clock.advance(timedelta(seconds=19))
    assert slack.sandbox.services.reconciler.tick().reposted == []
    clock.advance(timedelta(seconds=1))
    assert slack.sandbox.services.reconciler.tick().reposted == [1]
    assert len(slack.channel_messages("C0FRONTIER")) == 1


def test_reminder_buttons_extend_and_release(slack: SlackOverHttp, clock: ManualClock) -> None:
    slack.command(ALICE, REQUEST)
    message = slack.request_message()
    slack.click(LEE, slack.buttons(message)["Approve"], message)
    clock.advance(timedelta(hours=71, minutes=30))
    slack.sandbox.services.reconciler.tick()
    reminder = [r for r in slack.records("message") if r.channel == "D" + ALICE][-1]
    assert "go back" in reminder.text
    extend = buttons_of(reminder.blocks)["Extend"]
    slack.click(ALICE, extend, reminder)
    form = slack.records("view_open")[-1].view
    assert form["callback_id"] == ids.EXTEND_FORM
    slack.submit(ALICE, form, {"duration": "1d", "reason": "one more epoch"})
    assert "GQ-2 submitted" in json.dumps(slack.records("view_update")[-1].view)
    extension = slack.request_message()
    assert "Extension GQ-2 of GQ-1" in slack.current_text(extension)

    release = buttons_of(reminder.blocks)["Release now"]
    slack.click(ALICE, release, reminder)
    assert slack.responses()[-1] == "Released GQ-1: 4 GPUs given back to ai-frontier-research."
    assert quota(slack) == "4"


def test_health_endpoints(slack: SlackOverHttp) -> None:
    assert slack.http.get(f"{slack.base_url}/healthz").text == "ok\n"
    assert slack.http.get(f"{slack.base_url}/readyz").status_code == 200
    assert slack.http.get(f"{slack.base_url}/nope").status_code == 404
