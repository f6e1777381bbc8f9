from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

import pytest

from bot.adapters.db.database import Database
from bot.adapters.db.models import Base
from bot.bootstrap import SlackPorts, build_services
from bot.clock import ManualClock
from bot.domain.commands import parse_command
from bot.domain.entities import Request
from bot.domain.policy import Policy, parse_policy
from bot.services.container import Services
from bot.services.outcomes import Submitted
from bot.services.ports import QuotaCluster
from tests.fakes import FakeCluster, FakeDirectory, FakeHomeTabs, FakeNotifier

START = datetime(2026, 11, 30, 9, 0, tzinfo=timezone.utc)

POLICY = {
    "admins": {"usergroups": ["S0PLATFORM"]},
    "admin_channel": "C0PLATFORM",
    "pricing": {"default_per_gpu_hour": 2.5},
    "teams": {
        "frontier": {
            "display_name": "Frontier research",
            "channel": "C0FRONTIER",
            "namespaces": ["ai-frontier-research"],
            "members": {"users": ["U0ALICE"]},
            "approvers": {"users": ["U0LEE", "U0KIM"]},
            "limits": {"max_gpus_per_namespace": 16, "max_duration": "14d"},
            "approvals": {"temporary": 1, "permanent": 2, "large_change": {"above_gpus": 8, "required": 2}},
            "auto_approve": {"max_gpus": 1, "max_duration": "4h"},
        },
        "business": {
            "channel": "C0BIZ",
            "namespaces": ["biz-model-serving"],
            "approvers": {"users": ["U0MAYA"]},
        },
    },
}


@dataclass
class World:
    services: Services
    cluster: FakeCluster
    notifier: FakeNotifier
    clock: ManualClock
    database: Database
    policy: Policy
    sleeps: list[float]

    def submit(self, text: str, user: str = "U0ALICE") -> Submitted:
        command = parse_command(text)
        return self.services.submissions.submit(requester=user, draft=command.draft)  # type: ignore[union-attr]

    def request(self, request_id: int) -> Request:
        row = self.database.run(lambda repo: repo.request(request_id))
        assert row is not None
        return row

    def audit_actions(self, request_id: int | None = None, namespace: str | None = None) -> list[str]:
        return [
            e.action
            for e in self.database.run(lambda r: list(r.audit_trail(request_id=request_id, namespace=namespace, limit=500)))
        ]

    def replies(self) -> list[str]:
        return [s.text for s in self.notifier.of("reply")]

    def dms(self, user: str) -> list[str]:
        return [s.text for s in self.notifier.of("dm") if s.target == user]

    def advance(self, **delta: float) -> None:
        self.clock.advance(timedelta(**delta))


@pytest.fixture
def world() -> World:
    return make_world(POLICY)


def make_world(raw: dict, *, port: Callable[[FakeCluster], QuotaCluster] | None = None) -> World:  # type: ignore[type-arg]
    """The services over fakes and in-memory SQLite, with the policy ``raw``; ``port``: the cluster port
    over the fake cluster (default: the fake itself)."""
    cluster = FakeCluster()
    cluster.add("ai-frontier-research", 4, used=3)
    cluster.add("biz-model-serving", 16, used=12)
    notifier = FakeNotifier()
    clock = ManualClock(START)
    database = Database.from_url("sqlite://")
    Base.metadata.create_all(database.engine)
    policy = parse_policy(raw)
    sleeps: list[float] = []
    services = build_services(
        policy=policy,
        database=database,
        cluster=port(cluster) if port is not None else cluster,
        slack=SlackPorts(
            notifier=notifier, directory=FakeDirectory({"S0PLATFORM": frozenset({"U0PAT"})}), home_tabs=FakeHomeTabs()
        ),
        clock=clock,
        retry_delays=(0.5, 1.0),
        sleep=sleeps.append,
    )
    return World(services, cluster, notifier, clock, database, policy, sleeps)
