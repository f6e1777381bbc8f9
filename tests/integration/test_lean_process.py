"""``gpu-quota-bot run`` in a real process stays lean: charting is imported only when a chart is drawn,
Alembic only when the schema is behind, the PostgreSQL driver only for PostgreSQL, and not the
kubernetes client's generated CoreV1Api."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import requests

from bot.adapters.db.migrate import upgrade
from bot.sandbox.session import SIGNING_SECRET
from bot.sandbox.slack_client import SlackSide
from tests.integration.processes import ROOT, run_env, wait_for, wait_until_ready


def test_run_on_sqlite_at_head_imports_no_charting_alembic_or_psycopg(tmp_path: Path, stand_ins: tuple) -> None:
    slack, kube = stand_ins
    env = run_env(tmp_path, slack, kube)
    base = f"http://127.0.0.1:{env['PORT']}"
    upgrade(env["DATABASE_URL"])  # as `gpu-quota-bot db upgrade` (or an earlier start) left it
    # -X importtime writes one stderr line per module the process imports, whenever it imports it.
    command = [sys.executable, "-X", "importtime", "-m", "bot.cli", "run"]
    log = tmp_path / "stderr.txt"  # a file, not a pipe: the import lines would fill a pipe nobody reads yet
    with log.open("w") as stderr:
        process = subprocess.Popen(command, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=stderr, text=True)
    try:
        wait_until_ready(base, process)
        side = SlackSide(signing_secret=SIGNING_SECRET, response_url_base=slack.response_url("r"), names={})
        body = side.slash_command(user_id="U0ALICE", text="request ai-frontier-research +1 for 1d a request")
        assert requests.post(f"{base}/slack/events", data=body, headers=side.sign(body), timeout=10).status_code == 200
        wait_for(lambda: any(r.kind == "response" for r in slack.records), what="the answer to the request")
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
    err = log.read_text()
    assert process.returncode == 0, err[-2000:]
    imported = {line.rsplit("|", 1)[-1].strip() for line in err.splitlines() if line.startswith("import time:")}
    assert "bot.server" in imported and "bot.adapters.chart" in imported  # the check sees the process's imports
    assert not {name for name in imported if name.split(".")[0] in ("matplotlib", "numpy", "alembic", "psycopg")}
    # The generated CoreV1Api (about 20 MiB with its models) is not needed for the bot's few calls.
    assert "kubernetes.client.api.core_v1_api" not in imported
