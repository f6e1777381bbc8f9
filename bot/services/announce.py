"""Tell people what happened: the request message, its thread, and direct messages.

Chat is how people learn of outcomes, but a Slack failure must never undo or block a change that
already happened: every send here logs and swallows the bot's own errors and reports whether it
worked. A request message Slack refused is re-posted by the reconcile job (its ``message_ts`` stays
empty until then).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from bot.adapters.db.database import Database
from bot.domain.policy import Policy
from bot.errors import GpuQuotaError
from bot.services.cards import RequestCard, card_for
from bot.services.ports import Action, MessageRef, Notifier, Report

log = logging.getLogger(__name__)


class Announcer:
    def __init__(self, *, notifier: Notifier, policy: Policy, database: Database) -> None:
        self._notifier = notifier
        self._policy = policy
        self._db = database

    def card(self, request_id: int) -> RequestCard:
        def load(repo):  # type: ignore[no-untyped-def]
            request = repo.request(request_id)
            assert request is not None, f"request {request_id} vanished"
            extended_end = None
            if request.extends_request_id is not None:
                grant = repo.grant_of(request.extends_request_id)
                extended_end = grant.ends_at if grant else None
            return card_for(request, self._policy, extended_grant_ends_at=extended_end)

        return self._db.run(load)

    def post_card(self, request_id: int) -> str | None:
        """Post the request message once and remember where; returns the Slack error on failure."""
        card = self.card(request_id)
        if card.message_ts is not None:
            return None
        try:
            ref = self._notifier.post_request(card)
        except GpuQuotaError as error:
            log.error("could not post %s in %s: %s", card.display_id, card.channel_id, error)
            return str(error)

        def remember(repo):  # type: ignore[no-untyped-def]
            request = repo.request(request_id)
            request.message_ts = ref.ts
            request.channel_id = ref.channel_id

        self._db.run(remember)
        return None

    def refresh(self, request_id: int) -> None:
        card = self.card(request_id)
        if card.message_ts is None:
            return
        try:
            self._notifier.update_request(card)
        except GpuQuotaError as error:
            log.error("could not update the message of %s: %s", card.display_id, error)

    def thread(self, request_id: int, text: str, *, actions: Sequence[Action] = ()) -> bool:
        card = self.card(request_id)
        if card.message_ts is None:
            log.warning("no message for %s yet; thread reply kept in the log only: %s", card.display_id, text)
            return False
        try:
            self._notifier.reply(MessageRef(card.channel_id, card.message_ts), text, actions=actions)
            return True
        except GpuQuotaError as error:
            log.error("could not reply in the thread of %s: %s", card.display_id, error)
            return False

    def direct(self, user_id: str, text: str, *, actions: Sequence[Action] = ()) -> bool:
        try:
            self._notifier.tell_user(user_id, text, actions=actions)
            return True
        except GpuQuotaError as error:
            log.error("could not send a direct message to %s: %s", user_id, error)
            return False

    def post(self, channel_id: str, text: str, *, actions: Sequence[Action] = ()) -> bool:
        try:
            self._notifier.post(channel_id, text, actions=actions)
            return True
        except GpuQuotaError as error:
            log.error("could not post in %s: %s", channel_id, error)
            return False

    def publish(self, channel_id: str, report: Report) -> MessageRef | None:
        try:
            return self._notifier.publish(channel_id, report)
        except GpuQuotaError as error:
            log.error("could not publish %r in %s: %s", report.title, channel_id, error)
            return None
