"""How fast the bot acknowledges Slack, against a bare Bolt app measured in the same run, interleaved.

Starts the bot as ``gpu-quota-bot run`` serves it after the chart's ``db upgrade`` (HTTP mode, waitress with 8 threads, SQLite, INFO
logs) and ``bench/bare_bolt.py`` (a Bolt app that only acks, same WSGI glue and waitress), with the
Slack Web API and Kubernetes API stand-ins of ``bot/sandbox`` on loopback in this process. Virtual
users post signed requests over HTTP, each waiting for its ack and then for the bot's answer on its
response_url before sending the next (so at most ``concurrency`` requests are in flight). Bot and
bare batches alternate, round after round. Prints:

- ack p50 / p99 of ``help``, ``status``, ``request`` and Approve at concurrency 1 and 64, with Slack
  answering in 1 ms and in 150 ms, and the ratio to the bare app;
- Approve click -> quota PATCH p99 (concurrency 1);
- CPU per ``request`` (server process user+system time over a batch / requests);
- RSS idle (after start), after N/2 and after N requests.

    .venv/bin/python bench/ack_latency.py                 # N = 10,000 requests for the memory line
    .venv/bin/python bench/ack_latency.py --requests 2000 --rounds 1   # quicker
    .venv/bin/python bench/ack_latency.py --only approve --slack-ms 150 --concurrency 1 --requests 0   # Approve alone

``--only`` measures some workloads (Approve alone submits its requests first, unmeasured);
``--requests 0`` skips the memory line. The Approve -> PATCH line comes with its stages as the
Kubernetes stand-in sees them: the approval's quota read, the apply's read, the dry run, the PATCH.

Takes about 10 minutes on a 2-core machine with the defaults.
"""

from __future__ import annotations

import argparse
import http.client
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.sandbox.httpserver import Incoming, Outgoing  # noqa: E402
from bot.sandbox.kube_api import KubeApiStandIn  # noqa: E402
from bot.sandbox.session import BOT_TOKEN, SIGNING_SECRET  # noqa: E402
from bot.sandbox.slack_api import SlackApiStandIn  # noqa: E402
from bot.sandbox.slack_client import SlackSide  # noqa: E402
from bot.sandbox.world import CHANNELS, PEOPLE, USERGROUPS, seed_cluster  # noqa: E402
from tests.integration.processes import ROOT, SANDBOX_POLICY, free_port, ok, wait_for  # noqa: E402

ALICE, LEE = "U0ALICE", "U0LEE"
NAMESPACE = "ai-frontier-research"
WORKLOADS = ("help", "status", "request", "approve")
ANSWER_TIMEOUT = 120.0


# --- the stand-ins, with Slack's latency and a signal per answer ---------------------------------


class SlowSlack(SlackApiStandIn):
    """The Slack stand-in answering every call (Web API and response_url) after ``latency`` seconds."""

    def __init__(self) -> None:
        super().__init__(
            token=BOT_TOKEN, users={p.user_id: p.name for p in PEOPLE}, channels=dict(CHANNELS), usergroups=USERGROUPS
        )
        self.latency = 0.001
        self._answered: dict[str, threading.Semaphore] = {}
        self._answered_lock = threading.Lock()

    def answered(self, user_key: str) -> threading.Semaphore:
        """Released once per response_url post for ``user_key`` (``/respond/<user_key>/<n>``)."""
        with self._answered_lock:
            return self._answered.setdefault(user_key, threading.Semaphore(0))

    def _handle(self, incoming: Incoming) -> Outgoing:
        time.sleep(self.latency)
        outgoing = super()._handle(incoming)
        if incoming.path.startswith("/respond/"):
            self.answered(incoming.path.split("/")[2]).release()
        return outgoing


class PatchClock(KubeApiStandIn):
    """The Kubernetes stand-in, noting when each quota call of the benchmark's namespace arrives."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[float, str]] = []  # (arrived, "read" | "dry run" | "patch")

    @property
    def patches(self) -> list[float]:
        """When each real (not dry-run) quota PATCH arrived."""
        return [at for at, stage in self.calls if stage == "patch"]

    def _handle(self, incoming: Incoming) -> Outgoing:
        at = time.perf_counter()
        if f"/namespaces/{NAMESPACE}/resourcequotas/" in incoming.path:
            if incoming.method == "GET":
                self.calls.append((at, "read"))
            elif incoming.method == "PATCH":
                self.calls.append((at, "dry run" if "dryRun" in incoming.query else "patch"))
        return super()._handle(incoming)


# --- the two servers ---------------------------------------------------------------------------


@dataclass
class Server:
    name: str
    port: int
    process: subprocess.Popen[bytes]

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def rss_mib(self) -> float:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        raise RuntimeError("no VmRSS")


def bench_policy(tmp: Path) -> Path:
    """The sandbox policy with room for thousands of approvals in one namespace."""
    policy = yaml.safe_load(SANDBOX_POLICY.read_text())
    policy["teams"]["frontier"]["limits"]["max_gpus_per_namespace"] = 1_000_000
    path = tmp / "policy.yaml"
    path.write_text(yaml.safe_dump(policy))
    return path


def bot_env(tmp: Path, *, slack: SlackApiStandIn, policy: Path, kubeconfig: Path, port: int) -> dict[str, str]:
    """The environment of ``gpu-quota-bot run`` against the stand-ins: HTTP on ``port``, SQLite in ``tmp``, JSON logs."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "GPU_QUOTA", "DATABASE_URL", "KUBECONFIG"))}
    env.update(
        SLACK_BOT_TOKEN=BOT_TOKEN,
        SLACK_SIGNING_SECRET=SIGNING_SECRET,
        SLACK_API_URL=slack.api_url,
        DATABASE_URL=f"sqlite:///{tmp}/bot.db",
        GPU_QUOTA_CONFIG=str(policy),
        KUBECONFIG=str(kubeconfig),
        PORT=str(port),
        LOG_FORMAT="json",
        SWEEP_INTERVAL_SECONDS="86400",
    )
    return env


def start_bot(env: dict[str, str], log: IO[bytes]) -> subprocess.Popen[bytes]:
    """``gpu-quota-bot run`` after ``db upgrade``, as the chart's init container does: the schema is at head
    before `run` starts, so `run` checks it without loading Alembic (on an empty database it migrates, and
    carries Alembic)."""
    subprocess.run([sys.executable, "-m", "bot.cli", "db", "upgrade"], env=env, cwd=ROOT, stdout=log, stderr=log, check=True)
    return subprocess.Popen([sys.executable, "-m", "bot.cli", "run"], env=env, cwd=ROOT, stdout=log, stderr=log)


def stop(processes: list[subprocess.Popen[bytes]]) -> None:
    """SIGTERM to each, then a minute for each to finish its work before it is killed."""
    for process in processes:
        process.send_signal(signal.SIGTERM)
    for process in processes:
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()


@contextmanager
def servers(tmp: Path, slack: SlowSlack, kube: KubeApiStandIn) -> Iterator[tuple[Server, Server]]:
    bot_port, bare_port = free_port(), free_port()
    kubeconfig = kube.write_kubeconfig(tmp / "kubeconfig")
    env = bot_env(tmp, slack=slack, policy=bench_policy(tmp), kubeconfig=kubeconfig, port=bot_port)
    with (tmp / "bot.log").open("wb") as log:
        bot = start_bot(env, log)
        bare = subprocess.Popen(
            [sys.executable, str(ROOT / "bench" / "bare_bolt.py"), str(bare_port), SIGNING_SECRET, slack.api_url, BOT_TOKEN],
            cwd=ROOT,
            stdout=log,
            stderr=log,
        )
    try:
        wait_for(lambda: ok(f"http://127.0.0.1:{bot_port}/readyz"), timeout=60, what="the bot")
        wait_for(lambda: _bare_up(bare_port), timeout=60, what="the bare Bolt app")
        yield Server("bot", bot_port, bot), Server("bare", bare_port, bare)
    finally:
        stop([bot, bare])


def _bare_up(port: int) -> bool:
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
        connection.request("GET", "/healthz")
        return connection.getresponse().status == 200
    except OSError:
        return False


# --- virtual users -----------------------------------------------------------------------------


@dataclass
class Batch:
    acks: list[float] = field(default_factory=list)  # seconds
    busy: int = 0
    lost: int = 0  # no answer within ANSWER_TIMEOUT
    patch_delays: list[float] = field(default_factory=list)
    stages: list[dict[str, float]] = field(default_factory=list)  # per click: stage -> seconds since the click


class Users:
    """Virtual users posting to one server; each waits for its ack, then for the bot's answer."""

    def __init__(self, slack: SlowSlack, kube: PatchClock) -> None:
        self._slack = slack
        self._kube = kube
        self._keys = iter(range(1, 10**9))
        self._lock = threading.Lock()

    def run(self, server: Server, workload: str, *, concurrency: int, per_user: int, pending: list[str]) -> Batch:
        batch = Batch()
        lock = threading.Lock()

        def user() -> None:
            with self._lock:
                key = f"u{next(self._keys)}"
            side = SlackSide(signing_secret=SIGNING_SECRET, response_url_base=self._slack.response_url(key), names={})
            answered = self._slack.answered(key)
            connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
            for _ in range(per_user):
                body = self._body(side, workload, pending if server.name == "bot" else None)
                if body is None:
                    return
                headers = side.sign(body)
                started = time.perf_counter()
                connection.request("POST", "/slack/events", body=body.encode(), headers=headers)
                response = connection.getresponse()
                text = response.read().decode()
                acked = time.perf_counter()
                waits = server.name == "bot" and workload != "help" and response.status == 200
                if workload != "approve" and text:  # a command's ack text: help, or the busy answer
                    waits = False
                    busy = "busy" in text
                else:
                    busy = False
                answered_in_time = answered.acquire(timeout=ANSWER_TIMEOUT) if waits else True
                answered_at = time.perf_counter()
                stages = (
                    self._stages_between(started, answered_at) if workload == "approve" and concurrency == 1 and waits else {}
                )
                with lock:
                    batch.acks.append(acked - started)
                    batch.busy += busy
                    batch.lost += not answered_in_time
                    if "patch" in stages:
                        batch.patch_delays.append(stages["patch"])
                        batch.stages.append({"ack": acked - started, **stages})
            connection.close()

        threads = [threading.Thread(target=user) for _ in range(concurrency)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return batch

    def _stages_between(self, started: float, answered: float) -> dict[str, float]:
        """The quota calls this click caused (at concurrency 1, those between the click and its answer)
        up to its PATCH, as seconds since the click: the reads numbered in order, the dry run, the PATCH."""
        stages: dict[str, float] = {}
        reads = 0
        for at, stage in list(self._kube.calls):
            if not started < at <= answered or "patch" in stages:
                continue
            if stage == "read":
                reads += 1
                stage = f"read {reads}"
            stages.setdefault(stage, at - started)
        return stages

    def _body(self, side: SlackSide, workload: str, pending: list[str] | None) -> str | None:
        if workload == "help":
            return side.slash_command(user_id=ALICE, text="help")
        if workload == "status":
            # The other team's namespace: its status does not grow with the requests this benchmark piles up.
            return side.slash_command(user_id=ALICE, text="status biz-model-serving")
        if workload == "request":
            return side.slash_command(user_id=ALICE, text=f"request {NAMESPACE} +1 for 1d benchmark run")
        if pending is None:  # the bare app: any click
            return side.block_action(user_id=LEE, action_id="gq_approve", value="1", channel_id="C0FRONTIER", message_ts="1.1")
        with self._lock:
            if not pending:
                return None
            button = json.loads(pending.pop())
        return side.block_action(
            user_id=LEE, action_id="gq_approve", value=button["value"], channel_id="C0FRONTIER", message_ts=button["ts"]
        )


def pending_approve_buttons(slack: SlackApiStandIn) -> list[str]:
    """Approve buttons of request cards that still show them, as JSON {value, ts}."""
    buttons = []
    for (channel, ts), message in list(slack.messages.items()):
        if channel != "C0FRONTIER" or message.thread_ts:
            continue
        for block in message.blocks:
            for element in block.get("elements", []) if block.get("type") == "actions" else []:
                if element.get("action_id") == "gq_approve":
                    buttons.append(json.dumps({"value": element["value"], "ts": ts}))
    return buttons


# --- the run -----------------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))] if ordered else float("nan")


def ms(value: float) -> str:
    return f"{value * 1000:,.1f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=10_000, help="requests for the memory line; 0: no memory line")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds per figure (default 2)")
    parser.add_argument("--concurrency", type=int, nargs="*", default=[1, 64], help="default: 1 64")
    parser.add_argument("--only", nargs="*", choices=WORKLOADS, default=list(WORKLOADS), help="workloads (default: all)")
    parser.add_argument("--slack-ms", type=float, nargs="*", default=[1, 150], help="Slack's latencies in ms (default: 1 150)")
    args = parser.parse_args()
    workloads = [w for w in WORKLOADS if w in args.only]
    latencies = [ms_ / 1000 for ms_ in args.slack_ms]

    slack, kube = SlowSlack(), PatchClock()
    slack.start()
    kube.start()
    seed_cluster(kube)
    with tempfile.TemporaryDirectory(prefix="ack-bench-") as tmp_name, servers(Path(tmp_name), slack, kube) as (bot, bare):
        users = Users(slack, kube)
        rss_idle = bot.rss_mib()
        bare_rss_idle = bare.rss_mib()
        results: dict[tuple[str, float, int, str], Batch] = {}
        cpu: dict[str, list[float]] = {"bot": [], "bare": []}
        for latency in latencies:
            slack.latency = latency
            for concurrency in args.concurrency:
                per_user = 40 if concurrency == 1 else max(1, 320 // concurrency)
                for _ in range(args.rounds):
                    if "approve" in workloads and "request" not in workloads:  # cards to approve, unmeasured
                        users.run(
                            bot,
                            "request",
                            concurrency=min(concurrency, 16),
                            per_user=per_user * concurrency // min(concurrency, 16),
                            pending=[],
                        )
                    for workload in workloads:
                        for server in (bot, bare):
                            pending = pending_approve_buttons(slack) if workload == "approve" else []
                            before = server.cpu_seconds()
                            batch = users.run(server, workload, concurrency=concurrency, per_user=per_user, pending=pending)
                            if workload == "request" and concurrency == max(args.concurrency) and latency == min(latencies):
                                cpu[server.name].append((server.cpu_seconds() - before) / max(1, len(batch.acks)))
                            into = results.setdefault((server.name, latency, concurrency, workload), Batch())
                            into.acks += batch.acks
                            into.busy += batch.busy
                            into.lost += batch.lost
                            into.patch_delays += batch.patch_delays
                            into.stages += batch.stages
                    print(f"  ... Slack {ms(latency)} ms, concurrency {concurrency}: round done", file=sys.stderr)

        memory = None
        if args.requests > 0:
            slack.latency = 0.001
            half = args.requests // 2
            users.run(bot, "request", concurrency=16, per_user=max(1, half // 16), pending=[])
            rss_half = bot.rss_mib()
            users.run(bot, "request", concurrency=16, per_user=max(1, half // 16), pending=[])
            memory = Memory((rss_idle, rss_half, bot.rss_mib()), (bare_rss_idle, bare.rss_mib()), 2 * (half // 16) * 16)

    slack.stop()
    kube.stop()
    load = os.getloadavg()[0]
    report(results, cpu, args.concurrency, workloads, latencies, memory)
    print(
        f"\n{os.cpu_count()} cores, load average {load:.1f} at the end: with other work on the machine, compare the "
        "bot with the bare app measured beside it (the ratios), not the absolute times across runs."
    )
    return 0


@dataclass(frozen=True)
class Memory:
    rss: tuple[float, float, float]  # idle, after half, after all
    bare_rss: tuple[float, float]  # idle, after all
    total: int


def report(
    results: dict[tuple[str, float, int, str], Batch],
    cpu: dict[str, list[float]],
    concurrencies: list[int],
    workloads: list[str],
    latencies: list[float],
    memory: Memory | None,
) -> None:
    names = {"help": "`help`", "status": "`status`", "request": "`request`", "approve": "Approve"}
    print("| figure | bot | bare Bolt (waitress) | ratio | target |")
    print("|---|---:|---:|---:|---|")
    for latency in latencies:
        slack_note = "" if latency == 0.001 else f", Slack answering in {ms(latency).removesuffix('.0')} ms"
        for concurrency in concurrencies:
            for workload in workloads:
                got, base = results[("bot", latency, concurrency, workload)], results[("bare", latency, concurrency, workload)]
                p50, p99 = percentile(got.acks, 0.5), percentile(got.acks, 0.99)
                b50, b99 = percentile(base.acks, 0.5), percentile(base.acks, 0.99)
                if concurrency == 1:
                    target = "p50 <= 2 ms"
                elif latency == 0.001:
                    target = "p99 <= 1.5x bare"
                else:
                    target = "p99 < 300 ms"
                extra = f" ({got.busy} busy, {got.lost} unanswered)" if got.busy or got.lost else ""
                print(
                    f"| {names[workload]} ack p50 / p99, concurrency {concurrency}{slack_note} "
                    f"| {ms(p50)} / {ms(p99)} ms{extra} | {ms(b50)} / {ms(b99)} ms "
                    f"| {p50 / b50:.2f}x / {p99 / b99:.2f}x | {target} |"
                )
    approvals = (
        [(latency, results[("bot", latency, 1, "approve")]) for latency in latencies]
        if 1 in concurrencies and "approve" in workloads
        else []
    )
    for latency, batch in approvals:
        delays = batch.patch_delays
        print(
            f"| Approve click -> quota PATCH p50 / p99 (n={len(delays)}), Slack in {ms(latency)} ms "
            f"| {ms(percentile(delays, 0.5))} / {ms(percentile(delays, 0.99))} ms "
            f"| — | | < 50 ms (150 ms Slack) |"
        )
    if "request" in workloads and cpu["bot"]:
        bot_cpu, bare_cpu = statistics.median(cpu["bot"]), statistics.median(cpu["bare"] or [math.nan])
        print(
            f"| CPU per `request` (server process) | {ms(bot_cpu)} ms | {ms(bare_cpu)} ms | {bot_cpu / bare_cpu:.1f}x | <= 3 ms |"
        )
    if memory is not None:
        rss, bare_rss, total = memory.rss, memory.bare_rss, memory.total
        print(
            f"| RSS idle / after {total // 2:,} / after {total:,} requests | {rss[0]:.0f} / {rss[1]:.0f} / {rss[2]:.0f} MiB "
            f"| {bare_rss[0]:.0f} / {bare_rss[1]:.0f} MiB | {rss[0] / bare_rss[0]:.1f}x "
            f"| < 90 idle, < 110 after 10,000, no growth between halves |"
        )
    for latency, batch in approvals:
        report_stages(latency, batch.stages)


def report_stages(latency: float, clicks: list[dict[str, float]]) -> None:
    """Approve click -> PATCH, stage by stage as the Kubernetes stand-in sees it (ms since the click)."""
    if not clicks:
        return
    order = ["ack", *sorted({s for c in clicks for s in c if s.startswith("read")}), "dry run", "patch"]
    print(
        f"\nApprove click -> PATCH by stage, Slack in {ms(latency)} ms ({len(clicks)} clicks; ms since the click, and since the stage before)"
    )
    print("| stage | p50 | p99 | max | step p50 | step p99 |")
    print("|---|---:|---:|---:|---:|---:|")
    for index, stage in enumerate(order):
        at = [c[stage] for c in clicks if stage in c]
        before = order[index - 1] if index else None
        steps = [c[stage] - c[before] for c in clicks if stage in c and before in c] if before else at
        print(
            f"| {stage} (n={len(at)}) | {ms(percentile(at, 0.5))} | {ms(percentile(at, 0.99))} | {ms(max(at))} "
            f"| {ms(percentile(steps, 0.5))} | {ms(percentile(steps, 0.99))} |"
        )


if __name__ == "__main__":
    sys.exit(main())
