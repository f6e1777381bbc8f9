"""The cached capacity view: fresh enough, exact for the bot's own writes, never on the request path."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from bot.errors import TemporaryError
from bot.services.capacity import CapacityCachingCluster
from tests.fakes import FakeCluster

NAMES = {"ai-frontier-research": "compute-quota", "biz-model-serving": "compute-quota"}


class CountingCluster(FakeCluster):
    """The fake cluster, counting node lists (the view reads both lists together)."""

    def __init__(self) -> None:
        super().__init__(allocatable=24)
        self.add("ai-frontier-research", 4, used=3)
        self.add("biz-model-serving", 16, used=12)
        self.lists = 0

    def allocatable_gpus(self) -> int:
        self.lists += 1
        return super().allocatable_gpus()


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Later:
    """Runs the background refresh when the test says so (a thread in production)."""

    def __init__(self) -> None:
        self.pending: list[Callable[[], None]] = []

    def __call__(self, work: Callable[[], None]) -> None:
        self.pending.append(work)

    def run(self) -> None:
        while self.pending:
            self.pending.pop(0)()


Parts = tuple[CountingCluster, Clock, CapacityCachingCluster, Later]


@pytest.fixture
def parts() -> Parts:
    cluster, clock, later = CountingCluster(), Clock(), Later()
    cached = CapacityCachingCluster(cluster, quota_names=NAMES, refresh_after=30, max_age=300, monotonic=clock, start=later)
    return cluster, clock, cached, later


def test_the_lists_are_read_once_for_many_requests(parts: Parts) -> None:
    cluster, clock, cached, later = parts
    for _ in range(5):
        assert cached.allocatable_gpus() == 24
        assert cached.gpu_quota_totals(NAMES) == {"ai-frontier-research": 4, "biz-model-serving": 16}
        clock.now += 5
    assert cluster.lists == 1


def test_the_bots_own_writes_show_at_once(parts: Parts) -> None:
    _, _, cached, _ = parts
    cached.gpu_quota_totals(NAMES)
    previous = cached.read_quota("ai-frontier-research", "compute-quota")
    cached.write_quota("ai-frontier-research", "compute-quota", gpus=9, previous=previous, dry_run=True, applied_by="t")
    assert cached.gpu_quota_totals(NAMES)["ai-frontier-research"] == 4  # a dry run changes nothing
    cached.write_quota("ai-frontier-research", "compute-quota", gpus=9, previous=previous, dry_run=False, applied_by="t")
    assert cached.gpu_quota_totals(NAMES)["ai-frontier-research"] == 9


def test_an_old_view_is_served_at_once_and_refreshed_behind(
    parts: Parts,
) -> None:
    cluster, clock, cached, later = parts
    cached.allocatable_gpus()
    cluster.allocatable = 32  # a node joined
    cluster.edit("biz-model-serving", 20)  # a hand edit
    clock.now += 31
    assert cached.allocatable_gpus() == 24  # the caller does not wait for the refresh
    assert cached.allocatable_gpus() == 24 and len(later.pending) == 1  # one refresh at a time
    later.run()
    assert cached.allocatable_gpus() == 32
    assert cached.gpu_quota_totals(NAMES)["biz-model-serving"] == 20


def test_a_view_too_old_to_trust_is_read_again_and_its_failure_surfaces(
    parts: Parts,
) -> None:
    cluster, clock, cached, later = parts
    cached.allocatable_gpus()
    clock.now += 301
    cluster.fail("allocatable", TemporaryError("the Kubernetes API did not answer"))
    with pytest.raises(TemporaryError):
        cached.allocatable_gpus()
    assert cached.allocatable_gpus() == 24 and cluster.lists == 3  # read again, synchronously
    assert cached.gpu_quota_totals({"biz-model-serving": "other"}) == {}  # another question goes to the cluster
