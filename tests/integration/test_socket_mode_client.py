"""The Socket Mode client (``bot/adapters/slack/socket_mode.py``) in this process, against the loopback
Socket Mode stand-in reached through ``apps.connections.open`` on the Slack Web API stand-in."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import websocket
from slack_sdk import WebClient

from bot.adapters.slack.socket_mode import SocketModeConnection
from bot.sandbox.slack_api import SlackApiStandIn
from bot.sandbox.socket_mode import SocketModeStandIn


@pytest.fixture
def servers() -> Iterator[tuple[SlackApiStandIn, SocketModeStandIn]]:
    slack = SlackApiStandIn(token="xoxb-test").start()
    socket_mode = SocketModeStandIn().start()
    slack.socket_mode = socket_mode
    yield slack, socket_mode
    socket_mode.stop()
    slack.stop()


def test_a_slow_listener_does_not_hold_up_the_next_envelope(servers: tuple[SlackApiStandIn, SocketModeStandIn]) -> None:
    slack, socket_mode = servers
    release = threading.Event()

    def handle(envelope: dict[str, Any]) -> dict[str, Any] | None:
        if envelope["payload"].get("text") == "slow":
            release.wait(30)
        return {"text": "done " + envelope["payload"]["text"]}

    connection = SocketModeConnection("xapp-1-test", web_client=WebClient(base_url=slack.api_url), handle=handle)
    assert connection.start(wait=10)
    try:
        slow = socket_mode.deliver("slash_commands", {"text": "slow"})
        fast = socket_mode.deliver("slash_commands", {"text": "fast"})
        assert slow and fast
        assert socket_mode.wait_for_ack(fast, timeout=10) == {"envelope_id": fast, "payload": {"text": "done fast"}}
        assert slow not in socket_mode.acks
        release.set()
        assert socket_mode.wait_for_ack(slow, timeout=10) == {"envelope_id": slow, "payload": {"text": "done slow"}}
    finally:
        release.set()
        connection.close()


def test_close_lets_a_running_listener_ack_before_the_connection_closes(
    servers: tuple[SlackApiStandIn, SocketModeStandIn],
) -> None:
    slack, socket_mode = servers
    started, release = threading.Event(), threading.Event()

    def handle(envelope: dict[str, Any]) -> dict[str, Any] | None:
        started.set()
        release.wait(30)
        return None

    connection = SocketModeConnection("xapp-1-test", web_client=WebClient(base_url=slack.api_url), handle=handle)
    assert connection.start(wait=10)
    envelope = socket_mode.deliver("interactive", {"type": "block_actions"})
    assert envelope and started.wait(10)
    closing = threading.Thread(target=connection.close)
    closing.start()
    release.set()
    closing.join(30)
    assert socket_mode.acks.get(envelope) == {"envelope_id": envelope}
    assert socket_mode.wait_for_connections(1, timeout=0.1) is False  # and then it is closed


def test_an_app_token_slack_refuses_is_retried_with_backoff_not_in_a_loop(
    servers: tuple[SlackApiStandIn, SocketModeStandIn],
) -> None:
    slack, socket_mode = servers
    connection = SocketModeConnection(
        "xoxb-not-an-app-token", web_client=WebClient(base_url=slack.api_url), handle=lambda envelope: None
    )
    assert connection.start(wait=2) is False
    connection.close()
    tries = slack.calls_of("apps.connections.open")
    assert 1 <= len(tries) <= 4  # 0.5 s, 1 s, 2 s ... apart (with jitter), not hundreds
    assert socket_mode.opened == 0


def test_the_stand_in_takes_envelopes_as_soon_as_the_handshake_is_answered_and_sends_hello_first(
    servers: tuple[SlackApiStandIn, SocketModeStandIn],
) -> None:
    """As Slack does: once the 101 is back the connection is open, and ``hello`` is its first message.
    (The stand-in used to register the connection after answering, so an envelope sent right away
    was sometimes refused: that is how CI saw ``deliver`` return None.)"""
    _, socket_mode = servers
    for _ in range(100):
        ws = websocket.create_connection(socket_mode.url(), timeout=5)
        try:
            envelope = socket_mode.deliver("slash_commands", {"text": "now"})
            assert envelope is not None
            assert json.loads(ws.recv())["type"] == "hello"
            assert json.loads(ws.recv())["envelope_id"] == envelope
        finally:
            ws.close()
