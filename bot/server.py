"""``gpu-quota-bot run``: check the settings, wire the bot, serve Slack, run the jobs, stop cleanly.

``SLACK_MODE`` (default: Socket Mode when ``SLACK_APP_TOKEN`` is set, else HTTP) decides how Slack
reaches the bot. Socket Mode: one WebSocket kept open (``bot.adapters.slack.socket_mode``), no
public URL, and no Slack route over HTTP at all. HTTP mode: ``POST /slack/events`` on ``PORT``,
verified with the signing secret. Waitress serves ``/healthz``, ``/readyz`` and ``/metrics`` on
``PORT`` in both modes. The scheduled jobs run on the leader replica only (``bot.leadership``).
SIGTERM stops taking work, lets in-flight listeners and jobs finish, gives up the leadership, then
exits.
"""

from __future__ import annotations

import gc
import logging
import secrets
import signal
import sys
import threading
from typing import Any

from apscheduler.schedulers.background import BackgroundScheduler
from prometheus_client import REGISTRY
from sqlalchemy import text

import jobs
from bot.adapters.clusters import ClusterSet
from bot.adapters.db.database import Database
from bot.adapters.slack.http import WebApp
from bot.adapters.slack.notifier import slack_call
from bot.adapters.slack.socket_mode import SocketModeConnection, bolt_handler
from bot.bootstrap import (
    build_bolt_app,
    build_services,
    connect_cluster_metrics,
    connect_clusters,
    connect_inspection,
    connect_karmada,
    connect_mail,
    open_database,
    slack_client,
    slack_ports,
)
from bot.clock import SystemClock
from bot.domain.policy import Policy, load_policy
from bot.errors import GpuQuotaError
from bot.executor import TrackingExecutor
from bot.leadership import LeaderLoop, leadership_for
from bot.logs import configure_logging
from bot.observability import ClusterStates, OutboxBacklog, RequestStates, exposition
from bot.services.container import Services
from bot.settings import Settings, SettingsError, load_settings

log = logging.getLogger("bot.server")


def fail(message: str) -> int:
    print(f"gpu-quota-bot: {message}", file=sys.stderr)
    return 2


def serve() -> int:
    try:
        settings = load_settings()
    except SettingsError as error:
        return fail(str(error))
    problems = settings.runtime_problems()
    if len(problems) == 1:
        return fail(f"cannot start: {problems[0]}")
    if problems:
        return fail("cannot start:\n  " + "\n  ".join(problems))
    configure_logging(level=settings.log_level, fmt=settings.log_format)
    assert settings.gpu_quota_config is not None and settings.slack_bot_token is not None
    policy = load_policy(settings.gpu_quota_config)
    database = open_database(settings.database_url)
    try:
        cluster = connect_clusters(policy, settings.kubeconfig)
        federation = connect_karmada(policy, settings.kubeconfig)
    except GpuQuotaError as error:
        return fail(f"KUBECONFIG / in-cluster config: {error}")
    client = slack_client(settings.slack_bot_token.get_secret_value(), base_url=settings.slack_api_url)
    try:
        identity = slack_call("check SLACK_BOT_TOKEN", client.auth_test)
    except GpuQuotaError as error:
        return fail(f"SLACK_BOT_TOKEN / SLACK_API_URL: {error}")
    log.info("connected to Slack as %s in %s", identity.get("user_id"), identity.get("team"))
    if settings.mode == "socket":
        assert settings.slack_app_token is not None
        app_token = settings.slack_app_token.get_secret_value()
        try:
            slack_call("check SLACK_APP_TOKEN", lambda: client.apps_connections_open(app_token=app_token))
        except GpuQuotaError as error:
            return fail(f"SLACK_APP_TOKEN / SLACK_API_URL: {error}")

    metrics = connect_cluster_metrics(settings, policy)
    if metrics is None:
        log.warning(
            "PROMETHEUS_URL (or clusters.<name>.prometheus_url) is not set: no cost digests, budget warnings or idle-GPU nudges"
        )
    for problem in mail_warnings(settings, policy):
        log.warning("%s", problem)
    ports = slack_ports(client, policy)
    services = build_services(
        policy=policy,
        database=database,
        cluster=cluster,
        workloads=cluster,
        queues=cluster,
        federation=federation,
        inspection=connect_inspection(cluster),
        slack=ports,
        clock=SystemClock(),
        metrics=metrics,
        mailer=connect_mail(settings.smtp_server(), policy),
    )
    executor = TrackingExecutor()
    if settings.mode == "http":
        assert settings.slack_signing_secret is not None  # runtime_problems() refused it otherwise
        signing_secret = settings.slack_signing_secret.get_secret_value()
    else:
        # Socket Mode verifies nothing by signature and serves no Slack route; a random secret all
        # the same, so that no constant could ever sign a request this app accepts.
        signing_secret = secrets.token_hex(32)
    assert ports.languages is not None
    app = build_bolt_app(
        services=services, client=client, signing_secret=signing_secret, executor=executor, languages=ports.languages
    )
    scheduler = BackgroundScheduler(timezone="UTC")
    jobs.register(
        scheduler, services, reconcile_seconds=settings.reconcile_interval_seconds, sweep_seconds=settings.sweep_interval_seconds
    )
    leader = LeaderLoop(
        leadership_for(settings.database_url),
        on_gained=lambda: _lead(scheduler, services),
        on_lost=lambda: _pause(scheduler),
        interval=settings.leader_check_seconds,
    )
    REGISTRY.register(request_states := RequestStates(database))
    REGISTRY.register(outbox_backlog := OutboxBacklog(database, SystemClock()))
    REGISTRY.register(
        cluster_states := ClusterStates(lambda: [(policy.cluster_label(s.cluster), s.up) for s in cluster.states()])
    )

    stopping = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stopping.set())
    # What start-up made (modules, the app, the policy) lives as long as the process: frozen, the
    # collector stops scanning it, so its full collections stay short (they pause every thread).
    gc.collect()
    gc.freeze()
    scheduler.start(paused=True)
    leader.start()
    stop_http = _serve_http(settings, app, database, clusters=cluster)
    stop_socket = _connect_socket_mode(settings, app, client)
    log.info("gpu-quota-bot is running")
    stopping.wait()
    log.info("stopping: no new work; finishing in-flight requests and jobs")
    stop_socket()
    stop_http()
    _pause(scheduler)
    executor.shutdown(wait=True)
    scheduler.shutdown(wait=True)  # waits for a job that is running
    leader.stop()
    REGISTRY.unregister(request_states)
    REGISTRY.unregister(outbox_backlog)
    REGISTRY.unregister(cluster_states)
    database.dispose()
    log.info("stopped")
    return 0


def mail_warnings(settings: Settings, policy: Policy) -> list[str]:
    """What keeps the policy's mail from going out (none of it stops Slack being served), one line each."""
    listed = sorted(team.name for team in policy.teams.values() if team.budget is not None and team.budget.mail)
    if listed and settings.smtp_url is None:
        return [f"teams {', '.join(listed)} list budget.mail but SMTP_URL is not set: their budget mail is not sent"]
    return settings.mail_problems()


def _pause(scheduler: BackgroundScheduler) -> None:
    if scheduler.running:
        scheduler.pause()


def _lead(scheduler: BackgroundScheduler, services: Services) -> None:
    """A new leader resumes the jobs and catches up at once on a digest its predecessor may have missed."""
    scheduler.resume()
    if services.digest is not None:
        scheduler.add_job(
            jobs.run_job, args=["digest_catch_up", services.digest.run], id="digest_catch_up", replace_existing=True
        )


def _serve_http(settings: Settings, app: Any, database: Database, *, clusters: ClusterSet):  # type: ignore[no-untyped-def]
    """The HTTP server (waitress): /slack/events in HTTP mode only, and always /healthz, /readyz, /metrics.
    Ready while the database answers and any cluster does (one cluster down delays only its own changes)."""
    import waitress

    def ready() -> bool:
        with database.engine.connect() as connection:
            connection.execute(text("SELECT 1"))
        return any(state.up for state in clusters.states())

    http_mode = settings.mode == "http"
    web = WebApp(app if http_mode else None, ready=ready, metrics=exposition)
    server = waitress.create_server(web, host="0.0.0.0", port=settings.port, threads=8)
    threading.Thread(target=server.run, name="http", daemon=True).start()
    log.info("listening on port %s (%s)", settings.port, "POST /slack/events" if http_mode else "health and metrics only")
    return server.close


def _connect_socket_mode(settings: Settings, app: Any, client: Any):  # type: ignore[no-untyped-def]
    """Socket Mode (no public URL needed); returns the function that disconnects."""
    if settings.mode != "socket":
        return lambda: None
    assert settings.slack_app_token is not None
    connection = SocketModeConnection(
        settings.slack_app_token.get_secret_value(),
        web_client=client,
        handle=bolt_handler(app),
        ping_interval=settings.slack_socket_ping_seconds,
        pong_timeout=settings.slack_socket_ping_seconds,
    )
    if not connection.start(wait=10):
        log.warning("Socket Mode is not connected yet: still trying (see the lines above)")
    return connection.close
