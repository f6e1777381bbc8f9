"""Scheduled jobs: thin functions that call a service. ``register(scheduler, services, ...)`` adds them all.

Every job has an explicit id, ``replace_existing``, ``coalesce``, ``max_instances=1`` and a misfire
grace time, so a restart or a slow run never stacks up duplicate runs.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from apscheduler.schedulers.base import BaseScheduler

if TYPE_CHECKING:
    from bot.bootstrap import Services

log = logging.getLogger(__name__)
JOB_DEFAULTS = {"replace_existing": True, "coalesce": True, "max_instances": 1}


def register(scheduler: BaseScheduler, services: Services, *, reconcile_seconds: int, sweep_seconds: int) -> None:
    scheduler.add_job(
        reconcile, "interval", seconds=reconcile_seconds, id="reconcile", args=[services],
        misfire_grace_time=reconcile_seconds, **JOB_DEFAULTS,
    )
    scheduler.add_job(
        sweep, "interval", seconds=sweep_seconds, id="sweep", args=[services],
        misfire_grace_time=sweep_seconds, **JOB_DEFAULTS,
    )


def reconcile(services: Services) -> None:
    """Expiry, reminders, grant ends and retries: everything time-driven, from the database."""
    report = services.reconciler.tick()
    if report.errors:
        log.error("reconcile finished with errors: %s", "; ".join(report.errors))


def sweep(services: Services) -> None:
    """Converge every managed namespace (adopting hand edits, repairing lost writes)."""
    report = services.reconciler.sweep()
    if report.errors:
        log.error("sweep finished with errors: %s", "; ".join(report.errors))
