"""The words of the buttons the bot's messages carry (``ButtonLabel``), in the reader's language.

``LABELS`` holds each label's catalog id (marked with ``N_``); ``button_label`` translates it when the
button is built, so an outbox entry is worded in the language of whoever it is delivered to.
"""

from __future__ import annotations

from bot.adapters.i18n import N_, tr
from bot.domain.commands import clean_text, format_request_id
from bot.services.ports import Action, ButtonLabel

LABELS = {
    ButtonLabel.RETRY: N_("Retry"),
    ButtonLabel.GIVE_BACK: N_("Give back"),
    ButtonLabel.RELEASE_GRANT: N_("Release grant {request}"),
    ButtonLabel.RELEASE_NOW: N_("Release now"),
    ButtonLabel.EXTEND: N_("Extend"),
    ButtonLabel.SNOOZE: N_("Snooze 24 h"),
    ButtonLabel.REQUEST_MORE: N_("Request more"),
    ButtonLabel.PROPOSE_SHIFT: N_("Propose shift"),
}


def button_label(action: Action) -> str:
    """The button's words (plain text: Slack shows a button's text as it is); an outbox entry of an earlier
    version shows the words it stored."""
    if not isinstance(action.label, ButtonLabel):
        return clean_text(action.label)
    request = format_request_id(int(action.value)) if action.label is ButtonLabel.RELEASE_GRANT else ""
    return tr(LABELS[action.label], request=request)
