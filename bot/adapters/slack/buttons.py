"""The words of the buttons the bot's messages carry (``ButtonLabel``), the form a catalog takes."""

from __future__ import annotations

from bot.domain.commands import clean_text, format_request_id
from bot.services.ports import Action, ButtonLabel

LABELS = {
    ButtonLabel.RETRY: "Retry",
    ButtonLabel.GIVE_BACK: "Give back",
    ButtonLabel.RELEASE_GRANT: "Release grant {request}",
    ButtonLabel.RELEASE_NOW: "Release now",
    ButtonLabel.EXTEND: "Extend",
    ButtonLabel.SNOOZE: "Snooze 24 h",
    ButtonLabel.REQUEST_MORE: "Request more",
    ButtonLabel.PROPOSE_SHIFT: "Propose shift",
}


def button_label(action: Action) -> str:
    """The button's words (plain text: Slack shows a button's text as it is); an outbox entry of an earlier
    version shows the words it stored."""
    if not isinstance(action.label, ButtonLabel):
        return clean_text(action.label)
    request = format_request_id(int(action.value)) if action.label is ButtonLabel.RELEASE_GRANT else ""
    return LABELS[action.label].format(request=request)
