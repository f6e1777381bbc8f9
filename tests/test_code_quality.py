"""Static checks, as part of the suite: the linter and the type checker find nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[1]
PATHS = ["bot", "handlers", "jobs", "tests", "bench", "scripts"]


def test_ruff_finds_nothing() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "bot", "handlers", "jobs", "tests", "bench", "scripts"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_code_is_formatted() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--check", *PATHS], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_finds_nothing() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "bot", "handlers", "jobs"], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stdout + result.stderr
