"""A real ``gpu-quota-bot run`` process driven over signed HTTP, and what the tests read back from its
database: the helpers of the apply-integrity tests (real processes, the Kubernetes API stand-in)."""

from __future__ import annotations

import signal
import subprocess
import threading
from collections import Counter
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import requests
import yaml

from bot.adapters.db.database import Database
from bot.domain.entities import Request
from bot.domain.lifecycle import GrantState
from bot.domain.records import AuditEntry
from bot.domain.resources import GPU
from bot.sandbox.session import SIGNING_SECRET
from bot.sandbox.slack_api import Recorded, SlackApiStandIn
from bot.sandbox.slack_client import SlackSide
from tests.integration.processes import ROOT, SANDBOX_POLICY, bot_command, ok, wait_for

NAMESPACE = "ai-frontier-research"
QUOTA = "compute-quota"


def roomy_policy(tmp_path: Path, *, max_gpus: int = 200) -> Path:
    """The sandbox policy with a namespace limit high enough for a burst of requests."""
    policy = yaml.safe_load(SANDBOX_POLICY.read_text())
    policy["teams"]["frontier"]["limits"]["max_gpus_per_namespace"] = max_gpus
    path = tmp_path / "policy.yaml"
    path.write_text(yaml.safe_dump(policy))
    return path


class BotProcess:
    """One ``gpu-quota-bot run`` (HTTP mode); ``restart`` starts it again on the same port and database."""

    def __init__(self, name: str, env: dict[str, str], log_dir: Path) -> None:
        self.name = name
        self.env = env
        self.base = f"http://127.0.0.1:{env['PORT']}"
        self.log = log_dir / f"{name}.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.start()

    def start(self) -> None:
        self.process = subprocess.Popen(
            bot_command("run"), env=self.env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=self.log.open("a")
        )

    def ready(self, timeout: float = 60) -> BotProcess:
        wait_for(lambda: ok(f"{self.base}/readyz"), timeout=timeout, what=f"bot {self.name} to be ready")
        return self

    def kill(self) -> None:
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()


class Driver:
    """Sends signed slash commands and clicks to bot processes and reads what Slack received."""

    def __init__(self, slack: SlackApiStandIn) -> None:
        self.slack = slack
        self.side = SlackSide(signing_secret=SIGNING_SECRET, response_url_base=slack.response_url("r"), names={})

    def post(self, bot: BotProcess, body: str) -> bool:
        try:
            return requests.post(f"{bot.base}/slack/events", data=body, headers=self.side.sign(body), timeout=10).ok
        except requests.RequestException:
            return False  # the process is down (the kill loop): the caller clicks again later

    def submit(self, bot: BotProcess, text: str) -> None:
        assert self.post(bot, self.side.slash_command(user_id="U0ALICE", text=text)), f"could not submit {text!r}"

    def card(self, request_id: int) -> Recorded:
        return wait_for(  # type: ignore[return-value]
            lambda: next(
                (
                    r
                    for r in self.slack.records
                    if r.kind == "message" and r.channel == "C0FRONTIER" and not r.thread_ts and f"GQ-{request_id}" in r.text
                ),
                None,
            ),
            timeout=30,
            what=f"the message of GQ-{request_id}",
        )

    def approve(self, bot: BotProcess, request_id: int, user: str = "U0LEE") -> bool:
        card = self.card(request_id)
        click = self.side.block_action(
            user_id=user, action_id="gq_approve", value=str(request_id), channel_id=card.channel, message_ts=card.ts
        )
        return self.post(bot, click)

    def approve_all_at_once(self, clicks: Iterable[tuple[BotProcess, int]]) -> None:
        """Every (bot, request) click sent at the same moment (released together by a barrier)."""
        clicks = list(clicks)
        bodies = []
        for bot, request_id in clicks:
            card = self.card(request_id)
            body = self.side.block_action(
                user_id="U0LEE", action_id="gq_approve", value=str(request_id), channel_id=card.channel, message_ts=card.ts
            )
            bodies.append((bot, body))
        barrier = threading.Barrier(len(bodies))

        def send(item: tuple[BotProcess, str]) -> bool:
            barrier.wait()
            return self.post(*item)

        with ThreadPoolExecutor(max_workers=len(bodies)) as pool:
            assert all(pool.map(send, bodies))

    def thread(self, request_id: int) -> list[str]:
        card = self.card(request_id)
        return [r.text for r in self.slack.thread(card.channel or "", card.ts or "")]

    def dms(self, user: str) -> list[str]:
        return [r.text for r in self.slack.records if r.kind == "message" and r.channel == "D" + user]


class Ledger:
    """What the bot's database says, read by the test through its own connection."""

    def __init__(self, url: str) -> None:
        self.database = Database.from_url(url)

    def states(self) -> dict[int, str]:
        return self.database.run(lambda repo: {r.id: str(r.state) for r in repo.session.query(Request).all()})

    def count(self, state: str) -> int:
        return sum(1 for s in self.states().values() if s == state)

    def audit(self, action: str) -> list[AuditEntry]:
        return self.database.run(lambda repo: list(repo.session.query(AuditEntry).filter(AuditEntry.action == action).all()))

    def per_request(self, action: str) -> Counter[int]:
        return Counter(row.request_id for row in self.audit(action) if row.request_id is not None)

    def base(self, namespace: str = NAMESPACE) -> int:
        row = self.database.run(lambda repo: repo.namespace(namespace, GPU))
        assert row is not None
        return row.base_gpus

    def desired(self, namespace: str = NAMESPACE) -> int:
        """base + active grants, as stored."""

        def read(repo):  # type: ignore[no-untyped-def]
            row = repo.namespace(namespace, GPU)
            grants = sum(g.gpus for g in repo.grants(states=[GrantState.ACTIVE], namespaces=[namespace]))
            return row.base_gpus + grants

        return self.database.run(read)

    def close(self) -> None:
        self.database.dispose()
