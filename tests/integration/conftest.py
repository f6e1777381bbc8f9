"""Integration fixtures: the real app over real HTTP, the stand-ins, PostgreSQL."""

from __future__ import annotations

import json
import os
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psycopg
import pytest
import requests
import waitress

from bot.adapters.db.database import Database
from bot.adapters.db.migrate import upgrade
from bot.adapters.slack.http import WebApp
from bot.clock import ManualClock
from bot.sandbox.kube_api import KubeApiStandIn
from bot.sandbox.session import BOT_TOKEN, Sandbox
from bot.sandbox.slack_api import Recorded
from bot.sandbox.world import sandbox_slack, seed_cluster

START = datetime(2026, 11, 30, 9, 0, tzinfo=timezone.utc)
POSTGRES_ADMIN_URL = os.environ.get("TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres")


class SlackOverHttp:
    """Posts signed requests to the bot's /slack/events over HTTP, then waits for the work after ack."""

    def __init__(self, sandbox: Sandbox, base_url: str) -> None:
        self.sandbox = sandbox
        self.base_url = base_url
        self.http = requests.Session()

    @property
    def side(self):  # type: ignore[no-untyped-def]
        assert self.sandbox.side is not None
        return self.sandbox.side

    def post(self, body: str, *, headers: dict[str, str] | None = None, timestamp: int | None = None) -> requests.Response:
        response = self.http.post(
            f"{self.base_url}/slack/events",
            data=body.encode(),
            headers=headers or self.side.sign(body, timestamp=timestamp),
            timeout=30,
        )
        assert self.sandbox.executor.wait_idle(timeout=30)
        return response

    def command(self, user: str, text: str, channel: str = "C0GENERAL") -> requests.Response:
        return self.post(self.side.slash_command(user_id=user, text=text, channel_id=channel))

    def click(self, user: str, button: dict[str, Any], message: Recorded | None = None) -> requests.Response:
        return self.post(
            self.side.block_action(
                user_id=user,
                action_id=button["action_id"],
                value=button.get("value", ""),
                channel_id=message.channel if message else None,
                message_ts=message.ts if message else None,
            )
        )

    def submit(self, user: str, view: dict[str, Any], values: dict[str, str]) -> requests.Response:
        return self.post(self.side.view_submission(user_id=user, view=view, values=values))

    # --- what Slack received ---

    def records(self, kind: str | None = None) -> list[Recorded]:
        return [r for r in self.sandbox.slack.records if kind is None or r.kind == kind]

    def responses(self) -> list[str]:
        return [r.text for r in self.records("response")]

    def channel_messages(self, channel: str) -> list[Recorded]:
        """The messages in ``channel`` (not in threads, not deleted), in order."""
        shown = self.sandbox.slack.messages
        return [r for r in self.records("message") if r.channel == channel and not r.thread_ts and (channel, r.ts) in shown]

    def request_message(self, channel: str = "C0FRONTIER") -> Recorded:
        messages = self.channel_messages(channel)
        assert messages, f"nothing was posted in {channel}"
        return messages[-1]

    def thread(self, message: Recorded) -> list[str]:
        return [r.text for r in self.sandbox.slack.thread(message.channel or "", message.ts or "")]

    def dms(self, user: str) -> list[str]:
        return [r.text for r in self.records("message") if r.channel == "D" + user]

    def buttons(self, message: Recorded) -> dict[str, dict[str, Any]]:
        current = self.sandbox.slack.messages[(message.channel or "", message.ts or "")]
        return buttons_of(current.blocks)

    def current_text(self, message: Recorded) -> str:
        current = self.sandbox.slack.messages[(message.channel or "", message.ts or "")]
        return json.dumps(current.blocks, ensure_ascii=False)


def buttons_of(blocks: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The buttons of a message, by label."""
    return {e["text"]["text"]: e for b in blocks if b["type"] == "actions" for e in b["elements"]}


def serve(app: Any) -> tuple[str, Any]:
    server = waitress.create_server(app, host="127.0.0.1", port=0, threads=4)
    threading.Thread(target=server.run, daemon=True).start()
    return f"http://127.0.0.1:{server.effective_port}", server


@contextmanager
def served(box: Sandbox) -> Iterator[SlackOverHttp]:
    """The started sandbox's Bolt app over real HTTP, stopped afterwards."""
    assert box.app is not None
    base, server = serve(WebApp(box.app))
    try:
        yield SlackOverHttp(box, base)
    finally:
        server.close()
        box.stop()


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


@pytest.fixture
def sandbox(clock: ManualClock) -> Iterator[Sandbox]:
    box = Sandbox(clock=clock, kube_timeout=(2.0, 2.0)).start()
    yield box
    box.stop()


@pytest.fixture
def slack(sandbox: Sandbox) -> Iterator[SlackOverHttp]:
    assert sandbox.app is not None
    url, server = serve(WebApp(sandbox.app))
    yield SlackOverHttp(sandbox, url)
    server.close()


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A fresh database on this machine's PostgreSQL, dropped afterwards."""
    name = f"gq_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    parts = urlsplit(POSTGRES_ADMIN_URL)
    yield parts._replace(path=f"/{name}").geturl()
    with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Database:
    """A migrated database, once on SQLite and once on this machine's PostgreSQL."""
    url = f"sqlite:///{tmp_path}/bot.db" if request.param == "sqlite" else request.getfixturevalue("postgres_url")
    upgrade(url)
    db = Database.from_url(url)
    request.addfinalizer(db.dispose)
    return db


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A database URL, once SQLite and once a fresh database on this machine's PostgreSQL (not migrated yet)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/bot.db"
    return str(request.getfixturevalue("postgres_url"))


@pytest.fixture
def stand_ins() -> Iterator[tuple]:
    """A sandbox Slack Web API and a seeded Kubernetes API, for bot processes to talk to."""
    slack = sandbox_slack(BOT_TOKEN).start()
    kube = KubeApiStandIn().start()
    seed_cluster(kube)
    yield slack, kube
    slack.stop()
    kube.stop()
