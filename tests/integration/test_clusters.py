"""Several clusters from one bot (issue 21): two Kubernetes API stand-ins on two ports, the real kubernetes
client over HTTP to each through its kubeconfig context, signed Slack HTTP into the real Bolt app,
SQLite and PostgreSQL.

The policy is the sandbox's with two clusters: eu-1 (home: the sandbox's seeded stand-in) and us-2 (a
second stand-in) where frontier also has ai-frontier-research, as us-2/ai-frontier-research.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
import yaml

from bot.clock import ManualClock
from bot.domain.lifecycle import RequestState
from bot.domain.policy import Policy, parse_policy
from bot.executor import TrackingExecutor
from bot.sandbox.karmada_api import KarmadaApiStandIn
from bot.sandbox.kube_api import KubeApiStandIn
from bot.sandbox.session import Sandbox
from bot.sandbox.slack_api import Recorded
from bot.sandbox.world import seed_cluster
from tests.integration.clusters_world import QUOTA, REMOTE, RESEARCH, kubeconfig, seed_remote, two_cluster_policy_data
from tests.integration.conftest import SlackOverHttp, served
from tests.integration.processes import SANDBOX_POLICY, run_bot, run_env, wait_for

ALICE, BOB, LEE, MAYA = "U0ALICE", "U0BOB", "U0LEE", "U0MAYA"

# The work pool of these bots: a test that puts every worker on us-2 must fit the policy's 16 GPUs there.
POOL = 8


def two_cluster_policy() -> Policy:
    """us-2's calls time out after 6 s: what its hanging must not hold up (the home cluster's writes) has to come
    well before that on a shared, loaded machine (with 2 s the bound was within 0.4 s of the work's own time; at
    4 s a clean-clone run of the whole suite missed it twice in three runs, while alone it took 1-2 s)."""
    return parse_policy(two_cluster_policy_data(remote_timeout_seconds=6), source="the two-cluster test policy")


@pytest.fixture
def clusters(tmp_path: Path) -> Iterator[tuple[KubeApiStandIn, KubeApiStandIn]]:
    home, remote = KubeApiStandIn().start(), KubeApiStandIn().start()
    seed_cluster(home)
    seed_remote(remote)
    yield home, remote
    home.stop()
    remote.stop()


@pytest.fixture
def slack(
    database_url: str, clock: ManualClock, tmp_path: Path, clusters: tuple[KubeApiStandIn, KubeApiStandIn]
) -> Iterator[SlackOverHttp]:
    config = kubeconfig(tmp_path / "kubeconfig", *clusters)
    box = Sandbox(policy=two_cluster_policy(), clock=clock, kubeconfig=config, database_url=database_url)
    box.executor = TrackingExecutor(POOL)
    box.start()
    with served(box) as slack:
        yield slack


def approve(slack: SlackOverHttp, text: str) -> str:
    slack.command(ALICE, text)
    card = slack.request_message()
    slack.click(LEE, slack.buttons(card)["Approve"], card)
    return slack.responses()[-1]


def state(slack: SlackOverHttp, request_id: int) -> RequestState:
    database = slack.sandbox.database
    assert database is not None
    request = database.run(lambda repo: repo.request(request_id))
    assert request is not None
    return RequestState(request.state)


def test_each_cluster_gets_its_own_write(slack: SlackOverHttp, clusters: tuple[KubeApiStandIn, KubeApiStandIn]) -> None:
    home, remote = clusters
    assert approve(slack, f"request {REMOTE} +2 for 1d remote sweep").endswith("it is applied.")
    assert approve(slack, f"request eu-1/{RESEARCH} +1 for 1d home sweep").endswith("it is applied.")
    assert remote.hard(RESEARCH, QUOTA) == "4" and home.hard(RESEARCH, QUOTA) == "5"
    assert remote.quota_writes(RESEARCH) == 1 and home.quota_writes(RESEARCH) == 1
    status = slack.command(ALICE, f"status {REMOTE}") and slack.responses()[-1]
    assert REMOTE in status and "*4* hard / 1 used" in status


def test_a_bare_name_in_two_clusters_is_refused_with_both(slack: SlackOverHttp) -> None:
    slack.command(ALICE, f"request {RESEARCH} +1 for 1d which one")
    said = slack.responses()[-1]
    assert f"`{RESEARCH}` is a namespace in several clusters; name one: {RESEARCH}, {REMOTE}." in said
    database = slack.sandbox.database
    assert database is not None
    assert database.run(lambda repo: repo.count_requests_by_state()) == {}


def test_a_cluster_that_refuses_connections_delays_only_its_own_change(
    slack: SlackOverHttp, clusters: tuple[KubeApiStandIn, KubeApiStandIn], clock: ManualClock
) -> None:
    home, remote = clusters
    slack.command(ALICE, f"request {REMOTE} +2 for 1d asked while us-2 answered")
    card = slack.request_message()
    remote.refuse_connections(seconds=3600)  # then us-2 goes away
    slack.click(LEE, slack.buttons(card)["Approve"], card)
    assert "waiting for cluster us-2" in " ".join(slack.thread(card)), slack.thread(card)
    assert state(slack, 1) == RequestState.APPROVED  # kept, not failed

    started = time.monotonic()
    assert approve(slack, f"request eu-1/{RESEARCH} +1 for 1d home goes on").endswith("it is applied.")
    assert time.monotonic() - started < 5  # home's change did not wait out us-2's timeouts (a bound, not a target)
    assert home.hard(RESEARCH, QUOTA) == "5"

    status = slack.command(ALICE, f"status {REMOTE}") and slack.responses()[-1]
    assert "waiting for cluster us-2" in status and "since" in status

    remote.accept_connections()  # us-2 is back
    services = slack.sandbox.services
    assert services is not None
    time.sleep(1.1)  # the sandbox tries a cluster that stopped answering again after a second
    clock.advance(timedelta(minutes=1))  # past the apply's lease: the reconcile resumes it
    services.reconciler.tick()
    assert state(slack, 1) == RequestState.APPLIED
    assert remote.hard(RESEARCH, QUOTA) == "4" and remote.quota_writes(RESEARCH) == 1  # applied once


def click_and_go_on(slack: SlackOverHttp, card: Recorded) -> None:
    """Click Approve on ``card`` over HTTP and return at the ack, not waiting for the work after it."""
    button = slack.buttons(card)["Approve"]
    body = slack.side.block_action(
        user_id=LEE, action_id=button["action_id"], value=button["value"], channel_id=card.channel, message_ts=card.ts
    )
    assert slack.http.post(f"{slack.base_url}/slack/events", data=body.encode(), headers=slack.side.sign(body), timeout=30).ok


def test_a_hanging_cluster_delays_only_its_own_changes(
    slack: SlackOverHttp, clusters: tuple[KubeApiStandIn, KubeApiStandIn], clock: ManualClock
) -> None:
    home, remote = clusters
    remote_cards = []
    for _ in range(POOL):  # as many approvals in one namespace of us-2 as the bot has workers
        slack.command(ALICE, f"request {REMOTE} +1 for 1d asked while us-2 answered")
        remote_cards.append(slack.request_message())
    slack.command(ALICE, f"request eu-1/{RESEARCH} +1 for 1d home goes on")
    home_card = slack.request_message()
    timeout = two_cluster_policy().clusters["us-2"].timeout_seconds
    hung_until = time.monotonic() + 2 * timeout
    for method in ("GET", "PATCH", "POST", "PUT"):  # us-2 hangs: each call answered only after twice its timeout
        remote.fail(method, "^/", 0, delay=2 * timeout, seconds=2 * timeout)

    for card in remote_cards:
        click_and_go_on(slack, card)
    clicked = time.monotonic()
    click_and_go_on(slack, home_card)
    wait_for(lambda: home.quota_writes(RESEARCH) == 1, timeout=30, what="the home cluster's write")
    assert time.monotonic() - clicked < timeout  # before a call to us-2 could even time out (a bound, not a target)
    assert any(not slack.thread(card) for card in remote_cards)  # one approval in us-2 still waits for its answer
    # The home approval's work goes on after its write (its state, thread, App Homes): the clock jump below
    # would make it look stalled to the reconcile while it is still running.
    wait_for(lambda: state(slack, POOL + 1) == RequestState.APPLIED, timeout=30, what="the home request applied")
    services = slack.sandbox.services
    assert services is not None
    clock.advance(timedelta(minutes=10))  # past the others' backoff
    report = services.reconciler.tick()
    assert report.resumed == [] and report.errors == []  # the reconcile leaves them waiting while us-2 hangs
    assert slack.sandbox.executor.wait_idle(timeout=60)
    assert state(slack, POOL + 1) == RequestState.APPLIED and home.hard(RESEARCH, QUOTA) == "5"
    threads = [slack.thread(card) for card in remote_cards]
    waiting = [sum("waiting for cluster us-2" in said for said in thread) for thread in threads]
    assert sorted(waiting)[1:] == [1] * (POOL - 1), threads  # the others stopped waiting for the namespace, said once
    assert {state(slack, request_id) for request_id in range(1, POOL + 1)} <= {RequestState.APPROVED, RequestState.APPLIED}

    time.sleep(max(0.0, hung_until - time.monotonic()) + 1.1)  # us-2 answers again, and is due for another try
    clock.advance(timedelta(minutes=10))  # past every apply's backoff: the reconcile resumes them
    services.reconciler.tick()
    assert [state(slack, request_id) for request_id in range(1, POOL + 1)] == [RequestState.APPLIED] * POOL
    assert remote.hard(RESEARCH, QUOTA) == str(2 + POOL) and remote.quota_writes(RESEARCH) == 1  # all in one write
    assert [sum("Applied" in said for said in slack.thread(card)) for card in remote_cards] == [1] * POOL


def test_a_shift_whose_source_cluster_does_not_answer_stops_waiting_for_its_namespace(
    slack: SlackOverHttp, clusters: tuple[KubeApiStandIn, KubeApiStandIn], clock: ManualClock
) -> None:
    home, remote = clusters
    slack.command(BOB, f"shift 1 from {REMOTE} to biz-model-serving for 1d serving needs one more")
    card = slack.request_message("C0BIZ")
    slack.click(MAYA, slack.buttons(card)["Approve"], card)
    copy = slack.request_message("C0FRONTIER")
    remote.refuse_connections(seconds=3600)  # us-2 goes away
    database = slack.sandbox.database
    assert database is not None
    held, release = threading.Event(), threading.Event()

    def another_apply() -> None:  # a worker in the source namespace's critical section, waiting on us-2
        with database.namespace_lock(REMOTE):
            held.set()
            release.wait(timeout=30)

    holder = threading.Thread(target=another_apply)
    holder.start()
    assert held.wait(timeout=10)
    try:
        slack.click(LEE, slack.buttons(copy)["Approve"], copy)  # the last approval: the source leg waits for that section
    finally:
        release.set()
        holder.join()
    assert sum("waiting for cluster us-2" in said for said in slack.thread(card)) == 1, slack.thread(card)
    assert state(slack, 1) == RequestState.APPROVED and remote.quota_writes() == home.quota_writes() == 0

    remote._server.resume()  # us-2 is back
    time.sleep(1.1)  # due for another try
    clock.advance(timedelta(minutes=1))  # past the apply's backoff
    services = slack.sandbox.services
    assert services is not None
    services.reconciler.tick()
    assert state(slack, 1) == RequestState.APPLIED
    assert (remote.hard(RESEARCH, QUOTA), home.hard("biz-model-serving", QUOTA)) == ("1", "17")
    assert remote.quota_writes(RESEARCH) == 1 and home.quota_writes("biz-model-serving") == 1


def test_the_reconcile_tries_a_cluster_that_is_down_once_a_tick_not_once_a_waiting_change(
    slack: SlackOverHttp, clusters: tuple[KubeApiStandIn, KubeApiStandIn], clock: ManualClock
) -> None:
    home, remote = clusters
    cards = []
    for _ in range(3):
        slack.command(ALICE, f"request {REMOTE} +1 for 1d asked while us-2 answered")
        cards.append(slack.request_message())
    remote.refuse_connections(seconds=3600)  # us-2 goes away
    for card in cards:
        slack.click(LEE, slack.buttons(card)["Approve"], card)
    database = slack.sandbox.database
    services = slack.sandbox.services
    assert database is not None and services is not None

    def attempts() -> list[int]:
        rows = [database.run(lambda repo, r=r: repo.request(r)) for r in (1, 2, 3)]
        return [row.apply_attempts for row in rows if row is not None]

    assert attempts() == [1, 1, 1]  # each waits, said once
    for _ in range(2):
        before = attempts()
        time.sleep(1.1)  # us-2 is due for another try
        clock.advance(timedelta(minutes=10))  # past every apply's backoff
        services.reconciler.tick()
        assert sum(after - was for after, was in zip(attempts(), before, strict=True)) == 1  # one try, the others left alone
    assert {state(slack, r) for r in (1, 2, 3)} == {RequestState.APPROVED}

    remote._server.resume()  # us-2 is back
    time.sleep(1.1)
    clock.advance(timedelta(minutes=10))
    services.reconciler.tick()
    assert {state(slack, r) for r in (1, 2, 3)} == {RequestState.APPLIED}
    assert remote.hard(RESEARCH, QUOTA) == "5" and remote.quota_writes(RESEARCH) == 1


def test_check_config_names_each_cluster_that_fails_and_checks_the_others(
    tmp_path: Path, stand_ins: tuple, clusters: tuple[KubeApiStandIn, KubeApiStandIn]
) -> None:
    slack, _ = stand_ins
    home, remote = clusters
    remote.delete_namespace(RESEARCH)  # us-2 answers, without the policy's namespace
    policy = yaml.safe_load(SANDBOX_POLICY.read_text())
    policy["clusters"] = {"eu-1": {"home": True}, "us-2": {"context": "us-2"}, "ap-3": {"context": "ap-3"}}
    policy["teams"]["frontier"]["namespaces"] += [REMOTE, f"ap-3/{RESEARCH}"]
    path = tmp_path / "policy.yaml"
    path.write_text(yaml.safe_dump(policy))
    env = run_env(tmp_path, slack, home, GPU_QUOTA_CONFIG=str(path))
    env["KUBECONFIG"] = str(kubeconfig(tmp_path / "clusters.kubeconfig", home, remote))  # it has no context ap-3
    result = run_bot("check-config", env=env)
    assert result.returncode == 1
    problems = [line for line in result.stderr.splitlines() if line.startswith("problem:")]
    assert any(line.startswith("problem: cluster ap-3: KUBECONFIG") and "ap-3" in line for line in problems), problems
    assert f"problem: namespace {REMOTE} (policy) does not exist in cluster us-2" in problems
    assert not [line for line in problems if "eu-1" in line or "in the cluster" in line]  # the home cluster is sound


def test_a_shift_moves_gpus_from_one_cluster_to_another_source_first(
    slack: SlackOverHttp, clusters: tuple[KubeApiStandIn, KubeApiStandIn]
) -> None:
    home, remote = clusters
    slack.command(BOB, f"shift 1 from {REMOTE} to biz-model-serving for 1d serving needs one more")
    card = slack.request_message("C0BIZ")
    slack.click(MAYA, slack.buttons(card)["Approve"], card)
    copy = slack.request_message("C0FRONTIER")
    slack.click(LEE, slack.buttons(copy)["Approve"], copy)
    assert (remote.hard(RESEARCH, QUOTA), home.hard("biz-model-serving", QUOTA)) == ("1", "17")
    assert remote.quota_writes(RESEARCH) == 1 and home.quota_writes("biz-model-serving") == 1
    assert f"*{REMOTE}* 2 GPUs → *1 GPU*" in slack.thread(card)[-1]


@pytest.mark.parametrize("named", ["frontier-gpus", "frontier-gpu"])  # the second: a typo, no such quota
def test_a_federated_quota_moves_the_members_assignment_and_overall_together(
    database_url: str, clock: ManualClock, tmp_path: Path, clusters: tuple[KubeApiStandIn, KubeApiStandIn], named: str
) -> None:
    home, remote = clusters
    plane = KarmadaApiStandIn().start()
    try:
        key = "requests.nvidia.com/gpu"
        plane.add_namespace(RESEARCH)
        plane.add_federated_quota(
            RESEARCH, "frontier-gpus", overall={key: "8"}, assignments={"eu-1": {key: "4"}, "us-2": {key: "2"}}
        )
        plane.sync_members({"eu-1": home, "us-2": remote})
        policy = yaml.safe_load(SANDBOX_POLICY.read_text())
        policy["clusters"] = {"eu-1": {"home": True}, "us-2": {"context": "us-2"}}
        policy["karmada"] = {"context": "karmada"}
        policy["teams"]["frontier"]["namespaces"].append(
            {"name": REMOTE, "resources": [{"name": "nvidia.com/gpu", "federated_quota": {"name": named}}]}
        )
        config = kubeconfig(tmp_path / "kubeconfig", home, remote, karmada=plane)
        box = Sandbox(policy=parse_policy(policy), clock=clock, kubeconfig=config, database_url=database_url).start()
        with served(box) as slack:
            if named != "frontier-gpus":
                slack.command(ALICE, f"request {REMOTE} +2 for 1d federated sweep")
                assert "the FederatedResourceQuota `frontier-gpu` does not exist on the Karmada plane" in slack.responses()[-1]
                assert plane.federated_quota_writes() == 0
                return
            assert approve(slack, f"request {REMOTE} +2 for 1d federated sweep").endswith("it is applied.")
            assert (plane.assignment(RESEARCH, "frontier-gpus", "us-2", key), plane.overall(RESEARCH, "frontier-gpus", key)) == (
                "4",
                "10",
            )  # one patch: the unassigned part of overall stays 2
            assert plane.assignment(RESEARCH, "frontier-gpus", "eu-1", key) == "4" and plane.federated_quota_writes() == 1
            assert remote.quota_writes(RESEARCH) == 0  # the member's quota is Karmada's to propagate, not the bot's
    finally:
        plane.stop()


def test_check_config_reads_the_federated_quotas_on_the_karmada_plane(
    tmp_path: Path, stand_ins: tuple, clusters: tuple[KubeApiStandIn, KubeApiStandIn]
) -> None:
    slack, _ = stand_ins
    home, remote = clusters
    plane = KarmadaApiStandIn().start()
    try:
        plane.add_namespace(RESEARCH)
        plane.add_federated_quota(RESEARCH, "frontier-gpus", overall={"requests.nvidia.com/gpu": "8"})  # no assignments
        policy = yaml.safe_load(SANDBOX_POLICY.read_text())
        policy["clusters"] = {"eu-1": {"home": True}, "us-2": {"context": "us-2"}}
        policy["karmada"] = {"context": "karmada"}
        policy["teams"]["frontier"]["namespaces"].append(
            {"name": REMOTE, "resources": [{"name": "nvidia.com/gpu", "federated_quota": {"name": "frontier-gpus"}}]}
        )
        path = tmp_path / "policy.yaml"
        path.write_text(yaml.safe_dump(policy))
        env = run_env(tmp_path, slack, home, GPU_QUOTA_CONFIG=str(path))
        env["KUBECONFIG"] = str(kubeconfig(tmp_path / "clusters.kubeconfig", home, remote, karmada=plane))
        result = run_bot("check-config", env=env)
        assert result.returncode == 1
        problems = [line for line in result.stderr.splitlines() if line.startswith("problem:")]
        assert len(problems) == 1 and "frontier-gpus" in problems[0] and "us-2" in problems[0], problems
        assert f"(policy: nvidia.com/gpu of {REMOTE})" in problems[0]
    finally:
        plane.stop()
