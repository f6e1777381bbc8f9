"""Who reads which language: a channel its team's, a person their Slack language.

Messages posted in a channel (cards, threads, digests, alerts) are in the language of the team whose
channel it is (``teams.<team>.language``), else the policy's (``language``). What goes to one person
(a direct message, an ephemeral answer, the App Home, a form they open) is in their Slack language
(``users.info`` with ``include_locale``, cached by ``SlackDirectory``) when the bot speaks it, else the
channel's they wrote in, else the policy's. The choice is made here, at the edge; use cases never see it.
"""

from __future__ import annotations

import contextvars
import json
from collections.abc import Callable
from typing import Any

from slack_bolt import App, BoltRequest, BoltResponse

from bot.adapters import i18n
from bot.domain.languages import Language, parse_language
from bot.domain.policy import Policy

Locales = Callable[[str], str | None]  # a person's Slack locale (en-US, zh-CN), None when unknown


class RequestScopedApp(App):
    """Bolt's ``App``, each request dispatched in a context of its own: the language its middleware sets for the
    request (``Languages.listener_middleware``) ends with it, whichever thread serves the next one (waitress's,
    Socket Mode's, a test's); work handed to the pool takes a copy along (``bot.executor``)."""

    def dispatch(self, req: BoltRequest) -> BoltResponse:
        return contextvars.copy_context().run(super().dispatch, req)


class Languages:
    def __init__(self, policy: Policy, locale_of: Locales) -> None:
        self._policy = policy
        self._locale_of = locale_of

    @classmethod
    def only(cls, language: Language) -> Languages:
        """Everyone reads ``language`` (a tool of one reader, a test of something else)."""
        return cls(Policy.model_validate({"language": language.value, "teams": {}}), lambda _user: None)

    def of_channel(self, channel_id: str | None) -> Language:
        """The language of what is posted in ``channel_id`` (a DM or an unknown channel: the policy's)."""
        return self._policy.language_of_channel(channel_id) if channel_id else self._policy.language

    def of_person(self, user_id: str, *, channel_id: str | None = None) -> Language:
        """The language of what goes to ``user_id`` alone (``channel_id``: where they asked, the fallback)."""
        locale = self._locale_of(user_id)
        spoken = parse_language(locale) if locale else None
        return spoken if spoken is not None else self.of_channel(channel_id)

    def listener_middleware(self) -> Callable[..., Any]:
        """A Bolt middleware: a listener's words are in the language of the person who acted (read only
        when words are made, so an acknowledgement that says nothing asks Slack nothing)."""

        def language_of_the_person(context: Any, body: dict[str, Any], next: Callable[[], Any]) -> Any:  # noqa: A002
            user_id, channel_id = context.user_id, context.channel_id
            opened_in = _form_language(body)
            if opened_in is not None:  # a form's submission or close is answered in the form's language
                i18n.use(opened_in)
            elif user_id:
                i18n.use_lazily(lambda: self.of_person(user_id, channel_id=channel_id))
            else:
                i18n.use(self.of_channel(channel_id))
            return next()

        return language_of_the_person


def _form_language(body: dict[str, Any]) -> Language | None:
    """The language a form was opened in (its ``private_metadata``'s ``language``), for its submission or close."""
    if body.get("type") not in ("view_submission", "view_closed"):
        return None
    try:
        metadata = json.loads(body.get("view", {}).get("private_metadata") or "{}")
    except ValueError:
        return None
    tag = metadata.get("language") if isinstance(metadata, dict) else None
    return parse_language(tag) if isinstance(tag, str) else None
