"""Helpers for tests that run the console script in real processes."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import requests

from bot.sandbox.session import BOT_TOKEN, SIGNING_SECRET

ROOT = Path(__file__).parents[2]
SANDBOX_POLICY = ROOT / "bot" / "sandbox" / "policy.yaml"
# How long a ``gpu-quota-bot run`` may take to answer /readyz (imports, migrations, Slack's auth.test):
# 2-4 s on an idle 2-core machine, 25-40 s with both cores busy. Waiting is bounded by the process
# too: one that exits stops the wait at once.
STARTUP_SECONDS = 120.0


def bot_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "bot.cli", *args]


def run_bot(
    *args: str, env: dict[str, str] | None = None, stdin: str | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """Run ``gpu-quota-bot ARGS`` to completion from the project root."""
    return subprocess.run(bot_command(*args), env=env, input=stdin, capture_output=True, text=True, timeout=timeout, cwd=ROOT)


def wait_for(condition: Callable[[], object], *, timeout: float = 20.0, what: str = "condition") -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def wait_until_ready(base: str, process: subprocess.Popen[Any]) -> None:
    """Wait until the bot at ``base`` answers /readyz; fail at once if its process exits first."""
    wait_for(lambda: ok(f"{base}/readyz") or process.poll() is not None, timeout=STARTUP_SECONDS, what="the bot to be ready")
    assert process.poll() is None, f"the bot exited with {process.returncode} before it was ready"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def run_env(tmp_path: Path, slack, kube, **extra: str) -> dict[str, str]:  # type: ignore[no-untyped-def]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "GPU_QUOTA", "DATABASE_URL", "KUBECONFIG"))}
    env.update(
        SLACK_BOT_TOKEN=BOT_TOKEN,
        SLACK_SIGNING_SECRET=SIGNING_SECRET,
        SLACK_API_URL=slack.api_url,
        DATABASE_URL=f"sqlite:///{tmp_path}/bot.db",
        GPU_QUOTA_CONFIG=str(SANDBOX_POLICY),
        KUBECONFIG=str(kube.write_kubeconfig(tmp_path / "kubeconfig")),
        PORT=str(free_port()),
        LOG_FORMAT="json",
    )
    env.update(extra)
    return env


def ok(url: str) -> bool:
    try:
        return requests.get(url, timeout=1).status_code == 200
    except requests.RequestException:
        return False


def metric(base_url: str, name: str, **labels: str) -> float | None:
    """One sample from a process's /metrics, or None when it is not there."""
    try:
        text = requests.get(f"{base_url}/metrics", timeout=2).text
    except requests.RequestException:
        return None
    wanted = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    for line in text.splitlines():
        match = re.match(r"^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$", line)
        if match and match.group(1) == name and ",".join(sorted((match.group(2) or "").split(","))) == wanted:
            return float(match.group(3))
    return None
