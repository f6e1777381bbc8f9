"""``gpu-quota-bot db current`` reads; it never creates a database where there is none."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.integration.processes import bot_command


def db(action: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "GPU_QUOTA", "SLACK_"))}
    return subprocess.run(bot_command("db", action), cwd=cwd, env=clean | env, capture_output=True, text=True, timeout=120)


def test_db_current_without_a_database_url_creates_no_file(tmp_path: Path) -> None:
    result = db("current", tmp_path)
    assert result.returncode == 0, result.stderr
    assert "empty" in result.stdout
    assert list(tmp_path.iterdir()) == []  # no gpu-quota-bot.db appeared in the current folder


def test_db_current_reads_an_upgraded_database(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/bot.db"
    assert db("upgrade", tmp_path, DATABASE_URL=url).returncode == 0
    current = db("current", tmp_path, DATABASE_URL=url)
    assert current.returncode == 0 and current.stdout.strip() and "empty" not in current.stdout
