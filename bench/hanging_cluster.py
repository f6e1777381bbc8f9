"""Approve -> quota PATCH in the home cluster while another cluster hangs, against the same run with it healthy.

Two bots side by side, each as ``gpu-quota-bot run`` serves it (HTTP, waitress, SQLite, INFO logs, the
production defaults: 8 workers, at most 4 calls in flight per cluster, a cluster that stopped answering
tried again after 10 s), each with its own stand-ins: Slack answering in 1 ms, and a policy of two
clusters, eu-1 (home) and us-2 (``timeout_seconds`` 2), each a Kubernetes API stand-in on its own port
reached through its own kubeconfig context. In one, us-2 answers; in the other it hangs on every call
(answering only after 3 times its timeout, as an API server whose etcd stalls). Both get the same
requests first (unmeasured: frontier's ai-frontier-research in each cluster, +1 GPU for a day), then the
same clicks on Approve at a steady rate, the two bots' clicks alternating, open loop (each click at its
time, whatever the bot is still doing), every 4th click one of us-2's requests: the machine's load falls
on both alike. Each home approval is timed from its signed click to its quota PATCH (the write, not the
dry run) arriving at eu-1's stand-in, matched by the request the write is stamped with.

Prints p50 / p99 / max of both, over the whole run and from 2 s in (the first second of a hang, the
approvals queued behind the first one on us-2 hold their workers until they give up), and the ratios
hanging / healthy (target: p99 <= 1.2x).

    .venv/bin/python bench/hanging_cluster.py                      # 200 home approvals, 10 clicks/s into each bot
    .venv/bin/python bench/hanging_cluster.py --approvals 400 --rate 15

Takes about 35 s on a 2-core machine with the defaults.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from itertools import islice
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.ack_latency import SlowSlack, bot_env, ms, pending_approve_buttons, percentile, start_bot, stop  # noqa: E402
from bot.domain.quota import stamp_annotations  # noqa: E402
from bot.sandbox.httpserver import Incoming, Outgoing  # noqa: E402
from bot.sandbox.kube_api import KubeApiStandIn  # noqa: E402
from bot.sandbox.session import SIGNING_SECRET  # noqa: E402
from bot.sandbox.slack_client import SlackSide  # noqa: E402
from bot.sandbox.world import seed_cluster  # noqa: E402
from tests.integration.clusters_world import REMOTE, RESEARCH, kubeconfig, seed_remote, two_cluster_policy_data  # noqa: E402
from tests.integration.processes import free_port, ok, wait_for  # noqa: E402

ALICE, LEE = "U0ALICE", "U0LEE"
REMOTE_TIMEOUT = 2.0  # us-2's timeout_seconds
HANG = 3 * REMOTE_TIMEOUT  # how long us-2 takes to answer while it hangs
APPLIED_BY = stamp_annotations("nvidia.com/gpu")[1]
SENDERS = 32  # threads posting the clicks: a click never waits for another's ack
SUBMIT_BATCH = 128  # requests submitted at once, well within the work pool's 256
WARMUP = 20  # home approvals before the measured ones, unmeasured
ONSET = 2.0  # seconds: how long after it begins a hang is still news (approvals queued behind the first one give up after 1 s)
ONSET_NOTE = f" (from {ONSET:g} s in)"


class PatchTimes(KubeApiStandIn):
    """The Kubernetes stand-in, noting when each real quota PATCH arrives, by the request it is stamped with."""

    def __init__(self) -> None:
        super().__init__()
        self.patched: dict[str, float] = {}  # "GQ-17" -> perf_counter at arrival
        self._arrived = threading.Condition()

    def wait_for_patches(self, request_ids: list[str], timeout: float) -> None:
        with self._arrived:
            self._arrived.wait_for(lambda: all(r in self.patched for r in request_ids), timeout=timeout)

    def _handle(self, incoming: Incoming) -> Outgoing:
        at = time.perf_counter()
        if incoming.method == "PATCH" and "/resourcequotas/" in incoming.path and incoming.query.get("dryRun") != "All":
            stamped = ((incoming.json() or {}).get("metadata") or {}).get("annotations", {}).get(APPLIED_BY)
            if stamped:
                with self._arrived:
                    self.patched.setdefault(stamped, at)
                    self._arrived.notify_all()
        return super()._handle(incoming)


@dataclass(frozen=True)
class Card:
    request_id: str
    ts: str
    remote: bool  # one of us-2's requests


@dataclass
class Run:
    name: str
    timed: list[tuple[float, float]]  # home approvals: (clicked, seconds since the run's first click; click -> PATCH)
    missing: int  # home approvals whose PATCH did not arrive
    slowest_ack: float

    def delays(self, *, after: float = 0.0) -> list[float]:
        """Click -> PATCH of the approvals clicked ``after`` seconds into the run or later."""
        return [delay for clicked, delay in self.timed if clicked >= after]


def bench_policy(tmp: Path) -> Path:
    """The two-cluster policy with room for every approval in one namespace of each cluster."""
    policy = two_cluster_policy_data(remote_timeout_seconds=REMOTE_TIMEOUT)
    policy["teams"]["frontier"]["limits"]["max_gpus_per_namespace"] = 1_000_000
    path = tmp / "policy.yaml"
    path.write_text(yaml.safe_dump(policy))
    return path


class Clicks:
    """Signed Slack requests into the bot over HTTP, one kept-alive connection per sending thread."""

    def __init__(self, port: int, slack: SlowSlack) -> None:
        self._port = port
        self._side = SlackSide(signing_secret=SIGNING_SECRET, response_url_base=slack.response_url("bench"), names={})
        self._local = threading.local()

    def post(self, body: str) -> float:
        """Post ``body``; returns when it was sent (perf_counter) once the ack is back."""
        if not hasattr(self._local, "connection"):
            self._local.connection = http.client.HTTPConnection("127.0.0.1", self._port, timeout=60)
        headers = self._side.sign(body)
        sent = time.perf_counter()
        self._local.connection.request("POST", "/slack/events", body=body.encode(), headers=headers)
        response = self._local.connection.getresponse()
        response.read()
        if response.status != 200:
            raise RuntimeError(f"the bot answered {response.status}")
        return sent

    def request(self, namespace: str) -> float:
        return self.post(self._side.slash_command(user_id=ALICE, text=f"request {namespace} +1 for 1d benchmark run"))

    def approve(self, card: Card) -> float:
        body = self._side.block_action(
            user_id=LEE, action_id="gq_approve", value=card.request_id, channel_id="C0FRONTIER", message_ts=card.ts
        )
        return self.post(body)


@dataclass
class Twin:
    """One bot and its own stand-ins."""

    name: str
    slack: SlowSlack = field(default_factory=SlowSlack)
    home: PatchTimes = field(default_factory=PatchTimes)
    remote: KubeApiStandIn = field(default_factory=KubeApiStandIn)
    port: int = field(default_factory=free_port)

    @cached_property
    def clicks(self) -> Clicks:
        """Its clicks (once its Slack stand-in is started)."""
        return Clicks(self.port, self.slack)

    def told_waiting(self) -> int:
        """Thread replies saying a change waits for us-2."""
        return sum("waiting for cluster us-2" in r.text for r in self.slack.records if r.kind == "message")


def pending_cards(slack: SlowSlack) -> list[Card]:
    cards = []
    for button in map(json.loads, pending_approve_buttons(slack)):
        blocks = json.dumps(slack.messages[("C0FRONTIER", button["ts"])].blocks)
        cards.append(Card(button["value"], button["ts"], REMOTE in blocks))
    return cards


def submit(clicks: Clicks, slack: SlowSlack, *, home: int, remote: int) -> tuple[list[Card], list[Card]]:
    """``home`` requests in eu-1 and ``remote`` in us-2, their cards posted; returns the cards of each.
    In batches the work pool takes at once (a full pool answers busy)."""
    namespaces = [f"eu-1/{RESEARCH}"] * home + [REMOTE] * remote
    before = {card.request_id for card in pending_cards(slack)}
    with ThreadPoolExecutor(4) as pool:
        for start in range(0, len(namespaces), SUBMIT_BATCH):
            list(pool.map(clicks.request, namespaces[start : start + SUBMIT_BATCH]))
            posted = len(before) + min(len(namespaces), start + SUBMIT_BATCH)
            wait_for(lambda n=posted: len(pending_cards(slack)) >= n, timeout=120, what="the request cards")
    new = [card for card in pending_cards(slack) if card.request_id not in before]
    return [c for c in new if not c.remote], [c for c in new if c.remote]


def interleaved(home: list[Card], remote: list[Card], every: int) -> list[Card]:
    """The home cards with one of ``remote`` after every ``every - 1`` of them."""
    order: list[Card] = []
    remotes = iter(remote)
    for index, card in enumerate(home, start=1):
        order.append(card)
        if index % (every - 1) == 0:
            order.extend(islice(remotes, 1))
    return order


@contextmanager
def running(tmp: Path, twins: list[Twin]) -> Iterator[None]:
    """Each twin's stand-ins and bot started (and stopped after)."""
    processes = []
    for twin in twins:
        for stand_in in (twin.slack, twin.home, twin.remote):
            stand_in.start()
        seed_cluster(twin.home)
        seed_remote(twin.remote)
        own = tmp / twin.name.replace(" ", "-")
        own.mkdir()
        config = kubeconfig(own / "kubeconfig", twin.home, twin.remote)
        env = bot_env(own, slack=twin.slack, policy=bench_policy(own), kubeconfig=config, port=twin.port)
        with (own / "bot.log").open("wb") as log:
            processes.append(start_bot(env, log))
    try:
        for twin in twins:
            wait_for(lambda t=twin: ok(f"http://127.0.0.1:{t.port}/readyz"), timeout=60, what=f"the bot ({twin.name})")
        yield
    finally:
        stop(processes)
        for twin in twins:
            for stand_in in (twin.slack, twin.home, twin.remote):
                stand_in.stop()


def side_by_side(twins: list[Twin], cards: dict[str, tuple[list[Card], list[Card]]], rate: float) -> list[Run]:
    """Each twin's home cards (with its us-2 cards mixed in) clicked at ``rate``, the twins' clicks half a
    click apart; then each home approval's click -> PATCH."""
    schedule = [
        ((index + place / len(twins)) / rate, twin, card)  # the twins' clicks alternate
        for place, twin in enumerate(twins)
        for index, card in enumerate(interleaved(*cards[twin.name], 4))
    ]

    clicked, slowest = click_at(schedule)
    runs = []
    for twin in twins:
        home = cards[twin.name][0]
        twin.home.wait_for_patches([f"GQ-{card.request_id}" for card in home], timeout=60)
        first = min(at for (name, _), at in clicked.items() if name == twin.name)
        timed = [
            (
                clicked[twin.name, card.request_id] - first,
                twin.home.patched[f"GQ-{card.request_id}"] - clicked[twin.name, card.request_id],
            )
            for card in home
            if f"GQ-{card.request_id}" in twin.home.patched
        ]
        runs.append(Run(twin.name, timed, len(home) - len(timed), slowest[twin.name]))
    return runs


def click_at(schedule: list[tuple[float, Twin, Card]]) -> tuple[dict[tuple[str, str], float], dict[str, float]]:
    """Click each card at its time (seconds from now; open loop: whatever the bots are still doing); returns
    when each was clicked, by (twin, request), and each twin's slowest ack."""
    clicked: dict[tuple[str, str], float] = {}
    slowest: dict[str, float] = {}
    start = time.perf_counter()

    def click(at: float, twin: Twin, card: Card) -> None:
        time.sleep(max(0.0, start + at - time.perf_counter()))
        sent = twin.clicks.approve(card)
        clicked[twin.name, card.request_id] = sent
        slowest[twin.name] = max(slowest.get(twin.name, 0.0), time.perf_counter() - sent)

    with ThreadPoolExecutor(SENDERS) as pool:
        for future in [pool.submit(click, *item) for item in sorted(schedule, key=lambda item: item[0])]:
            future.result()
    return clicked, slowest


def hang(kube: KubeApiStandIn, seconds: float) -> None:
    """Every call to ``kube`` answers only after ``HANG`` seconds, for ``seconds``."""
    for method in ("GET", "PATCH", "POST", "PUT"):
        kube.fail(method, "^/", 0, delay=HANG, seconds=seconds)


def report(healthy: Run, hanging: Run, *, rate: float, load: float) -> None:
    print(f"Approve click -> quota PATCH in eu-1 (home), {rate:g} clicks/s into each bot, every 4th click one of us-2's requests")
    print("| run | approvals in eu-1 | p50 | p99 | max | slowest ack |")
    print("|---|---:|---:|---:|---:|---:|")
    for measured, after, window in (
        (healthy, 0.0, ""),
        (hanging, 0.0, ""),
        (healthy, ONSET, ONSET_NOTE),
        (hanging, ONSET, ONSET_NOTE),
    ):
        delays = measured.delays(after=after)
        lost = f" ({measured.missing} without a PATCH)" if measured.missing else ""
        print(
            f"| {measured.name}{window} | {len(delays)}{lost} | {ms(percentile(delays, 0.5))} ms "
            f"| {ms(percentile(delays, 0.99))} ms | {ms(max(delays, default=float('nan')))} ms | {ms(measured.slowest_ack)} ms |"
        )
    print()
    for after, window in ((0.0, "whole runs"), (ONSET, ONSET_NOTE.strip(" ()"))):
        base, hung = healthy.delays(after=after), hanging.delays(after=after)
        p50, p99 = percentile(hung, 0.5) / percentile(base, 0.5), percentile(hung, 0.99) / percentile(base, 0.99)
        print(f"ratio, us-2 hanging / healthy, {window}: p50 {p50:.2f}x, p99 {p99:.2f}x (target: p99 <= 1.2x)")
    print(f"{os.cpu_count()} cores, load average {load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--approvals", type=int, default=200, help="approvals in the home cluster (default 200)")
    parser.add_argument("--rate", type=float, default=10.0, help="clicks a second into each bot, us-2's included (default 10)")
    args = parser.parse_args()
    remote_count = args.approvals // 3  # every 4th click

    load = os.getloadavg()[0]
    healthy, hanging = Twin("us-2 healthy"), Twin("us-2 hanging")
    with tempfile.TemporaryDirectory(prefix="hanging-cluster-bench-") as tmp, running(Path(tmp), [healthy, hanging]):
        with ThreadPoolExecutor(2) as pool:
            submitted = list(
                pool.map(
                    lambda t: submit(t.clicks, t.slack, home=WARMUP + args.approvals, remote=remote_count), [healthy, hanging]
                )
            )
        cards = {twin.name: (home[WARMUP:], remote) for twin, (home, remote) in zip((healthy, hanging), submitted, strict=True)}
        warm = {twin.name: (home[:WARMUP], []) for twin, (home, _) in zip((healthy, hanging), submitted, strict=True)}
        side_by_side([healthy, hanging], warm, args.rate)  # the first approvals of a process, unmeasured
        hang(hanging.remote, seconds=(args.approvals + remote_count) / args.rate + 10)
        runs = side_by_side([healthy, hanging], cards, args.rate)
        told = hanging.told_waiting()
    report(runs[0], runs[1], rate=args.rate, load=load)
    print(f"us-2 hanging: {told} of its {remote_count} approvals in us-2 said in their threads that they wait for us-2")
    return 0


if __name__ == "__main__":
    sys.exit(main())
