"""The README's digest example is exactly what a reader gets from the command it shows."""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).parents[2]


def example_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("digest_example", ROOT / "scripts" / "digest_example.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_readme_digest_example_is_what_the_command_prints(tmp_path: Path) -> None:
    script = example_script()
    printed = script.run_example(tmp_path)
    assert script.readme_example((ROOT / "README.md").read_text()) == printed, "run: .venv/bin/python scripts/digest_example.py"
    assert f"[chart: {script.CHART}]" in printed and (tmp_path / script.CHART).exists()


def test_the_readme_chart_image_exists() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "](docs/digest-example.png)" in readme
    assert (ROOT / "docs" / "digest-example.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_gitignore_names_the_charts_the_digest_writes_and_keeps_the_readme_image() -> None:
    def ignored(path: str) -> bool:
        return subprocess.run(["git", "check-ignore", "--no-index", "-q", path], cwd=ROOT).returncode == 0

    assert ignored(example_script().CHART) and ignored("charts/gpu-cost-org-2026-11-28.png")
    assert not ignored("docs/digest-example.png")
