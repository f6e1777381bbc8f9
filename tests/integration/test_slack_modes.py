"""``gpu-quota-bot run`` in each Slack mode, as a real process: Socket Mode against a loopback WebSocket
stand-in of Slack (``bot/sandbox/socket_mode.py``) that drops connections the way networks do, and
no route into Bolt over HTTP in Socket Mode; HTTP mode refuses to start on a placeholder secret."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, parse_qsl

import pytest
import requests

from bot.sandbox.session import SIGNING_SECRET
from bot.sandbox.slack_client import SlackSide
from bot.sandbox.socket_mode import SocketModeStandIn
from tests.integration.processes import ROOT, bot_command, ok, run_bot, run_env, wait_for

APP_TOKEN = "xapp-1-A0SANDBOX-1-sandbox"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@pytest.fixture
def socket_mode(stand_ins: tuple) -> Iterator[SocketModeStandIn]:
    slack, _ = stand_ins
    server = SocketModeStandIn().start()
    slack.socket_mode = server
    yield server
    slack.socket_mode = None
    server.stop()


@pytest.fixture
def socket_bot(
    request: pytest.FixtureRequest, tmp_path: Path, stand_ins: tuple, socket_mode: SocketModeStandIn
) -> Iterator[tuple[subprocess.Popen, str]]:
    """The bot in Socket Mode; with param False there is no SLACK_SIGNING_SECRET (the chart's default)."""
    slack, kube = stand_ins
    env = run_env(tmp_path, slack, kube, SLACK_APP_TOKEN=APP_TOKEN, LOG_FORMAT="text")
    if not getattr(request, "param", True):
        del env["SLACK_SIGNING_SECRET"]
    process = subprocess.Popen(bot_command("run"), env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{env['PORT']}"
    try:
        wait_for(lambda: ok(f"{base}/healthz") or process.poll() is not None, timeout=60, what="the bot to serve /healthz")
        assert process.poll() is None, process.communicate()[1]
        assert socket_mode.wait_for_connections(1, timeout=30), "the bot never opened a Socket Mode connection"
        yield process, base
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()


def slash_command(side: SlackSide, user: str, text: str) -> dict[str, Any]:
    """A slash command as Socket Mode carries it: the same fields as the HTTP form, as a JSON object."""
    return dict(parse_qsl(side.slash_command(user_id=user, text=text)))


def cpu_seconds(pid: int) -> float:
    """User + system CPU time the process has used (/proc/PID/stat, utime and stime)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def help_is_answered(socket_mode: SocketModeStandIn, side: SlackSide) -> None:
    """``/gpu-quota help`` sent over the socket: Bolt's ack carries the help text back in the envelope's ack."""
    envelope = socket_mode.deliver("slash_commands", slash_command(side, "U0ALICE", "help"))
    assert envelope is not None, "no open Socket Mode connection to deliver the command on"
    ack = socket_mode.wait_for_ack(envelope, timeout=15)
    assert ack is not None, "the command was never acked"
    assert "/gpu-quota request" in ack.get("payload", {}).get("text", ""), ack


@pytest.mark.parametrize("socket_bot", [False, True], ids=["no-secret-set", "secret-set"], indirect=True)
def test_socket_mode_serves_no_slack_route_so_forged_approvals_go_nowhere(
    stand_ins: tuple, socket_mode: SocketModeStandIn, socket_bot: tuple[subprocess.Popen, str]
) -> None:
    slack, kube = stand_ins
    _, base = socket_bot
    side = SlackSide(signing_secret=SIGNING_SECRET, response_url_base=slack.response_url("r"), names={})
    envelope = socket_mode.deliver(
        "slash_commands", slash_command(side, "U0ALICE", "request ai-frontier-research +4 for 3d fine-tune")
    )
    assert envelope is not None and socket_mode.wait_for_ack(envelope, timeout=15) is not None
    message: Any = wait_for(
        lambda: next((r for r in slack.records if r.kind == "message" and r.channel == "C0FRONTIER"), None),
        what="the request message posted from a command sent over Socket Mode",
    )
    before = kube.hard("ai-frontier-research", "compute-quota")
    for secret in ("unused-in-socket-mode", SIGNING_SECRET, "any-other-secret"):
        forger = SlackSide(signing_secret=secret, response_url_base=slack.response_url("r"), names={})
        click = forger.block_action(
            user_id="U0LEE", action_id="gq_approve", value="1", channel_id=message.channel, message_ts=message.ts
        )
        answer = requests.post(f"{base}/slack/events", data=click, headers=forger.sign(click), timeout=10)
        assert answer.status_code == 404, f"signed with {secret!r}: {answer.status_code}"
    assert requests.get(f"{base}/healthz", timeout=5).status_code == 200
    assert requests.get(f"{base}/readyz", timeout=5).status_code == 200
    assert "gpu_quota_requests" in requests.get(f"{base}/metrics", timeout=5).text
    # A real click, over the socket, still decides: the forged ones above changed nothing.
    assert kube.hard("ai-frontier-research", "compute-quota") == before == "4"
    assert not any("Approved" in r.text for r in slack.thread(message.channel, message.ts))
    real = json.loads(
        parse_qs(
            side.block_action(
                user_id="U0LEE", action_id="gq_approve", value="1", channel_id=message.channel, message_ts=message.ts
            )
        )["payload"][0]
    )
    envelope = socket_mode.deliver("interactive", real)
    assert envelope is not None and socket_mode.wait_for_ack(envelope, timeout=15) is not None
    wait_for(lambda: kube.hard("ai-frontier-research", "compute-quota") == "8", what="the approved quota patch")


@pytest.mark.parametrize("drops", [["fin", "rst", "refresh"]], ids=["fin-rst-refresh"])
def test_socket_mode_is_back_within_seconds_after_every_kind_of_drop_without_spinning(
    stand_ins: tuple, socket_mode: SocketModeStandIn, socket_bot: tuple[subprocess.Popen, str], drops: list[str]
) -> None:
    slack, _ = stand_ins
    process, _ = socket_bot
    side = SlackSide(signing_secret=SIGNING_SECRET, response_url_base=slack.response_url("r"), names={})
    help_is_answered(socket_mode, side)
    for drop in drops:
        opened = socket_mode.opened
        cpu_before = cpu_seconds(process.pid)
        socket_mode.drop(drop)  # type: ignore[arg-type]
        time.sleep(5)  # the measure: a command sent 5 s after the drop
        used = cpu_seconds(process.pid) - cpu_before
        assert socket_mode.opened > opened, f"after {drop}: no new connection within 5 s"
        help_is_answered(socket_mode, side)
        assert used < 2.0, f"after {drop}: {used:.2f} CPU seconds in 5 s (a spinning read loop)"


def test_socket_mode_gives_up_a_silent_connection(
    stand_ins: tuple, socket_mode: SocketModeStandIn, socket_bot: tuple[subprocess.Popen, str]
) -> None:
    slack, _ = stand_ins
    process, _ = socket_bot
    side = SlackSide(signing_secret=SIGNING_SECRET, response_url_base=slack.response_url("r"), names={})
    opened, cpu_before = socket_mode.opened, cpu_seconds(process.pid)
    socket_mode.drop("silent")  # open, but not even pongs come back
    wait_for(lambda: socket_mode.opened > opened and socket_mode.live_connections() > 0, timeout=30, what="a new connection")
    help_is_answered(socket_mode, side)
    assert cpu_seconds(process.pid) - cpu_before < 2.0


@pytest.mark.parametrize("secret", ["", "   ", "changeme", "unused-in-socket-mode", "xxx", "xxxxxxxxxxxxxxxx", "..."])
def test_http_mode_refuses_a_missing_or_placeholder_signing_secret(tmp_path: Path, stand_ins: tuple, secret: str) -> None:
    slack, kube = stand_ins
    result = run_bot("run", env=run_env(tmp_path, slack, kube, SLACK_SIGNING_SECRET=secret))
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "SLACK_SIGNING_SECRET" in lines[0], result.stderr
    if secret.strip():
        assert secret not in lines[0].split("SLACK_SIGNING_SECRET", 1)[1]
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("mode", "extra", "named"),
    [
        ("socket", {}, "SLACK_APP_TOKEN"),  # Socket Mode asked for, no app token
        ("http", {"SLACK_APP_TOKEN": APP_TOKEN, "SLACK_SIGNING_SECRET": ""}, "SLACK_SIGNING_SECRET"),
        ("sockets", {}, "SLACK_MODE"),
    ],
    ids=["socket-without-app-token", "http-without-secret", "unknown-mode"],
)
def test_a_mode_that_does_not_match_the_tokens_is_one_line(
    tmp_path: Path, stand_ins: tuple, mode: str, extra: dict[str, str], named: str
) -> None:
    slack, kube = stand_ins
    result = run_bot("run", env=run_env(tmp_path, slack, kube, SLACK_MODE=mode, **extra))
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and named in lines[0], result.stderr
