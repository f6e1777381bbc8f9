"""``gpu-quota-bot ledger backfill`` and ``gpu-quota-bot cost export``: the cost ledger from the command line.

``ledger backfill --from DATE`` records (again) every finished day from DATE from Prometheus, for a
new install or after a long outage; days Prometheus no longer holds are recorded as "no data" (for each
cluster on its own; a cluster whose Prometheus does not answer keeps its days unrecorded: exit code 1).
``cost export --month YYYY-MM --format csv|json`` writes the month's ledger for finance, one row per
day x namespace x resource x GPU model, from the database alone. Every problem is one line and an exit code.
The lines are in the policy's language (``language``); the export's columns and values are data, never translated.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import TextIO

from bot.adapters.db.database import Database
from bot.adapters.i18n import format_day, speaking, tr, tr_n
from bot.adapters.slack.resource_words import day_ranges
from bot.bootstrap import build_ledger, connect_cluster_metrics, open_database
from bot.clock import SystemClock
from bot.domain.policy import Policy, load_policy
from bot.errors import GpuQuotaError
from bot.services.ledger import Recorded, export_rows
from bot.settings import Settings, SettingsError, load_settings

EXPORT_FIELDS = (
    "day",
    "namespace",
    "team",
    "cost_center",
    "gpu_model",
    "gpu_hours",
    "idle_gpu_hours",
    "utilisation",
    "price_per_gpu_hour",
    "cost",
    "idle_cost",
    "currency",
    "resource",  # added in 2026-12: the columns before it keep their names and order
    "cluster",  # added in #21: the namespace's cluster as the policy names it
    "capacity_type",  # added in #25: spot or on-demand (nodes of unknown capacity type: on-demand)
    "pool",  # added last (#25): the pool the policy priced the row in (pricing.pools), "" for none
)


def add_ledger_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", required=True)
    backfill = actions.add_parser("backfill", help=tr("record every finished day from {flag} on, from Prometheus", flag="--from"))
    backfill.add_argument("--from", dest="first", type=date.fromisoformat, required=True, help=tr("first day, YYYY-MM-DD"))
    backfill.add_argument("--to", dest="last", type=date.fromisoformat, help=tr("last day (default: yesterday)"))


def add_cost_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", required=True)
    export = actions.add_parser(
        "export", help=tr("write a month of the ledger: one row per day x namespace x resource x GPU model")
    )
    export.add_argument("--month", type=_month, required=True, help="YYYY-MM")
    export.add_argument("--format", choices=["csv", "json"], default="csv")
    export.add_argument("--output", type=Path, help=tr("file to write (default: standard output)"))


def run_ledger(args: argparse.Namespace) -> int:
    try:
        settings, policy = _setup()
    except _Problem as problem:
        return _fail(str(problem))
    except GpuQuotaError as error:
        return _fail(str(error), code=1)
    with speaking(policy.language):
        return _backfill(args, settings, policy)


def _backfill(args: argparse.Namespace, settings: Settings, policy: Policy) -> int:
    try:
        metrics = connect_cluster_metrics(settings, policy)
        if metrics is None:
            return _fail(
                tr(
                    "{command} needs {setting} or {other} (it records what Prometheus holds)",
                    command="ledger backfill",
                    setting="PROMETHEUS_URL",
                    other="clusters.<name>.prometheus_url",
                )
            )
        clock = SystemClock()
        yesterday = (clock.now().astimezone(policy.schedules.zone) - timedelta(days=1)).date()
        last = min(args.last or yesterday, yesterday)
        if args.first > last:
            return _fail(
                tr(
                    "nothing to backfill: {flag} {first} is after {last}, the last finished day",
                    flag="--from",
                    first=format_day(args.first),
                    last=format_day(last),
                )
            )
        ledger = build_ledger(policy=policy, metrics=metrics, database=_database(settings), clock=clock)
        days = [args.first + timedelta(days=i) for i in range((last - args.first).days + 1)]
        done = ledger.record(days)
    except GpuQuotaError as error:
        return _fail(str(error), code=1)
    for line in _recorded_lines(done, args.first, last, policy):
        print(line)
    for line in done.errors:  # a cluster whose metrics could not be read: its days stay unrecorded
        print(f"gpu-quota-bot: {line}", file=sys.stderr)
    return 1 if done.errors else 0


def _recorded_lines(done: Recorded, first: date, last: date, policy: Policy) -> list[str]:
    """What a backfill recorded: a line of the days, then a line per cluster that held nothing of some of them."""
    values = {"first": format_day(first), "last": format_day(last)}
    if done.no_data:
        head = tr_n(
            "recorded {count} day from {first} to {last}; no metrics for {days}",
            "recorded {count} days from {first} to {last}; no metrics for {days}",
            len(done.recorded),
            **values,
            days=day_ranges(done.no_data),
        )
    else:
        head = tr_n(
            "recorded {count} day from {first} to {last}",
            "recorded {count} days from {first} to {last}",
            len(done.recorded),
            **values,
        )
    return [head] + [
        tr("no metrics for {cluster} on {days}", cluster=policy.cluster_label(cluster), days=day_ranges(days))
        for cluster, days in sorted(done.missing.items())
    ]


def run_cost(args: argparse.Namespace) -> int:
    try:
        settings, policy = _setup()
    except _Problem as problem:
        return _fail(str(problem))
    except GpuQuotaError as error:
        return _fail(str(error), code=1)
    with speaking(policy.language):
        return _export(args, settings, policy)


def _export(args: argparse.Namespace, settings: Settings, policy: Policy) -> int:
    try:
        ledger = build_ledger(policy=policy, metrics=None, database=_database(settings))
        rows = export_rows(ledger, args.month, currency=policy.pricing.currency)
    except GpuQuotaError as error:
        return _fail(str(error), code=1)
    if args.output:
        with args.output.open("w", encoding="utf-8", newline="") as out:
            _write(rows, args.format, out)
    else:
        _write(rows, args.format, sys.stdout)
    return 0


def _write(rows: list[dict[str, object]], fmt: str, out: TextIO) -> None:
    if fmt == "json":
        json.dump(rows, out, indent=1)
        out.write("\n")
        return
    writer = csv.DictWriter(out, fieldnames=EXPORT_FIELDS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)


def _setup() -> tuple[Settings, Policy]:
    try:
        settings = load_settings()
    except SettingsError as error:
        raise _Problem(str(error)) from None
    if not settings.gpu_quota_config:
        raise _Problem(tr("GPU_QUOTA_CONFIG is needed (the ledger follows your policy's teams and prices)"))
    return settings, load_policy(settings.gpu_quota_config)


def _database(settings: Settings) -> Database:
    return open_database(settings.database_url)


def _month(text: str) -> date:
    try:
        return datetime.strptime(text, "%Y-%m").date()
    except ValueError:
        raise argparse.ArgumentTypeError(tr("{text} is not a month: use YYYY-MM", text=repr(text))) from None


def _fail(message: str, *, code: int = 2) -> int:
    print(f"gpu-quota-bot: {message}", file=sys.stderr)
    return code


class _Problem(GpuQuotaError):
    """A setting the command needs is missing or wrong (exit code 2)."""
