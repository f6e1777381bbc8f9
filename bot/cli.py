"""The ``gpu-quota-bot`` command: run, shell, digest, ledger, cost, db, check-config, doctor.

Every problem a person can fix (a setting, a file, a database that cannot be reached) ends as one
line on stderr and exit code 2, never a traceback; secrets in URLs are never shown.
The start-up checks every subcommand shares live in ``bot.startup_checks``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bot.domain.policy import PolicyError
from bot.errors import GpuQuotaError
from bot.startup_checks import SettingsProblem, check_database, load_cluster

SETTINGS_EXIT = 2


# The settings (environment variables) each command reads, listed in its --help.
SLACK = [
    ("SLACK_BOT_TOKEN", "bot token, xoxb-... (required)"),
    ("SLACK_MODE", "socket or http (default: socket when SLACK_APP_TOKEN is set, else http)"),
    ("SLACK_APP_TOKEN", "app-level token xapp-... (Socket Mode)"),
    ("SLACK_SOCKET_PING_SECONDS", "Socket Mode: ping interval; silent twice as long and the connection is replaced (default 2)"),
    ("SLACK_SIGNING_SECRET", "verifies Slack's HTTP requests (required in HTTP mode)"),
    ("SLACK_API_URL", "Slack Web API base URL (default https://slack.com/api/)"),
]
POLICY = [("GPU_QUOTA_CONFIG", "the policy file (required; see deploy/config.example.yaml)")]
DATABASE = [("DATABASE_URL", "SQLAlchemy URL, postgresql://... or sqlite:///... (default sqlite:///gpu-quota-bot.db)")]
KUBERNETES = [("KUBECONFIG", "kubeconfig path; without it ~/.kube/config, else the in-cluster config")]
PROMETHEUS = [
    ("PROMETHEUS_URL", "Prometheus for digests, budgets and idle nudges (none without it)"),
    ("PROMETHEUS_BEARER_TOKEN", "token for a Prometheus behind a proxy"),
    ("PROMETHEUS_USERNAME", "basic auth user, with PROMETHEUS_PASSWORD"),
    ("PROMETHEUS_PASSWORD", "basic auth password"),
    ("PROMETHEUS_CA_BUNDLE", "CA bundle file for an https Prometheus with a private CA"),
    ("PROMETHEUS_TIMEOUT_SECONDS", "per query (default 120)"),
]
MAIL = [
    ("SMTP_URL", "mail server for budget.mail: smtp://user@host:587 (STARTTLS), smtps://user@host:465"),
    ("SMTP_PASSWORD", "the password of SMTP_URL's user"),
    ("SMTP_CA_BUNDLE", "CA bundle file for a mail server with a private CA"),
]
SERVER = [
    ("PORT", "HTTP port: /slack/events (HTTP mode), /healthz, /readyz, /metrics (default 3000)"),
    ("LOG_LEVEL", "DEBUG, INFO, WARNING or ERROR (default INFO)"),
    ("LOG_FORMAT", "json or text (default json)"),
    ("RECONCILE_INTERVAL_SECONDS", "expiry, reminders, grant ends, retries (default 30)"),
    ("SWEEP_INTERVAL_SECONDS", "converge every managed namespace (default 600)"),
    ("LEADER_CHECK_SECONDS", "how often a replica checks or tries for the leadership (default 2)"),
]


def _settings_help(*groups: list[tuple[str, str]]) -> str:
    width = max(len(name) for group in groups for name, _ in group) + 2
    lines = [f"  {name:<{width}}{meaning}" for group in groups for name, meaning in group]
    return "settings (environment variables):\n" + "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gpu-quota-bot", description="ChatOps for GPU quota on a shared Kubernetes cluster.")
    commands = parser.add_subparsers(dest="command", required=True)

    commands.add_parser(
        "run",
        help="serve Slack (Socket Mode with SLACK_APP_TOKEN, else HTTP on PORT) and run the jobs",
        description="Serve Slack (Socket Mode with SLACK_APP_TOKEN, else HTTP on PORT) and run the scheduled jobs.",
        epilog=_settings_help(SLACK, POLICY, DATABASE, KUBERNETES, PROMETHEUS, MAIL, SERVER),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )

    shell = commands.add_parser("shell", help="try the bot in a terminal: sandbox Slack and cluster, no setup")
    shell.add_argument("--kubeconfig", type=Path, help="use a real cluster instead of the sandbox one")
    shell.add_argument("--database", help="database URL (default: a fresh SQLite file for this session)")
    shell.add_argument("--demo", action="store_true", help="play the README's story, then stop")
    shell.add_argument(
        "--lang",
        choices=["en", "zh-CN"],
        default="en",
        help="the shell's language and the sandbox's: its teams' and every person's Slack locale (default en)",
    )

    digest = commands.add_parser("digest", help="the daily GPU cost digest: --print it here or --post it to Slack")
    from bot.digest_cli import add_arguments

    add_arguments(digest)

    from bot.ledger_cli import add_cost_arguments, add_ledger_arguments

    add_ledger_arguments(commands.add_parser("ledger", help="the cost ledger: backfill it from Prometheus"))
    add_cost_arguments(commands.add_parser("cost", help="GPU cost from the ledger: export a month as CSV or JSON"))

    check_config = commands.add_parser(
        "check-config",
        help="check the settings and the policy, and that what it names exists",
        description="Check the settings and the policy, and that the namespaces, Slack users, groups and channels it "
        "names exist; one line per problem.",
        epilog=_settings_help(SLACK, POLICY, DATABASE, KUBERNETES, PROMETHEUS, MAIL),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    check_config.add_argument(
        "--smtp-login", action="store_true", help="also log in to SMTP_URL's mail server (then quit: no mail is sent)"
    )

    from bot.doctor_cli import add_arguments as add_doctor_arguments

    add_doctor_arguments(
        commands.add_parser(
            "doctor",
            help="the GPU stack's checklist: device plugin, GPU nodes, MIG, exporters, quotas (exit 1 when broken)",
            description="Check the GPU stack: the device plugin on every GPU node, GPUs in allocatable, MIG states, the DCGM "
            "exporter and kube-state-metrics scraped, the PriorityClasses and quota objects the policy names, GPU pods "
            "without limits; one line per check. Exit 1 when something is broken, 2 for a settings problem.",
            epilog=_settings_help(POLICY, KUBERNETES, PROMETHEUS),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
    )

    database = commands.add_parser(
        "db",
        help="database schema",
        description="upgrade: apply the migrations (run also does at start-up). current: the schema's revision.",
        epilog=_settings_help(DATABASE),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    database.add_argument("action", choices=["upgrade", "current"])

    args = parser.parse_args(argv)
    try:
        if args.command == "run":
            from bot.server import serve

            _check_run_settings()
            return serve()
        if args.command == "shell":
            return _shell(args)
        if args.command == "db":
            return _db(args.action)
        if args.command == "check-config":
            from bot.check_config import run as check

            return check(smtp_login=args.smtp_login)
        if args.command == "doctor":
            from bot.doctor_cli import run as doctor

            return doctor(args)
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
        return SETTINGS_EXIT
    except GpuQuotaError as error:  # a system the command needs said no; its message is safe to show
        print(f"gpu-quota-bot: {error}", file=sys.stderr)
        return 1
    return 1


def _shell(args: argparse.Namespace) -> int:
    import logging

    from bot.clock import ShiftedClock
    from bot.domain.languages import Language
    from bot.logs import configure_logging
    from bot.sandbox.history import HistoryMetrics, sandbox_history
    from bot.sandbox.session import Sandbox
    from bot.sandbox.world import SLACK_LOCALES, sandbox_policy
    from bot.shell import Shell, demo_script

    if args.kubeconfig is not None:
        load_cluster(args.kubeconfig, setting="--kubeconfig")
    if args.database is not None:
        check_database(args.database, setting="--database")
    configure_logging(level="WARNING", fmt="text")
    logging.getLogger("bot").setLevel(logging.ERROR)
    logging.getLogger("urllib3").setLevel(logging.ERROR)  # its retries of a cluster that is `down`: the bot says what it means
    clock = ShiftedClock()
    history = sandbox_history(clock.now())  # the shell's `idle` command changes it
    # The sandbox's own clusters are two (eu-1 and us-2); a real kubeconfig is governed as one cluster.
    language = Language(args.lang)
    policy = sandbox_policy(two_clusters=args.kubeconfig is None, language=language)
    sandbox = Sandbox(
        policy=policy,
        kubeconfig=args.kubeconfig,
        database_url=args.database,
        clock=clock,
        metrics=HistoryMetrics(history),
        locale=SLACK_LOCALES[language],
    )
    sandbox.start()
    try:
        shell = Shell(sandbox, echo=not sys.stdin.isatty(), history=history, language=language)
        shell.run(demo_script(language) if args.demo else None)
    finally:
        sandbox.stop()
    return 0


def _check_run_settings() -> None:
    """Before ``run`` logs or migrates anything: a bad DATABASE_URL or kubeconfig is one line.

    The other settings are checked and reported by ``serve`` itself.
    """
    from bot.settings import SettingsError, load_settings

    try:
        settings = load_settings()
    except SettingsError:
        return
    if settings.runtime_problems():
        return  # ``serve`` names every missing setting at once
    check_database(settings.database_url)
    load_cluster(settings.kubeconfig)


def _db(action: str) -> int:
    from bot.adapters.db.migrate import current_revision, head_revision, upgrade
    from bot.settings import SettingsError, load_settings

    try:
        settings = load_settings()
    except SettingsError as error:
        raise SettingsProblem(str(error)) from None
    check_database(settings.database_url)
    if action == "upgrade":
        upgrade(settings.database_url)
        print(f"database schema at {head_revision()}")
    else:
        print(current_revision(settings.database_url) or "empty (run: gpu-quota-bot db upgrade)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
