"""The languages the bot speaks, as the policy and Slack name them.

A language is a choice, not words: the policy sets a default and one per team, Slack gives each
person a locale, and the Slack edge (``bot.adapters.i18n``) words every message in the chosen one.
"""

from __future__ import annotations

from enum import StrEnum


class Language(StrEnum):
    """A language the catalogs cover, by its BCP 47 tag (as people write it in the policy)."""

    EN = "en"
    ZH_CN = "zh-CN"


# What people and Slack write for each language (lower case, "_" read as "-"): Slack's locales are
# en-US, en-GB, zh-CN...; Babel's are zh_Hans, zh_Hans_CN.
_TAGS = {
    "en": Language.EN,
    "zh": Language.ZH_CN,
    "zh-cn": Language.ZH_CN,
    "zh-hans": Language.ZH_CN,
    "zh-hans-cn": Language.ZH_CN,
    "zh-sg": Language.ZH_CN,
}


def parse_language(tag: str) -> Language | None:
    """The language a tag names (``zh-CN``, ``zh_Hans``, ``en-US``...), or None for one not spoken here.

    Any English region reads as English; Chinese is Simplified Chinese only (``zh-TW`` and ``zh-HK``
    are Traditional: not spoken here, so the caller falls back).
    """
    key = tag.strip().replace("_", "-").lower()
    if key in _TAGS:
        return _TAGS[key]
    if key.split("-", 1)[0] == "en":
        return Language.EN
    return None


def supported_tags() -> str:
    """The tags the policy accepts, for an error message."""
    return ", ".join(language.value for language in Language)
