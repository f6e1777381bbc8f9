"""``gpu-quota-bot digest``: render the cost digest in the terminal (``--print``) or post it (``--post``).

With ``--print`` and no ``PROMETHEUS_URL`` it reads the sandbox's synthetic month of GPU use, and
without ``GPU_QUOTA_CONFIG`` the sandbox policy: a newcomer sees a real-looking digest with no setup.
``--post`` never does: invented figures must not reach Slack, nor mark a real day as posted.
Every problem (a day not over yet, a day Prometheus holds nothing for, Prometheus down) is one line
and an exit code. Each team's digest is in the team's language (``language`` in the policy), the
organisation's summary and the command's own lines in the policy's.
"""

from __future__ import annotations

import argparse
import sys
from datetime import date, timedelta
from pathlib import Path

from bot.adapters.db.database import Database
from bot.adapters.i18n import format_day, speaking, tr
from bot.adapters.slack.blocks import report_blocks
from bot.adapters.slack.reports import Report, digest_report
from bot.adapters.slack.resource_words import listed
from bot.bootstrap import build_digest, connect_cluster_metrics, open_database, scratch_database, slack_client, slack_ports
from bot.clock import SystemClock
from bot.domain.languages import Language
from bot.domain.policy import Policy, load_policy
from bot.errors import GpuQuotaError, UserError
from bot.sandbox.history import HistoryMetrics, sandbox_history
from bot.sandbox.render import TextRenderer
from bot.sandbox.world import CHANNELS, PEOPLE, sandbox_policy
from bot.services.digest import ORG, NoMetrics
from bot.services.ledger import answered
from bot.services.ports import MetricsSource
from bot.services.reports import Digest
from bot.settings import Settings, SettingsError, load_settings


def add_arguments(parser: argparse.ArgumentParser) -> None:
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--print", action="store_true", help=tr("render to the terminal and write the charts; post nothing"))
    mode.add_argument("--post", action="store_true", help=tr("post to Slack (SLACK_BOT_TOKEN needed)"))
    parser.add_argument("--date", type=date.fromisoformat, help=tr("the day to report on (default: yesterday)"))
    parser.add_argument("--team", help=tr("one team only (default: every team and the organisation summary)"))
    parser.add_argument(
        "--chart-dir", type=Path, default=Path("."), help=tr("where {flag} writes the PNG charts", flag="--print")
    )


def run(args: argparse.Namespace) -> int:
    try:
        settings = load_settings()
    except SettingsError as error:
        print(f"gpu-quota-bot: {error}", file=sys.stderr)
        return 2
    policy = load_policy(settings.gpu_quota_config) if settings.gpu_quota_config else sandbox_policy()
    with speaking(policy.language):
        return _run(args, settings, policy)


def _run(args: argparse.Namespace, settings: Settings, policy: Policy) -> int:
    clock = SystemClock()
    metrics: MetricsSource | None = connect_cluster_metrics(settings, policy)
    if args.post and (metrics is None or not settings.gpu_quota_config):
        missing = [
            n for n, v in (("PROMETHEUS_URL", metrics is not None), ("GPU_QUOTA_CONFIG", settings.gpu_quota_config)) if not v
        ]
        needs = tr(
            "{command} needs {settings} (the sandbox's synthetic figures are for {flag} only)",
            command="digest --post",
            settings=listed(missing),
            flag="--print",
        )
        print(f"gpu-quota-bot: {needs}", file=sys.stderr)
        return 2
    notes = []
    if metrics is None:
        metrics = HistoryMetrics(sandbox_history(clock.now()), idle_threshold=policy.metrics.idle_threshold_percent / 100)
        notes.append(tr("SANDBOX metrics: a synthetic month of GPU use. Set PROMETHEUS_URL to read your Prometheus."))
    if settings.gpu_quota_config is None:
        notes.append(tr("SANDBOX policy. Set GPU_QUOTA_CONFIG to use yours."))
    day = args.date or (clock.now().astimezone(policy.schedules.zone) - timedelta(days=1)).date()
    if args.team and args.team not in policy.teams:
        no_team = tr("no team {team} in the policy (teams: {teams})", team=repr(args.team), teams=listed(list(policy.teams)))
        print(f"gpu-quota-bot: {no_team}", file=sys.stderr)
        return 2
    try:
        if args.post:
            return _post(settings, policy, metrics, day, args.team)
        return _print(settings, policy, metrics, day, args.team, args.chart_dir, notes)
    except GpuQuotaError as error:
        print(f"gpu-quota-bot: {error}", file=sys.stderr)
        # 2: the command asked for something impossible; 1: the metrics could not give what it asked
        return 2 if isinstance(error, UserError) and not isinstance(error, NoMetrics) else 1


def _print(
    settings: Settings, policy: Policy, metrics: MetricsSource, day: date, team: str | None, chart_dir: Path, notes: list[str]
) -> int:
    service = build_digest(
        policy=policy, metrics=metrics, database=_database(settings, sandbox=settings.gpu_quota_config is None)
    )
    unavailable: dict[str, str] = {}
    digest = answered(lambda: service.build(day), unavailable)
    for note in notes:
        print(f"# {note}")
    # Each digest in the language of the channel it would be posted in: the team's, the policy's for the summary.
    digests: list[tuple[Language, Digest]] = [
        (policy.language_of(t.team), t) for t in digest.teams if team in (None, t.team.name)
    ]
    if team is None:
        digests.append((policy.language, digest))
    renderer = TextRenderer(users={p.user_id: p.name for p in PEOPLE}, channels=dict(CHANNELS))
    chart_dir.mkdir(parents=True, exist_ok=True)
    for language, one in digests:
        with speaking(language):
            _print_report(digest_report(one), renderer, chart_dir)
    return _unread(unavailable)


def _unread(unavailable: dict[str, str]) -> int:
    """The clusters whose days could not be read (the digest said they are not counted): a line each, exit 1."""
    for why in sorted(set(unavailable.values())):
        print(f"gpu-quota-bot: {why}", file=sys.stderr)
    return 1 if unavailable else 0


def _print_report(report: Report, renderer: TextRenderer, chart_dir: Path) -> None:
    print()
    for line in renderer.blocks(report_blocks(report), lambda _: 0):
        print(line)
    if report.attachment is not None:
        path = chart_dir / report.attachment.filename
        path.write_bytes(report.attachment.content)
        chart = tr("chart: {path}", path=path)
        print(f"  [{chart}]")


def _post(settings: Settings, policy: Policy, metrics: MetricsSource, day: date, team: str | None) -> int:
    if settings.slack_bot_token is None:
        problem = tr("SLACK_BOT_TOKEN is needed to post")
        print(f"gpu-quota-bot: {problem}", file=sys.stderr)
        return 2
    client = slack_client(settings.slack_bot_token.get_secret_value(), base_url=settings.slack_api_url)
    service = build_digest(
        policy=policy, metrics=metrics, database=_database(settings, sandbox=False), notifier=slack_ports(client, policy).notifier
    )
    unavailable: dict[str, str] = {}
    posted = answered(lambda: service.publish(day, teams=[team] if team else None), unavailable)
    if posted:
        scopes = listed([tr("the organisation summary") if scope == ORG else scope for scope in posted])
        print(tr("posted the digests of {day}: {scopes}", day=format_day(day), scopes=scopes))
    else:
        print(tr("posted the digests of {day}: nothing new (already posted)", day=format_day(day)))
    return _unread(unavailable)


def _database(settings: Settings, *, sandbox: bool) -> Database:
    """The bot's database (for the grants ending soon and the posted-digest records), or an empty one."""
    return scratch_database() if sandbox else open_database(settings.database_url)
