"""Scheduled jobs: thin functions that call a service. ``register(scheduler, services, ...)`` adds them all.

Every job has an explicit id, ``replace_existing``, ``coalesce``, ``max_instances=1`` and a misfire
grace time, so a restart or a slow run never stacks up duplicate runs. The metric jobs run on the
policy's cron expressions in its time zone, and only when a metrics source is configured.

A job whose data source failed raises the bot's own error: that is a failed run (``outcome="error"``,
no ``last_success``), logged in one line, so the "job failing" and "job stale" alerts can fire.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

from apscheduler.schedulers.base import BaseScheduler
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger

from bot.errors import GpuQuotaError
from bot.observability import JOB_LAST_SUCCESS, JOB_RUNS, JOB_SECONDS, timed

if TYPE_CHECKING:
    from bot.services.container import Services

log = logging.getLogger(__name__)


def register(scheduler: BaseScheduler, services: Services, *, reconcile_seconds: int, sweep_seconds: int) -> list[str]:
    """Add every job; returns their ids."""
    schedules = services.policy.schedules
    zone = schedules.zone
    jobs: list[tuple[str, Any, Callable[[], object], int]] = [
        ("reconcile", every(reconcile_seconds, turn=0, of=3), services.reconciler.tick, reconcile_seconds),
        ("sweep", IntervalTrigger(seconds=sweep_seconds), services.reconciler.sweep, sweep_seconds),
        ("home_tabs", every(reconcile_seconds, turn=1, of=3), services.home.refresh_changed, reconcile_seconds),
        ("reclaims", every(reconcile_seconds, turn=2, of=3), services.reclaims.check, reconcile_seconds),
        ("blocked_workloads", CronTrigger.from_crontab(schedules.blocked_workloads, timezone=zone), services.blocked.check, 300),
    ]
    if services.ledger is not None:  # built with a metrics source only
        jobs.append(("ledger", CronTrigger.from_crontab(schedules.ledger, timezone=zone), services.ledger.run, 6 * 3600))
    if services.digest is not None:
        jobs.append(("digest", CronTrigger.from_crontab(schedules.digest, timezone=zone), services.digest.run, 6 * 3600))
    if services.budget is not None:
        jobs.append(
            ("budget_warnings", CronTrigger.from_crontab(schedules.budget_warnings, timezone=zone), services.budget.check, 1800)
        )
    if services.monthly_close is not None:  # with SMTP_URL only: the close goes by mail
        jobs.append(
            (
                "monthly_close",
                CronTrigger.from_crontab(schedules.monthly_close, timezone=zone),
                services.monthly_close.run,
                6 * 3600,
            )
        )
    if services.idle is not None:
        jobs.append(("idle_nudges", CronTrigger.from_crontab(schedules.idle_nudges, timezone=zone), services.idle.check, 900))
    if services.proposals is not None and schedules.proposals:  # off unless the policy sets it
        jobs.append(("proposals", CronTrigger.from_crontab(schedules.proposals, timezone=zone), services.proposals.run, 6 * 3600))
    if services.doctor is not None and schedules.doctor:  # off unless the policy sets it
        jobs.append(("doctor", CronTrigger.from_crontab(schedules.doctor, timezone=zone), services.doctor.weekly, 6 * 3600))
    for job_id, trigger, work, grace in jobs:
        scheduler.add_job(
            run_job,
            trigger,
            id=job_id,
            name=job_id,
            args=[job_id, work],
            replace_existing=True,
            coalesce=True,
            max_instances=1,
            misfire_grace_time=grace,
        )
    return [job_id for job_id, *_ in jobs]


def every(seconds: int, *, turn: int, of: int) -> IntervalTrigger:
    """Every ``seconds``, starting ``turn``/``of`` of an interval after the first: jobs on one interval take
    turns instead of all asking for the database's write lock (SQLite's one writer) on the same tick."""
    first = datetime.now(timezone.utc) + timedelta(seconds=seconds * (1 + turn / of))
    return IntervalTrigger(seconds=seconds, start_date=first)


def run_job(job_id: str, work: Callable[[], object]) -> None:
    """Run one job; a crash is logged with its traceback and never kills the scheduler."""
    try:
        with timed(JOB_SECONDS, task=job_id):
            result = work()
    except GpuQuotaError as error:  # a known failure (Prometheus down, no metrics): its sentence says it all
        log.error("job %s failed: %s", job_id, error)
        JOB_RUNS.labels(task=job_id, outcome="error").inc()
        return
    except Exception:
        log.exception("job %s failed", job_id)
        JOB_RUNS.labels(task=job_id, outcome="error").inc()
        return
    errors = getattr(result, "errors", None)
    JOB_RUNS.labels(task=job_id, outcome="error" if errors else "ok").inc()
    if not errors:
        JOB_LAST_SUCCESS.labels(task=job_id).set_to_current_time()
    log.info("job %s done: %s", job_id, _summary(result))


def _summary(result: object) -> str:
    errors = getattr(result, "errors", None)
    if errors:
        return "errors: " + "; ".join(errors)
    return repr(result)[:300]
