"""The cached capacity view: fresh enough, exact for the bot's own writes, never on the request path."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from bot.domain.clusters import HOME
from bot.domain.resources import GPU
from bot.errors import NamespaceNotFound, TemporaryError
from bot.services.capacity import CapacityCachingCluster
from bot.services.ports import GpuNodes
from tests.fakes import FakeCluster

NAMES = {"ai-frontier-research": "compute-quota", "biz-model-serving": "compute-quota"}


class CountingCluster(FakeCluster):
    """The fake cluster, counting node lists (the view reads both lists together)."""

    def __init__(self) -> None:
        super().__init__(allocatable=24)
        self.add("ai-frontier-research", 4, used=3)
        self.add("biz-model-serving", 16, used=12)
        self.lists = 0

    def gpu_nodes(self, cluster: str = HOME) -> GpuNodes:
        self.lists += 1
        return super().gpu_nodes(cluster)


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
        assert cached.gpu_nodes().of(GPU) == 24
        assert cached.gpu_quota_totals(NAMES) == {"ai-frontier-research": {GPU: 4}, "biz-model-serving": {GPU: 16}}
        clock.now += 5
    assert cluster.lists == 1


def test_the_bots_own_writes_show_at_once(parts: Parts) -> None:
    _, _, cached, _ = parts
    cached.gpu_quota_totals(NAMES)
    previous = cached.read_quota("ai-frontier-research", "compute-quota", GPU)
    cached.write_quota("ai-frontier-research", "compute-quota", GPU, gpus=9, previous=previous, dry_run=True, applied_by="t")
    assert cached.gpu_quota_totals(NAMES)["ai-frontier-research"][GPU] == 4  # a dry run changes nothing
    cached.write_quota("ai-frontier-research", "compute-quota", GPU, gpus=9, previous=previous, dry_run=False, applied_by="t")
    assert cached.gpu_quota_totals(NAMES)["ai-frontier-research"][GPU] == 9


def test_an_old_view_is_served_at_once_and_refreshed_behind(
    parts: Parts,
) -> None:
    cluster, clock, cached, later = parts
    cached.gpu_nodes().of(GPU)
    cluster.allocatable = 32  # a node joined
    cluster.edit("biz-model-serving", 20)  # a hand edit
    clock.now += 31
    assert cached.gpu_nodes().of(GPU) == 24  # the caller does not wait for the refresh
    assert cached.gpu_nodes().of(GPU) == 24 and len(later.pending) == 1  # one refresh at a time
    later.run()
    assert cached.gpu_nodes().of(GPU) == 32
    assert cached.gpu_quota_totals(NAMES)["biz-model-serving"][GPU] == 20


def test_a_view_too_old_to_trust_is_read_again_and_its_failure_surfaces(
    parts: Parts,
) -> None:
    cluster, clock, cached, later = parts
    cached.gpu_nodes().of(GPU)
    clock.now += 301
    cluster.fail("nodes", TemporaryError("the Kubernetes API did not answer"))
    with pytest.raises(TemporaryError):
        cached.gpu_nodes().of(GPU)
    assert cached.gpu_nodes().of(GPU) == 24 and cluster.lists == 3  # read again, synchronously
    assert cached.gpu_quota_totals({"biz-model-serving": "other"}) == {}  # another question goes to the cluster


def test_a_quota_read_moments_ago_serves_a_caller_that_allows_its_age(parts: Parts) -> None:
    cluster, clock, cached, _ = parts
    name = "compute-quota"
    first = cached.read_quota("biz-model-serving", name, GPU, max_age=5)
    assert first is not None and first.hard == 16
    cluster.edit("biz-model-serving", 20)  # by hand, after the read
    clock.now += 5
    again = cached.read_quota("biz-model-serving", name, GPU, max_age=5)
    assert again is not None and again.hard == 16  # the copy: no older than allowed
    fresh = cached.read_quota("biz-model-serving", name, GPU)  # no age allowed: the cluster
    assert fresh is not None and fresh.hard == 20
    clock.now += 5.1
    cluster.edit("biz-model-serving", 24)
    later = cached.read_quota("biz-model-serving", name, GPU, max_age=5)
    assert later is not None and later.hard == 24  # too old: read again


def test_the_bots_own_write_is_the_copy_a_caller_gets(parts: Parts) -> None:
    _, _, cached, _ = parts
    previous = cached.read_quota("ai-frontier-research", "compute-quota", GPU)
    cached.write_quota("ai-frontier-research", "compute-quota", GPU, gpus=7, previous=previous, dry_run=True, applied_by="t")
    copy = cached.read_quota("ai-frontier-research", "compute-quota", GPU, max_age=5)
    assert copy is not None and copy.hard == 4  # a dry run writes nothing
    cached.write_quota("ai-frontier-research", "compute-quota", GPU, gpus=7, previous=previous, dry_run=False, applied_by="t")
    copy = cached.read_quota("ai-frontier-research", "compute-quota", GPU, max_age=5)
    assert copy is not None and copy.hard == 7


def test_a_namespace_that_is_gone_is_never_served_from_a_copy(parts: Parts) -> None:
    cluster, _, cached, _ = parts
    with pytest.raises(NamespaceNotFound):
        cached.read_quota("no-such-namespace", "compute-quota", GPU, max_age=5)
    cluster.namespaces.add("no-such-namespace")  # created since: the next submission sees it
    assert cached.read_quota("no-such-namespace", "compute-quota", GPU, max_age=5) is None
