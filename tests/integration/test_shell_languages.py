"""The shell in either language: ``--lang zh-CN`` speaks Chinese in its own lines and makes the sandbox a Chinese
workplace (the policy and its teams in zh-CN, every person's Slack locale zh-CN), ``as lee zh-CN`` sets one person's
Slack locale, and ``--demo --lang zh-CN`` tells the whole story in Chinese, in a real process.

What is shown as it is never counts as English: namespaces, pods, nodes, request ids, people, teams' and
clusters' ids, the kubectl-style quota table's cells, what a person typed, and the API server's own words.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from babel.messages.pofile import read_po
from slack_sdk import WebClient

from bot.adapters.i18n import CATALOG_DIRS, CATALOGS, DOMAIN, LOCALES, gettext, speaking
from bot.clock import ShiftedClock
from bot.domain.languages import Language
from bot.sandbox.history import History, HistoryMetrics, sandbox_history
from bot.sandbox.kube_api import KubeApiStandIn
from bot.sandbox.render import TextRenderer
from bot.sandbox.session import BOT_TOKEN, Sandbox
from bot.sandbox.world import (
    BATCH_QUEUE,
    DEVICE_PLUGIN,
    GPU_OPERATOR,
    NO_NODE_MATCHES,
    PEOPLE,
    PRIORITY_CLASSES,
    QUOTA,
    SLACK_LOCALES,
    TEAM_NAMES,
    US_SERVING,
    sandbox_policy,
    seed_cluster,
    seed_us_cluster,
)
from bot.shell import DEMO, SHELL_COMMANDS, Said, Shell, demo_script, shell_help
from tests.integration.processes import run_bot
from tests.language_checks import catalog_misses, foreign_words

ZH = Language.ZH_CN
SHELL_MODULES = ("bot/shell.py", "bot/sandbox/world.py", "bot/sandbox/render.py")


def shown_as_is() -> list[str]:
    """Every name and id of the sandbox a line may show as it is (the seeded clusters' namespaces, pods, nodes...)."""
    kubes = [KubeApiStandIn(), KubeApiStandIn()]
    seed_cluster(kubes[0])
    seed_us_cluster(kubes[1])
    policy = sandbox_policy(two_clusters=True)
    names = {
        *(namespace for kube in kubes for namespace in kube.namespaces),
        *(pod for kube in kubes for _, pod in kube.pods),
        *(node for kube in kubes for node in kube.nodes),
        *policy.managed_namespaces(),
        *policy.teams,
        *policy.cluster_names(),
        *(policy.cluster_label(part) for part in policy.cluster_names()),
        *(name for name, _ in PRIORITY_CLASSES),
        *(p.name for p in PEOPLE),
        *(p.name.capitalize() for p in PEOPLE),
        "llm-finetune",
        BATCH_QUEUE,
        DEVICE_PLUGIN,
        GPU_OPERATOR,
        QUOTA,
        US_SERVING,
        "platform",
        NO_NODE_MATCHES,
    }
    return sorted(name for name in names if name)


# Shown as they are wherever they appear: files, request ids, channels, audit trail values (JSON), identifiers
# (metric names, event kinds, policy keys: with an underscore), labels and taints (key=value), the API's taint effects.
AS_IS = (
    re.compile(r"[\w./-]+\.png\b"),
    re.compile(r"[\w./-]+=[\w./:-]+"),
    re.compile(r"\bGQ-\d+\b"),
    re.compile(r"#[\w-]+"),
    re.compile(r"\{\"[^{}]*\}"),
    re.compile(r"\b\w*_\w*\b"),
    re.compile(r"\b(?:NoSchedule|PreferNoSchedule|NoExecute)\b"),
)
PROMPT = re.compile(r"^(\w+)> ?(.*)$")


def english_lines(output: str, *, typed: Sequence[str] = ()) -> list[tuple[str, list[str]]]:
    """The printed lines with English words left (and the words), once what is shown as it is is taken out:
    the lines a person typed (a note of the demo's narrator is the shell's own, and counts), the quota
    table's rows, and the values of ``shown_as_is``, ``typed`` and ``AS_IS``."""
    values = [*shown_as_is(), *typed]
    headers = set()
    for language in Language:
        with speaking(language):
            headers.add(gettext("NAMESPACE"))
    found = []
    in_table = False
    for line in output.splitlines():
        if in_table and line.strip():
            continue  # a row of the kubectl-style quota table: namespaces, names, resources, quantities, ids
        in_table = any(line.startswith(header) for header in headers)
        prompt = PROMPT.match(line)
        if prompt is not None:
            if not prompt.group(2).startswith("#"):
                continue  # what was typed
            line = prompt.group(2)
        usage = next((usage for usage, _ in SHELL_COMMANDS if line.startswith(f"  {usage} ")), "")
        line = line.removeprefix(f"  {usage}")  # the help's column of commands, as they are typed
        for pattern in AS_IS:
            line = pattern.sub(" ", line)
        words = foreign_words(line, values=values)
        if words:
            found.append((line.strip(), words))
    return found


def sandbox_in(language: Language) -> tuple[Sandbox, History]:
    """The shell's sandbox as ``--lang`` makes it, and the synthetic GPU use behind its metrics."""
    clock = ShiftedClock()
    history = sandbox_history(clock.now())
    box = Sandbox(
        policy=sandbox_policy(two_clusters=True, language=language),
        clock=clock,
        metrics=HistoryMetrics(history),
        locale=SLACK_LOCALES[language],
    )
    return box, history


def shell_msgids() -> set[str]:
    """The catalog sentences of the shell's modules (singular and plural ids)."""
    path = CATALOGS / CATALOG_DIRS[ZH] / "LC_MESSAGES" / f"{DOMAIN}.po"
    with path.open("rb") as source:
        catalog = read_po(source, locale=LOCALES[ZH])
    found: set[str] = set()
    for message in catalog:
        if message.id and any(location[0] in SHELL_MODULES for location in message.locations):
            found.update(message.id if isinstance(message.id, tuple) else (message.id,))
    return found


# --- the sandbox as a Chinese workplace --------------------------------------------------------------


def test_the_chinese_sandbox_speaks_zh_cn_in_every_team_and_to_every_person() -> None:
    policy = sandbox_policy(two_clusters=True, language=ZH)
    assert policy.language == ZH and {key: team.language for key, team in policy.teams.items()} == {
        "frontier": ZH,
        "business": ZH,
    }
    assert {key: team.display_name for key, team in policy.teams.items()} == TEAM_NAMES[ZH]
    assert policy.managed_namespaces() == sandbox_policy(two_clusters=True).managed_namespaces()
    box = sandbox_in(ZH)[0].start()
    try:
        client = WebClient(token=BOT_TOKEN, base_url=box.slack.api_url)
        locales = {p.name: client.users_info(user=p.user_id, include_locale=True)["user"]["locale"] for p in PEOPLE}
    finally:
        box.stop()
    assert set(locales.values()) == {"zh-CN"}


def test_the_english_sandbox_is_the_policy_file_as_it_is() -> None:
    policy = sandbox_policy(two_clusters=True)
    assert policy.language == Language.EN and all(team.language is None for team in policy.teams.values())
    assert {team.display_name for team in policy.teams.values()} == {"Frontier research", "Model serving"}
    box = Sandbox(policy=policy).start()
    try:
        client = WebClient(token=BOT_TOKEN, base_url=box.slack.api_url)
        assert client.users_info(user="U0LEE", include_locale=True)["user"]["locale"] == "en-US"
    finally:
        box.stop()


def test_as_a_person_with_a_locale_sets_the_locale_slack_gives_for_them() -> None:
    box = Sandbox(policy=sandbox_policy(two_clusters=True)).start()
    try:
        assert box.languages is not None and box.languages.of_person("U0LEE") == Language.EN  # read, and cached
        out = io.StringIO()
        shell = Shell(box, out=out)
        for line in ("as lee zh-CN", "as maya", "as bob 12", "as lee zh-CN extra"):
            shell.execute(line)
        client = WebClient(token=BOT_TOKEN, base_url=box.slack.api_url)
        locale = {p.name: client.users_info(user=p.user_id, include_locale=True)["user"]["locale"] for p in PEOPLE}
        # The bot reads the new language at once, not when its directory's cache expires.
        assert box.languages.of_person("U0LEE") == ZH and box.languages.of_person("U0MAYA") == Language.EN
    finally:
        box.stop()
    said = out.getvalue().splitlines()
    assert said[0] == "You are now @lee (approver for Frontier research); Slack gives your language as zh-CN."
    assert said[1] == "You are now @maya (approver for Model serving)."
    assert said[2].startswith("Usage: as <name> [<locale>], e.g. as lee zh-CN") and said[3] == said[2]
    assert locale == {"alice": "en-US", "lee": "zh-CN", "bob": "en-US", "maya": "en-US", "pat": "en-US", "dana": "en-US"}


# --- the shell's own lines ----------------------------------------------------------------------------

# Every command of the shell, its usage errors, and a request's life (for the sections' titles and summaries).
SESSION = [
    "as bob",
    "/gpu-quota request biz-model-serving +2 for 1d sweep",
    "as maya",
    "click 1",
    "help",
    "users",
    "nonsense",
    "click 99",
    "as nobody",
    "as lee 1234",
    "as lee zh-CN",
    "as alice",
    "time +abc",
    "tick",
    "quota",
    "kubectl get quota -n biz-model-serving",
    "kubectl get quota -x",
    "kubectl edit ai-frontier-research 5",
    "kubectl edit nowhere 5",
    "kubectl apply",
    "down",
    "down us-2 soon",
    "down us-2 1h",
    "up us-2",
    "up us-2",
    "down us-2",
    "up us-2",
    "digest 2026-13-01",
    "digest",
    "digest",
    "jobs",
    "idle nowhere",
    "idle ai-frontier-research",
    "block nowhere",
    "block ai-frontier-research 1",
    "block ai-frontier-research 9",
    "wait nowhere",
    "wait ai-frontier-research 2",
    "jobs",
    "finish nowhere",
    "break gpu-node-a",
    "break device-plugin gpu-node-b",
    "taint gpu-node-a",
    "taint gpu-node-a k=v:Sometimes",
    "taint gpu-node-c nvidia.com/gpu=true:NoSchedule",
    "untaint nope k",
    "untaint gpu-node-c nvidia.com/gpu",
    "doctor a b",
    "doctor ap-3",
    "scrape x",
    "scrape off dcgm",
    "scrape on dcgm",
    "/gpu-quota status",
    "finish ai-frontier-research 9",
    "finish ai-frontier-research 1",
    "time +1d",
    "time +1m",
]


def quiet_blocks(self: TextRenderer, blocks: list[dict[str, Any]], number: Any) -> list[str]:
    """What the bot said is left out (its words are other modules'); its buttons are still numbered."""
    for block in blocks:
        for element in block.get("elements", []) if block.get("type") == "actions" else []:
            if element.get("type") == "button":
                number(element)
    return []


@pytest.fixture
def shell_only(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The shell shows the sections of what the bot sent (their titles are the shell's) without their bodies."""
    monkeypatch.setattr(TextRenderer, "blocks", quiet_blocks)
    monkeypatch.setattr(TextRenderer, "mrkdwn", lambda self, text: "")
    yield


def session_output(language: Language, lines: list[str]) -> tuple[str, set[str]]:
    """What the shell prints for ``lines`` in ``language``, and the sentences the catalog lacked meanwhile."""
    box, history = sandbox_in(language)
    box.start()
    out = io.StringIO()
    try:
        with catalog_misses() as missed:
            Shell(box, out=out, echo=True, history=history, language=language).run(lines)
    finally:
        box.stop()
    return out.getvalue(), {sentence for _, sentence in missed}


@pytest.mark.usefixtures("shell_only")
def test_every_line_of_the_shell_itself_is_in_chinese() -> None:
    out, missed = session_output(ZH, SESSION)
    assert missed & shell_msgids() == set()
    typed = ["sweep", "soon", "abc", "nowhere", "nope", "ap-3", "dcgm", "zh-CN"]
    assert english_lines(out, typed=typed) == []
    # The words of the story, in Chinese; names, ids and what was typed as they are.
    for said in (
        "你现在是 @lee（前沿研究 的审批人）；Slack 给出的你的语言为 zh-CN。",
        "用法（仅限沙箱）：`down <cluster> [duration]`，例如 `down us-2 1h`；现有集群：eu-1、us-2",
        "`soon` 不是时长：请用 90m、12h、3d 或 2w，最长 366 天。",
        "1 块 GPU 可以放进 ai-frontier-research（已用 3/5）：配额允许该 Pod 启动。",
        "预算预警：0；空闲提醒：ai-frontier-research；受阻工作负载：2",
        "── #biz-approvals › GQ-1 的消息串 ",
        "── 发给 @bob 的私信 ",
        "调谐：授权已结束：GQ-1",
        "调谐：没有到期的事项",
    ):
        assert said in out
    assert re.search(r"^命名空间 {20}名称 {26}资源 {26}已用/上限  限制    应用者$", out, flags=re.M)


@pytest.mark.usefixtures("shell_only")
def test_the_shell_in_english_says_what_it_said_before() -> None:
    out, missed = session_output(Language.EN, SESSION)
    assert missed == set()
    for said in (
        "You are now @lee (approver for Frontier research); Slack gives your language as zh-CN.",
        "Usage (sandbox only): down <cluster> [duration], e.g. down us-2 1h; the clusters: eu-1, us-2",
        "1 GPU fits in ai-frontier-research (3 of 5 in use): the quota lets that pod start.",
        "ReplicaSet train-1-6d5f8b in ai-frontier-research asks for 9 GPUs with 3 of 5 in use",
        "budget warnings: 0; idle nudges: ai-frontier-research; blocked workloads: 2",
        "── #biz-approvals › thread of GQ-1 ",
        "── DM to @bob ",
        "reconcile: grants ended: GQ-1",
        "reconcile: nothing due",
    ):
        assert said in out
    assert (
        "NAMESPACE                   NAME                          RESOURCE                      USED/HARD  LIMITS  APPLIED BY\n"
        in out
    )


def test_the_help_says_every_command_in_either_language() -> None:
    with speaking(ZH), catalog_misses() as missed:
        text = shell_help()
    assert missed == set()
    assert english_lines(text) == []
    assert all(f"  {usage}" in text for usage, _ in SHELL_COMMANDS)
    with speaking(Language.EN):
        english = shell_help()
    assert "  click <n>               press button [n]\n" in english
    assert "\n                          its approved changes wait, the other cluster's go on\n" in english


def test_the_banner_fits_its_box_in_either_language() -> None:
    from bot.sandbox.render import display_width

    for language in Language:
        box = sandbox_in(language)[0]
        out = io.StringIO()
        Shell(box, out=out, language=language).run([])
        frame = out.getvalue().splitlines()[:4]
        assert len({display_width(line) for line in frame}) == 1, frame
        assert frame[1].startswith("│ gpu-quota-bot ") and frame[1].endswith("│")


# --- the demo ------------------------------------------------------------------------------------------


def test_the_demo_types_its_reasons_and_tells_its_notes_in_the_shell_language() -> None:
    english, chinese = demo_script(), demo_script(ZH)
    assert "/gpu-quota request ai-frontier-research +4 for 3d fine-tune on the new corpus" in english
    assert "/gpu-quota request ai-frontier-research +4 for 3d 在新语料上微调" in chinese
    for step, in_english, in_chinese in zip(DEMO, english, chinese, strict=True):
        if isinstance(step, str):
            assert in_english == in_chinese == step  # commands and their keywords are typed as they are
            continue
        prefix = "# " if step.typed is None else step.typed.split("{reason}")[0]
        assert in_chinese.startswith(prefix) and in_english.startswith(prefix) and in_chinese != in_english
        assert foreign_words(in_chinese.removeprefix(prefix), values=shown_as_is()) == [], in_chinese


def test_the_demo_in_chinese_tells_the_whole_story_with_no_english_sentence() -> None:
    """Fails until every word module (cards, threads, DMs, digests, why, doctor) speaks Chinese."""
    result = run_bot("shell", "--demo", "--lang", "zh-CN", timeout=180)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "Traceback" not in out + result.stderr
    # The same story as in English: the grants, the shift, us-2 down and back.
    for line in demo_script(ZH):
        if line.startswith("# "):
            assert f"> {line}" in out
    assert re.search(r"us-2/biz-model-serving-us +compute-quota +nvidia.com/gpu +6/12 +12 +GQ-6", out)
    assert re.search(r"ai-frontier-research +compute-quota +nvidia.com/gpu +1/1 +1 +GQ-2", out)
    with speaking(ZH):  # what the demo's people type in their requests (Chinese here: a Chinese team types Chinese)
        reasons = [gettext(step.words) for step in DEMO if isinstance(step, Said) and step.typed is not None]
    left = english_lines(out, typed=reasons)
    assert left == [], "English left in the zh-CN demo:\n" + "\n".join(f"{words}: {line}" for line, words in left)
