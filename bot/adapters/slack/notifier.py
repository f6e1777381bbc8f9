"""The Slack Web API behind ``Notifier`` and ``Directory``.

``SlackApiError`` and connection failures become the bot's error kinds here; nothing above this
module imports ``slack_sdk``. Rate limits of reports are waited out by the SDK's
``RateLimitErrorRetryHandler`` (installed by ``make_web_client``). Request messages (cards), replies,
direct messages, posts and message updates are not: a 429 surfaces at once as ``RateLimited`` with its
Retry-After, so no worker thread sleeps through a rate limit and the caller decides when to try again
(the outbox for what it delivers, the post claim for cards: a card post asleep in the SDK while a
reconcile tick re-posted the card once left two cards).
Messages are worded and rendered to mrkdwn here (``words.render``), at delivery, in the reader's
language (``languages``): a channel's team's for what is posted in a channel, the person's for a DM.
"""

from __future__ import annotations

import logging
import ssl
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.http_retry.builtin_handlers import ConnectionErrorRetryHandler, RateLimitErrorRetryHandler

from bot.adapters import i18n
from bot.adapters.slack.blocks import message_blocks, report_blocks, request_fallback_text, request_message
from bot.adapters.slack.languages import Languages
from bot.adapters.slack.reports import digest_report
from bot.adapters.slack.transport import PooledWebClient
from bot.adapters.slack.words import render
from bot.errors import PermanentError, RateLimited, TemporaryError
from bot.observability import count_error
from bot.services.messages import Said
from bot.services.ports import Action, MessageRef
from bot.services.reports import Digest
from bot.services.views import RequestCard

log = logging.getLogger(__name__)
T = TypeVar("T")

_HINTS = {
    "channel_not_found": "the channel does not exist or the bot cannot see it (invite the bot, check the policy)",
    "not_in_channel": "the bot is not in the channel: invite it with /invite",
    "is_archived": "the channel is archived",
    "invalid_auth": "SLACK_BOT_TOKEN was rejected",
    "not_authed": "no SLACK_BOT_TOKEN was sent",
    "account_inactive": "the bot's token belongs to a deactivated app or workspace",
    "missing_scope": "the Slack app lacks a scope: compare it with deploy/slack-app-manifest.yaml",
    "no_such_subteam": "the user group does not exist",
    "msg_too_long": "the message is too long",
    "invalid_blocks": "Slack rejected the message layout",
}
_TEMPORARY = {"ratelimited", "rate_limited", "internal_error", "fatal_error", "service_unavailable", "request_timeout"}


def make_web_client(token: str | None, *, base_url: str, timeout: int = 15, ssl: ssl.SSLContext | None = None) -> PooledWebClient:
    """A WebClient on kept-alive connections that retries rate limits and dropped connections (Slack's
    SDK does not by default); ``ssl``: the certificates it trusts (default: the system's)."""
    retries = [ConnectionErrorRetryHandler(max_retry_count=2), RateLimitErrorRetryHandler(max_retry_count=3)]
    return PooledWebClient(token=token, base_url=base_url, timeout=timeout, ssl=ssl, retry_handlers=retries)


def slack_call(action: str, call: Callable[[], T]) -> T:
    """Run a Web API call; Slack's errors come out as PermanentError or TemporaryError."""
    try:
        return call()
    except SlackApiError as error:
        code = str(error.response.get("error", "unknown_error")) if error.response is not None else "unknown_error"
        hint = _HINTS.get(code, "")
        message = f"Slack refused to {action}: {code}" + (f" ({hint})" if hint else "")
        log.warning(message)
        if code in _TEMPORARY or (error.response is not None and error.response.status_code >= 500):
            count_error("slack", "temporary")
            retry_after = float((error.response.headers or {}).get("Retry-After", 1)) if error.response is not None else 1.0
            if error.response is not None and error.response.status_code == 429:
                raise RateLimited(message, delay=retry_after) from None
            raise TemporaryError(message, delay=retry_after) from None
        count_error("slack", "permanent")
        raise PermanentError(message) from None
    except (SlackClientError, OSError) as error:
        log.warning("Slack unreachable while trying to %s: %s", action, type(error).__name__)
        count_error("slack", "temporary")
        raise TemporaryError(f"Slack did not answer when the bot tried to {action}") from None


class SlackNotifier:
    def __init__(self, client: PooledWebClient, languages: Languages) -> None:
        self._client = client
        self._languages = languages
        # Cards' and the outbox's client: the same Slack and connections, without the rate-limit retry that
        # would sleep in place.
        self._outbox = client.with_retries([ConnectionErrorRetryHandler(max_retry_count=2)])
        self._dm_channels: dict[str, str] = {}
        self._lock = threading.Lock()

    def post_request(self, card: RequestCard) -> MessageRef:
        with i18n.speaking(self._languages.of_channel(card.channel_id)):
            text, blocks = request_fallback_text(card), request_message(card)
        response = slack_call(
            f"post {card.display_id} in <#{card.channel_id}>",
            lambda: self._outbox.chat_postMessage(channel=card.channel_id, text=text, blocks=blocks),
        )
        return MessageRef(str(response["channel"]), str(response["ts"]))

    def delete(self, ref: MessageRef) -> None:
        slack_call(
            f"delete the message {ref.ts} in <#{ref.channel_id}>",
            lambda: self._outbox.chat_delete(channel=ref.channel_id, ts=ref.ts),
        )

    def update_request(self, card: RequestCard) -> None:
        ts = card.message_ts
        assert ts is not None, "only posted requests are updated"
        with i18n.speaking(self._languages.of_channel(card.channel_id)):
            text, blocks = request_fallback_text(card), request_message(card)
        slack_call(
            f"update the message of {card.display_id}",
            lambda: self._outbox.chat_update(channel=card.channel_id, ts=ts, text=text, blocks=blocks),
        )

    def reply(self, ref: MessageRef, message: Said, *, actions: Sequence[Action] = ()) -> None:
        text, blocks = self._worded(message, actions, self._languages.of_channel(ref.channel_id))
        slack_call(
            "reply in a request's thread",
            lambda: self._outbox.chat_postMessage(channel=ref.channel_id, thread_ts=ref.ts, text=text, blocks=blocks),
        )

    def tell_user(self, user_id: str, message: Said, *, actions: Sequence[Action] = ()) -> None:
        channel = self._dm_channel(user_id)
        text, blocks = self._worded(message, actions, self._languages.of_person(user_id))
        slack_call(
            f"send a direct message to {user_id}",
            lambda: self._outbox.chat_postMessage(channel=channel, text=text, blocks=blocks),
        )

    def post(self, channel_id: str, message: Said, *, actions: Sequence[Action] = ()) -> MessageRef:
        text, blocks = self._worded(message, actions, self._languages.of_channel(channel_id))
        response = slack_call(
            f"post in {channel_id}",
            lambda: self._outbox.chat_postMessage(channel=channel_id, text=text, blocks=blocks),
        )
        return MessageRef(str(response["channel"]), str(response["ts"]))

    def publish(self, channel_id: str, digest: Digest) -> MessageRef:
        with i18n.speaking(self._languages.of_channel(channel_id)):
            report = digest_report(digest)
            blocks = report_blocks(report)
        response = slack_call(
            f"post {report.title!r} in <#{channel_id}>",
            lambda: self._client.chat_postMessage(channel=channel_id, text=report.title, blocks=blocks),
        )
        ref = MessageRef(str(response["channel"]), str(response["ts"]))
        if report.attachment is not None:
            attachment = report.attachment
            slack_call(
                f"upload {attachment.filename} to <#{channel_id}>",
                lambda: self._client.files_upload_v2(
                    channel=ref.channel_id,
                    content=attachment.content,
                    filename=attachment.filename,
                    title=attachment.title,
                ),
            )
        return ref

    @staticmethod
    def _worded(message: Said, actions: Sequence[Action], language: i18n.Language) -> tuple[str, list[Any]]:
        """The message's mrkdwn and blocks (with its buttons) in ``language``."""
        with i18n.speaking(language):
            text = render(message)
            return text, message_blocks(text, actions)

    def _dm_channel(self, user_id: str) -> str:
        with self._lock:
            if user_id in self._dm_channels:
                return self._dm_channels[user_id]
        response = slack_call(
            f"open a direct conversation with <@{user_id}>", lambda: self._client.conversations_open(users=user_id)
        )
        channel = str(response["channel"]["id"])
        with self._lock:
            self._dm_channels[user_id] = channel
        return channel


class SlackDirectory:
    """User group members from ``usergroups.users.list``, cached for ``ttl`` seconds for display only, and
    each person's Slack language (``users.info`` with ``include_locale``), cached as long.

    ``fresh=True`` (every decision) always asks Slack and refreshes the cache: a removed approver
    must not approve on a stale list.
    """

    def __init__(self, client: PooledWebClient, *, ttl: float = 300.0, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._client = client
        # A locale is asked for while words are made, possibly before an ack: no rate-limit retry that
        # would sleep there (a person whose locale Slack would not give now reads the channel's language).
        self._lookups = client.with_retries([])
        self._ttl = ttl
        self._monotonic = monotonic
        self._cache: dict[str, tuple[float, frozenset[str]]] = {}
        self._locales: dict[str, tuple[float, str | None]] = {}
        self._lock = threading.Lock()

    def locale(self, user_id: str) -> str | None:
        """The person's Slack locale (``en-US``, ``zh-CN``), or None when Slack did not say (logged; asked
        again after a fifth of ``ttl``)."""
        now = self._monotonic()
        with self._lock:
            cached = self._locales.get(user_id)
        if cached is not None and now < cached[0]:
            return cached[1]
        locale: str | None
        try:
            response: Any = slack_call(
                f"read the language of <@{user_id}>",
                lambda: self._lookups.users_info(user=user_id, include_locale=True),
            )
            locale = str(response["user"].get("locale") or "") or None
            until = now + self._ttl
        except (PermanentError, TemporaryError) as error:
            log.warning("the language of %s is unknown for now (%s): the channel's language is used", user_id, error)
            locale, until = None, now + self._ttl / 5
        with self._lock:
            self._locales[user_id] = (until, locale)
        return locale

    def forget_locale(self, user_id: str) -> None:
        """Ask Slack for the person's language anew next time (the shell's ``as lee zh-CN``)."""
        with self._lock:
            self._locales.pop(user_id, None)

    def usergroup_members(self, usergroup_id: str, *, fresh: bool = False) -> frozenset[str]:
        now = self._monotonic()
        with self._lock:
            cached = self._cache.get(usergroup_id)
            if cached and not fresh and now - cached[0] < self._ttl:
                return cached[1]
        response: Any = slack_call(
            f"list the members of the user group {usergroup_id}",
            lambda: self._client.usergroups_users_list(usergroup=usergroup_id),
        )
        members = frozenset(str(u) for u in response.get("users", []))
        with self._lock:
            self._cache[usergroup_id] = (now, members)
        return members
