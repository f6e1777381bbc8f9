"""The one place that wires everything: settings, database, cluster, Slack, services, Bolt app.

Nothing is built at import time; ``build_services`` and ``build_bolt_app`` are called by the CLI
(``run``, ``shell``, ``digest``) and by the tests with whatever adapters they need.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass

from slack_bolt import App
from slack_sdk import WebClient

from bot.adapters.db.database import Database
from bot.clock import Clock
from bot.domain.policy import Policy
from bot.services.access import Access
from bot.services.announce import Announcer
from bot.services.changes import ChangeApplier
from bot.services.ports import Directory, Notifier, QuotaCluster
from bot.services.queries import Queries
from bot.services.quota_sync import QuotaSync
from bot.services.reconcile import Reconciler
from bot.services.requests import RequestService


@dataclass(frozen=True)
class Services:
    policy: Policy
    database: Database
    cluster: QuotaCluster
    clock: Clock
    access: Access
    requests: RequestService
    queries: Queries
    reconciler: Reconciler
    sync: QuotaSync


def build_services(
    *,
    policy: Policy,
    database: Database,
    cluster: QuotaCluster,
    notifier: Notifier,
    directory: Directory,
    clock: Clock,
    retry_delays: tuple[float, ...] = (0.5, 2.0, 5.0),
    sleep: Callable[[float], None] | None = None,
) -> Services:
    access = Access(policy, directory)
    sync_options = {"sleep": sleep} if sleep is not None else {}
    sync = QuotaSync(policy=policy, cluster=cluster, database=database, clock=clock, retry_delays=retry_delays, **sync_options)
    announcer = Announcer(notifier=notifier, policy=policy, database=database)
    applier = ChangeApplier(policy=policy, database=database, sync=sync, announcer=announcer, clock=clock)
    requests = RequestService(
        policy=policy,
        database=database,
        cluster=cluster,
        access=access,
        sync=sync,
        applier=applier,
        announcer=announcer,
        clock=clock,
    )
    return Services(
        policy=policy,
        database=database,
        cluster=cluster,
        clock=clock,
        access=access,
        requests=requests,
        queries=Queries(policy=policy, database=database, cluster=cluster, access=access, clock=clock),
        reconciler=Reconciler(policy=policy, database=database, applier=applier, sync=sync, announcer=announcer, clock=clock),
        sync=sync,
    )


def build_bolt_app(*, services: Services, client: WebClient, signing_secret: str, executor: Executor) -> App:
    """The Bolt app with every listener registered. Token verification happens in ``run``, not here."""
    import handlers

    app = App(
        client=client,
        signing_secret=signing_secret,
        token_verification_enabled=False,
        listener_executor=executor,
        process_before_response=False,
    )
    handlers.register(app, services)
    return app
