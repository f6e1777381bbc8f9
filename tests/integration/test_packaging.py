"""The image's recipe without a Docker engine: build the wheels as the Dockerfile's build stage does
(from the same files it copies, the catalogs compiled by its command), install them into a clean virtual
environment as its final stage does (no index, no compilers), and run the console script from there,
in English and in Chinese."""

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


def dockerfile_runs(stage: str) -> str:
    """The RUN commands of a stage of the Dockerfile (``build``, or ``final``), continuation lines joined."""
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    build, final = text.split("\nFROM ${PYTHON_IMAGE}\n", 1)
    chosen = build if stage == "build" else final
    return "\n".join(re.sub(r"\s+", " ", line) for line in chosen.splitlines() if line.startswith("RUN "))


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
            shutil.copytree(source, context / path, ignore=shutil.ignore_patterns("__pycache__", "*.mo"))
        else:
            shutil.copy(source, context / path)
    # The build stage compiles the catalogs before it builds the wheel (a clone has no .mo files).
    compile_catalogs = "pybabel compile -d bot/locale -D messages"
    assert compile_catalogs in dockerfile_runs("build")
    assert dockerfile_runs("build").index(compile_catalogs) < dockerfile_runs("build").index("pip wheel")
    run(Path(sys.executable).with_name("pybabel"), *compile_catalogs.split()[1:], cwd=context)
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

    # The compiled catalogs ship in the wheel: a policy in Chinese gets its digest in Chinese.
    site = next((venv / "lib").glob("python3*/site-packages"))
    assert {p.parent.parent.name for p in (site / "bot" / "locale").glob("*/LC_MESSAGES/messages.mo")} == {"en", "zh_Hans"}
    chinese = tmp_path / "policy-zh.yaml"
    chinese.write_text((ROOT / "bot" / "sandbox" / "policy.yaml").read_text() + "\nlanguage: zh-CN\n")
    charts = tmp_path / "charts-zh"
    digest = run(
        venv / "bin" / "gpu-quota-bot",
        "digest",
        "--print",
        "--team",
        "frontier",
        "--chart-dir",
        charts,
        env={**clean, "GPU_QUOTA_CONFIG": str(chinese), "DATABASE_URL": f"sqlite:///{tmp_path}/bot.db"},
        cwd=tmp_path,
    )
    assert "沙盒指标" in digest and "GPU 费用日报 · " in digest and "按命名空间" in digest, digest
    assert [chart.read_bytes()[:8] for chart in charts.glob("gpu-cost-frontier-*.png")] == [b"\x89PNG\r\n\x1a\n"]


def test_the_image_has_the_font_of_the_chinese_chart() -> None:
    """The final stage installs the Debian package the chart's warning names, without recommended packages."""
    from bot.adapters.chart import CJK_PACKAGE

    install = next(line for line in dockerfile_runs("final").splitlines() if "apt-get install" in line)
    assert "--no-install-recommends" in install and CJK_PACKAGE in install.split() and "fontconfig" in install.split()
    assert "rm -rf /var/lib/apt/lists/*" in install
    assert "USER 10001:10001" in (ROOT / "Dockerfile").read_text().split("\nFROM ${PYTHON_IMAGE}\n", 1)[1]
