"""The one place that wires everything: settings, database, cluster, Slack, services, Bolt app.

Every adapter is built here (``open_database``, ``connect_cluster``, ``connect_inspection``, ``connect_cluster_metrics``,
``slack_client`` and ``slack_ports``), and every service (``build_services``, ``build_digest``,
``build_ledger``): ``run``, the shell, ``digest``, ``ledger``, ``cost`` and ``check-config`` use these,
and so do the tests, with whatever adapters they need. It builds the ``Services`` container
(``bot.services.container``) that handlers and jobs receive; they never import this module.
Nothing is built at import time.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from slack_bolt import App

from bot.adapters.clusters import ClusterSet
from bot.adapters.db.database import Database
from bot.adapters.db.migrate import upgrade_if_behind
from bot.adapters.db.models import Base
from bot.adapters.i18n import in_english
from bot.adapters.inspect import ClusterInspector
from bot.adapters.inspect_clusters import ClusterInspections
from bot.adapters.karmada import KarmadaPlane
from bot.adapters.kube import KubernetesCluster
from bot.adapters.kueue import KueueCluster
from bot.adapters.mail.smtp import SmtpMailer
from bot.adapters.mail.url import SmtpServer
from bot.adapters.metrics_clusters import ClusterMetrics
from bot.adapters.prometheus import ClusterLabels, PrometheusMetrics
from bot.adapters.slack.home import SlackHomeTabs
from bot.adapters.slack.input_words import plain_text as problem_text
from bot.adapters.slack.languages import Languages, RequestScopedApp
from bot.adapters.slack.notifier import SlackDirectory, SlackNotifier, make_web_client
from bot.adapters.slack.reasons import plain_text as reason_text
from bot.adapters.slack.refusals import plain_text
from bot.adapters.slack.transport import PooledWebClient, share_connections
from bot.clock import Clock, SystemClock
from bot.domain.clusters import HOME
from bot.domain.input_problems import ParseError
from bot.domain.policy import KARMADA_PLANE, Cluster, Policy
from bot.domain.quota import QuotaScope
from bot.executor import TrackingExecutor
from bot.services.access import Access
from bot.services.announce import Announcer
from bot.services.blocked import BlockedWatch
from bot.services.budget import BudgetWatch
from bot.services.capacity import CapacityCachingCluster
from bot.services.changes import ChangeApplier
from bot.services.container import Services
from bot.services.decisions import Decisions
from bot.services.digest import DigestService
from bot.services.doctor import Doctor
from bot.services.failures import FailurePath
from bot.services.home import HomeService
from bot.services.idle import IdleWatch
from bot.services.inbox import EventInbox
from bot.services.ledger import CostLookup, Ledger
from bot.services.lifecycle import Lifecycle
from bot.services.metrics_health import MetricsHealth
from bot.services.monthly_close import MonthlyClose
from bot.services.pods import PodView
from bot.services.ports import (
    ClusterInspection,
    Directory,
    FederatedQuotas,
    HomePublisher,
    KueueQuotas,
    Mailer,
    MetricsSource,
    Notifier,
    QuotaCluster,
    ScrapeInspection,
    Workloads,
)
from bot.services.pricing import Pricer
from bot.services.proposals import ProposalService
from bot.services.queries import Queries
from bot.services.quota_sync import QuotaSync, ReasonedError
from bot.services.quota_target import ClusterQueueTarget, FederatedQuotaTarget, PolicyTargets, ResourceQuotaTarget
from bot.services.reclaim import ReclaimWatch
from bot.services.reconcile import Reconciler
from bot.services.refusals import Refused
from bot.services.shifts import ShiftService
from bot.services.spend import SpendReader
from bot.services.submissions import Submissions
from bot.services.why import Why
from bot.settings import Settings

# A refusal's, a failure reason's or a parse error's ``str`` (logs, job results) is the Slack edge's wording in
# English, the log's language, whoever's request it came from.
Refused.worded_by(in_english(plain_text))
ReasonedError.worded_by(in_english(reason_text))
ParseError.worded_by(in_english(problem_text))


def open_database(url: str, *, migrate: Callable[[str], object] = upgrade_if_behind) -> Database:
    """The bot's database at ``url``, its schema brought up to date first (``migrate``)."""
    migrate(url)
    return Database.from_url(url)


def scratch_database() -> Database:
    """An empty database in memory with the bot's tables (``digest --print`` on the sandbox's figures)."""
    database = Database.from_url("sqlite://")
    Base.metadata.create_all(database.engine)
    return database


def connect_cluster(
    kubeconfig: Path | None, *, context: str | None = None, timeout: tuple[float, float] = (5.0, 20.0)
) -> KubernetesCluster:
    """A cluster: ``kubeconfig`` (or ``KUBECONFIG``, ``~/.kube/config``) at ``context`` (None: its current one),
    else the in-cluster identity."""
    return KubernetesCluster.from_environment(kubeconfig, context=context, timeout=timeout)


def connect_kueue(cluster: KubernetesCluster) -> KueueCluster:
    """Kueue in the same cluster, over the same connection (discovery is asked at the first use)."""
    return KueueCluster(cluster.api_client, timeout=cluster.timeout)


def connect_clusters(
    policy: Policy,
    kubeconfig: Path | None,
    *,
    timeout: tuple[float, float] = (5.0, 20.0),
    retry_after: float = 10.0,
    clock: Clock | None = None,
) -> ClusterSet:
    """Every cluster of the policy, each with its own client (``clusters.<name>.context`` of ``kubeconfig``,
    the home cluster's without one from the kubeconfig's current context or in-cluster), Kueue on the same
    connection; without ``clusters:`` the one cluster, as ``connect_cluster`` reaches it. ``clock``: the time
    a cluster is down since and tried again after (default: the wall clock; the sandbox's moves with ``time +1m``)."""
    members: dict[str, tuple[KubernetesCluster, KueueCluster]] = {}
    home = policy.home_cluster()
    clusters: dict[str, Cluster | None] = {**policy.clusters} or {HOME: None}
    for name, access in clusters.items():
        context = access.context if access is not None else None
        own = (timeout[0], access.timeout_seconds) if access is not None else timeout
        kube = connect_cluster(kubeconfig, context=context, timeout=own)
        members[HOME if name == home else name] = (kube, connect_kueue(kube))
    if clock is None:
        return ClusterSet(members, retry_after=retry_after)
    return ClusterSet(members, retry_after=retry_after, monotonic=lambda: clock.now().timestamp(), now=clock.now)


def connect_inspection(clusters: ClusterSet) -> ClusterInspection:
    """What ``why`` and ``doctor`` read of every cluster of ``clusters``, over each one's connection and health."""
    inspectors = {}
    for cluster in clusters.clusters:
        kube, kueue = clusters.member(cluster)
        inspectors[cluster] = ClusterInspector(kube.api_client, timeout=kube.timeout, kueue=kueue)
    return ClusterInspections(clusters, inspectors)


def connect_karmada(policy: Policy, kubeconfig: Path | None) -> KarmadaPlane | None:
    """The Karmada control plane the policy names (``karmada.context`` of ``kubeconfig``); None without one."""
    if policy.karmada is None:
        return None
    timeout = (5.0, policy.karmada.timeout_seconds)
    plane = connect_cluster(kubeconfig, context=policy.karmada.context, timeout=timeout)
    return KarmadaPlane(plane.api_client, timeout=timeout)


def connect_metrics(settings: Settings, policy: Policy) -> PrometheusMetrics | None:
    """Prometheus when PROMETHEUS_URL is set; without it there are no digests, budgets or nudges."""
    if not settings.prometheus_url:
        return None
    return connect_prometheus(settings, policy, settings.prometheus_url)


def connect_cluster_metrics(settings: Settings, policy: Policy) -> MetricsSource | None:
    """The metrics of every cluster of the policy; without ``clusters:``, ``connect_metrics``. Each cluster is
    read from ``clusters.<name>.prometheus_url``, else PROMETHEUS_URL; a Prometheus several clusters are read
    from tells their series apart by ``metrics.cluster_label`` (series without a label there are the home
    cluster's, when it is one of them). One Prometheus is the source itself, several are asked together
    (``ClusterMetrics``); a cluster with neither URL has its metrics said unavailable in every answer. None
    when no cluster has a Prometheus. Every Prometheus gets the same credentials (PROMETHEUS_BEARER_TOKEN or
    the basic auth, PROMETHEUS_CA_BUNDLE)."""
    if not policy.clusters:
        return connect_metrics(settings, policy)
    home = policy.home_cluster()
    read_from: dict[str, list[str]] = {}  # URL -> the clusters read from it
    for name, cluster in sorted(policy.clusters.items()):
        if url := cluster.prometheus_url or settings.prometheus_url:
            read_from.setdefault(url.rstrip("/"), []).append(name)
    part = {name: HOME if name == home else name for name in policy.clusters}
    sources = [
        connect_prometheus(settings, policy, url, cluster=part[names[0]])
        if len(names) == 1
        else connect_prometheus(
            settings,
            policy,
            url,
            labels=ClusterLabels(
                policy.metrics.cluster_label,
                {policy.metrics_name(name): part[name] for name in names},
                unlabelled=HOME if home in names else None,
            ),
        )
        for url, names in read_from.items()
    ]
    unread = {
        part[name]: f"no Prometheus for cluster {name}: set clusters.{name}.prometheus_url or PROMETHEUS_URL"
        for name in policy.clusters
        if not any(name in names for names in read_from.values())
    }
    if not sources:
        return None
    if len(sources) == 1 and not unread:
        return sources[0]
    return ClusterMetrics(sources, names={part[name]: name for name in policy.clusters}, unread=unread)


def connect_prometheus(
    settings: Settings, policy: Policy, url: str, *, cluster: str = HOME, labels: ClusterLabels | None = None
) -> PrometheusMetrics:
    """The Prometheus at ``url`` with the settings' credentials, holding ``cluster``'s series (or, with
    ``labels``, those of the clusters they name)."""
    basic = None
    if settings.prometheus_username and settings.prometheus_password:
        basic = (settings.prometheus_username, settings.prometheus_password.get_secret_value())
    return PrometheusMetrics.connect(
        url,
        interval=policy.metrics.sample_interval,
        idle_threshold=policy.metrics.idle_threshold_percent / 100,
        bearer_token=settings.prometheus_bearer_token.get_secret_value() if settings.prometheus_bearer_token else None,
        basic_auth=basic,
        ca_bundle=settings.prometheus_ca_bundle,
        timeout=settings.prometheus_timeout_seconds,
        resources=policy.all_governed_resources(),
        cluster=cluster,
        labels=labels,
        pool_label=policy.pricing.pool_label,
        pools=tuple(policy.pricing.pools),
    )


def connect_mail(
    server: SmtpServer | None, policy: Policy, *, clock: Clock | None = None, context: ssl.SSLContext | None = None
) -> SmtpMailer | None:
    """The mail server of ``SMTP_URL`` (``Settings.smtp_server()``); None without one (no mail is recorded then).
    Nothing connects here: each mail opens its own connection. ``context``: the certificates it trusts."""
    if server is None:
        return None
    return SmtpMailer(server, policy=policy, clock=clock, context=context)


def slack_client(token: str | None, *, base_url: str, context: ssl.SSLContext | None = None) -> PooledWebClient:
    """The bot's Web API client (kept-alive connections, rate limits retried); ``context``: the certificates it trusts."""
    return make_web_client(token, base_url=base_url, ssl=context)


@dataclass(frozen=True)
class SlackPorts:
    """What the services say and read through Slack."""

    notifier: Notifier
    directory: Directory
    home_tabs: HomePublisher
    languages: Languages | None = None  # who reads which language (the Bolt app's listeners need it too)


def slack_ports(client: PooledWebClient, policy: Policy) -> SlackPorts:
    """The Slack adapters, all on one client, wording what they send in the reader's language."""
    directory = SlackDirectory(client)
    languages = Languages(policy, directory.locale)
    return SlackPorts(
        notifier=SlackNotifier(client, languages),
        directory=directory,
        home_tabs=SlackHomeTabs(client, languages),
        languages=languages,
    )


def _cluster_answering(policy: Policy, cluster: QuotaCluster) -> Callable[[QuotaScope], None] | None:
    """Whether the cluster holding a scope's quota answers, for the waiters of its critical section: a
    ClusterSet's health (every deployment's cluster port; the unit tests' fakes have none). A federated
    quota is on the Karmada plane, whose health no ClusterSet keeps: its waiters wait."""
    if not isinstance(cluster, ClusterSet):
        return None
    clusters = cluster

    def answering(scope: QuotaScope) -> None:
        if policy.federated_quota(scope.namespace, scope.resource) is None:
            clusters.check_answering(scope.namespace)

    return answering


def build_services(
    *,
    policy: Policy,
    database: Database,
    cluster: QuotaCluster,
    slack: SlackPorts,
    clock: Clock,
    metrics: MetricsSource | None = None,
    workloads: Workloads | None = None,
    queues: KueueQuotas | None = None,
    federation: FederatedQuotas | None = None,
    inspection: ClusterInspection | None = None,
    scrape: ScrapeInspection | None = None,
    retry_delays: tuple[float, ...] = (0.5, 2.0, 5.0),
    sleep: Callable[[float], None] | None = None,
    mailer: Mailer | None = None,
) -> Services:
    """``mailer``: the mail server (``connect_mail``) budget warnings and the monthly close go to ``budget.mail``
    through; ``queues``: Kueue, for scopes the policy keeps in a ClusterQueue and for Workloads waiting for quota;
    ``federation``: the Karmada plane, for scopes kept in a FederatedResourceQuota; ``inspection``: what ``why``
    and ``doctor`` read of the clusters (``connect_inspection``); ``scrape``: the Prometheus side ``doctor`` reads
    (default: ``metrics`` when it is a Prometheus)."""
    answering = _cluster_answering(policy, cluster)
    # One cached capacity view for every service, so the bot's own quota writes keep it exact.
    cluster = CapacityCachingCluster(
        cluster, quota_names={namespace: policy.quota_name(namespace) for namespace in policy.managed_namespaces()}
    )
    access = Access(policy, slack.directory)
    target = PolicyTargets(
        policy=policy,
        quotas=ResourceQuotaTarget(policy=policy, cluster=cluster),
        queues=ClusterQueueTarget(policy=policy, kueue=queues) if queues is not None else None,
        federated=FederatedQuotaTarget(
            refs=lambda scope: policy.federated_quota(scope.namespace, scope.resource),
            planes={KARMADA_PLANE: federation},
        )
        if federation is not None
        else None,
    )
    sync = QuotaSync(
        policy=policy,
        target=target,
        database=database,
        clock=clock,
        conflict_backoff=(retry_delays[0], retry_delays[-1]),
        sleep=sleep,
        answering=answering,
    )
    # Without a Workloads reader (tests of other things), status and cards show no pods.
    pods = PodView(workloads=workloads, policy=policy) if workloads is not None else None
    announcer = Announcer(notifier=slack.notifier, policy=policy, database=database, clock=clock, pods=pods, mailer=mailer)
    failures = FailurePath(database=database, sync=sync, announcer=announcer, clock=clock)
    applier = ChangeApplier(policy=policy, database=database, sync=sync, announcer=announcer, clock=clock, failures=failures)
    pricer = Pricer(policy=policy, database=database, cluster=cluster, clock=clock)
    digest = budget = idle = ledger = proposals = close = None
    if metrics is not None:
        health = MetricsHealth(policy=policy, database=database, announcer=announcer, clock=clock)
        ledger = Ledger(policy=policy, metrics=metrics, database=database, clock=clock)
        spend = SpendReader(policy=policy, metrics=metrics, ledger=ledger)
        digest = _digest(policy=policy, metrics=metrics, database=database, clock=clock, announcer=announcer, ledger=ledger)
        budget = BudgetWatch(policy=policy, spend=spend, database=database, announcer=announcer, health=health, clock=clock)
        if mailer is not None:
            close = MonthlyClose(policy=policy, spend=spend, database=database, announcer=announcer, clock=clock)
        proposals = ProposalService(
            policy=policy, metrics=metrics, ledger=ledger, cluster=cluster, database=database, announcer=announcer, clock=clock
        )
        idle = IdleWatch(
            policy=policy,
            metrics=metrics,
            database=database,
            announcer=announcer,
            access=access,
            health=health,
            clock=clock,
            pricer=pricer,
        )
    submissions = Submissions(
        policy=policy,
        database=database,
        access=access,
        applier=applier,
        announcer=announcer,
        clock=clock,
        cluster=cluster,
        sync=sync,
        pricer=pricer,
        over_budget=budget.over_budget_in if budget is not None else lambda repo, team: False,
    )
    queries = Queries(policy=policy, database=database, target=target, access=access, clock=clock, pods=pods)
    home_service = HomeService(
        policy=policy, database=database, access=access, queries=queries, publisher=slack.home_tabs, clock=clock
    )
    decisions = Decisions(
        policy=policy,
        database=database,
        access=access,
        applier=applier,
        announcer=announcer,
        clock=clock,
        sync=sync,
        failures=failures,
        pricer=pricer,
        homes=home_service.publish_all,
    )
    return Services(
        policy=policy,
        database=database,
        cluster=cluster,
        clock=clock,
        access=access,
        submissions=submissions,
        decisions=decisions,
        lifecycle=Lifecycle(policy=policy, database=database, access=access, applier=applier, announcer=announcer, clock=clock),
        queries=queries,
        reconciler=Reconciler(policy=policy, database=database, applier=applier, sync=sync, announcer=announcer, clock=clock),
        sync=sync,
        blocked=BlockedWatch(
            policy=policy,
            cluster=cluster,
            database=database,
            announcer=announcer,
            clock=clock,
            workloads=workloads,
            pods=pods,
            queues=queues,
        ),
        reclaims=ReclaimWatch(policy=policy, target=target, database=database, announcer=announcer, clock=clock),
        home=home_service,
        inbox=EventInbox(database=database, clock=clock),
        shifts=ShiftService(
            policy=policy,
            database=database,
            cluster=cluster,
            access=access,
            sync=sync,
            announcer=announcer,
            clock=clock,
            pricer=pricer,
        ),
        digest=digest,
        budget=budget,
        monthly_close=close,
        idle=idle,
        ledger=ledger,
        costs=CostLookup(policy=policy, ledger=ledger, access=access, clock=clock) if ledger is not None else None,
        proposals=proposals,
        pricer=pricer,
        inspection=inspection,
        doctor=build_doctor(
            policy=policy,
            inspection=inspection,
            scrape=scrape if scrape is not None else metrics if isinstance(metrics, ScrapeInspection) else None,
            sync=sync,
            database=database,
            clock=clock,
            announcer=announcer,
            is_admin=access.is_admin,
        ),
        why=Why(policy=policy, access=access, inspection=inspection, sync=sync, cluster=cluster, pods=pods, queues=queues),
    )


def build_doctor(
    *,
    policy: Policy,
    inspection: ClusterInspection | None,
    scrape: ScrapeInspection | None,
    sync: QuotaSync,
    database: Database,
    clock: Clock,
    announcer: Announcer | None = None,
    is_admin: Callable[[str], bool] | None = None,
) -> Doctor:
    """The GPU stack's checklist (``/gpu-quota doctor``, its weekly run)."""
    return Doctor(
        policy=policy,
        inspection=inspection,
        scrape=scrape,
        sync=sync,
        database=database,
        clock=clock,
        announcer=announcer,
        is_admin=is_admin,
    )


def standalone_doctor(settings: Settings, policy: Policy) -> Doctor:
    """The checklist on its own (``gpu-quota-bot doctor``): every cluster of the policy, Kueue, the Karmada plane and
    every Prometheus, read only; its database a scratch one (it remembers nothing, posts nothing)."""
    clusters = connect_clusters(policy, settings.kubeconfig, timeout=(5.0, 10.0))
    federation = connect_karmada(policy, settings.kubeconfig)
    metrics = connect_cluster_metrics(settings, policy)
    database = scratch_database()
    target = PolicyTargets(
        policy=policy,
        quotas=ResourceQuotaTarget(policy=policy, cluster=clusters),
        queues=ClusterQueueTarget(policy=policy, kueue=clusters),
        federated=FederatedQuotaTarget(
            refs=lambda scope: policy.federated_quota(scope.namespace, scope.resource), planes={KARMADA_PLANE: federation}
        )
        if federation is not None
        else None,
    )
    clock = SystemClock()
    return build_doctor(
        policy=policy,
        inspection=connect_inspection(clusters),
        scrape=metrics if isinstance(metrics, ScrapeInspection) else None,
        sync=QuotaSync(policy=policy, target=target, database=database, clock=clock),
        database=database,
        clock=clock,
    )


def build_digest(
    *,
    policy: Policy,
    metrics: MetricsSource,
    database: Database,
    clock: Clock | None = None,
    notifier: Notifier | None = None,
) -> DigestService:
    """The digest service on its own (``digest``), reading finished days from the cost ledger; without a
    notifier it builds reports (``digest --print``) but cannot post them."""
    clock = clock or SystemClock()
    announcer = Announcer(notifier=notifier, policy=policy, database=database, clock=clock) if notifier is not None else None
    return _digest(policy=policy, metrics=metrics, database=database, clock=clock, announcer=announcer)


def build_ledger(*, policy: Policy, database: Database, metrics: MetricsSource | None, clock: Clock | None = None) -> Ledger:
    """The cost ledger on its own (``ledger backfill`` records days from ``metrics``; ``cost export`` only reads)."""
    return Ledger(policy=policy, metrics=metrics, database=database, clock=clock or SystemClock())


def _digest(
    *,
    policy: Policy,
    metrics: MetricsSource,
    database: Database,
    clock: Clock,
    announcer: Announcer | None,
    ledger: Ledger | None = None,
) -> DigestService:
    health = MetricsHealth(policy=policy, database=database, announcer=announcer, clock=clock) if announcer else None
    ledger = ledger or Ledger(policy=policy, metrics=metrics, database=database, clock=clock)
    return DigestService(
        policy=policy,
        spend=SpendReader(policy=policy, metrics=metrics, ledger=ledger),
        database=database,
        announcer=announcer,
        health=health,
        clock=clock,
    )


def build_bolt_app(
    *, services: Services, client: PooledWebClient, signing_secret: str, executor: TrackingExecutor, languages: Languages
) -> App:
    """The Bolt app with every listener registered. Token verification happens in ``run``, not here.

    Listeners run in the request's own thread (``process_before_response``): each decides its ack
    there, at once, and hands the slow work to ``executor``. Bolt's default runs the whole listener
    in a pool and polls for the ack every 10 ms, so acks queued behind other requests' work.
    Listeners' ``client`` and ``respond`` share ``client``'s kept-alive connections (``transport``), and
    answer in the language of the person who acted (``languages``; the executor carries it to the pool).
    """
    import handlers

    app = RequestScopedApp(
        client=client,
        signing_secret=signing_secret,
        token_verification_enabled=False,
        listener_executor=executor,
        process_before_response=True,
    )
    app.use(share_connections(client))
    app.use(languages.listener_middleware())
    handlers.register(app, services, executor)
    return app
