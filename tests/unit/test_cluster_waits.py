"""Waiting for a namespace's critical section while its cluster stops answering: the services over a
ClusterSet whose one cluster is the fake cluster."""

from __future__ import annotations

import threading

from bot.adapters.clusters import ClusterSet
from bot.domain.clusters import HOME
from bot.domain.lifecycle import RequestState
from bot.errors import TemporaryError, Unreachable
from tests.fakes import FakeCluster
from tests.unit.conftest import POLICY, make_world


class WatchedClusterSet(ClusterSet):
    """Tells when a worker waiting for a critical section first asks whether the cluster answers."""

    def __init__(self, fake: FakeCluster, monotonic: list[float]) -> None:
        super().__init__({HOME: (fake, None)}, retry_after=10.0, monotonic=lambda: monotonic[0])  # type: ignore[dict-item]
        self.asked = threading.Event()

    def check_answering(self, namespace: str) -> None:
        self.asked.set()
        super().check_answering(namespace)


def test_a_resumed_apply_stops_waiting_for_a_namespace_whose_cluster_stops_answering() -> None:
    monotonic = [0.0]
    made: list[WatchedClusterSet] = []

    def watched_port(fake: FakeCluster) -> WatchedClusterSet:
        made.append(WatchedClusterSet(fake, monotonic))
        return made[0]

    world = make_world(POLICY, port=watched_port)
    watched = made[0]
    request_id = world.submit("request ai-frontier-research +2 for 1d train").request_id
    world.cluster.fail("read", Unreachable("the Kubernetes API did not answer"))  # the cluster goes down
    world.services.decisions.approve_or_confirm(user="U0LEE", request_id=request_id)
    assert world.request(request_id).state == RequestState.APPROVED and world.request(request_id).apply_attempts == 1

    monotonic[0] += 10  # due for another try
    world.advance(minutes=10)  # past the apply's backoff
    tried, release = threading.Event(), threading.Event()

    def the_try() -> None:
        """Another worker in the namespace's critical section: it is the cluster's try, and fails."""
        with world.database.namespace_lock("ai-frontier-research"):
            assert watched.asked.wait(timeout=10)  # the resumed apply waits for this section
            world.cluster.fail("read", Unreachable("the Kubernetes API did not answer"))
            try:
                watched.read_quota("ai-frontier-research", "compute-quota", "nvidia.com/gpu")
            except TemporaryError:
                tried.set()
            release.wait(timeout=10)

    holder = threading.Thread(target=the_try)
    holder.start()
    try:
        report = world.services.reconciler.tick()  # the cluster was due: the apply is resumed, and waits
    finally:
        release.set()
        holder.join()
    assert tried.is_set() and report.errors == [] and report.resumed == [request_id]
    assert world.request(request_id).state == RequestState.APPROVED and world.request(request_id).apply_attempts == 2
    assert world.cluster.hard("ai-frontier-research") == 4  # nothing written

    monotonic[0] += 10
    world.advance(minutes=10)
    assert world.services.reconciler.tick().resumed == [request_id]
    assert world.request(request_id).state == RequestState.APPLIED and world.cluster.hard("ai-frontier-research") == 6
