"""Tell people what happened: the request message, its thread, direct messages, channel posts.

Chat is how people learn of outcomes, but a Slack failure must never undo or block a change that
already happened, nor lose what the audit says happened. So every thread reply, direct message,
channel post and request-message update is first recorded in the outbox (the ``Outbox`` port) and then
delivered, in order per stream (a request's thread, its message, a person, a channel): at once when
Slack takes it, otherwise by the reconcile tick (``deliver_pending``). A reply waits while the
request message has no ``ts`` yet; a 429 waits exactly its ``Retry-After``, a 5xx or timeout backs off; a
permanent refusal (channel_not_found, ...) is tried ``PERMANENT_TRIES`` times, then marked dead with
a log line and a counted error. A request-message update renders the request as it is at delivery,
so only the latest state is ever sent and a decided request loses its buttons once Slack answers.

A message decided with a state change is recorded in that change's transaction (``outgoing()``: an
``Outgoing`` the transaction function records into, delivered once ``Database.run`` returned), so it
exists if and only if the change commits: a process killed between the commit and the delivery leaves
it for the reconcile tick. ``thread``/``direct``/``post``/``refresh`` record in a transaction of their
own, for what no state change decides.

Mail goes the same way (``Outgoing.mail``): one entry per recipient, in a stream of its own
(``mail:<address>``), so a recipient the server refuses does not hold back the others. The ``Mailer``
sends it; a temporary failure (the server down or unreachable, a 4xx reply) backs off as a Slack 5xx
does, a permanent one (a 5xx for the recipient, the login refused) is tried ``PERMANENT_TRIES`` times,
then the entry is dead, logged and counted (``gpu_quota_errors{system="smtp",kind="undeliverable"}``).
A mail is marked sent once the server accepted its data; a process that dies in between leaves it to
be sent again when its lease lapses, with the same Message-ID (``mail_key``), for the receiver to drop.

The request message itself is posted at once (``post_card``): its ``ts`` anchors the thread. A post
Slack refused is re-posted by the reconcile job (its ``message_ts`` stays empty until then). One card
per request, across threads and replicas: only the holder of the request row's post claim posts it
(a conditional UPDATE takes it: no ``ts`` yet, claim free or lapsed; the creating transaction writes
the row claimed by its submitter), and a ``ts`` is stored only while none is. A 429 is never slept
through: its Retry-After becomes the earliest time anyone posts again, and the reconcile posts it then.
A card posted by a claim that had lapsed meanwhile loses the compare-and-set to the card stored first
and is deleted. What Slack cannot dedupe: a process killed after Slack accepted the post and before
the ``ts`` was stored leaves a card nobody knows of; once the claim lapses (``LEASE``) the reconcile
posts another, and the first stays in the channel with live buttons (a click on it still decides the
request, whose replies go to the stored card's thread). A shift's copy for the source team has its
own claim, the same way.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from bot.clock import Clock, SystemClock
from bot.domain.entities import Request
from bot.domain.lifecycle import RequestState
from bot.domain.policy import Policy
from bot.domain.quota import QuotaScope
from bot.errors import GpuQuotaError, PermanentError, RateLimited, TemporaryError
from bot.observability import count_error
from bot.services.cards import card_for, source_copy
from bot.services.mail_messages import MailMessage, mail_from_json, mail_to_json
from bot.services.messages import CopyNotPosted, Message, Said, from_json, to_json
from bot.services.pods import PodView
from bot.services.ports import (
    Action,
    ActionKind,
    ButtonLabel,
    Claimed,
    Mailer,
    MessageRef,
    Notifier,
    Repository,
    Transactions,
)
from bot.services.reports import Digest
from bot.services.views import RequestCard

log = logging.getLogger(__name__)

# Longer than one Slack call with the SDK's connection retries (none sleeps on a 429), so a live
# deliverer or card poster keeps its claim.
LEASE = timedelta(minutes=2)
FIRST_BACKOFF = timedelta(seconds=5)
MAX_BACKOFF = timedelta(minutes=5)
PERMANENT_TRIES = 3
# A reply still waiting for its request message after this long will never have one.
UNPOSTED_GIVE_UP = timedelta(days=1)
# How long settled entries stay for the operator to read: sent ones a week, dead ones a month.
SENT_KEPT = timedelta(days=7)
DEAD_KEPT = timedelta(days=30)
MAIL = "mail"  # the kind of a mail's entry


class Announcer:
    def __init__(
        self,
        *,
        notifier: Notifier,
        policy: Policy,
        database: Transactions,
        clock: Clock | None = None,
        pods: PodView | None = None,
        mailer: Mailer | None = None,
    ) -> None:
        """``mailer``: where mail goes (None: no SMTP_URL, and nothing is recorded for mail)."""
        self._pods = pods
        self._notifier = notifier
        self._mailer = mailer
        self._policy = policy
        self._db = database
        self._outbox = database.outbox()
        self._clock = clock or SystemClock()

    @property
    def mails(self) -> bool:
        """Whether mail can be sent (SMTP_URL is set): the callers record mail only then."""
        return self._mailer is not None

    def card(self, request_id: int) -> RequestCard:
        def load(repo: Repository) -> RequestCard:
            request = repo.request(request_id)
            assert request is not None, f"request {request_id} vanished"
            return self.card_of(repo, request)

        return self._with_pods(self._db.run(load))

    def _with_pods(self, card: RequestCard) -> RequestCard:
        """A pending card shows the namespace's GPU pods (a shift's: the source's, what keeps running
        there); class warnings only for temporary increases, the grants ``borrowed_priority_classes``
        is about."""
        if self._pods is None or card.state != RequestState.PENDING:
            return card
        if card.shift is not None:
            return replace(card, pods=replace(self._pods.in_view(QuotaScope(card.shift.namespace, card.resource)), warnings=()))
        view = self._pods.in_view(QuotaScope(card.namespace, card.resource))
        if card.permanent or card.delta <= 0:
            view = replace(view, warnings=())
        return replace(card, pods=view)

    def card_of(self, repo: Repository, request: Request) -> RequestCard:
        """The card of a request row read in ``repo``'s transaction (no second read of the row)."""
        extended_end = None
        if request.extends_request_id is not None:
            grant = repo.grant_of(request.extends_request_id)
            extended_end = grant.ends_at if grant else None
        return card_for(request, self._policy, extended_grant_ends_at=extended_end)

    def new_card_claim(self) -> datetime:
        """The post claim a new request's row is written with: its submitter posts the card right after
        the commit (``post_card(..., claimed=True)``), and nobody else before this time."""
        return self._clock.now() + LEASE

    def post_card(
        self, request_id: int, *, card: RequestCard | None = None, claimed: datetime | None = None
    ) -> GpuQuotaError | None:
        """Post the request message once and remember where; returns Slack's error when it did not take the
        post (``RateLimited``: the reconcile posts it after the Retry-After); None when it is posted (also
        when already, or by someone else).

        ``card``: the card as the caller's transaction just rendered it (saves reading the row again);
        ``claimed``: the post claim that transaction wrote the row with (``new_card_claim``).
        Replies and updates recorded before the ``ts`` was known are delivered right after."""
        held = claimed or self._claim(request_id, copy=False)
        if held is None:
            return None
        card = self._with_pods(card) if card is not None else self.card(request_id)
        try:
            ref = self._post_claimed(card, copy=False, held=held)
        except GpuQuotaError as error:
            log.error("could not post %s in %s: %s", card.display_id, card.channel_id, error)
            return error

        def remember(repo: Repository) -> list[str] | None:
            if not repo.set_message_ref(request_id, channel_id=ref.channel_id, ts=ref.ts):
                return None
            # Usually nothing waits for a new message: one read says so, instead of a claim per stream.
            return repo.outbox_streams_pending([_card_stream(request_id), _thread_stream(request_id)])

        pending = self._db.run(remember)
        if pending is None:
            self._withdraw(ref, card.display_id)
            return None
        self.post_copy(request_id, card=card)
        for stream in pending:
            self._drain(stream)
        return None

    def post_copy(self, request_id: int, *, card: RequestCard | None = None) -> None:
        """A shift's card also goes to the source team's channel (its thread stays with the first card).

        Slack down (5xx, 429, timeout): left for the reconcile job to post later (a 429: not before its
        Retry-After). A refusal (channel not found, bot not in it): said once in the thread, and the copy
        is given up (``source_message_ts`` "")."""
        card = card or self.card(request_id)
        copy = source_copy(card)
        held = self._claim(request_id, copy=True) if copy is not None and copy.message_ts is None else None
        if copy is None or held is None:
            return
        try:
            ref = self._post_claimed(copy, copy=True, held=held)
        except TemporaryError as error:
            log.warning("could not post the copy of %s in %s yet: %s", card.display_id, copy.channel_id, error)
            return
        except GpuQuotaError as error:
            log.error("could not post the copy of %s in %s: %s", card.display_id, copy.channel_id, error)
            refused = CopyNotPosted(copy.channel_id, str(error), card.shift.team_label if card.shift else None)
            out = self.outgoing()

            def give_up(repo: Repository) -> None:
                if repo.set_copy_ref(card.request_id, ts=""):  # else another poster's copy is stored
                    out.thread(repo, card.request_id, refused)

            self._db.run(give_up)
            out.deliver()
            return
        if not self._db.run(lambda repo: repo.set_copy_ref(card.request_id, ts=ref.ts)):
            self._withdraw(ref, f"the copy of {card.display_id}")

    def _claim(self, request_id: int, *, copy: bool) -> datetime | None:
        """The end of the post claim this process took, or None when someone holds it or it is posted."""
        now = self._clock.now()
        until = now + LEASE
        return until if self._db.run(lambda repo: repo.claim_post(request_id, copy=copy, now=now, until=until)) else None

    def _post_claimed(self, card: RequestCard, *, copy: bool, held: datetime) -> MessageRef:
        """Post a card whose claim this process holds; when Slack does not take it, the claim ends: nobody
        posts it before the Retry-After of a 429 (or the wait a 5xx or timeout hints at; the reconcile posts
        it then), a refusal leaves the next reconcile tick free to try."""
        try:
            return self._notifier.post_request(card)
        except GpuQuotaError as error:
            wait = timedelta(seconds=error.delay) if isinstance(error, TemporaryError) else timedelta(0)
            not_before = self._clock.now() + wait
            self._db.run(lambda repo: repo.release_post(card.request_id, copy=copy, held=held, not_before=not_before))
            raise

    def _withdraw(self, ref: MessageRef, what: str) -> None:
        """Delete a card this process posted after another poster's was stored (its claim had lapsed)."""
        log.warning("%s was posted twice (a claim lapsed while Slack answered): deleting %s", what, ref.ts)
        try:
            self._notifier.delete(ref)
        except GpuQuotaError as error:
            log.error("could not delete the second card of %s (%s in %s): %s", what, ref.ts, ref.channel_id, error)
            count_error("slack", "undeliverable")

    def outgoing(self) -> Outgoing:
        """Messages to record in the caller's transaction and deliver after it commits."""
        return Outgoing(drain=self._drain, now=self._clock.now)

    def refresh(self, request_id: int) -> None:
        """Re-render the request message (recorded; only the latest state is delivered)."""
        self._say_alone(lambda out, repo: out.refresh(repo, request_id))

    def thread(self, request_id: int, text: Said, *, actions: Sequence[Action] = ()) -> bool:
        """A reply in the request's thread, in a transaction of its own; True once recorded (it is
        delivered at once or later). A reply decided with a state change goes through ``outgoing``."""
        self._say_alone(lambda out, repo: out.thread(repo, request_id, text, actions=actions))
        return True

    def direct(self, user_id: str, text: Said, *, actions: Sequence[Action] = ()) -> bool:
        self._say_alone(lambda out, repo: out.direct(repo, user_id, text, actions=actions))
        return True

    def post(self, channel_id: str, text: Said, *, actions: Sequence[Action] = ()) -> bool:
        self._say_alone(lambda out, repo: out.post(repo, channel_id, text, actions=actions))
        return True

    def publish(self, channel_id: str, digest: Digest) -> MessageRef | None:
        try:
            return self._notifier.publish(channel_id, digest)
        except GpuQuotaError as error:
            log.error("could not publish the %s of %s in %s: %s", type(digest).__name__, digest.day, channel_id, error)
            return None

    def deliver_pending(self) -> int:
        """Deliver what could not be delivered at once (the reconcile tick calls this); how many went."""
        return sum(self._drain(stream) for stream in self._outbox.due_streams(self._clock.now()))

    def forget_delivered(self) -> int:
        """Delete settled entries older than their keep period (pending ones stay); how many went."""
        now = self._clock.now()
        forgotten = self._outbox.forget(sent_before=now - SENT_KEPT, dead_before=now - DEAD_KEPT)
        if forgotten:
            log.info("forgot %d settled outbox entries", forgotten)
        return forgotten

    # --- the outbox ---------------------------------------------------------------------------

    def _say_alone(self, say: Callable[[Outgoing, Repository], None]) -> None:
        out = self.outgoing()
        self._db.run(lambda repo: say(out, repo))
        out.deliver()

    def _drain(self, stream: str) -> int:
        """Deliver the stream's entries in order until one has to wait; how many were settled."""
        settled = 0
        while (entry := self._outbox.claim_head(stream, now=self._clock.now(), lease=LEASE)) is not None:
            if not self._deliver(entry):
                break
            settled += 1
        return settled

    def _deliver(self, entry: Claimed) -> bool:
        """Try one entry; True when it is settled (sent or dead) and the next one may go."""
        now = self._clock.now()
        attempts = entry.attempts + 1
        where = _where(entry)
        try:
            delivered = self._send(entry)
        except TemporaryError as error:
            # A rate limit: exactly the Retry-After Slack asked for; other faults: backed off.
            backoff = min(MAX_BACKOFF, FIRST_BACKOFF * 2 ** (attempts - 1))
            delay = (
                timedelta(seconds=error.delay) if isinstance(error, RateLimited) else max(timedelta(seconds=error.delay), backoff)
            )
            log.warning(
                "%s did not take outbox entry %d (%s) yet, retrying in %s: %s", where, entry.id, entry.stream, delay, error
            )
            self._outbox.retry_later(entry.id, at=now + delay, error=str(error), attempts=attempts)
            return False
        except Exception as error:  # permanent refusals, and anything unforeseen: bounded, never forever
            if not isinstance(error, GpuQuotaError):
                log.exception("delivering outbox entry %d (%s) crashed", entry.id, entry.stream)
            if attempts >= PERMANENT_TRIES:
                self._give_up(entry, str(error), attempts)
                return True
            delay = FIRST_BACKOFF * 2**attempts
            if isinstance(error, GpuQuotaError):
                log.warning(
                    "%s refused outbox entry %d (%s), try %d of %d, trying again in %s: %s",
                    where,
                    entry.id,
                    entry.stream,
                    attempts,
                    PERMANENT_TRIES,
                    delay,
                    error,
                )
            self._outbox.retry_later(entry.id, at=now + delay, error=str(error), attempts=attempts)
            return False
        if delivered:
            self._outbox.sent(entry.id, now=now)
            return True
        if now - entry.created_at > UNPOSTED_GIVE_UP:
            self._give_up(entry, "the request message was never posted", attempts)
            return True
        self._outbox.release(entry.id)  # waits for the request message's ts, without spending an attempt
        return False

    def _send(self, entry: Claimed) -> bool:
        """Hand the entry to Slack (or a mail to the mail server); False when it cannot go yet (no request
        message to reply to)."""
        if entry.kind == MAIL:
            self._send_mail(entry)
            return True
        actions = [_action(a) for a in entry.actions]
        if entry.kind in ("card", "reply"):
            assert entry.request_id is not None
            card = self.card(entry.request_id)
            if card.message_ts is None:
                return False
            if entry.kind == "card":
                self._notifier.update_request(card)
                copy = source_copy(card)
                if copy is not None and copy.message_ts:  # "": the copy was refused and given up
                    self._notifier.update_request(copy)
            else:
                self._notifier.reply(MessageRef(card.channel_id, card.message_ts), _notice(entry), actions=actions)
            return True
        assert entry.target is not None
        if entry.kind == "direct":
            self._notifier.tell_user(entry.target, _notice(entry), actions=actions)
        else:
            self._notifier.post(entry.target, _notice(entry), actions=actions)
        return True

    def _send_mail(self, entry: Claimed) -> None:
        if self._mailer is None:
            raise PermanentError("SMTP_URL is not set, so the bot sends no mail")
        assert entry.notice is not None and entry.target is not None, f"outbox entry {entry.id} holds no mail"
        self._mailer.send(entry.target, mail_from_json(entry.notice), key=mail_key(entry))

    def _give_up(self, entry: Claimed, error: str, attempts: int) -> None:
        log.error("giving up on outbox entry %d (%s) after %d tries: %s", entry.id, entry.stream, attempts, error)
        count_error("smtp" if entry.kind == MAIL else "slack", "undeliverable")
        self._outbox.dead(entry.id, error=error, attempts=attempts)


class Outgoing:
    """Messages decided in one transaction, recorded in it (so they exist if and only if it commits)
    and delivered after it (``deliver``), each stream in order as ever. A process that dies between
    the commit and ``deliver`` leaves them in the outbox for the reconcile tick. A transaction run
    again after a lost race records them again from scratch: only the attempt that commits counts."""

    def __init__(self, *, drain: Callable[[str], int], now: Callable[[], datetime]) -> None:
        self._drain = drain
        self._now = now
        self._streams: dict[str, None] = {}  # insertion-ordered: drained in the order first said

    def thread(self, repo: Repository, request_id: int, text: Said, *, actions: Sequence[Action] = ()) -> None:
        """A reply in the request's thread (it waits for the request message when that has no ``ts`` yet)."""
        self._add(repo, _thread_stream(request_id), "reply", notice=text, actions=actions, request_id=request_id)

    def direct(self, repo: Repository, user_id: str, text: Said, *, actions: Sequence[Action] = ()) -> None:
        self._add(repo, f"dm:{user_id}", "direct", notice=text, actions=actions, target=user_id)

    def post(self, repo: Repository, channel_id: str, text: Said, *, actions: Sequence[Action] = ()) -> None:
        self._add(repo, f"channel:{channel_id}", "post", notice=text, actions=actions, target=channel_id)

    def refresh(self, repo: Repository, request_id: int) -> None:
        """Re-render the request message (only the latest state is delivered)."""
        self._add(repo, _card_stream(request_id), "card", request_id=request_id, latest_only=True)

    def mail(self, repo: Repository, address: str, mail: MailMessage) -> None:
        """A mail to one recipient (a stream per address: one refused does not hold back the others)."""
        self._add(repo, f"mail:{address}", MAIL, notice=mail_to_json(mail), target=address)

    def deliver(self) -> None:
        """After the transaction committed: deliver what it recorded (what Slack does not take now waits
        in the outbox for the reconcile tick)."""
        streams, self._streams = list(self._streams), {}
        for stream in streams:
            self._drain(stream)

    def _add(
        self,
        repo: Repository,
        stream: str,
        kind: str,
        *,
        notice: Said | dict[str, Any] | None = None,  # a dict: already the outbox's JSON (a mail's)
        actions: Sequence[Action] = (),
        request_id: int | None = None,
        target: str | None = None,
        latest_only: bool = False,
    ) -> None:
        repo.add_outbox_entry(
            stream=stream,
            kind=kind,
            now=self._now(),
            request_id=request_id,
            target=target,
            notice=_stored(notice),
            actions=[_action_json(a) for a in actions],
            latest_only=latest_only,
        )
        self._streams[stream] = None


def _thread_stream(request_id: int) -> str:
    return f"thread:{request_id}"


def _card_stream(request_id: int) -> str:
    return f"card:{request_id}"


def mail_key(entry: Claimed) -> str:
    """What names a mail's entry, the same on every try and unique among entries: its id and when it was
    recorded (an id alone may come again after SQLite deleted the newest entries)."""
    return f"outbox-{entry.id}.{entry.created_at:%Y%m%d%H%M%S%f}"


def _where(entry: Claimed) -> str:
    """Who did not take the entry, for the log line."""
    return "the mail server" if entry.kind == MAIL else "Slack"


def _stored(notice: Said | dict[str, Any] | None) -> dict[str, Any] | list[dict[str, str]] | None:
    """What an entry stores of what is said: a typed message's JSON, a notice's parts, or a mail's JSON as given."""
    if notice is None or isinstance(notice, dict):
        return notice
    return to_json(notice) if isinstance(notice, Message) else notice.to_json()


def _notice(entry: Claimed) -> Said:
    """The entry's typed message; an entry recorded before typed messages: its notice, as stored."""
    assert entry.notice is not None, f"outbox entry {entry.id} has no message"
    return from_json(entry.notice)


def _action_json(action: Action) -> dict[str, Any]:
    words = {"button": action.label.value} if isinstance(action.label, ButtonLabel) else {"label": action.label}
    return {"kind": action.kind.value, **words, "value": action.value, "style": action.style}


def _action(data: dict[str, Any]) -> Action:
    """An entry's button: its typed label, or the words an entry of an earlier version stored."""
    label = ButtonLabel(data["button"]) if "button" in data else str(data["label"])
    return Action(ActionKind(data["kind"]), label, data["value"], data.get("style"))
