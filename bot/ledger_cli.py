"""``gpu-quota-bot ledger backfill`` and ``gpu-quota-bot cost export``: the cost ledger from the command line.

``ledger backfill --from DATE`` records (again) every finished day from DATE from Prometheus, for a
new install or after a long outage; days Prometheus no longer holds are recorded as "no data" (for each
cluster on its own; a cluster whose Prometheus does not answer keeps its days unrecorded: exit code 1).
``cost export --month YYYY-MM --format csv|json`` writes the month's ledger for finance, one row per
day x namespace x resource x GPU model, from the database alone. Every problem is one line and an exit code.
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
from bot.bootstrap import build_ledger, connect_cluster_metrics, open_database
from bot.clock import SystemClock
from bot.domain.policy import Policy, load_policy
from bot.errors import GpuQuotaError
from bot.services.ledger import day_ranges, export_rows
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
    backfill = actions.add_parser("backfill", help="record every finished day from --from on, from Prometheus")
    backfill.add_argument("--from", dest="first", type=date.fromisoformat, required=True, help="first day, YYYY-MM-DD")
    backfill.add_argument("--to", dest="last", type=date.fromisoformat, help="last day (default: yesterday)")


def add_cost_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", required=True)
    export = actions.add_parser("export", help="write a month of the ledger: one row per day x namespace x resource x GPU model")
    export.add_argument("--month", type=_month, required=True, help="YYYY-MM")
    export.add_argument("--format", choices=["csv", "json"], default="csv")
    export.add_argument("--output", type=Path, help="file to write (default: standard output)")


def run_ledger(args: argparse.Namespace) -> int:
    try:
        settings, policy = _setup()
        metrics = connect_cluster_metrics(settings, policy)
        if metrics is None:
            return _fail(
                "ledger backfill needs PROMETHEUS_URL or clusters.<name>.prometheus_url (it records what Prometheus holds)"
            )
        clock = SystemClock()
        yesterday = (clock.now().astimezone(policy.schedules.zone) - timedelta(days=1)).date()
        last = min(args.last or yesterday, yesterday)
        if args.first > last:
            return _fail(f"nothing to backfill: --from {args.first} is after {last}, the last finished day")
        ledger = build_ledger(policy=policy, metrics=metrics, database=_database(settings), clock=clock)
        days = [args.first + timedelta(days=i) for i in range((last - args.first).days + 1)]
        done = ledger.record(days)
    except _Problem as problem:
        return _fail(str(problem))
    except GpuQuotaError as error:
        return _fail(str(error), code=1)
    print(
        f"recorded {len(done.recorded)} days from {args.first} to {last}"
        + (f"; no metrics for {day_ranges(done.no_data)}" if done.no_data else "")
        + "".join(
            f"; no metrics for {policy.cluster_label(cluster)} on {day_ranges(days)}"
            for cluster, days in sorted(done.missing.items())
        )
    )
    for line in done.errors:  # a cluster whose metrics could not be read: its days stay unrecorded
        print(f"gpu-quota-bot: {line}", file=sys.stderr)
    return 1 if done.errors else 0


def run_cost(args: argparse.Namespace) -> int:
    try:
        settings, policy = _setup()
        ledger = build_ledger(policy=policy, metrics=None, database=_database(settings))
        rows = export_rows(ledger, args.month, currency=policy.pricing.currency)
    except _Problem as problem:
        return _fail(str(problem))
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
        raise _Problem("GPU_QUOTA_CONFIG is needed (the ledger follows your policy's teams and prices)")
    return settings, load_policy(settings.gpu_quota_config)


def _database(settings: Settings) -> Database:
    return open_database(settings.database_url)


def _month(text: str) -> date:
    try:
        return datetime.strptime(text, "%Y-%m").date()
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a month: use YYYY-MM") from None


def _fail(message: str, *, code: int = 2) -> int:
    print(f"gpu-quota-bot: {message}", file=sys.stderr)
    return code


class _Problem(GpuQuotaError):
    """A setting the command needs is missing or wrong (exit code 2)."""
