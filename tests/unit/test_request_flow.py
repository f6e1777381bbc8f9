"""The core flow through the services, with fakes at the ports (Kubernetes, Slack) and SQLite."""

from __future__ import annotations

from datetime import timedelta

import pytest

from bot.adapters.slack import reasons
from bot.adapters.slack.refusals import render as refusal_words
from bot.adapters.slack.replies import reply_text
from bot.domain.failure_reasons import FailureReason
from bot.domain.lifecycle import GrantState, RequestState, Verdict
from bot.domain.quota import QuotaScope
from bot.domain.resources import GPU
from bot.errors import PermanentError, QuotaConflict, TemporaryError, UserError
from bot.services.ports import ActionKind
from bot.services.refusals import Refused
from tests.unit.conftest import START, World

REQUEST = "request ai-frontier-research +4 for 3d fine-tune on the new corpus"


def approve(world: World, request_id: int, user: str = "U0LEE") -> str:
    return reply_text(world.services.decisions.decide(user=user, request_id=request_id, verdict=Verdict.APPROVE))


def test_submit_records_and_posts_the_request(world: World) -> None:
    submitted = world.submit(REQUEST)
    assert (submitted.display_id, submitted.state, submitted.channel_id) == ("GQ-1", RequestState.PENDING, "C0FRONTIER")
    card = world.notifier.last_card()
    assert (card.hard_before, card.used_before, card.hard_after, card.cost) == (4, 3, 8, 720.0)
    assert card.capacity is not None and (card.capacity.allocatable, card.capacity.committed_after) == (24, 24)
    row = world.request(1)
    assert row.message_ts is not None and row.decide_by == START + timedelta(hours=24)
    assert world.audit_actions(1) == ["request_submitted"]
    assert world.cluster.writes == []  # nothing touches the cluster before approval


def test_approval_applies_the_grant_safely(world: World) -> None:
    world.submit(REQUEST)
    assert approve(world, 1) == "You approved GQ-1; it is applied."
    assert world.cluster.hard("ai-frontier-research") == 8
    assert world.cluster.quotas[("ai-frontier-research", "compute-quota", GPU)].limits == 8  # kept equal
    assert [(gpus, dry) for _, gpus, dry in world.cluster.writes] == [(8, True), (8, False)]  # dry run first
    row = world.request(1)
    assert row.state == RequestState.APPLIED and row.applied_at == START
    grant = world.database.run(lambda r: r.grant_of(1))
    assert grant.state == GrantState.ACTIVE and grant.ends_at == START + timedelta(days=3)
    assert "Approved by <@U0LEE> — 1 of 1." in world.replies()[0]
    assert "4 GPUs → *8 GPUs*" in world.replies()[1]
    assert "now has 8 GPUs" in world.dms("U0ALICE")[0]
    assert world.notifier.last_card().state == RequestState.APPLIED
    assert world.audit_actions(1) == ["request_submitted", "request_approved", "quota_patched", "request_applied"]


def test_absolute_totals_and_decreases(world: World) -> None:
    world.submit("request ai-frontier-research 6 for 1d more room")
    assert world.request(1).delta == 2
    world.submit("request ai-frontier-research -3 permanent slow down frontier work", user="U0PAT")
    assert world.request(2).delta == -3 and world.request(2).approvals_required == 2


@pytest.mark.parametrize(
    ("text", "user", "message"),
    [
        ("request unknown-ns +1 for 1d x", "U0ALICE", "not managed"),
        ("request ai-frontier-research +1 for 1d x", "U0BOB", "Only members of Frontier research"),
        ("request ai-frontier-research +13 for 1d x", "U0ALICE", "at most 16 GPUs"),
        ("request ai-frontier-research +1 for 15d x", "U0ALICE", "at most 2w"),
        ("request ai-frontier-research -5 permanent x", "U0ALICE", "cannot go down"),
        ("request ai-frontier-research 4 permanent x", "U0ALICE", "nothing to change"),
    ],
)
def test_requests_the_policy_refuses(world: World, text: str, user: str, message: str) -> None:
    with pytest.raises(UserError, match=message):
        world.submit(text, user=user)
    assert world.notifier.sent == []


def test_namespace_missing_from_the_cluster(world: World) -> None:
    world.cluster.namespaces.discard("biz-model-serving")
    with pytest.raises(UserError, match="does not exist in the cluster"):
        world.submit("request biz-model-serving +1 for 1d x", user="U0BOB")


def test_cluster_unreachable_at_submission_submits_nothing(world: World) -> None:
    world.cluster.fail("read", TemporaryError("the Kubernetes API did not answer"))
    with pytest.raises(UserError, match="Nothing was submitted"):
        world.submit(REQUEST)
    assert world.database.run(lambda r: r.request(1)) is None


def test_capacity_unknown_still_submits(world: World) -> None:
    world.cluster.fail("nodes", TemporaryError("timeout"))
    world.submit(REQUEST)
    assert world.notifier.last_card().capacity is None


@pytest.mark.parametrize(
    ("user", "message"),
    [("U0ALICE", "cannot approve your own request"), ("U0BOB", "not an approver"), ("U0MAYA", "not an approver")],
)
def test_only_other_approvers_decide(world: World, user: str, message: str) -> None:
    world.submit(REQUEST)
    with pytest.raises(UserError, match=message):
        approve(world, 1, user)
    assert world.request(1).state == RequestState.PENDING


def test_admins_decide_for_every_team(world: World) -> None:
    world.submit(REQUEST)
    approve(world, 1, "U0PAT")
    assert world.request(1).state == RequestState.APPLIED


def test_double_click_and_late_clicks(world: World) -> None:
    world.submit("request ai-frontier-research +9 for 1d big run")  # large: needs 2
    approve(world, 1)
    with pytest.raises(UserError, match="already approved GQ-1"):
        approve(world, 1)
    approve(world, 1, "U0KIM")
    with pytest.raises(Refused) as refused:
        approve(world, 1, "U0PAT")
    assert "already approved by <@U0LEE>, <@U0KIM>" in refusal_words(refused.value.refusal)
    assert world.cluster.hard("ai-frontier-research") == 13
    assert [w for w in world.cluster.writes if not w[2]] == [("ai-frontier-research", 13, False)]


def test_two_approvals_for_permanent_changes(world: World) -> None:
    world.submit("request ai-frontier-research 6 permanent the team grows")
    assert approve(world, 1) == "You approved GQ-1 (1 of 2); it needs 1 more."
    assert world.request(1).state == RequestState.PENDING and world.cluster.writes == []
    approve(world, 1, "U0KIM")
    assert world.cluster.hard("ai-frontier-research") == 6
    assert world.database.run(lambda r: r.namespace("ai-frontier-research", GPU)).base_gpus == 6


def test_deny(world: World) -> None:
    world.submit(REQUEST)
    assert reply_text(world.services.decisions.decide(user="U0LEE", request_id=1, verdict=Verdict.DENY)) == "You denied GQ-1."
    assert world.request(1).state == RequestState.DENIED
    assert "denied by <@U0LEE>" in world.dms("U0ALICE")[0]
    with pytest.raises(Refused) as refused:
        approve(world, 1, "U0KIM")
    assert "already denied by <@U0LEE>" in refusal_words(refused.value.refusal)
    assert world.cluster.writes == []


def test_a_refused_apply_fails_cleanly_and_an_admin_can_retry(world: World) -> None:
    world.submit(REQUEST)
    world.cluster.fail("dry_run", PermanentError("the cluster refused to let the bot patch (HTTP 403)"))
    assert approve(world, 1) == "You approved GQ-1; it is failed."
    row = world.request(1)
    assert row.state == RequestState.FAILED and "403" in worded(row.failure_reason)
    assert world.database.run(lambda r: r.grant_of(1)) is None  # the effect was taken back
    assert world.cluster.hard("ai-frontier-research") == 4
    failure = world.notifier.of("reply")[-1]
    assert "Could not apply GQ-1" in failure.text and failure.actions[0].kind == ActionKind.RETRY
    assert "could not be applied" in world.dms("U0ALICE")[0]
    with pytest.raises(UserError, match="Only admins"):
        world.services.lifecycle.retry(user="U0LEE", request_id=1)
    assert reply_text(world.services.lifecycle.retry(user="U0PAT", request_id=1)) == "GQ-1 is applied."
    assert world.cluster.hard("ai-frontier-research") == 8


def test_a_temporary_failure_keeps_the_request_approved_until_the_reconcile_applies_it(world: World) -> None:
    world.submit(REQUEST)
    world.cluster.fail("write", TemporaryError("HTTP 503"), times=2)
    assert "it is approved" in approve(world, 1)
    assert world.request(1).state == RequestState.APPROVED
    assert world.cluster.hard("ai-frontier-research") == 4
    assert world.services.reconciler.tick().resumed == []  # the backoff (its lease) has not lapsed
    world.advance(seconds=5)
    assert world.services.reconciler.tick().resumed == [1]  # fails once more: still approved
    assert world.request(1).state == RequestState.APPROVED
    world.advance(seconds=5)
    assert world.services.reconciler.tick().resumed == [1]
    assert world.request(1).state == RequestState.APPLIED
    assert world.cluster.hard("ai-frontier-research") == 8
    replies = world.replies()
    assert [r for r in replies if "waiting for the cluster" in r] == [
        ":hourglass_flowing_sand: Approved; waiting for the cluster: HTTP 503. The bot keeps trying and says here"
        " when it is applied; nothing needs to be done."
    ]
    assert sum("Applied" in r for r in replies) == 1
    assert "request_failed" not in world.audit_actions(1)


def test_a_concurrent_write_is_reread_and_redone(world: World) -> None:
    world.submit(REQUEST)
    # Someone edits the quota between the bot's read and its write: 409, read again, adopt, write.
    world.cluster.before_write.append(lambda: world.cluster.edit("ai-frontier-research", 5))
    approve(world, 1)
    assert world.cluster.hard("ai-frontier-research") == 9  # the person's +1 kept, the grant's +4 on top
    assert any("outside the bot by +1" in text for text in world.replies())
    assert "manual_change_adopted" in world.audit_actions(namespace="ai-frontier-research")


def test_conflicts_are_retried_with_jittered_backoff_and_never_fail_the_request(world: World) -> None:
    world.submit(REQUEST)
    world.cluster.fail("write", QuotaConflict("modified"), times=8)
    approve(world, 1)
    row = world.request(1)
    assert row.state == RequestState.APPROVED and row.failure_reason is None
    # conflict_backoff (0.5, 1.0): each wait is between half and all of min(1.0, 0.5 * 2^n)
    assert len(world.sleeps) == 7
    assert 0.25 <= world.sleeps[0] <= 0.5 and all(0.5 <= s <= 1.0 for s in world.sleeps[1:])
    world.advance(seconds=5)
    world.services.reconciler.tick()
    assert world.request(1).state == RequestState.APPLIED
    assert world.cluster.hard("ai-frontier-research") == 8


def test_a_hand_edit_before_approval_is_adopted_not_overwritten(world: World) -> None:
    world.submit(REQUEST)
    world.cluster.edit("ai-frontier-research", 2)  # kubectl edit: 4 -> 2
    approve(world, 1)
    assert world.cluster.hard("ai-frontier-research") == 6
    world.advance(days=3)
    world.services.reconciler.tick()
    assert world.cluster.hard("ai-frontier-research") == 2  # back to the person's number, not to 4


def test_decrease_below_usage_explains_what_happens(world: World) -> None:
    world.submit("request ai-frontier-research 1 permanent slow down", user="U0PAT")
    approve(world, 1)
    approve(world, 1, "U0KIM")
    assert world.cluster.hard("ai-frontier-research") == 1
    assert "Running pods keep running" in world.replies()[-1]


def test_grant_reminder_then_expiry(world: World) -> None:
    world.submit(REQUEST)
    approve(world, 1)
    world.advance(hours=70)
    assert world.services.reconciler.tick().reminded == []
    world.advance(hours=1, minutes=1)
    assert world.services.reconciler.tick().reminded == [1]
    reminder = world.notifier.of("dm")[-1]
    assert [a.kind for a in reminder.actions] == [ActionKind.EXTEND, ActionKind.RELEASE]
    assert world.services.reconciler.tick().reminded == []  # once only
    world.advance(hours=1)
    assert world.services.reconciler.tick().grants_ended == [1]
    assert world.cluster.hard("ai-frontier-research") == 4
    assert "The grant expired" in world.replies()[-1]
    assert "grant expired" in world.dms("U0ALICE")[-1]
    assert world.database.run(lambda r: r.grant_of(1)).state == GrantState.ENDED


def test_a_revert_that_fails_is_retried_by_the_next_tick(world: World) -> None:
    world.submit(REQUEST)
    approve(world, 1)
    world.advance(days=3)
    world.cluster.fail("write", TemporaryError("HTTP 503"))
    assert world.services.reconciler.tick().grants_ended == []
    assert world.database.run(lambda r: r.grant_of(1)).state == GrantState.ENDING
    assert world.cluster.hard("ai-frontier-research") == 8
    assert "could not be put back yet" in world.replies()[-1]
    assert world.services.reconciler.tick().grants_ended == [1]
    assert world.cluster.hard("ai-frontier-research") == 4


def test_release_early(world: World) -> None:
    world.submit(REQUEST)
    approve(world, 1)
    with pytest.raises(UserError, match="Only the requester"):
        world.services.lifecycle.release(user="U0BOB", request_id=1)
    assert "Released GQ-1: 4 GPUs given back" in reply_text(world.services.lifecycle.release(user="U0ALICE", request_id=1))
    assert world.cluster.hard("ai-frontier-research") == 4
    with pytest.raises(UserError, match="no active grant"):
        world.services.lifecycle.release(user="U0ALICE", request_id=1)


def test_extension_moves_the_end(world: World) -> None:
    world.submit(REQUEST)
    approve(world, 1)
    submitted = world.services.submissions.extend(requester="U0ALICE", request_id=1, duration=timedelta(days=2), reason="")
    assert submitted.display_id == "GQ-2"
    approve(world, 2)
    assert world.request(2).state == RequestState.APPLIED
    assert world.database.run(lambda r: r.grant_of(1)).ends_at == START + timedelta(days=5)
    assert world.cluster.hard("ai-frontier-research") == 8
    with pytest.raises(UserError, match="at most 2w per grant, extensions included"):
        world.services.submissions.extend(requester="U0ALICE", request_id=1, duration=timedelta(days=10), reason="")


def test_cancel(world: World) -> None:
    world.submit(REQUEST)
    with pytest.raises(UserError, match="Only the requester or an admin"):
        world.services.lifecycle.cancel(user="U0LEE", request_id=1)
    world.services.lifecycle.cancel(user="U0ALICE", request_id=1)
    assert world.request(1).state == RequestState.CANCELLED
    with pytest.raises(UserError, match="already cancelled"):
        world.services.lifecycle.cancel(user="U0ALICE", request_id=1)


def test_undecided_requests_expire(world: World) -> None:
    world.submit(REQUEST)
    world.advance(hours=23)
    assert world.services.reconciler.tick().expired == []
    world.advance(hours=1)
    assert world.services.reconciler.tick().expired == [1]
    assert world.request(1).state == RequestState.EXPIRED
    assert "expired" in world.dms("U0ALICE")[0]
    with pytest.raises(UserError, match="already expired"):
        approve(world, 1)


def test_auto_approval(world: World) -> None:
    submitted = world.submit("request ai-frontier-research +1 for 2h quick test")
    assert submitted.state == RequestState.APPLIED
    assert world.cluster.hard("ai-frontier-research") == 5
    assert world.request(1).auto_approved


def test_no_auto_approval_beyond_capacity(world: World) -> None:
    world.cluster.allocatable = 20
    assert world.submit("request ai-frontier-research +1 for 2h quick test").state == RequestState.PENDING


def test_slack_refusing_the_message_loses_nothing(world: World) -> None:
    world.notifier.failing["card"] = PermanentError("Slack refused to post: channel_not_found")
    submitted = world.submit(REQUEST)
    assert submitted.post_error and "channel_not_found" in submitted.post_error
    assert world.request(1).message_ts is None
    del world.notifier.failing["card"]
    assert world.services.reconciler.tick().reposted == [1]
    assert world.request(1).message_ts is not None


def test_notification_failures_never_undo_an_apply(world: World) -> None:
    world.submit(REQUEST)
    world.notifier.failing.update(reply=TemporaryError("ratelimited"), dm=TemporaryError("ratelimited"))
    approve(world, 1)
    assert world.request(1).state == RequestState.APPLIED and world.cluster.hard("ai-frontier-research") == 8


def test_an_apply_interrupted_by_a_crash_is_resumed_once(world: World) -> None:
    world.submit(REQUEST)
    world.cluster.fail("dry_run", RuntimeError("process killed"))
    with pytest.raises(RuntimeError):
        approve(world, 1)
    assert world.request(1).state == RequestState.APPROVED
    world.advance(seconds=5)
    assert world.services.reconciler.tick().resumed == []  # its worker may still be running: the lease holds
    world.advance(seconds=6)
    assert world.services.reconciler.tick().resumed == [1]  # the lease (10 s) lapsed
    assert world.request(1).state == RequestState.APPLIED
    assert world.cluster.hard("ai-frontier-research") == 8
    assert world.services.reconciler.tick().resumed == []


def test_applying_twice_changes_nothing(world: World) -> None:
    world.submit(REQUEST)
    approve(world, 1)
    writes = len(world.cluster.writes)
    outcome = world.services.sync.converge(QuotaScope("ai-frontier-research"))
    assert (outcome.after, outcome.changed) == (8, False) and len(world.cluster.writes) == writes


def test_sweep_adopts_hand_edits_and_tells_the_admins(world: World) -> None:
    world.services.sync.converge(QuotaScope("biz-model-serving"))
    world.cluster.edit("biz-model-serving", 20)
    report = world.services.reconciler.sweep()
    assert report.drifted == ["biz-model-serving"]
    assert "changed outside the bot by +4" in world.notifier.of("post")[-1].text
    assert world.cluster.hard("biz-model-serving") == 20


def test_status_list_and_audit(world: World) -> None:
    world.submit(REQUEST)
    approve(world, 1)
    world.submit("request ai-frontier-research +2 for 1d more", user="U0ALICE")
    status = world.services.queries.status(user="U0ALICE")
    assert [(s.namespace, s.hard, s.used) for s in status] == [("ai-frontier-research", 8, 3)]
    assert [g.request_id for g in status[0].grants] == [1] and [p.request_id for p in status[0].pending] == [2]
    assert [p.request_id for p in world.services.queries.pending_for(user="U0LEE")] == [2]
    assert world.services.queries.pending_for(user="U0MAYA") == []
    with pytest.raises(UserError, match="Only the team"):
        world.services.queries.audit(user="U0MAYA", namespace="ai-frontier-research")
    trail = world.services.queries.audit(user="U0PAT", request_id=1)
    assert [e.action for e in trail] == ["request_submitted", "request_approved", "quota_patched", "request_applied"]


def test_the_quota_is_written_before_approved_by_the_card_and_the_dm(world: World) -> None:
    """Issue 9: on the approval that completes a request, the quota is written first."""
    world.submit(REQUEST)
    seen: list[tuple[str, int]] = []  # what was said, and the quota at that moment
    notifier = world.notifier
    for kind in ("reply", "update_request", "tell_user"):
        send = getattr(notifier, kind)

        def spy(*args, _send=send, _kind=kind, **kwargs):  # type: ignore[no-untyped-def]
            seen.append((_kind, world.cluster.hard("ai-frontier-research")))
            return _send(*args, **kwargs)

        setattr(notifier, kind, spy)

    approve(world, 1)

    assert seen and all(hard == 8 for _, hard in seen), seen
    assert world.replies()[-2].startswith(":+1: Approved by <@U0LEE>")
    assert world.replies()[-1].startswith(":white_check_mark: Applied")


def test_a_limit_broken_by_now_is_refused_inside_the_apply(world: World) -> None:
    """Between the approval and the write a person raised the quota: the apply refuses, converges, says why."""
    world.submit(REQUEST)  # +4 for 3d at 4 (max 16)
    world.cluster.before_write.append(lambda: world.cluster.edit("ai-frontier-research", 13))
    approve(world, 1)
    row = world.request(1)
    assert row.state == RequestState.FAILED and "may be at most 16; 13 +4 = 17" in worded(row.failure_reason)
    assert world.cluster.hard("ai-frontier-research") == 13  # the person's number, adopted; no grant
    assert world.database.run(lambda r: r.grant_of(1)) is None
    assert "Could not apply GQ-1" in world.replies()[-1] and "could not be applied" in world.dms("U0ALICE")[-1]


def test_a_permanent_decrease_cannot_take_more_than_the_base(world: World) -> None:
    """The base never goes negative: running grants are not the base."""
    world.submit(REQUEST)
    approve(world, 1)  # base 4 + a 4-GPU grant: the quota is 8
    world.submit("request ai-frontier-research -5 permanent trim for good", user="U0ALICE")
    approve(world, 2)
    approve(world, 2, "U0KIM")
    row = world.request(2)
    assert row.state == RequestState.FAILED
    assert "permanent quota is 4 GPUs, so it cannot go down by 5" in worded(row.failure_reason)
    assert world.database.run(lambda r: r.namespace("ai-frontier-research", GPU)).base_gpus == 4
    assert world.cluster.hard("ai-frontier-research") == 8


def test_no_reminder_for_a_grant_that_ended_while_the_bot_was_down(world: World) -> None:
    world.submit(REQUEST)
    approve(world, 1)
    world.advance(days=3, hours=2)  # the bot was down through the reminder and the end
    report = world.services.reconciler.tick()
    assert report.reminded == [] and report.grants_ended == [1]
    assert not any("go back" in dm for dm in world.dms("U0ALICE"))


def test_an_extension_card_shows_the_end_it_would_give_then_the_end_it_gave(world: World) -> None:
    world.submit(REQUEST)
    approve(world, 1)  # the grant ends at START + 3 days
    world.services.submissions.extend(requester="U0ALICE", request_id=1, duration=timedelta(days=2), reason="one more epoch")
    card = world.notifier.last_card()  # the extension's card, as posted for approval
    assert card.extends_id == 1 and card.grant_ends_at == START + timedelta(days=5)
    approve(world, 2)
    assert world.notifier.last_card().grant_ends_at == START + timedelta(days=5)


def worded(reason: FailureReason | None) -> str:
    """A request's failure reason as its card shows it ("" when it has none)."""
    return reasons.render(reason) if reason else ""
