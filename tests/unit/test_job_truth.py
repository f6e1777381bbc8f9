"""The digest, budget and idle jobs tell the truth: finished days only, failed sources are failed runs,
run-out dates only when they mean something (issue 8, items 7, 8 and 9)."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

import pytest
from prometheus_client import REGISTRY

from bot.adapters.db.models import DigestRun
from bot.clock import ManualClock
from bot.errors import UserError
from jobs import run_job
from tests.unit.test_jobs import Jobs, make_jobs, policy_dict

UTC = timezone.utc


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


@pytest.fixture
def jobs() -> Jobs:
    return make_jobs(policy_dict())


@pytest.mark.parametrize("day", [date(2026, 11, 10), date(2026, 11, 11), date(2027, 3, 1)])
def test_a_digest_is_only_for_a_finished_day(jobs: Jobs, day: date) -> None:
    with pytest.raises(UserError, match="only for finished days"):
        jobs.services.digest.publish(day)
    assert jobs.notifier.of("report") == []


def test_a_day_before_the_metrics_begin_is_no_metrics_not_zero(jobs: Jobs) -> None:
    with pytest.raises(UserError, match="no metrics for Sat 31 Oct 2026"):
        jobs.services.digest.publish(date(2026, 10, 31))
    assert jobs.notifier.of("report") == []


def test_a_wrongly_posted_future_day_does_not_stop_the_schedule(jobs: Jobs) -> None:
    # A digest posted for 25 Dec by an older version, or by hand.
    jobs.database.run(
        lambda repo: repo.session.add(DigestRun(scope="*", day=date(2026, 12, 25), status="posted", claimed_at=jobs.clock.now()))
    )
    assert [day for day, _ in jobs.services.digest.run()] == [date(2026, 11, 9)]


@pytest.mark.parametrize("job", ["digest", "budget", "idle"])
def test_a_job_whose_metrics_failed_is_a_failed_run(jobs: Jobs, job: str) -> None:
    jobs.metrics.up = False
    work = {"digest": jobs.services.digest.run, "budget": jobs.services.budget.check, "idle": jobs.services.idle.check}[job]
    name = f"truth_{job}"
    run_job(name, work)
    assert sample("gpu_quota_job_runs_total", task=name, outcome="error") == 1
    assert sample("gpu_quota_job_runs_total", task=name, outcome="ok") == 0
    assert REGISTRY.get_sample_value("gpu_quota_job_last_success_timestamp_seconds", {"task": name}) is None
    jobs.metrics.up = True
    run_job(name, work)
    assert sample("gpu_quota_job_runs_total", task=name, outcome="ok") == 1


def test_no_run_out_date_beyond_this_month() -> None:
    # Nov 28 09:00: 27 x 96 + 9 x 4 = 2,628 of 3,000 (88 %); at this burn the budget would last into December.
    late = make_jobs(policy_dict(budget={"monthly": 3000}), clock=ManualClock(datetime(2026, 11, 28, 9, tzinfo=UTC)))
    assert late.services.budget.check() == [("frontier", "50"), ("frontier", "80")]
    warning = late.posts("C0FRONTIER")[-1]
    assert "88% of its monthly GPU budget" in warning and "runs out" not in warning


def test_over_budget_says_since_when_not_runs_out_now(jobs: Jobs) -> None:
    jobs.clock.advance(timedelta(days=2))  # Nov 12 09:00: 1,092 spent; 1,000 was passed during Nov 11 (960 + 96)
    assert ("frontier", "100") in jobs.services.budget.check()
    warning = jobs.posts("C0FRONTIER")[-1]
    assert "over budget since Wed 11 Nov" in warning and "runs out" not in warning


def test_the_digest_shows_no_run_out_time_already_past(jobs: Jobs) -> None:
    jobs.clock.advance(timedelta(days=10))  # Nov 20; the digest of Nov 9 is posted late
    jobs.services.digest.publish(date(2026, 11, 9), org=False)
    frontier = next(s.report for s in jobs.notifier.of("report") if "frontier" in s.report.title)
    assert "86% of the 1,000.00 USD budget" in frontier.summary and "runs out" not in frontier.summary


def test_the_digest_of_an_over_budget_day_says_since_when(jobs: Jobs) -> None:
    jobs.clock.advance(timedelta(days=3))  # Nov 13; the digest of Nov 12
    jobs.services.digest.publish(date(2026, 11, 12), org=False)
    frontier = next(s.report for s in jobs.notifier.of("report") if "frontier" in s.report.title)
    assert "over budget since Nov 11." in frontier.summary and "runs out" not in frontier.summary


def test_the_idle_nudge_prices_idle_hours_at_the_model_price(jobs: Jobs) -> None:
    assert jobs.services.ledger is not None
    jobs.services.ledger.catch_up(date(2026, 11, 9))  # the ledger knows biz-model-serving runs on H100s (4.00 an hour)
    assert jobs.services.idle.check() == ["biz-model-serving"]
    nudge = next(s for s in jobs.notifier.of("post") if s.target == "C0BIZ")
    assert "about 24 idle GPU-hours, 96.00 USD" in nudge.text  # 4 GPUs x 6 h x 4.00, not the default 1.00
