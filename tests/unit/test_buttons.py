"""Buttons carry a typed label, worded at the Slack edge in the reader's language; an outbox entry of an earlier
version keeps its words."""

from __future__ import annotations

import pytest

from bot.adapters.i18n import speaking
from bot.adapters.slack import blocks
from bot.adapters.slack.buttons import LABELS, button_label
from bot.domain.languages import Language
from bot.services.announce import _action, _action_json
from bot.services.ports import Action, ActionKind, ButtonLabel
from tests.language_checks import catalog_misses, foreign_words


@pytest.mark.parametrize("label", list(ButtonLabel))
def test_every_button_label_has_its_words(label: ButtonLabel) -> None:
    worded = button_label(Action(ActionKind.RELEASE, label, "17"))
    assert worded and "{" not in worded and label in LABELS


@pytest.mark.parametrize("label", list(ButtonLabel))
def test_every_button_label_has_chinese_words_within_slacks_limit(label: ButtonLabel) -> None:
    action = Action(ActionKind.RELEASE, label, "17")
    with catalog_misses() as missed, speaking(Language.ZH_CN):
        worded = button_label(action)
    assert missed == set()
    assert worded != button_label(action) and "{" not in worded
    assert foreign_words(worded, values=["GQ-17"]) == []
    assert len(worded) <= blocks.BUTTON_TEXT_LIMIT


def test_a_release_grant_button_names_the_grant() -> None:
    assert button_label(Action(ActionKind.RELEASE, ButtonLabel.RELEASE_GRANT, "17", "primary")) == "Release grant GQ-17"


def test_the_posted_button_shows_the_words_and_keeps_its_value() -> None:
    found = blocks.message_blocks("hi", [Action(ActionKind.SNOOZE, ButtonLabel.SNOOZE, "ai-frontier-research")])
    button = found[1]["elements"][0]
    assert button["text"]["text"] == "Snooze 24 h" and button["value"] == "ai-frontier-research"
    with speaking(Language.ZH_CN):
        found = blocks.message_blocks("你好", [Action(ActionKind.RELEASE, ButtonLabel.RELEASE_GRANT, "17", "primary")])
    button = found[1]["elements"][0]
    assert button["text"]["text"] == "释放临时配额 GQ-17" and button["value"] == "17"


def test_a_typed_button_survives_the_outbox_and_an_old_entrys_words_are_kept() -> None:
    typed = Action(ActionKind.RETRY, ButtonLabel.RETRY, "3", "primary")
    assert _action(_action_json(typed)) == typed
    old = _action({"kind": "release", "label": "Give back", "value": "3", "style": None})  # stored before typed labels
    assert old.label == "Give back" and button_label(old) == "Give back"
    with speaking(Language.ZH_CN):
        assert button_label(old) == "Give back"  # the words it stored, in whatever language they were
