"""Hand-written fakes of the bot's own ports, for unit tests of the services."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from bot.adapters.slack.reports import Report, digest_report
from bot.adapters.slack.words import render
from bot.domain.clusters import HOME
from bot.domain.quota import QuotaSnapshot
from bot.domain.resources import GPU
from bot.errors import GpuQuotaError, NamespaceNotFound, QuotaConflict, TemporaryError
from bot.services.messages import Said
from bot.services.ports import Action, GpuNodes, MessageRef, QuotaRefusal
from bot.services.reports import Digest
from bot.services.views import HomeView, RequestCard


class FakeCluster:
    """ResourceQuotas in memory (one entry per quota and resource: a write of one resource bumps the
    quota's resourceVersion for all), with resourceVersion checks and injectable failures."""

    def __init__(self, allocatable: int = 24) -> None:
        self.allocatable = allocatable  # nvidia.com/gpu; other resources in ``offered``
        self.offered: dict[str, int] = {}
        self.namespaces: set[str] = set()
        self.quotas: dict[tuple[str, str, str], QuotaSnapshot] = {}
        self.writes: list[tuple[str, int, bool]] = []  # namespace, gpus, dry_run
        self.failures: list[tuple[str, Exception]] = []  # (operation, error) raised once each, in order
        self.before_write: list[callable] = []  # run once before the next real write (to simulate a race)
        self.refusals: list[QuotaRefusal] = []
        self.models: set[str] = set()  # the nodes' nvidia.com/gpu.product labels
        self._rv = itertools.count(1)

    def add(
        self,
        namespace: str,
        hard: int | None,
        *,
        used: int = 0,
        limits: bool = True,
        name: str = "compute-quota",
        resource: str = GPU,
    ) -> None:
        self.namespaces.add(namespace)
        if hard is not None:
            self.quotas[(namespace, name, resource)] = QuotaSnapshot(
                namespace, name, hard, used, hard if limits else None, self._next(), None
            )

    def edit(self, namespace: str, hard: int, name: str = "compute-quota", resource: str = GPU) -> None:
        """A person running kubectl edit."""
        quota = self.quotas[(namespace, name, resource)]
        self.quotas[(namespace, name, resource)] = replace(
            quota, hard=hard, limits=hard if quota.limits is not None else None, resource_version=self._next()
        )

    def hard(self, namespace: str, name: str = "compute-quota", resource: str = GPU) -> int:
        return self.quotas[(namespace, name, resource)].hard

    def fail(self, operation: str, error: Exception, times: int = 1) -> None:
        self.failures.extend([(operation, error)] * times)

    def _maybe_fail(self, operation: str) -> None:
        for index, (op, error) in enumerate(self.failures):
            if op == operation:
                del self.failures[index]
                raise error

    def read_quota(self, namespace: str, name: str, resource: str, *, max_age: float = 0.0) -> QuotaSnapshot | None:
        self._maybe_fail("read")
        if namespace not in self.namespaces:
            raise NamespaceNotFound(f"the namespace {namespace} does not exist in the cluster")
        return self.quotas.get((namespace, name, resource))

    def write_quota(
        self,
        namespace: str,
        name: str,
        resource: str,
        *,
        gpus: int,
        previous: QuotaSnapshot | None,
        dry_run: bool,
        applied_by: str,
    ) -> QuotaSnapshot:
        self._maybe_fail("dry_run" if dry_run else "write")
        if not dry_run and self.before_write:
            self.before_write.pop(0)()
        current = self.quotas.get((namespace, name, resource))
        if previous is None and current is not None:
            raise QuotaConflict("already exists")
        if previous is not None and (current is None or current.resource_version != previous.resource_version):
            raise QuotaConflict("the object has been modified")
        used = current.used if current else 0
        limits = gpus if current is not None and current.limits is not None else None
        written = QuotaSnapshot(namespace, name, gpus, used, limits, self._next(), gpus)
        self.writes.append((namespace, gpus, dry_run))
        if not dry_run:
            self.quotas[(namespace, name, resource)] = written
        return written

    def gpu_quota_totals(self, quota_names: Mapping[str, str]) -> dict[str, dict[str, int]]:
        totals: dict[str, dict[str, int]] = {}
        for (ns, name, resource), quota in self.quotas.items():
            if quota_names.get(ns) == name:
                totals.setdefault(ns, {})[resource] = quota.hard
        return totals

    def quota_refusals(self) -> list[QuotaRefusal]:
        self._maybe_fail("events")
        return list(self.refusals)

    def gpu_nodes(self, cluster: str = HOME) -> GpuNodes:
        self._maybe_fail("nodes")
        return GpuNodes({GPU: self.allocatable, **self.offered}, {GPU: frozenset(self.models)})

    def _next(self) -> str:
        return str(next(self._rv))


@dataclass
class Sent:
    """What the fake was asked to send; notices and digests are kept as the Slack adapter words them."""

    kind: str  # card | update | reply | dm | post
    target: str
    text: str = ""
    actions: Sequence[Action] = ()
    card: RequestCard | None = None
    report: Report | None = None


@dataclass
class FakeNotifier:
    sent: list[Sent] = field(default_factory=list)
    failing: dict[str, GpuQuotaError] = field(default_factory=dict)
    _ts: itertools.count = field(default_factory=lambda: itertools.count(1))

    def _check(self, kind: str) -> None:
        error = self.failing.get(kind)
        if error is not None:
            raise error

    def post_request(self, card: RequestCard) -> MessageRef:
        self._check("card")
        self.sent.append(Sent("card", card.channel_id, card=card))
        return MessageRef(card.channel_id, f"{next(self._ts)}.000")

    def update_request(self, card: RequestCard) -> None:
        self._check("update")
        self.sent.append(Sent("update", card.channel_id, card=card))

    def reply(self, ref: MessageRef, message: Said, *, actions: Sequence[Action] = ()) -> None:
        self._check("reply")
        self.sent.append(Sent("reply", f"{ref.channel_id}/{ref.ts}", render(message), actions))

    def tell_user(self, user_id: str, message: Said, *, actions: Sequence[Action] = ()) -> None:
        self._check("dm")
        self.sent.append(Sent("dm", user_id, render(message), actions))

    def post(self, channel_id: str, message: Said, *, actions: Sequence[Action] = ()) -> MessageRef:
        self._check("post")
        self.sent.append(Sent("post", channel_id, render(message), actions))
        return MessageRef(channel_id, f"{next(self._ts)}.000")

    def publish(self, channel_id: str, digest: Digest) -> MessageRef:
        self._check("publish")
        report = digest_report(digest)
        self.sent.append(Sent("report", channel_id, report.title, report.actions, report=report))
        return MessageRef(channel_id, f"{next(self._ts)}.000")

    def delete(self, ref: MessageRef) -> None:
        self._check("delete")
        self.sent.append(Sent("delete", f"{ref.channel_id}/{ref.ts}"))

    def of(self, kind: str) -> list[Sent]:
        return [s for s in self.sent if s.kind == kind]

    def last_card(self) -> RequestCard:
        cards = [s.card for s in self.sent if s.card is not None]
        assert cards, "no request message was sent"
        return cards[-1]


@dataclass
class FakeHomeTabs:
    """App Home tabs as published, newest last."""

    published: list[HomeView] = field(default_factory=list)

    def publish_home(self, view: HomeView) -> None:
        self.published.append(view)


@dataclass
class FakeDirectory:
    groups: dict[str, frozenset[str]] = field(default_factory=dict)

    def usergroup_members(self, usergroup_id: str, *, fresh: bool = False) -> frozenset[str]:
        return self.groups.get(usergroup_id, frozenset())


class FailingMetrics:
    """A metrics source that is down until ``up`` is set: every call raises like an unreachable Prometheus."""

    def __init__(self, working) -> None:  # type: ignore[no-untyped-def]
        self.working = working
        self.up = False

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        method = getattr(self.working, name)

        def call(*args, **kwargs):  # type: ignore[no-untyped-def]
            if not self.up:
                raise TemporaryError("Prometheus did not answer (ConnectionError)")
            return method(*args, **kwargs)

        return call
