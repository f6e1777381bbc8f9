"""The ``gpu-quota-bot`` command: run, shell, db, check-config."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bot.domain.policy import PolicyError


class SettingsProblem(Exception):
    """A setting the command needs is wrong; the message names it."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gpu-quota-bot", description="ChatOps for GPU quota on a shared Kubernetes cluster.")
    commands = parser.add_subparsers(dest="command", required=True)

    commands.add_parser("run", help="serve Slack (Socket Mode with SLACK_APP_TOKEN, else HTTP on PORT) and run the jobs")

    shell = commands.add_parser("shell", help="try the bot in a terminal: sandbox Slack and cluster, no setup")
    shell.add_argument("--kubeconfig", type=Path, help="use a real cluster instead of the sandbox one")
    shell.add_argument("--database", help="database URL (default: a fresh SQLite file for this session)")
    shell.add_argument("--demo", action="store_true", help="play the README's story, then stop")

    digest = commands.add_parser("digest", help="the daily GPU cost digest: --print it here or --post it to Slack")
    from bot.digest_cli import add_arguments

    add_arguments(digest)

    from bot.ledger_cli import add_cost_arguments, add_ledger_arguments

    add_ledger_arguments(commands.add_parser("ledger", help="the cost ledger: backfill it from Prometheus"))
    add_cost_arguments(commands.add_parser("cost", help="GPU cost from the ledger: export a month as CSV or JSON"))

    commands.add_parser("check-config", help="check the settings and the policy, and that what it names exists")

    database = commands.add_parser("db", help="database schema")
    database.add_argument("action", choices=["upgrade", "current"])

    args = parser.parse_args(argv)
    try:
        if args.command == "run":
            from bot.server import serve

            return serve()
        if args.command == "shell":
            return _shell(args)
        if args.command == "db":
            return _db(args.action)
        if args.command == "check-config":
            from bot.check_config import run as check

            return check()
        if args.command == "digest":
            from bot.digest_cli import run

            return run(args)
        if args.command == "ledger":
            from bot.ledger_cli import run_ledger

            return run_ledger(args)
        if args.command == "cost":
            from bot.ledger_cli import run_cost

            return run_cost(args)
    except (PolicyError, SettingsProblem) as error:
        print(f"gpu-quota-bot: {error}", file=sys.stderr)
        return 2
    return 1


def _shell(args: argparse.Namespace) -> int:
    import logging

    from bot.logs import configure_logging
    from bot.sandbox.session import Sandbox
    from bot.shell import DEMO, Shell

    configure_logging(level="WARNING", fmt="text")
    logging.getLogger("bot").setLevel(logging.ERROR)
    sandbox = Sandbox(kubeconfig=args.kubeconfig, database_url=args.database).start()
    try:
        Shell(sandbox, echo=not sys.stdin.isatty()).run(DEMO if args.demo else None)
    finally:
        sandbox.stop()
    return 0


def _db(action: str) -> int:
    from bot.adapters.db.migrate import current_revision, head_revision, upgrade
    from bot.settings import SettingsError, load_settings

    try:
        settings = load_settings()
    except SettingsError as error:
        raise SettingsProblem(str(error)) from None
    if action == "upgrade":
        upgrade(settings.database_url)
        print(f"database schema at {head_revision()}")
    else:
        print(current_revision(settings.database_url) or "empty (run: gpu-quota-bot db upgrade)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
