"""Approve -> quota PATCH in the home cluster while another cluster hangs, against the same run with it healthy.

Starts the bot as ``gpu-quota-bot run`` serves it (HTTP, waitress, SQLite, INFO logs, the production
defaults: 8 workers, at most 4 calls in flight per cluster, a cluster that stopped answering tried again
after 10 s) with a policy of two clusters: eu-1, the home cluster (B), and us-2 (A, ``timeout_seconds``
2), each a Kubernetes API stand-in on its own port reached through its own kubeconfig context, and the
Slack stand-in answering in 1 ms. It submits the requests first (unmeasured: frontier's
ai-frontier-research in each cluster, +1 GPU for a day), then clicks Approve at a steady rate, open
loop (each click at its time, whatever the bot is still doing), every 4th click one of us-2's
requests. Each home approval is timed from its signed click to its quota PATCH (the write, not the dry
run) arriving at eu-1's stand-in, matched by the request the write is stamped with.

Twice, in one bot process: with us-2 answering, then with us-2 hanging on every call (answering only
after 3 times its timeout, as an API server whose etcd stalls). Prints p50 / p99 / max of both runs and
the ratio of the hanging run's to the healthy one's (target: p99 <= 1.2x).

    .venv/bin/python bench/hanging_cluster.py                      # 200 home approvals per run, 20 clicks/s
    .venv/bin/python bench/hanging_cluster.py --approvals 400 --rate 30

Takes about 40 s on a 2-core machine with the defaults.
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
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
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
SENDERS = 16  # threads posting the clicks: a click never waits for another's ack
SUBMIT_BATCH = 128  # requests submitted at once, well within the work pool's 256


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
    delays: list[float]  # home approvals: click -> PATCH, seconds
    missing: int  # home approvals whose PATCH did not arrive
    slowest_ack: float


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


def click_at_rate(cards: list[Card], rate: float, approve: Callable[[Card], float]) -> tuple[dict[str, float], float]:
    """Click each card at its time (open loop: ``rate`` a second); returns when each was clicked and the slowest ack."""
    clicked: dict[str, float] = {}
    acks: list[float] = []
    start = time.perf_counter()

    def click(index: int, card: Card) -> None:
        time.sleep(max(0.0, start + index / rate - time.perf_counter()))
        sent = approve(card)
        clicked[card.request_id] = sent
        acks.append(time.perf_counter() - sent)

    with ThreadPoolExecutor(SENDERS) as pool:
        for future in [pool.submit(click, index, card) for index, card in enumerate(cards)]:
            future.result()
    return clicked, max(acks)


def run(name: str, clicks: Clicks, home_kube: PatchTimes, home: list[Card], remote: list[Card], rate: float) -> Run:
    clicked, slowest_ack = click_at_rate(interleaved(home, remote, 4), rate, clicks.approve)
    ids = [f"GQ-{card.request_id}" for card in home]
    home_kube.wait_for_patches(ids, timeout=60)
    delays = [
        home_kube.patched[f"GQ-{c.request_id}"] - clicked[c.request_id] for c in home if f"GQ-{c.request_id}" in home_kube.patched
    ]
    return Run(name, delays, len(home) - len(delays), slowest_ack)


def hang(kube: KubeApiStandIn, seconds: float) -> None:
    """Every call to ``kube`` answers only after ``HANG`` seconds, for ``seconds``."""
    for method in ("GET", "PATCH", "POST", "PUT"):
        kube.fail(method, "^/", 0, delay=HANG, seconds=seconds)


def report(healthy: Run, hanging: Run, *, rate: float) -> None:
    print(f"Approve click -> quota PATCH in eu-1 (home), {rate:g} clicks/s, every 4th click one of us-2's requests")
    print("| run | approvals in eu-1 | p50 | p99 | max | slowest ack |")
    print("|---|---:|---:|---:|---:|---:|")
    for measured in (healthy, hanging):
        lost = f" ({measured.missing} without a PATCH)" if measured.missing else ""
        print(
            f"| {measured.name} | {len(measured.delays)}{lost} | {ms(percentile(measured.delays, 0.5))} ms "
            f"| {ms(percentile(measured.delays, 0.99))} ms | {ms(max(measured.delays, default=float('nan')))} ms "
            f"| {ms(measured.slowest_ack)} ms |"
        )
    p50 = percentile(hanging.delays, 0.5) / percentile(healthy.delays, 0.5)
    p99 = percentile(hanging.delays, 0.99) / percentile(healthy.delays, 0.99)
    print(f"\nratio, us-2 hanging / healthy: p50 {p50:.2f}x, p99 {p99:.2f}x (target: p99 <= 1.2x)")
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--approvals", type=int, default=200, help="approvals in the home cluster per run (default 200)")
    parser.add_argument("--rate", type=float, default=20.0, help="clicks a second, us-2's included (default 20)")
    args = parser.parse_args()
    remote_count = args.approvals // 3  # every 4th click

    slack, home_kube, remote_kube = SlowSlack(), PatchTimes(), KubeApiStandIn()
    for stand_in in (slack, home_kube, remote_kube):
        stand_in.start()
    seed_cluster(home_kube)
    seed_remote(remote_kube)
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="hanging-cluster-bench-") as tmp_name:
        tmp = Path(tmp_name)
        config = kubeconfig(tmp / "kubeconfig", home_kube, remote_kube)
        env = bot_env(tmp, slack=slack, policy=bench_policy(tmp), kubeconfig=config, port=port)
        with (tmp / "bot.log").open("wb") as log:
            bot = start_bot(env, log)
        try:
            wait_for(lambda: ok(f"http://127.0.0.1:{port}/readyz"), timeout=60, what="the bot")
            clicks = Clicks(port, slack)
            home, remote = submit(clicks, slack, home=2 * args.approvals, remote=2 * remote_count)
            healthy = run("us-2 healthy", clicks, home_kube, home[: args.approvals], remote[:remote_count], args.rate)
            hang(remote_kube, seconds=(args.approvals + remote_count) / args.rate + 10)
            hanging = run("us-2 hanging", clicks, home_kube, home[args.approvals :], remote[remote_count:], args.rate)
        finally:
            stop([bot])
    for stand_in in (slack, home_kube, remote_kube):
        stand_in.stop()
    report(healthy, hanging, rate=args.rate)
    return 0


if __name__ == "__main__":
    sys.exit(main())
