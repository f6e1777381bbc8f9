"""A complete sandbox: Slack and Kubernetes stand-ins, a database, and the real app wired to them.

``Sandbox.send(body)`` signs a Slack request, hands it to the real Bolt app, waits until the work
after ``ack()`` is done, and returns the acknowledgement; the stand-ins then hold what the bot did.
The shell and the integration tests both drive the bot through this. Without a ``kubeconfig`` each
cluster of the policy is a Kubernetes API stand-in (``kubes``, by the cluster's part of a namespace key;
``kube`` is the home cluster's), reached through one kubeconfig with a context per cluster.
"""

from __future__ import annotations

import ssl
import tempfile
from pathlib import Path

from slack_bolt import App, BoltResponse

from bot.adapters.db.database import Database
from bot.adapters.db.migrate import upgrade
from bot.adapters.mail.url import SmtpServer
from bot.adapters.slack.http import bolt_request
from bot.adapters.slack.languages import Languages
from bot.adapters.slack.notifier import SlackDirectory
from bot.bootstrap import (
    build_bolt_app,
    build_services,
    connect_clusters,
    connect_inspection,
    connect_karmada,
    connect_mail,
    open_database,
    slack_client,
    slack_ports,
)
from bot.clock import Clock, ShiftedClock
from bot.domain.clusters import HOME
from bot.domain.policy import Policy
from bot.executor import TrackingExecutor
from bot.sandbox.certificate import Certificate
from bot.sandbox.history import HistoryMetrics, sandbox_history
from bot.sandbox.kube_api import KubeApiStandIn, write_kubeconfig
from bot.sandbox.scrape import SandboxScrape
from bot.sandbox.slack_api import SlackApiStandIn
from bot.sandbox.slack_client import SlackSide
from bot.sandbox.world import PEOPLE, sandbox_policy, sandbox_slack, seed_clusters
from bot.services.container import Services
from bot.services.ports import Directory, MetricsSource, ScrapeInspection

BOT_TOKEN = "xoxb-sandbox-token"
SIGNING_SECRET = "sandbox-signing-secret"


class Sandbox:
    def __init__(
        self,
        *,
        policy: Policy | None = None,
        database_url: str | None = None,
        kubeconfig: Path | None = None,
        clock: Clock | None = None,
        seed: bool = True,
        retry_delays: tuple[float, ...] = (0.05, 0.1),
        kube_timeout: tuple[float, float] = (5.0, 20.0),
        metrics: MetricsSource | None = None,
        scrape: ScrapeInspection | None = None,
        tls: Certificate | None = None,
        locale: str | None = None,
        mail: SmtpServer | None = None,
        mail_trusts: ssl.SSLContext | None = None,
    ) -> None:
        """``tls``: the stand-ins serve HTTPS with this certificate and the bot's clients trust only it; ``scrape``:
        the Prometheus side ``doctor`` reads (default: ``SandboxScrape``, which the shell's ``scrape off`` changes);
        ``locale``: every sandbox person's Slack locale (``zh-CN``; default: Slack's, en-US); ``mail``: the mail
        server budget mail goes to (none: no mail), its certificate checked with ``mail_trusts``."""
        self.policy = policy or sandbox_policy()
        self.clock = clock or ShiftedClock()
        self._tls = tls
        server_tls = tls.server_context() if tls else None
        self.slack: SlackApiStandIn = sandbox_slack(BOT_TOKEN, tls=server_tls, locale=locale)
        self.kubes: dict[str, KubeApiStandIn] = (
            {} if kubeconfig else {part: KubeApiStandIn(tls=server_tls) for part in self.policy.cluster_names()}
        )
        self._kubeconfig = kubeconfig
        self._seed = seed
        self._tmp = tempfile.TemporaryDirectory(prefix="gpu-quota-sandbox-")
        self._database_url = database_url or f"sqlite:///{self._tmp.name}/sandbox.db"
        self._retry_delays = retry_delays
        self._kube_timeout = kube_timeout
        self._metrics = metrics
        self._mail, self._mail_trusts = mail, mail_trusts
        self.scrape: ScrapeInspection = scrape or SandboxScrape(
            sandbox_history(self.clock.now()), interval=self.policy.metrics.sample_interval, clusters=self.policy.cluster_names()
        )
        self.executor = TrackingExecutor()
        self.database: Database | None = None
        self.services: Services | None = None
        self.app: App | None = None
        self.side: SlackSide | None = None
        self.languages: Languages | None = None  # who reads which language, as the bot decides it
        self._directory: Directory | None = None

    @property
    def kube(self) -> KubeApiStandIn | None:
        """The home cluster's stand-in (None: the sandbox talks to a real cluster)."""
        return self.kubes.get(HOME)

    @kube.setter
    def kube(self, stand_in: KubeApiStandIn) -> None:
        """A test's own stand-in for the home cluster (set before ``start``)."""
        self.kubes[HOME] = stand_in

    def start(self) -> Sandbox:
        self.slack.start()
        for kube in self.kubes.values():
            kube.start()
        if self._seed:
            seed_clusters(self.kubes)
        kubeconfig = self._kubeconfig or self._write_kubeconfig()
        self.database = open_database(self._database_url, migrate=upgrade)
        client = slack_client(BOT_TOKEN, base_url=self.slack.api_url, context=self._tls.client_context() if self._tls else None)
        # A cluster that stopped answering is tried again after a second of the sandbox's time (10 in a deployment).
        cluster = connect_clusters(self.policy, kubeconfig, timeout=self._kube_timeout, retry_after=1.0, clock=self.clock)
        ports = slack_ports(client, self.policy)
        assert ports.languages is not None
        self.languages, self._directory = ports.languages, ports.directory
        self.services = build_services(
            policy=self.policy,
            database=self.database,
            cluster=cluster,
            workloads=cluster,
            queues=cluster,
            federation=connect_karmada(self.policy, kubeconfig),
            inspection=connect_inspection(cluster),
            scrape=self.scrape,
            slack=ports,
            clock=self.clock,
            metrics=self._metrics or HistoryMetrics(sandbox_history(self.clock.now())),
            retry_delays=self._retry_delays,
            mailer=connect_mail(self._mail, self.policy, clock=self.clock, context=self._mail_trusts),
        )
        self.app = build_bolt_app(
            services=self.services,
            client=client,
            signing_secret=SIGNING_SECRET,
            executor=self.executor,
            languages=ports.languages,
        )
        self.side = SlackSide(
            signing_secret=SIGNING_SECRET,
            response_url_base=self.slack.response_url("r"),
            names={p.user_id: p.name for p in PEOPLE} | dict(self.slack.users),
        )
        return self

    def set_locale(self, user_id: str, locale: str) -> None:
        """The person's Slack language from now on (``zh-CN``, ``en-US``): users.info says so, and the bot reads it
        again at once (a deployment sees a change once its directory's cache of it expires, 5 minutes)."""
        self.slack.locales[user_id] = locale
        if isinstance(self._directory, SlackDirectory):
            self._directory.forget_locale(user_id)

    def _write_kubeconfig(self) -> Path:
        """A context per stand-in, named as the policy's ``context`` (or the cluster's name); the home cluster's current."""
        contexts = {self._context(part): kube for part, kube in self.kubes.items()}
        certificate = self._tls.cert if self._tls else None
        path = Path(self._tmp.name) / "kubeconfig"
        return write_kubeconfig(path, contexts, current=self._context(HOME), certificate_authority=certificate)

    def _context(self, part: str) -> str:
        name = self.policy.cluster_label(part)  # "" for the one cluster of a policy without clusters:
        access = self.policy.clusters.get(name)
        return (access.context if access is not None else None) or name or "sandbox"

    def send(self, body: str, *, timestamp: int | None = None, wait: float = 30.0) -> BoltResponse:
        """Sign ``body`` as Slack would, dispatch it to the app, and wait for the work after ack."""
        assert self.app is not None and self.side is not None, "start() first"
        response = self.app.dispatch(bolt_request(body, self.side.sign(body, timestamp=timestamp)))
        self.executor.wait_idle(timeout=wait)
        return response

    def stop(self) -> None:
        self.executor.shutdown(wait=True)
        if self.database is not None:
            self.database.dispose()
        self.slack.stop()
        for kube in self.kubes.values():
            kube.stop()
        self._tmp.cleanup()
