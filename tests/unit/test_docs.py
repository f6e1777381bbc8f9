"""The README is the front door and docs/ holds the rest: links resolve, the configuration reference is
what the generator prints, and the README's commands and variables are the real ones. The Chinese README
(README.zh-CN.md) is a shorter door to the same house: the same commands, real policy keys, links that resolve."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import BaseModel, Field

from bot import config_reference
from bot.settings import Settings

ROOT = Path(__file__).parents[2]
README = ROOT / "README.md"
README_ZH = ROOT / "README.zh-CN.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def prose(path: Path) -> str:
    """The file without its fenced code blocks (a ``# comment`` there is no heading, a link no link)."""
    return re.sub(r"^```.*?^```", "", path.read_text(), flags=re.S | re.M)


def anchors(path: Path) -> set[str]:
    """GitHub's anchors of the file's headings: lower case, punctuation dropped, spaces as hyphens."""
    headings = re.findall(r"^#{1,6} (.+)$", prose(path), flags=re.M)
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-") for heading in headings}


def relative_links(path: Path) -> list[str]:
    return [target for target in LINK.findall(prose(path)) if not re.match(r"[a-z]+:", target)]


@pytest.mark.parametrize("path", [README, README_ZH, *DOCS], ids=lambda p: p.name)
def test_every_relative_link_resolves_to_a_file_and_its_heading(path: Path) -> None:
    broken = []
    for target in relative_links(path):
        file_part, _, anchor = target.partition("#")
        linked = (path.parent / file_part).resolve() if file_part else path
        if not linked.exists():
            broken.append(f"{target}: no file {linked.relative_to(ROOT) if linked.is_relative_to(ROOT) else linked}")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append(f"{target}: no heading with the anchor #{anchor} in {linked.name}")
    assert not broken, f"{path.name}: " + "; ".join(broken)


def test_the_link_check_finds_a_missing_file_and_a_missing_heading(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n## How it works\n\n[a](#how-it-works) [b](gone.md) [c](#nowhere) [d](https://x.example)\n")
    assert relative_links(page) == ["#how-it-works", "gone.md", "#nowhere"]
    assert anchors(page) == {"title", "how-it-works"}


def test_the_configuration_reference_is_what_the_generator_prints() -> None:
    written = (ROOT / "docs" / "configuration.md").read_text()
    assert written == config_reference.render(), f"docs/configuration.md is out of date: run {config_reference.COMMAND}"


def test_the_reference_names_every_setting_and_every_policy_section() -> None:
    reference = config_reference.render()
    for name in Settings.model_fields:
        assert f"| `{name.upper()}` |" in reference
    for key in (
        "defaults.pending_timeout",
        "teams.<team>.approvals.large_change.above_gpus",
        "teams.<team>.namespaces[].max_gpus",
    ):
        assert f"| `{key}` |" in reference
    assert "| `teams.<team>.limits.max_duration` | duration | `2w` |" in reference


def test_a_key_without_a_meaning_stops_the_generator(monkeypatch: pytest.MonkeyPatch) -> None:
    class Undocumented(BaseModel):
        documented: int = Field(default=1, description="Has one.")
        forgotten: int = 2

    class Root(BaseModel):
        section: Undocumented = Field(default=Undocumented(), description="A section.")

    monkeypatch.setattr(config_reference, "Policy", Root)
    with pytest.raises(ValueError, match=r"section\.forgotten has no description"):
        config_reference.render()


def test_the_readme_is_a_front_door_that_links_every_doc() -> None:
    readme = README.read_text()
    assert len(readme.splitlines()) <= 260, "the README is the front door: move the detail to docs/"
    linked = {target.partition("#")[0] for target in relative_links(README)}
    assert {f"docs/{doc.name}" for doc in DOCS} <= linked


def test_the_readme_shows_the_set_up_commands_ci_runs() -> None:
    readme = README.read_text()
    commands = [line.split("#")[0].strip() for line in readme.split("## Try it, test it", 1)[1].split("```")[1].splitlines()]
    assert "./scripts/try" in commands and "./scripts/test" in commands
    assert "`./scripts/try --demo`" in readme
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line.startswith("./")]
    assert ci == ["./scripts/test"]


def test_the_variables_the_readme_names_are_settings() -> None:
    table = README.read_text().split("## Configuration", 1)[1].split("\n\n")[2]
    named = {name for row in table.splitlines()[2:] for name in re.findall(r"`([A-Z_]+)`", row.split("|")[1])}
    proxies = {"HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY"}
    assert named and named - proxies <= {name.upper() for name in Settings.model_fields}


def code_lines(path: Path) -> list[str]:
    """The lines of the file's fenced code blocks, each without its ``# comment`` and trailing spaces."""
    blocks = re.findall(r"^```[^\n]*\n(.*?)^```", path.read_text(), flags=re.S | re.M)
    return [line.split("  #")[0].rstrip() for block in blocks for line in block.splitlines()]


def section_commands(path: Path, heading: str) -> list[str]:
    """The command lines of the first code block under ``heading``."""
    block = path.read_text().split(f"\n{heading}\n", 1)[1].split("```", 2)[1]
    return [line.split("  #")[0].rstrip() for line in block.splitlines()[1:] if line.strip()]


def test_the_chinese_readme_is_a_shorter_door_linked_both_ways() -> None:
    readme, chinese = README.read_text(), README_ZH.read_text()
    assert len(chinese.splitlines()) < len(readme.splitlines()) and len(chinese) < len(readme)
    assert "README.zh-CN.md" in relative_links(README)[:1], "the README links the Chinese one first, near the top"
    assert "README.md" in relative_links(README_ZH)


def test_the_chinese_readme_shows_the_same_set_up_and_deploy_commands() -> None:
    chinese = code_lines(README_ZH)
    try_it = section_commands(README, "## Try it, test it")
    deploy = section_commands(README, "## Deploy to a cluster")
    assert try_it == ["./scripts/try", "./scripts/test"] and set(try_it) <= set(chinese)
    assert "./scripts/try --lang zh-CN" in chinese and "./scripts/try --demo --lang zh-CN" in chinese
    start = chinese.index(deploy[0])
    assert chinese[start : start + len(deploy)] == deploy


def test_the_policy_keys_the_chinese_readme_names_are_real() -> None:
    table = README_ZH.read_text().split("## 配置", 1)[1].split("| 键 |", 1)[1].split("\n\n", 1)[0]
    named = [re.findall(r"`([^`]+)`", row.split("|")[1])[0] for row in table.splitlines()[2:]]
    reference = config_reference.render()
    assert "language" in named and "teams.<team>.language" in named
    assert [key for key in named if f"| `{key}` |" not in reference] == []
