"""The message catalogs: every sentence of the code is in them, and the Chinese one is whole and true to it.

What ``./scripts/catalogs check`` does in CI (pybabel finding a sentence not in the catalogs fails),
plus what pybabel does not check: an entry left untranslated or fuzzy, a placeholder that differs
between the languages, and English words left in a Chinese sentence.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from babel.messages.catalog import Catalog, Message
from babel.messages.pofile import read_po

from bot.adapters.i18n import CATALOG_DIRS, CATALOGS, DOMAIN, LOCALES
from bot.domain.languages import Language
from tests.language_checks import foreign_words

ROOT = Path(__file__).parents[2]
PLACEHOLDER = re.compile(r"\{(\w+)\}")


def catalog(language: Language) -> Catalog:
    path = CATALOGS / CATALOG_DIRS[language] / "LC_MESSAGES" / f"{DOMAIN}.po"
    with path.open("rb") as source:
        return read_po(source, locale=LOCALES[language])


def entries(language: Language) -> list[Message]:
    return [message for message in catalog(language) if message.id]


def ids(message: Message) -> tuple[str, ...]:
    return message.id if isinstance(message.id, tuple) else (message.id,)


def strings(message: Message) -> tuple[str, ...]:
    return message.string if isinstance(message.string, tuple) else (message.string,)


def test_every_sentence_in_the_code_is_in_the_catalogs() -> None:
    """pybabel extract over the code finds nothing the catalogs lack, nothing they keep unused, and no
    sentence it cannot extract (an f-string with values)."""
    run = subprocess.run(
        [str(ROOT / "scripts" / "catalogs"), "check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"PYBABEL": str(Path(sys.executable).with_name("pybabel")), "PATH": "/usr/bin:/bin"},
    )
    assert run.returncode == 0, run.stdout + run.stderr


@pytest.mark.parametrize("language", [language for language in Language if language != Language.EN])
def test_every_entry_is_translated_and_none_is_fuzzy(language: Language) -> None:
    untranslated = [ids(m)[0] for m in entries(language) if not all(strings(m))]
    fuzzy = [ids(m)[0] for m in entries(language) if m.fuzzy]
    assert untranslated == [] and fuzzy == []


@pytest.mark.parametrize("language", list(Language))
def test_a_translation_has_the_placeholders_of_its_sentence(language: Language) -> None:
    wrong = []
    for message in entries(language):
        wanted = set(PLACEHOLDER.findall(ids(message)[-1]))
        for text in strings(message):
            if text and set(PLACEHOLDER.findall(text)) != wanted:
                wrong.append((ids(message)[-1], text))
    assert wrong == []


def test_no_english_word_is_left_in_a_chinese_sentence() -> None:
    left = {ids(m)[0]: foreign_words(" ".join(strings(m))) for m in entries(Language.ZH_CN)}
    assert {sentence: words for sentence, words in left.items() if words} == {}


def test_english_words_are_found_but_names_codes_and_units_are_not() -> None:
    assert foreign_words("申请 {request} 已被 approved") == ["approved"]
    assert foreign_words("在 `ai-frontier` 中 3 块 GPU，nvidia.com/gpu，:white_check_mark: <@U0LEE>") == []
    assert foreign_words("ai-frontier 的配额", values=["ai-frontier"]) == []


@pytest.mark.parametrize("language", list(Language))
def test_no_sentence_reads_as_a_percent_format_to_gettexts_tools(language: Language) -> None:
    """A "% o" in a sentence ("40 % of the time") makes pybabel check %-placeholders, and compiling the
    catalog then fails on its translation: a percentage is a value ("{percent} %"), not part of the sentence."""
    assert [ids(m)[0] for m in entries(language) if m.python_format] == []
