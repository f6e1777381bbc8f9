"""Auto-approval grants at most what the policy allows: cumulative per namespace, within budget,
a daily GPU-hour cap per team, and an extension counts its whole grant."""

from __future__ import annotations

import copy
from dataclasses import replace
from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import event

from bot.adapters.db import statements
from bot.adapters.slack import approval_words, blocks
from bot.bootstrap import SlackPorts, build_services
from bot.domain.audit_details import to_text
from bot.domain.auto_notes import AutoApprovalNote, stored_note
from bot.domain.commands import parse_command
from bot.domain.lifecycle import GrantState, RequestState, Verdict
from bot.domain.policy import AutoApprovalCheck, PolicyError, auto_approval, parse_policy
from bot.errors import UserError
from tests.fakes import FakeDirectory, FakeHomeTabs, FakeNotifier
from tests.unit.conftest import POLICY, World, make_world
from tests.unit.test_jobs import make_jobs, policy_dict

QUICK = "request ai-frontier-research +1 for 4h quick test"


def world_with(**frontier: object) -> World:
    raw = copy.deepcopy(POLICY)
    raw["teams"]["frontier"].update(frontier)
    return make_world(raw)


def said(note: AutoApprovalNote | str | None) -> str:
    """A verdict's note as the card says it in English (a stored one read back as the card reads it)."""
    read = stored_note(note) if isinstance(note, str) else note
    return approval_words.card_text(read) if read is not None else ""


def states(world: World, *request_ids: int) -> list[RequestState]:
    return [RequestState(world.request(i).state) for i in request_ids]


def test_auto_approval_is_cumulative_per_namespace(world: World) -> None:
    results = [world.submit(QUICK).state for _ in range(4)]
    assert results == [RequestState.APPLIED, RequestState.PENDING, RequestState.PENDING, RequestState.PENDING]
    assert world.cluster.hard("ai-frontier-research") == 5
    assert [world.request(i).auto_approved for i in (1, 2, 3, 4)] == [True, False, False, False]
    assert world.request(2).approvals_required == 1  # a person decides it as usual
    # Once the auto-approved grant has ended, the namespace may get one again.
    world.advance(hours=4)
    world.services.reconciler.tick()
    assert world.submit(QUICK).state == RequestState.APPLIED


def test_approved_auto_grants_not_yet_applied_count_too(world: World) -> None:
    world.cluster.fail("dry_run", RuntimeError("process killed"))  # the apply of GQ-1 is interrupted
    with pytest.raises(RuntimeError):
        world.submit(QUICK)
    assert world.request(1).state == RequestState.APPROVED
    assert world.submit(QUICK).state == RequestState.PENDING


def test_no_auto_approval_while_the_team_is_over_budget() -> None:
    jobs = make_jobs(policy_dict(auto_approve={"max_gpus": 2, "max_duration": "4h"}))
    services = jobs.services
    draft = parse_command("request ai-frontier-research +1 for 2h quick test").draft  # type: ignore[union-attr]
    assert services.submissions.submit(requester="U0ALICE", draft=draft).state == RequestState.APPLIED  # within budget
    jobs.clock.advance(timedelta(days=2))
    jobs.services.budget.check()
    assert jobs.database.run(lambda repo: jobs.services.budget.over_budget_in(repo, "frontier"))  # type: ignore[union-attr]
    submitted = services.submissions.submit(requester="U0ALICE", draft=draft)
    assert submitted.state == RequestState.PENDING and submitted.approvals_required == 2
    assert "over its budget" in said(jobs.database.run(lambda r: r.request(2)).auto_note)


def test_an_extension_counts_its_whole_grant_against_auto_approve(world: World) -> None:
    assert world.submit(QUICK).state == RequestState.APPLIED
    world.advance(hours=3)
    extension = world.services.submissions.extend(requester="U0ALICE", request_id=1, duration=timedelta(hours=2), reason="")
    assert extension.state == RequestState.PENDING  # 4h + 2h is longer than auto_approve.max_duration (4h)
    assert "6h" in said(world.request(2).auto_note)
    grant = world.database.run(lambda r: r.grant_of(1))
    assert grant.ends_at == world.clock.now() + timedelta(hours=1)  # unchanged until a person approves


def test_a_short_extension_within_auto_approve_is_auto_approved() -> None:
    world = world_with(auto_approve={"max_gpus": 1, "max_duration": "4h"})
    world.submit("request ai-frontier-research +1 for 2h quick test")
    world.advance(hours=1)
    extension = world.services.submissions.extend(requester="U0ALICE", request_id=1, duration=timedelta(hours=2), reason="")
    assert extension.state == RequestState.APPLIED  # 2h + 2h: the grant's own GPUs are not counted twice
    assert world.database.run(lambda r: r.grant_of(1)).ends_at == world.clock.now() + timedelta(hours=3)


def test_an_extension_past_the_teams_longest_grant_is_refused(world: World) -> None:
    world.submit("request ai-frontier-research +4 for 13d long training run")
    world.services.decisions.decide(user="U0LEE", request_id=1, verdict=Verdict.APPROVE)
    world.advance(days=12)
    with pytest.raises(UserError, match="at most 2w"):
        world.services.submissions.extend(requester="U0ALICE", request_id=1, duration=timedelta(days=2), reason="")
    # Within the limit, counting the whole grant, it is submitted.
    world.services.submissions.extend(requester="U0ALICE", request_id=1, duration=timedelta(hours=12), reason="")
    assert world.request(2).state == RequestState.PENDING


def test_the_daily_cap_of_auto_approved_gpu_hours_counts_the_teams_calendar_day() -> None:
    raw = copy.deepcopy(POLICY)
    raw["schedules"] = {"timezone": "Europe/Berlin"}  # START, 09:00 UTC, is 10:00 in Berlin
    raw["teams"]["frontier"]["auto_approve"] = {"max_gpus": 1, "max_duration": "4h", "max_gpu_hours_per_day": 6}
    world = make_world(raw)
    assert world.submit(QUICK).state == RequestState.APPLIED  # 4 GPU-hours
    world.advance(hours=4)
    world.services.reconciler.tick()
    assert world.submit("request ai-frontier-research +1 for 3h x").state == RequestState.PENDING  # 4 + 3 > 6
    assert "GPU-hours" in said(world.request(2).auto_note)
    world.services.lifecycle.cancel(user="U0ALICE", request_id=2)
    world.advance(hours=7, minutes=30)  # 20:30 UTC, 21:30 in Berlin
    assert world.submit("request ai-frontier-research +1 for 2h x").state == RequestState.APPLIED  # 4 + 2 = 6
    world.advance(hours=3)  # 23:30 UTC: still 30 November in UTC, already 1 December in Berlin
    world.services.reconciler.tick()
    assert world.submit(QUICK).state == RequestState.APPLIED


def test_the_card_and_the_audit_say_which_rule_allowed_it(world: World) -> None:
    world.submit(QUICK)
    expected = "auto-approved: 1 GPU for 4h within auto_approve (max 1 GPU active, 4h)"
    assert said(world.request(1).auto_note) == expected
    card = world.notifier.last_card()
    assert isinstance(card.auto_note, AutoApprovalNote) and card.auto_note.approved  # typed: worded at the edge
    assert expected in str(blocks.request_message(card))
    trail = world.database.run(lambda r: list(r.audit_trail(request_id=1)))
    stored = next(e for e in trail if e.action == "request_auto_approved").detail
    assert stored == to_text(card.auto_note)
    (line,) = blocks.audit_lines([e for e in world.services.queries.audit(user="U0LEE", request_id=1) if e.detail == stored])
    assert line.endswith(" — " + expected)  # the audit trail words the same note
    world.submit(QUICK)
    pending = world.notifier.last_card()
    assert said(pending.auto_note).startswith("not auto-approved: ")
    assert "already has 1 auto-approved GPU" in said(pending.auto_note)
    assert said(pending.auto_note) in str(blocks.request_message(pending))


def test_a_note_an_earlier_version_stored_as_a_sentence_shows_as_it_was() -> None:
    old = "auto-approved: 1 GPU for 4h within auto_approve (max 1 GPU active, 4h)"
    assert stored_note(old) == old and said(old) == old
    assert stored_note('{"detail": "NoSuchDetail"}') == '{"detail": "NoSuchDetail"}'  # JSON of no note: as stored
    assert stored_note(None) is None


# --- the pure rule ------------------------------------------------------------------------------------


def check(**changes: object) -> AutoApprovalCheck:
    values: dict[str, object] = {
        "gpus": 1,
        "grant_length": timedelta(hours=4),
        "gpu_hours": 4.0,
        "active_auto_gpus": 0,
        "auto_gpu_hours_today": 0.0,
        "over_budget": False,
        "within_capacity": True,
    }
    values.update(changes)
    return AutoApprovalCheck(**values)  # type: ignore[arg-type]


def test_the_rule_names_what_allowed_or_refused_it() -> None:
    team = parse_policy(
        {
            "teams": {
                "t": {
                    "channel": "C1",
                    "namespaces": ["ns"],
                    "approvers": {"users": ["U1"]},
                    "auto_approve": {"max_gpus": 2, "max_duration": "4h", "max_gpu_hours_per_day": 8},
                }
            }
        }
    ).teams["t"]
    allowed = auto_approval(team, check())
    assert allowed is not None and allowed.approved
    assert said(allowed.note) == "auto-approved: 1 GPU for 4h within auto_approve (max 2 GPUs active, 4h, 8 GPU-hours a day)"
    refusals = {
        "over its budget": check(over_budget=True),
        "already has 2 auto-approved GPUs": check(active_auto_gpus=2),
        "longer than auto_approve.max_duration": check(grant_length=timedelta(hours=5)),
        "would reach 10 GPU-hours": check(auto_gpu_hours_today=6.0),
        "capacity": check(within_capacity=False),
    }
    for words, inputs in refusals.items():
        verdict = auto_approval(team, inputs)
        assert verdict is not None and not verdict.approved and words in said(verdict.note), (words, verdict)
    assert auto_approval(team.model_copy(update={"auto_approve": None}), check()) is None
    assert auto_approval(team, check(grant_length=None)) is None  # permanent changes always need a person
    assert auto_approval(team, check(gpus=-1)) is None  # and so do decreases


def test_the_daily_cap_is_optional_and_validated() -> None:
    base = {"channel": "C1", "namespaces": ["ns"], "approvers": {"users": ["U1"]}}
    team = parse_policy({"teams": {"t": {**base, "auto_approve": {"max_gpus": 1, "max_duration": "4h"}}}}).teams["t"]
    assert team.auto_approve is not None and team.auto_approve.max_gpu_hours_per_day is None
    verdict = auto_approval(team, check(auto_gpu_hours_today=1000.0))
    assert verdict is not None and verdict.approved
    with pytest.raises(PolicyError, match="max_gpu_hours_per_day"):
        parse_policy(
            {"teams": {"t": {**base, "auto_approve": {"max_gpus": 1, "max_duration": "4h", "max_gpu_hours_per_day": 0}}}}
        )


def test_grants_of_other_namespaces_do_not_count(world: World) -> None:
    assert world.submit(QUICK).state == RequestState.APPLIED
    grant = world.database.run(lambda r: r.grant_of(1))
    assert grant.state == GrantState.ACTIVE
    # business has no auto_approve rule: its requests always wait for a person
    assert world.submit("request biz-model-serving +1 for 1h x", user="U0BOB").state == RequestState.PENDING
    assert world.request(2).auto_note is None


def test_a_quota_read_before_a_concurrent_apply_does_not_undo_it(world: World) -> None:
    """Submission A reads the quota (4); B is auto-approved and applied (5) before A is recorded.

    A's stale read must not be taken for a hand edit of -1 that cancels B's grant."""
    real_read = world.cluster.read_quota
    interleaved: list[int] = []

    def read_then_let_b_in(namespace: str, name: str, resource: str):  # type: ignore[no-untyped-def]
        snapshot = real_read(namespace, name, resource)
        if not interleaved:
            interleaved.append(1)
            assert world.submit(QUICK).state == RequestState.APPLIED  # B
        return snapshot

    world.cluster.read_quota = read_then_let_b_in  # type: ignore[method-assign]
    world.submit("request ai-frontier-research +2 for 1d A")  # A: pending, recorded after B's apply
    world.cluster.read_quota = real_read  # type: ignore[method-assign]
    assert world.cluster.hard("ai-frontier-research") == 5
    assert "manual_change_adopted" not in world.audit_actions(namespace="ai-frontier-research")
    world.services.reconciler.sweep()
    assert world.cluster.hard("ai-frontier-research") == 5  # B's grant is still in the quota


def test_a_total_asked_for_on_one_replica_counts_from_what_another_replica_wrote(world: World) -> None:
    """An absolute amount ("5 in total") is turned into a change from the quota read at submission; an
    auto-approval applies that change without a second look. Another replica's write moments ago must
    be in that read, not a copy this replica made before it."""
    other = build_services(
        policy=world.policy,
        database=world.database,
        cluster=world.cluster,
        slack=SlackPorts(
            notifier=FakeNotifier(), directory=FakeDirectory({"S0PLATFORM": frozenset({"U0PAT"})}), home_tabs=FakeHomeTabs()
        ),
        clock=world.clock,
        retry_delays=(0.5, 1.0),
        sleep=world.sleeps.append,
    )
    assert world.submit("request ai-frontier-research +4 for 1d a big run").state == RequestState.PENDING  # reads 4 here
    draft = parse_command("request ai-frontier-research +1 for 1d one more").draft
    one_more = other.submissions.submit(requester="U0ALICE", draft=draft)  # type: ignore[arg-type]
    other.decisions.decide(user="U0LEE", request_id=one_more.request_id, verdict=Verdict.APPROVE)
    assert world.cluster.hard("ai-frontier-research") == 5  # written by the other replica
    with pytest.raises(UserError, match="already"):
        world.submit("request ai-frontier-research 5 for 4h five in total")  # 5 is what it has: nothing to do
    assert world.cluster.hard("ai-frontier-research") == 5


# --- what a request refused on its own costs ------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(
    gpus=st.integers(min_value=1, max_value=20),
    hours=st.integers(min_value=1, max_value=48),
    over_budget=st.booleans(),
    within_capacity=st.booleans(),
    active=st.integers(min_value=0, max_value=20),
    used_today=st.floats(min_value=0, max_value=500, allow_nan=False),
    max_gpus=st.integers(min_value=1, max_value=8),
    max_hours=st.integers(min_value=1, max_value=24),
    cap=st.one_of(st.none(), st.floats(min_value=1, max_value=200, allow_nan=False)),
)
def test_what_was_auto_approved_before_can_only_refuse_more(
    gpus: int,
    hours: int,
    over_budget: bool,
    within_capacity: bool,
    active: int,
    used_today: float,
    max_gpus: int,
    max_hours: int,
    cap: float | None,
) -> None:
    """The service skips reading the team's auto-approved history when a request is refused on its own
    (no history): that is only right if history never turns a refusal into an approval."""
    rule: dict[str, object] = {"max_gpus": max_gpus, "max_duration": f"{max_hours}h"}
    if cap is not None:
        rule["max_gpu_hours_per_day"] = cap
    team = parse_policy(
        {"teams": {"t": {"channel": "C1", "namespaces": ["ns"], "approvers": {"users": ["U1"]}, "auto_approve": rule}}}
    ).teams["t"]
    alone = check(
        gpus=gpus,
        grant_length=timedelta(hours=hours),
        gpu_hours=float(gpus * hours),
        over_budget=over_budget,
        within_capacity=within_capacity,
    )
    with_history = auto_approval(team, replace(alone, active_auto_gpus=active, auto_gpu_hours_today=used_today))
    on_its_own = auto_approval(team, alone)
    assert on_its_own is not None and with_history is not None
    if not on_its_own.approved:
        assert not with_history.approved


def test_a_request_refused_on_its_own_reads_no_auto_approval_history(world: World) -> None:
    executed: list[str] = []
    event.listen(world.database.engine, "before_cursor_execute", lambda *args: executed.append(args[2]))
    history = [  # the queries' text up to their WHERE (the IN lists are expanded when they run)
        str(query.compile(world.database.engine)).partition("WHERE")[0]
        for query in (statements.AUTO_APPROVED_SIZES, statements.ACTIVE_GRANTS_WITH_FLAG, statements.EXTENDED_BY_BOT)
    ]

    def read(query: str) -> bool:
        return any(sql.startswith(query) for sql in executed)

    world.submit("request ai-frontier-research +1 for 1d longer than auto_approve.max_duration")
    assert said(world.request(1).auto_note) == (
        "not auto-approved: the grant would last 1d in all, longer than auto_approve.max_duration (4h) (auto_approve: max 1 GPU active, 4h)"
    )
    assert not any(read(query) for query in history)
    world.submit(QUICK)  # within the rule on its own: the history decides
    assert world.request(2).state == RequestState.APPLIED
    assert all(read(query) for query in history)


def test_more_gpus_than_the_rule_allows_is_said_plainly(world: World) -> None:
    world.submit("request ai-frontier-research +3 for 2h three at once")
    assert said(world.request(1).auto_note) == (
        "not auto-approved: 3 GPUs are more than auto_approve.max_gpus (1) (auto_approve: max 1 GPU active, 4h)"
    )
