"""Bursts as a load test sends them: how many commands the bot refuses, answers, and how fast, beside the bare Bolt app.

Starts the bot as ``gpu-quota-bot run`` serves it after ``db upgrade`` (HTTP, waitress with 8 threads,
SQLite, JSON logs) and ``bench/bare_bolt.py``, against the Slack and Kubernetes stand-ins of
``bot/sandbox`` on loopback in this process (as ``bench/ack_latency.py`` does). Unlike that benchmark's
users, these send their next command as soon as the ack arrives (a load generator's closed loop), or on
a clock (open loop); every command's answer is then awaited: its reply posted to ``response_url`` and,
for a ``request``, its card posted in the channel. Phases (the issue's, #23):

1. ``status`` and ``request`` at concurrency 1, Slack at once: the ack p50 (each waits for its answer);
2. 2,000 ``status`` at concurrency 64 in rounds of 500, Slack at once;
3. 2,000 ``request`` the same way;
4. 500 ``request`` at concurrency 64, Slack answering every call in 150 ms;
5. open loop: 50 ``request``s a second for 60 s, Slack in 150 ms.

Each prints refused (acked "busy"), answered, expired, unanswered, the answer latency (command -> last
of its answers) and the ack over served commands only, against the bare app's acks in the same phase
(bot and bare rounds alternate). Then the bot's RSS after the load.

    .venv/bin/python bench/bursts.py                       # about 5 minutes on 2 cores
    .venv/bin/python bench/bursts.py --bot-root /work/main # the same load against another checkout's bot
    .venv/bin/python bench/bursts.py --total 1000 --open-seconds 20   # quicker
"""

from __future__ import annotations

import argparse
import http.client
import itertools
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.ack_latency import (  # noqa: E402
    NAMESPACE,
    PatchClock,
    Server,
    SlowSlack,
    _bare_up,
    bench_policy,
    bot_env,
    percentile,
    stop,
)
from bot.sandbox.httpserver import Incoming, Outgoing  # noqa: E402
from bot.sandbox.session import BOT_TOKEN, SIGNING_SECRET  # noqa: E402
from bot.sandbox.slack_client import SlackSide  # noqa: E402
from bot.sandbox.world import seed_cluster  # noqa: E402
from tests.integration.processes import ROOT, free_port, ok, wait_for  # noqa: E402

ALICE = "U0ALICE"
TAG = re.compile(r"burstcmd(\d+)x")
# Today's figures (main before #23, from the issue) and the targets, printed beside each phase.
BEFORE = {
    "status c64": "648 of 2,000 refused",
    "request c64": "838 of 2,000 refused",
    "request c64, Slack 150 ms": "236 of 500 refused",
    "open loop 50/s, Slack 150 ms": "not measured",
}


class AnswerClock(SlowSlack):
    """The Slack stand-in noting when each command's reply (by its response_url) and card (by its tag) arrived."""

    def __init__(self) -> None:
        super().__init__()
        self.replies: dict[str, tuple[float, str]] = {}  # response path key -> (answered, text)
        self.cards: dict[str, float] = {}  # command number -> card posted

    def _handle(self, incoming: Incoming) -> Outgoing:
        outgoing = super()._handle(incoming)
        at = time.perf_counter()
        if incoming.path.startswith("/respond/"):
            text = str((incoming.json() or {}).get("text", ""))
            self.replies.setdefault(incoming.path[len("/respond/") :], (at, text))
        elif incoming.path == "/api/chat.postMessage" and (found := TAG.search(incoming.body.decode(errors="replace"))):
            self.cards.setdefault(found.group(1), at)  # the card is the first message naming the command
        return outgoing


@dataclass
class Sent:
    number: int
    workload: str
    started: float
    acked: float
    refused: bool


@dataclass
class Phase:
    """What one phase measured of one server."""

    sent: list[Sent]
    answered: list[float]  # answer latencies, seconds
    expired: int
    unanswered: int

    @property
    def refused(self) -> int:
        return sum(s.refused for s in self.sent)

    @property
    def served_acks(self) -> list[float]:
        return [s.acked - s.started for s in self.sent if not s.refused]


class Load:
    """Commands posted to one server, each with its own response_url, and their answers awaited."""

    def __init__(self, slack: AnswerClock) -> None:
        self._slack = slack
        self._numbers = itertools.count(1)
        self._lock = threading.Lock()
        self._local = threading.local()

    def one(self, server: Server, workload: str) -> Sent:
        with self._lock:
            number = next(self._numbers)
        side = SlackSide(signing_secret=SIGNING_SECRET, response_url_base=self._slack.response_url(f"c{number}"), names={})
        text = "status biz-model-serving" if workload == "status" else f"request {NAMESPACE} +1 for 1d burstcmd{number}x"
        body = side.slash_command(user_id=ALICE, text=text)
        connection = self._connection(server)
        started = time.perf_counter()
        try:
            connection.request("POST", "/slack/events", body=body.encode(), headers=side.sign(body))
            response = connection.getresponse()
            ack_text = response.read().decode()
        except OSError:
            self._local.connections.pop(server.port, None)
            raise
        return Sent(number, workload, started, time.perf_counter(), "busy" in ack_text)

    def _connection(self, server: Server) -> http.client.HTTPConnection:
        connections = getattr(self._local, "connections", None)
        if connections is None:
            connections = self._local.connections = {}
        if server.port not in connections:
            connections[server.port] = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
        return connections[server.port]

    def closed_loop(self, server: Server, workload: str, *, total: int, concurrency: int) -> list[Sent]:
        """``total`` commands from ``concurrency`` users, each sending the next once its ack arrived."""
        left = iter(range(total))
        sent: list[Sent] = []

        def user() -> None:
            while True:
                with self._lock:
                    if next(left, None) is None:
                        return
                result = self.one(server, workload)
                with self._lock:
                    sent.append(result)

        threads = [threading.Thread(target=user) for _ in range(concurrency)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return sent

    def open_loop(self, server: Server, workload: str, *, rate: float, seconds: float) -> list[Sent]:
        """``rate`` commands a second for ``seconds``, each sent on time whatever the ones before await."""
        start = time.perf_counter()
        with ThreadPoolExecutor(max_workers=256, thread_name_prefix="arrival") as pool:
            futures = []
            for index in range(int(rate * seconds)):
                time.sleep(max(0.0, start + index / rate - time.perf_counter()))
                futures.append(pool.submit(self.one, server, workload))
            return [future.result() for future in futures]

    def answers(self, sent: list[Sent], *, timeout: float) -> Phase:
        """Wait up to ``timeout`` for every served command's answers; the latencies of those answered."""
        served = [s for s in sent if not s.refused]

        def answer_of(s: Sent) -> float | None:
            reply = self._slack.replies.get(f"c{s.number}/1")
            if reply is None:
                return None
            if s.workload == "request" and "GQ-" in reply[1]:  # a request saved: its card too
                card = self._slack.cards.get(str(s.number))
                return None if card is None else max(reply[0], card)
            return reply[0]

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and any(answer_of(s) is None for s in served):
            time.sleep(0.2)
        latencies, expired, unanswered = [], 0, 0
        for s in served:
            at = answer_of(s)
            if at is None:
                unanswered += 1
            elif "expired" in self._slack.replies[f"c{s.number}/1"][1]:
                expired += 1
            else:
                latencies.append(at - s.started)
        return Phase(sent, latencies, expired, unanswered)


@contextmanager
def servers(tmp: Path, slack: SlowSlack, kube: PatchClock, bot_root: Path) -> Iterator[tuple[Server, Server]]:
    """The bot (from ``bot_root``) and the bare Bolt app, as ``bench/ack_latency.py`` starts them."""
    bot_port, bare_port = free_port(), free_port()
    kubeconfig = kube.write_kubeconfig(tmp / "kubeconfig")
    env = bot_env(tmp, slack=slack, policy=bench_policy(tmp), kubeconfig=kubeconfig, port=bot_port)
    with (tmp / "bot.log").open("wb") as log:
        run = [sys.executable, "-m", "bot.cli"]
        subprocess.run([*run, "db", "upgrade"], env=env, cwd=bot_root, stdout=log, stderr=log, check=True)
        bot = subprocess.Popen([*run, "run"], env=env, cwd=bot_root, stdout=log, stderr=log)
        bare_args = [str(bare_port), SIGNING_SECRET, slack.api_url, BOT_TOKEN]
        bare = subprocess.Popen(
            [sys.executable, str(ROOT / "bench" / "bare_bolt.py"), *bare_args], cwd=ROOT, stdout=log, stderr=log
        )
    try:
        wait_for(lambda: ok(f"http://127.0.0.1:{bot_port}/readyz"), timeout=60, what="the bot")
        wait_for(lambda: _bare_up(bare_port), timeout=60, what="the bare Bolt app")
        yield Server("bot", bot_port, bot), Server("bare", bare_port, bare)
    finally:
        stop([bot, bare])


def merge(phases: list[Phase]) -> Phase:
    return Phase(
        [s for p in phases for s in p.sent],
        [a for p in phases for a in p.answered],
        sum(p.expired for p in phases),
        sum(p.unanswered for p in phases),
    )


def ms(seconds: float) -> str:
    return f"{seconds * 1000:,.1f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bot-root", type=Path, default=ROOT, help="the checkout whose bot is run (default: this one)")
    parser.add_argument("--total", type=int, default=2000, help="commands of each burst at Slack at once (default 2,000)")
    parser.add_argument("--round", type=int, default=500, help="commands per round (default 500)")
    parser.add_argument("--slow-total", type=int, default=500, help="requests with Slack in 150 ms (default 500)")
    parser.add_argument("--open-rate", type=float, default=50.0, help="open loop: commands a second (default 50)")
    parser.add_argument("--open-seconds", type=float, default=60.0, help="open loop: seconds (default 60; 0: none)")
    args = parser.parse_args()

    slack, kube = AnswerClock(), PatchClock()
    slack.start()
    kube.start()
    seed_cluster(kube)
    rows: list[tuple[str, Phase, Phase | None, str, str]] = []
    with (
        tempfile.TemporaryDirectory(prefix="bursts-") as tmp_name,
        servers(Path(tmp_name), slack, kube, args.bot_root) as (
            bot,
            bare,
        ),
    ):
        load = Load(slack)
        rss_idle = bot.rss_mib()
        slack.latency = 0.0

        def alternate(workload: str, *, total: int, size: int, concurrency: int, timeout: float) -> tuple[Phase, Phase]:
            mine: list[Phase] = []
            theirs: list[Phase] = []
            for done in range(0, total, size):
                count = min(size, total - done)
                mine.append(load.answers(load.closed_loop(bot, workload, total=count, concurrency=concurrency), timeout=timeout))
                theirs.append(Phase(load.closed_loop(bare, workload, total=count, concurrency=concurrency), [], 0, 0))
                print(f"  ... {workload}: {done + count} of {total}", file=sys.stderr)
            return merge(mine), merge(theirs)

        for workload in ("status", "request"):
            one: list[Phase] = []
            bare_one: list[Phase] = []
            for _ in range(40):  # one at a time, each awaiting its answer: the ack p50 at concurrency 1
                one.append(load.answers([load.one(bot, workload)], timeout=30))
                bare_one.append(Phase([load.one(bare, workload)], [], 0, 0))
                time.sleep(0.05)  # the work after the answer (outbox, Home tabs) done: one person at a time
            rows.append((f"{workload} c1", merge(one), merge(bare_one), "p50 <= 2 ms", "p99 <= 3 s"))
        for workload in ("status", "request"):
            got, base = alternate(workload, total=args.total, size=args.round, concurrency=64, timeout=300)
            rows.append((f"{workload} c64", got, base, "p99 <= 1.5x bare", "p99 <= 3 s"))
        slack.latency = 0.150
        got, base = alternate("request", total=args.slow_total, size=args.slow_total, concurrency=64, timeout=900)
        rows.append(("request c64, Slack 150 ms", got, base, "p99 <= 1.5x bare", "p99 <= 15 s"))
        if args.open_seconds > 0:
            sent = load.open_loop(bot, "request", rate=args.open_rate, seconds=args.open_seconds)
            rows.append(
                (f"open loop {args.open_rate:g}/s, Slack 150 ms", load.answers(sent, timeout=900), None, "", "p99 <= 15 s")
            )
        rss_after = bot.rss_mib()

    slack.stop()
    kube.stop()
    report(rows, rss_idle, rss_after, bot_root=args.bot_root)
    return 0


def report(rows: list[tuple[str, Phase, Phase | None, str, str]], rss_idle: float, rss_after: float, *, bot_root: Path) -> None:
    print(f"\nbot from {bot_root}")
    print(
        "| phase | refused | answered | expired / unanswered | answer p50 / p99 | ack p50 / p99 (served) | bare ack p50 / p99 | ack ratio p50 / p99 | targets (ack; answer) | before (#23) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|---|")
    for name, got, base, ack_target, answer_target in rows:
        acks = got.served_acks
        a50, a99 = percentile(acks, 0.5), percentile(acks, 0.99)
        answered = got.answered
        line = (
            f"| {name} | {got.refused:,} of {len(got.sent):,} | {len(answered):,} | {got.expired} / {got.unanswered} "
            f"| {percentile(answered, 0.5):,.2f} / {percentile(answered, 0.99):,.2f} s | {ms(a50)} / {ms(a99)} ms "
        )
        if base is not None:
            b50, b99 = percentile(base.served_acks, 0.5), percentile(base.served_acks, 0.99)
            line += f"| {ms(b50)} / {ms(b99)} ms | {a50 / b50:.2f}x / {a99 / b99:.2f}x "
        else:
            line += "| — | — "
        print(line + f"| 0 refused; {ack_target}; {answer_target} | {BEFORE.get(name, '')} |")
    print(f"| RSS idle / after the load | {rss_idle:.0f} / {rss_after:.0f} MiB | | | | | | | < 110 MiB after | |")
    print(
        f"\n{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end: compare the bot with the bare app "
        "measured beside it (the ratios), not absolute times across runs."
    )


if __name__ == "__main__":
    sys.exit(main())
