"""Writes the README's digest example and docs/digest-example.png from the code: runs the command the
README shows, on a fresh machine's defaults (sandbox metrics and policy), and puts its output and its
chart in place. Run it after changing the digest; a test checks the README is what the command prints.

    .venv/bin/python scripts/digest_example.py
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
IMAGE = ROOT / "docs" / "digest-example.png"
DAY, TEAM = "2026-11-28", "frontier"
ARGS = ["digest", "--print", "--date", DAY, "--team", TEAM]
COMMAND = "$ gpu-quota-bot " + " ".join(ARGS)
CHART = f"gpu-cost-{TEAM}-{DAY}.png"


def run_example(workdir: Path) -> str:
    """What a reader gets from the README's command in ``workdir``: no Prometheus, no policy of their own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PROMETHEUS_", "GPU_QUOTA", "DATABASE_URL", "SLACK_"))}
    result = subprocess.run(
        [sys.executable, "-m", "bot.cli", *ARGS], cwd=workdir, env=env, capture_output=True, text=True, timeout=300
    )
    if result.returncode != 0:
        raise RuntimeError(result.stderr)
    return result.stdout


def readme_example(readme: str) -> str:
    """The output shown under the command in the README's code block."""
    start = readme.index(COMMAND + "\n") + len(COMMAND) + 1
    return readme[start : readme.index("```", start)]


def main() -> None:
    with tempfile.TemporaryDirectory() as workdir:
        output = run_example(Path(workdir))
        IMAGE.parent.mkdir(exist_ok=True)
        shutil.copyfile(Path(workdir) / CHART, IMAGE)
    readme = README.read_text()
    README.write_text(readme.replace(readme_example(readme), output, 1))
    print(f"wrote the example in {README} and {IMAGE}")


if __name__ == "__main__":
    main()
