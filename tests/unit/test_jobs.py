"""The scheduled jobs' services, with a History as the metrics source, fakes for Slack and Kubernetes, SQLite."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone

import pytest
from apscheduler.schedulers.background import BackgroundScheduler

from bot.adapters.db.database import Database
from bot.adapters.db.models import Base
from bot.adapters.slack.words import render
from bot.bootstrap import SlackPorts, build_services
from bot.clock import ManualClock
from bot.domain.commands import parse_command
from bot.domain.lifecycle import Verdict
from bot.domain.policy import PolicyError, parse_policy
from bot.domain.resources import GPU
from bot.errors import TemporaryError
from bot.sandbox.history import A100, H100, History, HistoryMetrics, PodRun
from bot.services.blocked import shortfall
from bot.services.container import Services
from bot.services.ports import ActionKind, QuotaRefusal
from tests.fakes import FailingMetrics, FakeCluster, FakeDirectory, FakeHomeTabs, FakeNotifier

UTC = timezone.utc
MONTH_START = datetime(2026, 11, 1, tzinfo=UTC)
NOW = datetime(2026, 11, 10, 9, 0, tzinfo=UTC)


def policy_dict(**frontier: object) -> dict:
    return {
        "admin_channel": "C0ADMIN",
        "pricing": {"default_per_gpu_hour": 1.0, "models": {A100: 2.0, H100: 4.0}},
        "metrics": {"idle_window": "6h", "idle_threshold_percent": 5},
        "teams": {
            "frontier": {
                "channel": "C0FRONTIER",
                "namespaces": ["ai-frontier-research"],
                "approvers": {"users": ["U0LEE"]},
                "members": {"users": ["U0ALICE"]},
                "owners": {"users": ["U0LEE"], "usergroups": ["S0LEADS"]},
                "budget": {"monthly": 1000},
                "auto_approve": None,
                **frontier,
            },
            "business": {"channel": "C0BIZ", "namespaces": ["biz-model-serving"], "approvers": {"users": ["U0MAYA"]}},
        },
    }


def history() -> History:
    """Frontier trains on 2 A100s around the clock (2 x 24 x 2 = 96 a day); business holds 4 idle H100s."""
    end = datetime(2027, 1, 1, tzinfo=UTC)
    return History(
        step=timedelta(minutes=5),
        start=MONTH_START,
        end=end,
        pods=[
            PodRun("ai-frontier-research", "train", 2, "n1", A100, MONTH_START, end, 0.7),
            PodRun("biz-model-serving", "parked", 4, "n2", H100, MONTH_START, end, 0.01),
        ],
    )


@dataclass
class Jobs:
    services: Services
    notifier: FakeNotifier
    cluster: FakeCluster
    clock: ManualClock
    database: Database
    metrics: FailingMetrics

    def posts(self, channel: str) -> list[str]:
        return [s.text for s in self.notifier.sent if s.target == channel and s.kind in ("post", "report")]


def make_jobs(raw: dict, database: Database | None = None, clock: ManualClock | None = None) -> Jobs:
    cluster = FakeCluster()
    cluster.add("ai-frontier-research", 4)
    cluster.add("biz-model-serving", 16)
    notifier = FakeNotifier()
    clock = clock or ManualClock(NOW)
    if database is None:
        database = Database.from_url("sqlite://")
        Base.metadata.create_all(database.engine)
    metrics = FailingMetrics(HistoryMetrics(history()))
    metrics.up = True
    services = build_services(
        policy=parse_policy(raw),
        database=database,
        cluster=cluster,
        slack=SlackPorts(notifier=notifier, directory=FakeDirectory(), home_tabs=FakeHomeTabs()),
        clock=clock,
        metrics=metrics,
        sleep=lambda _: None,
    )
    return Jobs(services, notifier, cluster, clock, database, metrics)


@pytest.fixture
def jobs() -> Jobs:
    return make_jobs(policy_dict())


# --- digest -------------------------------------------------------------------------------------


def test_digest_goes_to_each_team_and_the_admins_once(jobs: Jobs) -> None:
    assert jobs.services.digest.publish(date(2026, 11, 9)) == ["frontier", "business", "*"]
    reports = [s.report for s in jobs.notifier.of("report")]
    frontier = next(r for r in reports if "frontier" in r.title)
    assert "Yesterday *48.0 GPU-h · 96.00 USD*" in frontier.summary
    assert "Month to date *432.0 GPU-h · 864.00 USD*" in frontier.summary
    assert "86% of the 1,000.00 USD budget" in frontier.summary
    assert frontier.attachment is not None and frontier.attachment.content.startswith(b"\x89PNG")
    usage = next(s for s in frontier.sections if s.heading and s.heading.startswith("Utilisation"))
    assert "utilisation 70%" in usage.lines[0]
    business = next(r for r in reports if "business" in r.title.lower() or "biz" in r.title)
    idle = next(s for s in business.sections if s.heading and s.heading.startswith("Utilisation"))
    assert "864.0 GPU-h · 3,456.00 USD" in idle.lines[0]  # 4 idle H100s x 24 h x 9 days at 4.00
    assert jobs.services.digest.publish(date(2026, 11, 9)) == []  # already posted
    assert len(jobs.notifier.of("report")) == 3


def test_digest_lists_grants_ending_within_a_day(jobs: Jobs) -> None:
    services = jobs.services
    services.submissions.submit(requester="U0ALICE", draft=parse_command("request ai-frontier-research +2 for 12h eval").draft)  # type: ignore[union-attr]
    services.decisions.decide(user="U0LEE", request_id=1, verdict=Verdict.APPROVE)
    jobs.services.digest.publish(date(2026, 11, 9))
    frontier = next(s.report for s in jobs.notifier.of("report") if "frontier" in s.report.title)
    ending = next(s for s in frontier.sections if s.heading == "Grants ending in the next 24 h")
    assert ending.lines[0].startswith("GQ-1: +2 GPUs in ai-frontier-research, ends")


def test_a_team_can_switch_its_digest_off(jobs: Jobs) -> None:
    quiet = make_jobs(policy_dict(notifications={"digest": False}))
    assert quiet.services.digest.publish(date(2026, 11, 9)) == ["business", "*"]


def test_metrics_outage_is_told_once_and_missed_days_catch_up(jobs: Jobs) -> None:
    jobs.services.digest.run()  # posts yesterday, Nov 9
    jobs.metrics.up = False
    for _ in range(2):  # Nov 10 and Nov 11 runs fail
        jobs.clock.advance(timedelta(days=1))
        with pytest.raises(TemporaryError):
            jobs.services.digest.run()
    notices = [t for t in jobs.posts("C0ADMIN") if "unavailable" in t]
    assert len(notices) == 1 and "Prometheus did not answer" in notices[0]
    jobs.metrics.up = True
    jobs.clock.advance(timedelta(days=1))
    assert [day for day, _ in jobs.services.digest.run()] == [date(2026, 11, 10), date(2026, 11, 11), date(2026, 11, 12)]
    assert any("metrics are back" in t for t in jobs.posts("C0ADMIN"))


def test_a_failed_post_is_retried_by_the_next_run(jobs: Jobs) -> None:
    jobs.notifier.failing["publish"] = TemporaryError("ratelimited")
    assert jobs.services.digest.publish(date(2026, 11, 9)) == []
    del jobs.notifier.failing["publish"]
    assert jobs.services.digest.publish(date(2026, 11, 9)) == ["frontier", "business", "*"]


# --- budgets ------------------------------------------------------------------------------------


def test_budget_thresholds_fire_once_per_month_even_across_restarts(jobs: Jobs) -> None:
    # Nov 10 09:00: 9 days x 96 + 9 h x 4 = 900 of 1,000 spent: 50 and 80 crossed, and the
    # month-end forecast (about 3,000) is over budget: one message settles all three.
    assert jobs.services.budget.check() == [("frontier", "50"), ("frontier", "80"), ("frontier", "forecast")]
    assert len(jobs.posts("C0FRONTIER")) == 1
    warning = jobs.posts("C0FRONTIER")[-1]
    assert "<@U0LEE> <!subteam^S0LEADS>" in warning and "90% of its monthly GPU budget" in warning and "threshold 80%" in warning
    assert "runs out around" in warning
    assert jobs.services.budget.check() == []
    restarted = make_jobs(policy_dict(), database=jobs.database, clock=jobs.clock)
    assert restarted.services.budget.check() == []
    jobs.clock.advance(timedelta(days=2))  # Nov 12 09:00: 1,092 spent
    assert jobs.services.budget.check() == [("frontier", "100")]
    assert "New increases need one more approval" in jobs.posts("C0FRONTIER")[-1]
    jobs.clock.advance(timedelta(days=29))  # Dec 11 09:00: a new month, a new set of warnings
    assert jobs.services.budget.check() == [("frontier", "50"), ("frontier", "80"), ("frontier", "forecast")]


def test_the_early_warning_comes_when_the_forecast_crosses_first() -> None:
    # Nov 3 00:00: two days at 96 a day, 192 spent; the month is on course for 2,880.
    early = make_jobs(policy_dict(budget={"monthly": 3000}), clock=ManualClock(datetime(2026, 11, 3, 0, tzinfo=UTC)))
    assert early.services.budget.check() == []
    tight = make_jobs(policy_dict(budget={"monthly": 2500}), clock=ManualClock(datetime(2026, 11, 3, 0, tzinfo=UTC)))
    assert tight.services.budget.check() == [("frontier", "forecast")]
    assert "on course to overspend" in tight.posts("C0FRONTIER")[-1]


def test_over_budget_teams_need_one_more_approval_for_increases(jobs: Jobs) -> None:
    jobs.clock.advance(timedelta(days=2))
    jobs.services.budget.check()
    budget = jobs.services.budget
    assert budget is not None
    assert jobs.database.run(lambda repo: budget.over_budget_in(repo, "frontier"))
    assert not jobs.database.run(lambda repo: budget.over_budget_in(repo, "business"))
    services = jobs.services
    services.submissions.submit(requester="U0ALICE", draft=parse_command("request ai-frontier-research +2 for 1d x").draft)  # type: ignore[union-attr]
    services.submissions.submit(requester="U0ALICE", draft=parse_command("request ai-frontier-research -1 for 1d x").draft)  # type: ignore[union-attr]
    increase = jobs.database.run(lambda r: r.request(1))
    decrease = jobs.database.run(lambda r: r.request(2))
    assert (increase.approvals_required, decrease.approvals_required) == (2, 1)


# --- idle nudges ----------------------------------------------------------------------------------


def test_idle_gpus_are_nudged_once_and_can_be_snoozed(jobs: Jobs) -> None:
    assert jobs.services.idle.check() == ["biz-model-serving"]
    nudge = next(s for s in jobs.notifier.of("post") if s.target == "C0BIZ")
    assert "holds 4 GPUs" in nudge.text and "under 5% for the last 6 h" in nudge.text
    assert [a.kind for a in nudge.actions] == [ActionKind.SNOOZE]
    assert jobs.services.idle.check() == []  # unchanged: not repeated
    assert "snoozed until" in render(jobs.services.idle.snooze(user="U0MAYA", namespace="biz-model-serving"))
    jobs.clock.advance(timedelta(hours=23))
    assert jobs.services.idle.check() == []
    jobs.clock.advance(timedelta(hours=2))
    assert jobs.services.idle.check() == []  # snooze over, but the same idle episode
    assert "frontier" not in " ".join(jobs.posts("C0FRONTIER"))


def test_a_changed_idle_allocation_is_nudged_again(jobs: Jobs) -> None:
    jobs.services.idle.check()
    jobs.metrics.working.history.pods.append(
        PodRun("biz-model-serving", "parked-too", 2, "n3", H100, NOW - timedelta(hours=7), NOW + timedelta(days=3), 0.0)
    )
    jobs.clock.advance(timedelta(minutes=30))
    assert jobs.services.idle.check() == ["biz-model-serving"]
    assert "holds 6 GPUs" in [s.text for s in jobs.notifier.of("post") if s.target == "C0BIZ"][-1]


def test_nudges_offer_to_release_an_active_grant(jobs: Jobs) -> None:
    services = jobs.services
    services.submissions.submit(requester="U0BOB", draft=parse_command("request biz-model-serving +4 for 2d launch").draft)  # type: ignore[union-attr]
    services.decisions.decide(user="U0MAYA", request_id=1, verdict=Verdict.APPROVE)
    jobs.services.idle.check()
    nudge = next(s for s in jobs.notifier.of("post") if s.target == "C0BIZ")
    assert [(a.kind, a.value) for a in nudge.actions] == [(ActionKind.RELEASE, "1"), (ActionKind.SNOOZE, "biz-model-serving")]


def test_only_the_team_may_snooze(jobs: Jobs) -> None:
    from bot.errors import UserError

    with pytest.raises(UserError, match="Only Frontier|Only frontier"):
        jobs.services.idle.snooze(user="U0BOB", namespace="ai-frontier-research")
    assert "snoozed" in render(jobs.services.idle.snooze(user="U0ALICE", namespace="ai-frontier-research"))


# --- blocked workloads ----------------------------------------------------------------------------


def refusal(name: str, namespace: str = "ai-frontier-research") -> QuotaRefusal:
    gpu = "requests.nvidia.com/gpu"
    message = f'pods "{name}-x" is forbidden: exceeded quota: compute-quota, requested: {gpu}=2, used: {gpu}=4, limited: {gpu}=4'
    return QuotaRefusal(namespace, "Job", name, f"uid-{name}", GPU, message, 3, None)


def test_blocked_workloads_are_reported_once_with_a_prefilled_request(jobs: Jobs) -> None:
    jobs.cluster.refusals = [refusal("trainer"), refusal("other", namespace="kube-system")]
    assert jobs.services.blocked.check() == ["ai-frontier-research/Job/trainer"]
    alert = next(s for s in jobs.notifier.of("post") if s.target == "C0FRONTIER")
    assert "*Job trainer*" in alert.text and "asks for 2 GPUs while 4 of 4 are in use" in alert.text
    assert alert.actions[0].kind == ActionKind.REQUEST_MORE
    assert '"gpus": "+2"' in alert.actions[0].value
    assert jobs.services.blocked.check() == []


def test_quota_messages_are_read_whatever_else_they_list() -> None:
    message = (
        "exceeded quota: compute-quota, requested: limits.cpu=4,requests.nvidia.com/gpu=3, "
        "used: limits.cpu=10,requests.nvidia.com/gpu=6, limited: limits.cpu=40,requests.nvidia.com/gpu=8"
    )
    figures = shortfall(message)
    assert figures is not None and (figures.requested, figures.used, figures.limited, figures.missing) == (3, 6, 8, 1)
    assert shortfall("exceeded quota: compute-quota, requested: pods=1") is None


# --- proposals ----------------------------------------------------------------------------------


def registered(raw: dict) -> list[str]:
    import jobs as scheduled

    scheduler = BackgroundScheduler()
    return scheduled.register(scheduler, make_jobs(raw).services, reconcile_seconds=60, sweep_seconds=600)


def test_proposals_are_off_by_default_and_run_on_the_policys_schedule() -> None:
    assert "proposals" not in registered(policy_dict())
    assert "reclaims" in registered(policy_dict())
    assert "proposals" in registered({**policy_dict(), "schedules": {"proposals": "0 8 * * 1"}})


def test_a_proposals_schedule_needs_an_admin_channel() -> None:
    raw = {**policy_dict(), "schedules": {"proposals": "0 8 * * 1"}}
    del raw["admin_channel"]
    with pytest.raises(PolicyError, match="set admin_channel"):
        parse_policy(raw)


def test_the_doctor_job_is_off_by_default_runs_on_the_policys_schedule_and_needs_an_admin_channel() -> None:
    assert "doctor" not in registered(policy_dict())
    assert "doctor" in registered({**policy_dict(), "schedules": {"doctor": "0 8 * * 1"}})
    raw = {**policy_dict(), "schedules": {"doctor": "0 8 * * 1"}}
    del raw["admin_channel"]
    with pytest.raises(PolicyError, match="schedules.doctor posts to the admin channel"):
        parse_policy(raw)


def test_the_ledger_job_records_the_finished_days_so_the_digest_needs_no_prometheus(jobs: Jobs) -> None:
    assert "ledger" in registered(policy_dict())
    assert jobs.services.ledger is not None and jobs.services.digest is not None
    done = jobs.services.ledger.run()  # 10 Nov, 09:00: 1-9 Nov are over
    assert done.recorded == [date(2026, 11, 1) + timedelta(days=i) for i in range(9)] and done.no_data == []
    assert jobs.services.ledger.run().recorded == []  # written once
    jobs.metrics.up = False  # Prometheus goes away after the ledger job
    digest = jobs.services.digest.build(date(2026, 11, 9))
    frontier = next(team for team in digest.teams if team.team.name == "frontier")
    assert round(frontier.spent, 2) == 9 * 96.0  # 2 A100s x 24 h x 2.00, every day of the month so far
    assert frontier.missing == []


def test_a_proposal_never_gives_away_borrowed_gpus() -> None:
    """Frontier holds 4 GPUs for good and borrows 2 more for 3 days; it used at most 2: it can give 2, not 4."""
    raw = {**policy_dict(), "schedules": {"proposals": "0 8 * * 1"}}
    jobs = make_jobs(raw, clock=ManualClock(datetime(2026, 11, 20, 9, 0, tzinfo=UTC)))  # 6-19 Nov measured
    assert jobs.services.proposals is not None
    services = jobs.services
    services.submissions.submit(requester="U0ALICE", draft=parse_command("request ai-frontier-research +2 for 3d eval").draft)  # type: ignore[union-attr]
    services.decisions.decide(user="U0LEE", request_id=1, verdict=Verdict.APPROVE)
    assert jobs.cluster.quotas[("ai-frontier-research", "compute-quota", GPU)].hard == 6
    for day in range(3):  # business was blocked by its quota 3 times
        jobs.database.run(
            lambda repo, d=day: repo.remember_blocked_alert(
                f"b{d}", namespace="biz-model-serving", at=NOW, quota_day=date(2026, 11, 10 + d)
            )
        )
    run = jobs.services.proposals.run()
    assert [(p.source.namespace, p.target.namespace, p.gpus) for p in run.proposals] == [
        ("ai-frontier-research", "biz-model-serving", 2)
    ]
    assert run.proposals[0].source.quota == 4


def test_proposals_whose_recording_fails_are_proposed_again_by_the_next_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """The day's claim is given back when the proposals cannot be recorded (here the database drops the
    connection): the next run proposes them, instead of the day counting as posted with nothing said."""
    from sqlalchemy.exc import OperationalError

    from bot.adapters.db.repository import Repository

    raw = {**policy_dict(), "schedules": {"proposals": "0 8 * * 1"}}
    jobs = make_jobs(raw, clock=ManualClock(datetime(2026, 11, 20, 9, 0, tzinfo=UTC)))  # 6-19 Nov measured
    assert jobs.services.proposals is not None
    for day in range(3):  # business was blocked by its quota 3 times
        jobs.database.run(
            lambda repo, d=day: repo.remember_blocked_alert(
                f"b{d}", namespace="biz-model-serving", at=NOW, quota_day=date(2026, 11, 10 + d)
            )
        )

    def connection_lost(*args: object, **kwargs: object) -> None:
        raise OperationalError("UPDATE digest_runs", {}, Exception("server closed the connection unexpectedly"))

    monkeypatch.setattr(Repository, "mark_digest_posted", connection_lost)
    with pytest.raises(OperationalError):
        jobs.services.proposals.run()
    monkeypatch.undo()
    assert jobs.posts("C0ADMIN") == []

    run = jobs.services.proposals.run()
    assert run.skipped is None and len(run.proposals) == 1
    assert len(jobs.posts("C0ADMIN")) == 1


def test_the_jobs_on_the_reconcile_interval_take_turns() -> None:
    """reconcile, home_tabs and reclaims all run every interval, a third of one apart (not on one tick,
    where they all wait for SQLite's one write lock and so does a click landing then)."""
    import jobs as scheduled

    scheduler = BackgroundScheduler()
    scheduled.register(scheduler, make_jobs(policy_dict()).services, reconcile_seconds=30, sweep_seconds=600)
    firsts = {job.id: job.trigger.start_date for job in scheduler.get_jobs() if job.id in ("reconcile", "home_tabs", "reclaims")}
    assert all(job.trigger.interval.total_seconds() == 30 for job in scheduler.get_jobs() if job.id in firsts)
    gaps = sorted((start - firsts["reconcile"]).total_seconds() for start in firsts.values())
    assert gaps == pytest.approx([0, 10, 20], abs=0.5)
