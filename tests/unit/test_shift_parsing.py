"""``shift`` as typed, as a form, as a [Propose shift] button value; the shifts policy."""

from __future__ import annotations

from datetime import timedelta

import pytest

from bot.adapters.slack import ids
from bot.adapters.slack.events import ButtonClick, shift_from_form
from bot.adapters.slack.input_words import sentence
from bot.domain.commands import Malformed, ShiftCommand, ShiftDraft, parse_command
from bot.domain.policy import PolicyError, ShiftApproval, parse_policy
from bot.services.access import Access
from bot.services.ports import ActionKind
from bot.services.refusals import NotAShiftApprover, ShiftNeedsApproverOf
from bot.services.text import plain
from tests.fakes import FakeDirectory

FRONTIER, BUSINESS = "ai-frontier-research", "biz-model-serving"


def test_a_typed_shift_names_gpus_source_target_term_and_reason() -> None:
    command = parse_command(f"shift 3 from {FRONTIER} to {BUSINESS} for 30d validated models need serving")
    assert command == ShiftCommand(ShiftDraft(3, FRONTIER, BUSINESS, timedelta(days=30), "validated models need serving"))
    permanent = parse_command(f"shift 2 FROM {FRONTIER} TO {BUSINESS} permanent strategy")
    assert isinstance(permanent, ShiftCommand) and permanent.draft is not None and permanent.draft.permanent


def test_shift_without_arguments_opens_the_form() -> None:
    assert parse_command("shift") == ShiftCommand(None)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"shift 3 from {FRONTIER} to {FRONTIER} for 1d r", "the source and the target are both"),
        (f"shift 0 from {FRONTIER} to {BUSINESS} for 1d r", "'0' is not a number of GPUs"),
        (f"shift -3 from {FRONTIER} to {BUSINESS} for 1d r", "'-3' is not a number of GPUs"),
        (f"shift 3 from Frontier! to {BUSINESS} for 1d r", "'Frontier!' is not a namespace name"),
        (f"shift 3 {FRONTIER} {BUSINESS} for 1d r", "write it as"),
        (f"shift 3 from {FRONTIER} to {BUSINESS} for 1d", "give a reason"),
        (f"shift 3 from {FRONTIER} to {BUSINESS} for 1d permanent r", "say one"),
        (f"shift 3 from {FRONTIER} to {BUSINESS} for 1y r", "1y"),
        (f"shift 3 from {FRONTIER} to {BUSINESS} soon r", "say how long"),
    ],
)
def test_bad_shifts_are_refused_by_name(text: str, expected: str) -> None:
    command = parse_command(text)
    assert isinstance(command, Malformed) and expected in plain(sentence(command.problem)), command


def form(**values: str) -> dict[str, str]:
    return {
        ids.GPUS_BLOCK: "3",
        ids.SOURCE_BLOCK: FRONTIER,
        ids.TARGET_BLOCK: BUSINESS,
        ids.DURATION_BLOCK: "permanent",
        ids.REASON_BLOCK: "strategy",
        **values,
    }


def test_the_shift_form_gives_a_draft_or_an_error_under_the_field() -> None:
    assert shift_from_form(form()) == (ShiftDraft(3, FRONTIER, BUSINESS, None, "strategy"), {})
    assert shift_from_form(form(**{ids.DURATION_BLOCK: "7d"}))[0] == ShiftDraft(
        3, FRONTIER, BUSINESS, timedelta(days=7), "strategy"
    )
    draft, errors = shift_from_form(form(**{ids.TARGET_BLOCK: FRONTIER}))
    assert draft is None and "both" in errors[ids.GPUS_BLOCK]
    draft, errors = shift_from_form(form(**{ids.REASON_BLOCK: ""}))
    assert draft is None and set(errors) == {ids.REASON_BLOCK}


def click(value: str) -> ButtonClick:
    body = {"user": {"id": "U0PAT"}, "actions": [{"action_id": ids.ACTION_IDS[ActionKind.PROPOSE_SHIFT], "value": value}]}
    return ButtonClick.from_body(body)


def test_a_propose_shift_button_carries_source_target_and_gpus() -> None:
    assert click(f"{FRONTIER}:{BUSINESS}:3").shift_prefill() == (FRONTIER, BUSINESS, 3)
    for forged in ("", f"{FRONTIER}:{BUSINESS}", f"{FRONTIER}:{BUSINESS}:0", f"{FRONTIER}:{BUSINESS}:x", f"A:{BUSINESS}:3"):
        assert click(forged).shift_prefill() is None


def test_the_shifts_policy_defaults_to_each_team_and_refuses_other_rules() -> None:
    team = {"channel": "C1", "namespaces": ["ns-a"], "approvers": {"users": ["U1"]}}
    assert parse_policy({"teams": {"a": team}}).shifts.approval == ShiftApproval.EACH_TEAM
    assert parse_policy({"shifts": {"approval": "admin", "channel": "C9"}, "teams": {"a": team}}).shifts.channel == "C9"
    with pytest.raises(PolicyError, match="shifts.approval"):
        parse_policy({"shifts": {"approval": "anyone"}, "teams": {"a": team}})


def test_each_team_needs_an_approver_of_the_team_not_yet_covered() -> None:
    policy = parse_policy(
        {
            "admins": {"users": ["U9"]},
            "teams": {
                "a": {"channel": "C1", "namespaces": ["ns-a"], "approvers": {"users": ["U1", "U2"]}},
                "b": {"channel": "C2", "namespaces": ["ns-b"], "approvers": {"users": ["U3"]}},
            },
        }
    )
    access = Access(policy, FakeDirectory())
    teams = (policy.teams["a"], policy.teams["b"])
    assert access.shift_decision_problem("U1", teams, approved_by=[]) is None
    assert access.shift_decision_problem("U2", teams, approved_by=["U1"]) == ShiftNeedsApproverOf("b")
    assert access.shift_decision_problem("U3", teams, approved_by=["U1"]) is None
    assert access.shift_decision_problem("U7", teams, approved_by=[]) == NotAShiftApprover("a", "b")
    assert access.shift_decision_problem("U9", teams, approved_by=["U1"]) is None  # an admin decides for any team
