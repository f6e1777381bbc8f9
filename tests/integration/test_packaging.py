"""The image's recipe without a Docker engine: build the wheels as the Dockerfile's build stage does
(from the same files it copies), install them into a clean virtual environment as its final stage
does (no index, no compilers), and run the console script from there."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from bot.adapters.db.migrate import head_revision

ROOT = Path(__file__).parents[2]


def dockerfile_copies() -> list[str]:
    """The paths the Dockerfile's build stage copies into the image."""
    copies = re.findall(r"^COPY (?!--from)(.+?) \S+$", (ROOT / "Dockerfile").read_text(), flags=re.MULTILINE)
    return [path for line in copies for path in line.split()]


def run(*args: str | Path, env: dict[str, str] | None = None, cwd: Path | None = None) -> str:
    result = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=900, env=env, cwd=cwd)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    return result.stdout


def test_the_wheel_installs_and_runs_like_the_image(tmp_path: Path) -> None:
    context = tmp_path / "context"
    context.mkdir()
    copied = dockerfile_copies()
    assert set(copied) == {"pyproject.toml", "README.md", "bot", "handlers", "jobs"}
    for path in copied:
        source = ROOT / path
        if source.is_dir():
            shutil.copytree(source, context / path, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(source, context / path)
    wheels = tmp_path / "wheels"
    run(sys.executable, "-m", "pip", "wheel", "--quiet", "--disable-pip-version-check", "--wheel-dir", wheels, ".", cwd=context)

    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", venv)
    run(
        venv / "bin" / "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "--no-index",
        "--find-links",
        wheels,
        "gpu-quota-bot",
    )

    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SLACK_", "GPU_QUOTA", "DATABASE_URL", "PROMETHEUS", "PYTHONPATH"))
    }
    out = run(venv / "bin" / "gpu-quota-bot", "--help", env=clean, cwd=tmp_path)
    for command in ("run", "shell", "digest", "ledger", "cost", "check-config", "db"):
        assert command in out
    migrated = run(
        venv / "bin" / "gpu-quota-bot",
        "db",
        "upgrade",
        env={**clean, "DATABASE_URL": f"sqlite:///{tmp_path}/bot.db"},
        cwd=tmp_path,
    )
    assert f"database schema at {head_revision()}" in migrated  # the migrations ship in the wheel
    digest = run(
        venv / "bin" / "gpu-quota-bot",
        "digest",
        "--print",
        "--team",
        "frontier",
        "--chart-dir",
        tmp_path,
        env=clean,
        cwd=tmp_path,
    )
    assert "GPU cost digest" in digest  # and so does the sandbox policy
