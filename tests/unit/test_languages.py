"""Choosing the language: tags as people and Slack write them, who reads which, and the language carried to the pool."""

from __future__ import annotations

import os
import shutil
import threading
from datetime import date, timedelta
from pathlib import Path

import pytest

from bot.adapters import i18n
from bot.adapters.slack.languages import Languages
from bot.domain.languages import Language, parse_language
from bot.domain.policy import Policy
from bot.executor import TrackingExecutor


@pytest.mark.parametrize(
    ("tag", "language"),
    [
        ("en", Language.EN),
        ("en-US", Language.EN),
        ("en_GB", Language.EN),
        ("zh-CN", Language.ZH_CN),
        ("zh_Hans", Language.ZH_CN),
        ("zh-hans-cn", Language.ZH_CN),
        ("zh", Language.ZH_CN),
        ("zh-TW", None),
        ("ja-JP", None),
        ("", None),
    ],
)
def test_a_tag_is_read_as_a_language_the_bot_speaks_or_none(tag: str, language: Language | None) -> None:
    assert parse_language(tag) == language


def policy(**team: object) -> Policy:
    teams = {
        "frontier": {"channel": "C0FRONTIER", "namespaces": ["ai-frontier"], "approvers": {"users": ["U0LEE"]}, **team},
        "business": {"channel": "C0BIZ", "namespaces": ["biz"], "approvers": {"users": ["U0MAYA"]}},
    }
    return Policy.model_validate({"language": "en", "teams": teams})


def test_the_policy_reads_a_teams_language_and_refuses_one_it_does_not_speak() -> None:
    assert policy(language="zh_Hans").teams["frontier"].language == Language.ZH_CN
    with pytest.raises(ValueError, match="the bot speaks en, zh-CN; 'fr' is not one of them"):
        policy(language="fr")


def test_a_channel_reads_its_teams_language_and_a_person_their_slack_language_else_the_channels() -> None:
    locales = {"U0ALICE": "zh-CN", "U0BOB": "en-US", "U0KIM": "ja-JP"}
    languages = Languages(policy(language="zh-CN"), locales.get)
    assert languages.of_channel("C0FRONTIER") == Language.ZH_CN
    assert languages.of_channel("C0BIZ") == Language.EN  # no language of its own: the policy's
    assert languages.of_channel("D0ALICE") == Language.EN
    assert languages.of_person("U0ALICE", channel_id="C0BIZ") == Language.ZH_CN
    assert languages.of_person("U0BOB", channel_id="C0FRONTIER") == Language.EN
    assert languages.of_person("U0KIM", channel_id="C0FRONTIER") == Language.ZH_CN  # not spoken here: the channel's
    assert languages.of_person("U0NOBODY") == Language.EN  # Slack did not say: the policy's


def test_a_deferred_language_is_found_once_and_only_when_words_are_made() -> None:
    asked: list[str] = []

    def find() -> Language:
        asked.append("asked")
        return Language.ZH_CN

    def request() -> list[str]:
        i18n.use_lazily(find)
        before = list(asked)
        words = [i18n.format_duration(timedelta(days=3)), i18n.format_duration(timedelta(hours=2))]
        return [*before, *words]

    result: list[list[str]] = []
    thread = threading.Thread(target=lambda: result.append(request()))
    thread.start()
    thread.join()
    assert result == [["3 天", "2 小时"]] and asked == ["asked"]


def test_work_handed_to_the_pool_is_worded_in_the_language_of_who_asked() -> None:
    executor = TrackingExecutor(max_workers=1, max_waiting=1)
    worded: list[str] = []
    try:
        with i18n.speaking(Language.ZH_CN):
            executor.hand_off(lambda: worded.append(i18n.format_gpus(3)), ack=lambda: None, busy_ack=lambda: None)
        executor.hand_off(lambda: worded.append(i18n.format_gpus(3)), ack=lambda: None, busy_ack=lambda: None)
        assert executor.wait_idle(timeout=10)
    finally:
        executor.shutdown()
    assert worded == ["3 块 GPU", "3 GPUs"]


def test_money_and_months_follow_the_language() -> None:
    with i18n.speaking(Language.EN):
        english = (i18n.format_money(1234.5, "USD"), i18n.format_month(date(2026, 12, 1)))
    with i18n.speaking(Language.ZH_CN):
        chinese = (i18n.format_money(1234.5, "USD"), i18n.format_month(date(2026, 12, 1)))
    assert english == ("1,234.50 USD", "December 2026")
    assert chinese == ("US$1,234.50", "2026年12月")


def test_an_installed_mo_a_moment_older_than_its_po_is_read_and_a_stale_one_is_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pip copies a catalog's .po just after its .mo: that .mo is the one read; one older by minutes is stale."""
    folder = tmp_path / "zh_Hans" / "LC_MESSAGES"
    folder.mkdir(parents=True)
    source = i18n.CATALOGS / "zh_Hans" / "LC_MESSAGES" / "messages.po"
    shutil.copy(source, folder / "messages.po")
    (folder / "messages.mo").write_bytes(b"not a catalog")  # read it and the load fails: proof it was chosen
    monkeypatch.setattr(i18n, "CATALOGS", tmp_path)
    po_time = (folder / "messages.po").stat().st_mtime
    i18n.translations.cache_clear()
    try:
        os.utime(folder / "messages.mo", (po_time - 2, po_time - 2))
        with pytest.raises(OSError):
            i18n.translations(Language.ZH_CN)
        os.utime(folder / "messages.mo", (po_time - 600, po_time - 600))
        i18n.translations.cache_clear()
        assert i18n.translations(Language.ZH_CN).gettext("{count}d") == "{count} 天"
    finally:
        i18n.translations.cache_clear()
