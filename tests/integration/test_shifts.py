"""A shift is one request (issue 12): signed Slack HTTP into the real Bolt app, the real kubernetes
client over HTTP against the API stand-in, SQLite and PostgreSQL.

The sandbox: frontier (ai-frontier-research) holds 4 GPUs, 3 in use; business (biz-model-serving)
16, 12 in use. Lee approves for frontier, Maya for business, Pat is an admin.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from bot.clock import ManualClock
from bot.domain.lifecycle import Verdict
from bot.domain.policy import ShiftApproval, Shifts
from bot.sandbox.session import Sandbox
from bot.sandbox.slack_api import Recorded
from bot.sandbox.world import sandbox_policy
from tests.integration.conftest import SlackOverHttp, served

ALICE, BOB, LEE, MAYA, PAT = "U0ALICE", "U0BOB", "U0LEE", "U0MAYA", "U0PAT"
FRONTIER, BUSINESS, QUOTA = "ai-frontier-research", "biz-model-serving", "compute-quota"
SHIFT = f"shift 3 from {FRONTIER} to {BUSINESS}"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def slack(request: pytest.FixtureRequest, clock: ManualClock) -> Iterator[SlackOverHttp]:
    url = request.getfixturevalue("postgres_url") if request.param == "postgres" else None
    with served(Sandbox(clock=clock, kube_timeout=(2.0, 2.0), database_url=url).start()) as slack:
        yield slack


def quota_writes_in_order(slack: SlackOverHttp) -> list[str]:
    """The namespaces whose quota the bot wrote (not dry runs), in order."""
    kube = slack.sandbox.kube
    assert kube is not None
    return [path.split("/")[4] for _, path, query, _ in kube.writes() if query.get("dryRun") != "All"]


def hard(slack: SlackOverHttp, namespace: str) -> str | None:
    assert slack.sandbox.kube is not None
    return slack.sandbox.kube.hard(namespace, QUOTA)


def audit(slack: SlackOverHttp, request_id: int) -> list[tuple[str, str | None]]:
    assert slack.sandbox.database is not None
    return slack.sandbox.database.run(
        lambda repo: [(e.action, e.namespace) for e in repo.audit_trail(request_id=request_id, limit=50)]
    )


def submit_and_approve(slack: SlackOverHttp, text: str) -> Recorded:
    slack.command(BOB, text)
    card = slack.request_message("C0BIZ")
    slack.click(MAYA, slack.buttons(card)["Approve"], card)
    copy = slack.request_message("C0FRONTIER")  # the source team's copy carries the buttons too
    slack.click(LEE, slack.buttons(copy)["Approve"], copy)
    return card


def test_a_shift_is_one_card_approved_by_each_team_and_applied_source_first(slack: SlackOverHttp) -> None:
    slack.command(BOB, f"{SHIFT} for 30d validated models need serving")
    card = slack.request_message("C0BIZ")
    text = slack.current_text(card)
    assert "GPU shift GQ-1" in text and "4 → *1* · 3 in use when asked" in text and "16 → *19*" in text
    assert "5,475.00 USD per month" in text  # 3 GPUs x 730 h x $2.50, the sandbox's price
    assert "keep running" in text and "drains as jobs finish" in text
    copy = slack.request_message("C0FRONTIER")  # the same card for the source team, with the buttons
    assert "GPU shift GQ-1" in slack.current_text(copy) and "4 → *1*" in slack.current_text(copy)
    assert "the thread and the outcome are in <#C0BIZ>" in slack.current_text(copy)
    assert set(slack.buttons(copy)) == {"Approve", "Deny"}

    slack.command(LEE, "list")
    assert f"GQ-1 pending: shift of 3 GPUs from {FRONTIER} to {BUSINESS}" in slack.responses()[-1]  # the source's approver
    slack.command(LEE, f"status {FRONTIER}")
    assert f"shift of 3 GPUs from {FRONTIER}" in slack.responses()[-1]

    slack.click(MAYA, slack.buttons(card)["Approve"], card)
    assert (hard(slack, FRONTIER), hard(slack, BUSINESS)) == ("4", "16")  # business alone is not enough
    slack.click(MAYA, slack.buttons(card)["Approve"], card)
    assert "already" in slack.responses()[-1]
    slack.click(LEE, slack.buttons(copy)["Approve"], copy)

    assert (hard(slack, FRONTIER), hard(slack, BUSINESS)) == ("1", "19")
    assert quota_writes_in_order(slack) == [FRONTIER, BUSINESS]
    assert slack.buttons(copy) == {} and "Applied" in slack.current_text(copy)  # both cards tell the same story
    applied = slack.thread(card)[-1]
    assert "source first" in applied and "gave up 3 GPUs" in applied and "16 GPUs → *19 GPUs*" in applied
    assert "3 GPUs are in use, above the new quota of 1" in applied  # the gradual reclaim, said once
    told = slack.dms(BOB)[-1]
    assert told.startswith(f"GQ-1 is applied: *{FRONTIER}* 4 GPUs → *1 GPU* (gave up 3 GPUs), then *{BUSINESS}*"), told
    trail = audit(slack, 1)
    assert ("shift_source_applied", FRONTIER) in trail and ("request_applied", BUSINESS) in trail
    assert trail.index(("shift_source_applied", FRONTIER)) < trail.index(("request_applied", BUSINESS))


def test_a_target_refusal_leaves_the_source_lowered_and_an_admin_retries_only_the_target(slack: SlackOverHttp) -> None:
    kube = slack.sandbox.kube
    assert kube is not None
    kube.fail("PATCH", f"/namespaces/{BUSINESS}/resourcequotas/", 403, message="quota writes forbidden here")

    card = submit_and_approve(slack, f"{SHIFT} permanent business grows")

    assert (hard(slack, FRONTIER), hard(slack, BUSINESS)) == ("1", "16")
    failed = slack.thread(card)[-1]
    assert "the source side is applied" in failed and "quota writes forbidden here" in failed
    assert "The source stays lowered" in failed
    trail = audit(slack, 1)
    assert ("shift_source_applied", FRONTIER) in trail and ("request_failed", BUSINESS) in trail
    retry = [r for r in slack.sandbox.slack.thread(card.channel or "", card.ts or "") if "Retry" in str(r.blocks)][-1]

    slack.click(BOB, {"action_id": "gq_retry", "value": "1"}, retry)
    assert "Only admins" in slack.responses()[-1]
    slack.click(PAT, {"action_id": "gq_retry", "value": "1"}, retry)

    assert (hard(slack, FRONTIER), hard(slack, BUSINESS)) == ("1", "19")
    assert kube.quota_writes(FRONTIER) == 1  # the source leg was not applied twice
    assert "Shift applied" in slack.thread(card)[-1]


def test_a_temporary_shift_reverts_the_target_first_then_the_source(slack: SlackOverHttp, clock: ManualClock) -> None:
    card = submit_and_approve(slack, f"{SHIFT} for 7d quarter-end serving peak")
    assert (hard(slack, FRONTIER), hard(slack, BUSINESS)) == ("1", "19")

    clock.advance(timedelta(days=7, minutes=1))
    slack.sandbox.services.reconciler.tick()

    assert (hard(slack, FRONTIER), hard(slack, BUSINESS)) == ("4", "16")
    assert quota_writes_in_order(slack) == [FRONTIER, BUSINESS, BUSINESS, FRONTIER]
    assert ("shift_source_returned", FRONTIER) in audit(slack, 1)
    assert "GPUs back to the source" in slack.thread(card)[-1]
    slack.sandbox.services.reconciler.tick()
    assert quota_writes_in_order(slack) == [FRONTIER, BUSINESS, BUSINESS, FRONTIER]  # returned once


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"shift 3 from {FRONTIER} to {FRONTIER} for 1d x", "the source and the target are both"),
        (f"shift 3 from ml-nowhere to {BUSINESS} for 1d x", "`ml-nowhere` is not managed"),
        (f"shift 5 from {FRONTIER} to {BUSINESS} for 1d x", f"`{FRONTIER}` has 4 GPUs, so it cannot give 5"),
        (f"shift three from {FRONTIER} to {BUSINESS} for 1d x", "'three' is not a number of GPUs"),
        (f"shift 3 from {FRONTIER} to {BUSINESS} x", "say how long"),
    ],
)
def test_bad_shifts_are_refused_by_name(slack: SlackOverHttp, text: str, expected: str) -> None:
    response = slack.command(BOB, text)
    answers = [response.text, *slack.responses()]
    assert any(expected in answer for answer in answers), answers
    assert not slack.channel_messages("C0BIZ") and quota_writes_in_order(slack) == []


def test_the_shift_form_and_a_proposals_button_submit_the_same_shift(slack: SlackOverHttp) -> None:
    slack.command(BOB, "shift")
    view = slack.records("view_open")[-1].view
    assert view["callback_id"] == "gq_shift_form"
    slack.submit(BOB, view, {"gpus": "3", "source": FRONTIER, "target": BUSINESS, "duration": "permanent", "reason": "strategy"})
    assert "GPU shift GQ-1" in slack.current_text(slack.request_message("C0BIZ"))

    slack.click(PAT, {"action_id": "gq_propose_shift", "value": f"{FRONTIER}:{BUSINESS}:2"})
    prefilled = slack.records("view_open")[-1].view
    initial = {b["block_id"]: b["element"].get("initial_value") for b in prefilled["blocks"]}
    assert (initial["gpus"], initial["source"], initial["target"]) == ("2", FRONTIER, BUSINESS)
    slack.click(PAT, {"action_id": "gq_propose_shift", "value": f"{FRONTIER}:{BUSINESS}:-2"})
    assert "not valid" in slack.responses()[-1]
    assert (hard(slack, FRONTIER), hard(slack, BUSINESS)) == ("4", "16")  # a proposal is never applied by itself


def test_a_target_fault_that_passes_is_resumed_without_lowering_the_source_twice(
    slack: SlackOverHttp, clock: ManualClock
) -> None:
    kube = slack.sandbox.kube
    assert kube is not None
    kube.fail("PATCH", f"/namespaces/{BUSINESS}/resourcequotas/", 503, times=1)

    card = submit_and_approve(slack, f"{SHIFT} permanent business grows")
    assert (hard(slack, FRONTIER), hard(slack, BUSINESS)) == ("1", "16")
    assert "waiting for the cluster" in slack.thread(card)[-1]

    clock.advance(timedelta(seconds=10))
    slack.sandbox.services.reconciler.tick()

    assert (hard(slack, FRONTIER), hard(slack, BUSINESS)) == ("1", "19")
    assert kube.quota_writes(FRONTIER) == 1
    assert "Shift applied" in slack.thread(card)[-1]


@pytest.fixture
def admin_slack(clock: ManualClock) -> Iterator[SlackOverHttp]:
    policy = sandbox_policy()
    with served(
        Sandbox(policy=policy.model_copy(update={"shifts": Shifts(approval=ShiftApproval.ADMIN)}), clock=clock).start()
    ) as slack:
        yield slack


def test_with_admin_approval_one_admin_decides_in_the_admin_channel(admin_slack: SlackOverHttp) -> None:
    slack = admin_slack
    slack.command(BOB, f"{SHIFT} permanent strategy")
    card = slack.request_message("C0PLATFORM")
    assert not slack.channel_messages("C0FRONTIER") and not slack.channel_messages("C0BIZ")

    slack.click(MAYA, slack.buttons(card)["Approve"], card)
    assert "Only admins decide shifts" in slack.responses()[-1]
    slack.click(PAT, slack.buttons(card)["Approve"], card)

    assert (hard(slack, FRONTIER), hard(slack, BUSINESS)) == ("1", "19")


def test_a_source_lowered_by_hand_before_the_last_approval_refuses_the_shift(slack: SlackOverHttp) -> None:
    kube = slack.sandbox.kube
    assert kube is not None
    slack.command(BOB, f"{SHIFT} permanent strategy")
    card = slack.request_message("C0BIZ")
    slack.click(MAYA, slack.buttons(card)["Approve"], card)
    kube.edit_quota(FRONTIER, QUOTA, "requests.nvidia.com/gpu", "2")  # a person, by hand

    copy = slack.request_message("C0FRONTIER")
    slack.click(LEE, slack.buttons(copy)["Approve"], copy)

    assert (hard(slack, FRONTIER), hard(slack, BUSINESS)) == ("2", "16")
    assert f"`{FRONTIER}` has 2 GPUs now, so it cannot give 3" in slack.thread(card)[-1]
    assert quota_writes_in_order(slack) == []


def test_a_retry_of_a_shift_whose_source_cannot_give_is_refused_before_anything_is_recorded(slack: SlackOverHttp) -> None:
    kube = slack.sandbox.kube
    assert kube is not None
    kube.fail("PATCH", f"/namespaces/{FRONTIER}/resourcequotas/", 422, message="invalid quota")
    card = submit_and_approve(slack, f"{SHIFT} permanent strategy")
    assert "the source side (ai-frontier-research) could not be lowered" in slack.thread(card)[-1]
    assert (hard(slack, FRONTIER), hard(slack, BUSINESS)) == ("4", "16")
    slack.command(PAT, f"request {FRONTIER} 2 permanent frontier gives up GPUs elsewhere")  # GQ-2: needs lee and dana
    for approver in (LEE, "U0DANA"):
        slack.click(approver, {"action_id": "gq_approve", "value": "2"})
        slack.submit(approver, slack.records("view_open")[-1].view, {})
    assert hard(slack, FRONTIER) == "2"
    writes = kube.quota_writes(FRONTIER)

    slack.command(PAT, "retry GQ-1")

    assert f"Not retried: `{FRONTIER}` has 2 GPUs of its own quota now, so it cannot give 3" in slack.responses()[-1]
    assert hard(slack, FRONTIER) == "2" and kube.quota_writes(FRONTIER) == writes


def test_a_shift_whose_target_failed_can_give_the_source_its_gpus_back_instead(slack: SlackOverHttp) -> None:
    kube = slack.sandbox.kube
    assert kube is not None
    kube.fail("PATCH", f"/namespaces/{BUSINESS}/resourcequotas/", 403, message="quota writes forbidden here")
    card = submit_and_approve(slack, f"{SHIFT} for 7d quarter-end peak")
    assert (hard(slack, FRONTIER), hard(slack, BUSINESS)) == ("1", "16")
    failed = [r for r in slack.sandbox.slack.thread(card.channel or "", card.ts or "") if "Give back" in str(r.blocks)][-1]

    slack.click(LEE, {"action_id": "gq_release", "value": "1"}, failed)  # the source team's approver

    assert (hard(slack, FRONTIER), hard(slack, BUSINESS)) == ("4", "16")
    assert "3 GPUs given back to ai-frontier-research" in slack.responses()[-1]
    assert "GPUs back to the source" in slack.thread(card)[-1]
    assert ("shift_source_returned", FRONTIER) in audit(slack, 1)
    assert f"From {FRONTIER} (given back)" in slack.current_text(card)
    slack.click(LEE, {"action_id": "gq_release", "value": "1"}, failed)
    assert "nothing to give back" in slack.responses()[-1] and hard(slack, FRONTIER) == "4"


def test_a_temporary_shift_whose_target_failed_gives_the_source_back_at_its_end(slack: SlackOverHttp, clock: ManualClock) -> None:
    kube = slack.sandbox.kube
    assert kube is not None
    kube.fail("PATCH", f"/namespaces/{BUSINESS}/resourcequotas/", 403, message="quota writes forbidden here")
    card = submit_and_approve(slack, f"{SHIFT} for 7d quarter-end peak")
    slack.sandbox.services.reconciler.tick()
    assert (hard(slack, FRONTIER), hard(slack, BUSINESS)) == ("1", "16")  # not before its end

    clock.advance(timedelta(days=7, minutes=1))
    slack.sandbox.services.reconciler.tick()

    assert (hard(slack, FRONTIER), hard(slack, BUSINESS)) == ("4", "16")
    assert "GPUs back to the source" in slack.thread(card)[-1]
    slack.sandbox.services.reconciler.tick()
    assert audit(slack, 1).count(("shift_source_returned", FRONTIER)) == 1


def test_the_source_teams_approver_denies_from_its_copy_and_both_cards_say_so(slack: SlackOverHttp) -> None:
    slack.command(BOB, f"{SHIFT} permanent strategy")
    card, copy = slack.request_message("C0BIZ"), slack.request_message("C0FRONTIER")

    slack.click(LEE, slack.buttons(copy)["Deny"], copy)
    slack.submit(LEE, slack.records("view_open")[-1].view, {"reason": "frontier still needs them this month"})

    assert "Denied by <@U0LEE>" in slack.current_text(card) and "Denied by <@U0LEE>" in slack.current_text(copy)
    assert slack.buttons(card) == {} and slack.buttons(copy) == {}
    assert (hard(slack, FRONTIER), hard(slack, BUSINESS)) == ("4", "16") and quota_writes_in_order(slack) == []


def test_someone_of_neither_team_pressing_deny_on_a_shift_gets_no_form(slack: SlackOverHttp) -> None:
    slack.command(BOB, f"{SHIFT} permanent strategy")
    copy = slack.request_message("C0FRONTIER")
    slack.click(ALICE, slack.buttons(copy)["Deny"], copy)  # a frontier member, not an approver of either team
    assert "You are not an approver of Frontier research or Model serving" in slack.responses()[-1]
    assert slack.sandbox.slack.calls_of("views.open") == []


def test_the_shift_card_shows_what_keeps_running_in_the_source(slack: SlackOverHttp) -> None:
    kube = slack.sandbox.kube
    assert kube is not None
    kube.add_pod(FRONTIER, "eval-<!here>", gpus=1, priority_class="high-priority-business", phase="Pending")
    slack.command(BOB, f"{SHIFT} permanent the strategy shift")
    card = slack.request_message("C0BIZ")
    text = slack.current_text(card)
    assert "*Running in ai-frontier-research now* (running: 3 GPUs in 2 pods" in text
    assert "• `llm-sweep-0`: 2 GPUs, low-priority-experiment, running, since <!date^" in text
    assert "• `notebook-alice`: 1 GPU, default, running, since <!date^" in text
    assert "• `eval-&lt;!here&gt;`: 1 GPU, high-priority-business, pending" in text  # cluster text is data
    assert "ranker" not in text  # the target's pods are not what the shift moves
    approve = slack.buttons(card)["Approve"]
    slack.click(LEE, approve, card)
    slack.click(MAYA, approve, card)
    assert "Running in" not in slack.current_text(card)  # decided: the card no longer reads the cluster


@pytest.fixture
def two_frontier_approvers(clock: ManualClock) -> Iterator[SlackOverHttp]:
    """The sandbox with Alice as a second approver of frontier (the source team)."""
    policy = sandbox_policy()
    frontier = policy.teams["frontier"]
    approvers = frontier.approvers.model_copy(update={"users": frozenset({LEE, ALICE})})
    teams = {**policy.teams, "frontier": frontier.model_copy(update={"approvers": approvers})}
    with served(Sandbox(policy=policy.model_copy(update={"teams": teams}), clock=clock).start()) as slack:
        yield slack


def test_two_source_approvers_deciding_at_once_do_not_approve_a_shift_without_the_target_team(
    two_frontier_approvers: SlackOverHttp, monkeypatch: pytest.MonkeyPatch
) -> None:
    slack = two_frontier_approvers
    slack.command(BOB, f"{SHIFT} permanent strategy")
    copy = slack.request_message("C0FRONTIER")
    services = slack.sandbox.services
    checked, alices = services.access.shift_decision_problem, []

    def lee_lands_meanwhile(user: str, *args: Any, **kwargs: Any) -> str | None:
        """Alice's click passes both checks (the button's, then the decision's) while Lee's has not landed;
        Lee's lands just after, before Alice's approval is recorded."""
        problem = checked(user, *args, **kwargs)
        alices.extend([user] if user == ALICE else [])
        if len(alices) == 2 and user == ALICE:
            services.decisions.decide(user=LEE, request_id=1, verdict=Verdict.APPROVE)
        return problem

    monkeypatch.setattr(services.access, "shift_decision_problem", lee_lands_meanwhile)
    slack.click(ALICE, slack.buttons(copy)["Approve"], copy)

    assert "needs one from an approver of Model serving" in slack.responses()[-1]
    assert (hard(slack, FRONTIER), hard(slack, BUSINESS)) == ("4", "16") and quota_writes_in_order(slack) == []
    assert slack.sandbox.database is not None
    assert slack.sandbox.database.run(lambda repo: len(repo.request(1).approvals)) == 1  # type: ignore[union-attr]


def test_a_temporary_shift_is_not_extended_by_the_target_team_alone(slack: SlackOverHttp, clock: ManualClock) -> None:
    card = submit_and_approve(slack, f"{SHIFT} for 7d quarter-end peak")
    cards = len(slack.channel_messages("C0BIZ"))

    response = slack.command(BOB, "extend GQ-1 7d the peak lasts longer")

    answers = [response.text, *slack.responses()]
    assert any("request a new shift" in answer for answer in answers), answers
    assert len(slack.channel_messages("C0BIZ")) == cards  # no extension card that only the target team decides
    clock.advance(timedelta(days=7, minutes=1))
    slack.sandbox.services.reconciler.tick()
    assert (hard(slack, FRONTIER), hard(slack, BUSINESS)) == ("4", "16")
    assert "GPUs back to the source" in slack.thread(card)[-1]


def test_a_typed_approve_in_the_source_copys_thread_counts_like_its_button(slack: SlackOverHttp) -> None:
    slack.command(BOB, f"{SHIFT} permanent strategy")
    card, copy = slack.request_message("C0BIZ"), slack.request_message("C0FRONTIER")
    slack.click(MAYA, slack.buttons(card)["Approve"], card)

    def typed(user: str, text: str) -> None:
        event = slack.side.thread_reply(user_id=user, channel_id=copy.channel or "", thread_ts=copy.ts or "", text=text)
        assert slack.post(slack.side.event(event)).status_code == 200

    typed(BOB, "approve")  # the requester, under the copy
    assert "You cannot approve your own request GQ-1" in slack.thread(copy)[-1]
    typed(LEE, "approve")

    assert (hard(slack, FRONTIER), hard(slack, BUSINESS)) == ("1", "19")
    assert "Shift applied" in slack.thread(card)[-1]


def test_a_temporary_shift_released_early_lowers_the_target_then_gives_the_source_back(slack: SlackOverHttp) -> None:
    card = submit_and_approve(slack, f"{SHIFT} for 7d quarter-end peak")

    slack.command(BOB, "release GQ-1")

    assert slack.responses()[-1] == f"Released GQ-1: {BUSINESS} gives the 3 GPUs it was shifted back to {FRONTIER}."
    assert (hard(slack, FRONTIER), hard(slack, BUSINESS)) == ("4", "16")
    assert quota_writes_in_order(slack) == [FRONTIER, BUSINESS, BUSINESS, FRONTIER]
    assert "GPUs back to the source" in slack.thread(card)[-1]
    assert audit(slack, 1).count(("shift_source_returned", FRONTIER)) == 1


def test_a_hand_edit_while_the_source_leg_waits_makes_up_no_gpus(slack: SlackOverHttp, clock: ManualClock) -> None:
    kube = slack.sandbox.kube
    assert kube is not None
    kube.fail("PATCH", f"/namespaces/{FRONTIER}/resourcequotas/", 503, times=1)
    card = submit_and_approve(slack, f"{SHIFT} permanent strategy")
    assert "waiting for the cluster" in slack.thread(card)[-1] and hard(slack, FRONTIER) == "4"
    kube.edit_quota(FRONTIER, QUOTA, "requests.nvidia.com/gpu", "2")  # a person takes 2 GPUs away by hand

    clock.advance(timedelta(seconds=10))
    slack.sandbox.services.reconciler.tick()  # the shift resumes and meets the edit

    assert (hard(slack, FRONTIER), hard(slack, BUSINESS)) == ("2", "16")  # refused: no GPU made up for the target
    assert f"`{FRONTIER}` has 2 GPUs of its own quota now, so it cannot give 3" in slack.thread(card)[-1]


def test_a_hand_edit_the_sweep_sees_while_the_source_leg_waits_makes_up_no_gpus(slack: SlackOverHttp, clock: ManualClock) -> None:
    kube = slack.sandbox.kube
    assert kube is not None
    kube.fail("PATCH", f"/namespaces/{FRONTIER}/resourcequotas/", 503, times=1)
    card = submit_and_approve(slack, f"{SHIFT} permanent strategy")
    kube.edit_quota(FRONTIER, QUOTA, "requests.nvidia.com/gpu", "2")  # a person takes 2 GPUs away by hand
    slack.sandbox.services.reconciler.sweep()  # the sweep runs before the shift resumes

    clock.advance(timedelta(seconds=10))
    slack.sandbox.services.reconciler.tick()
    slack.sandbox.services.reconciler.sweep()

    assert (hard(slack, FRONTIER), hard(slack, BUSINESS)) == ("2", "16")  # refused: no GPU made up for the target
    assert f"`{FRONTIER}` has 2 GPUs of its own quota now, so it cannot give 3" in slack.thread(card)[-1]


def test_the_sources_own_grant_ending_during_a_temporary_shift_moves_only_its_own_gpus(
    slack: SlackOverHttp, clock: ManualClock
) -> None:
    slack.command(ALICE, f"request {FRONTIER} +1 for 4h one more eval")  # auto-approved: frontier 5
    assert hard(slack, FRONTIER) == "5"
    submit_and_approve(slack, f"{SHIFT} for 7d quarter-end peak")
    assert (hard(slack, FRONTIER), hard(slack, BUSINESS)) == ("2", "19")

    clock.advance(timedelta(hours=4, minutes=1))
    slack.sandbox.services.reconciler.tick()
    assert (hard(slack, FRONTIER), hard(slack, BUSINESS)) == ("1", "19")

    clock.advance(timedelta(days=7))
    slack.sandbox.services.reconciler.tick()
    assert (hard(slack, FRONTIER), hard(slack, BUSINESS)) == ("4", "16")


def test_a_hand_edit_met_by_the_sources_grant_ending_while_the_source_leg_waits_makes_up_no_gpus(
    slack: SlackOverHttp, clock: ManualClock
) -> None:
    kube = slack.sandbox.kube
    assert kube is not None
    slack.command(ALICE, f"request {FRONTIER} +1 for 4h one more eval")  # auto-approved: frontier 5
    kube.fail("PATCH", f"/namespaces/{FRONTIER}/resourcequotas/", 503, times=1)
    submit_and_approve(slack, f"{SHIFT} permanent strategy")
    kube.edit_quota(FRONTIER, QUOTA, "requests.nvidia.com/gpu", "2")  # a person takes 3 GPUs away by hand

    clock.advance(timedelta(hours=4, minutes=1))
    slack.sandbox.services.reconciler.tick()  # the grant's end converges frontier before the shift resumes
    clock.advance(timedelta(minutes=1))
    slack.sandbox.services.reconciler.tick()

    assert (hard(slack, FRONTIER), hard(slack, BUSINESS)) == ("1", "16")  # 4 - 3 by hand; the shift refused


@pytest.fixture
def gone_source_channel(clock: ManualClock) -> Iterator[SlackOverHttp]:
    """The sandbox with frontier's approvals channel gone from Slack (archived, or the bot removed)."""
    policy = sandbox_policy()
    teams = {**policy.teams, "frontier": policy.teams["frontier"].model_copy(update={"channel": "C0GONE"})}
    with served(Sandbox(policy=policy.model_copy(update={"teams": teams}), clock=clock).start()) as slack:
        yield slack


def test_a_copy_slack_refuses_is_said_in_the_thread(gone_source_channel: SlackOverHttp) -> None:
    slack = gone_source_channel
    slack.command(BOB, f"{SHIFT} permanent strategy")
    card = slack.request_message("C0BIZ")

    told = slack.thread(card)[-1]
    assert "could not be posted in <#C0GONE>" in told and "channel_not_found" in told, told
    assert "approvers of Frontier research do not see it there" in told
    for _ in range(3):  # a refusal is given up: not tried again, not said again
        slack.sandbox.clock.advance(timedelta(minutes=2))  # type: ignore[attr-defined]
        slack.sandbox.services.reconciler.tick()
    assert sum("could not be posted" in reply for reply in slack.thread(card)) == 1
    assert len([c for c in slack.sandbox.slack.calls_of("chat.postMessage") if c.get("channel") == "C0GONE"]) == 1


def test_a_copy_slack_was_down_for_is_posted_by_the_reconcile(slack: SlackOverHttp) -> None:
    slack.sandbox.slack.fail("chat.postMessage", "internal_error", status=500, channel="C0FRONTIER")
    slack.command(BOB, f"{SHIFT} permanent strategy")
    card = slack.request_message("C0BIZ")
    assert slack.channel_messages("C0FRONTIER") == [] and slack.thread(card) == []  # not refused: nothing to say
    slack.sandbox.services.reconciler.tick()
    assert slack.channel_messages("C0FRONTIER") == []  # not before the wait Slack's 500 hints at (1 s)
    slack.sandbox.clock.advance(timedelta(minutes=2))  # type: ignore[attr-defined]
    slack.sandbox.services.reconciler.tick()
    [copy] = slack.channel_messages("C0FRONTIER")
    assert "Approve" in slack.buttons(copy) and "GPU shift GQ-1" in slack.current_text(copy)
    slack.sandbox.services.reconciler.tick()
    assert len(slack.channel_messages("C0FRONTIER")) == 1  # posted once
