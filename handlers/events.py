"""Events API: decisions typed in a request's thread, the App Home tab, and a 200 for everything else.

Slack re-sends an event that got no 200 within 3 seconds, and switches an app's subscription off
when too many deliveries fail; Bolt answers 404 to an event no listener takes. So every event is
answered 200, a re-sent one (same ``event_id``) is dropped before any listener sees it, and
messages that are not decisions are left alone. A decision is typed in English or in Chinese
(``approve`` / ``批准``, ``deny <reason>`` / ``拒绝 <理由>``: ``parse_thread_decision``); the answers in
the thread are in the reader's language, addressed to the person who typed.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from slack_bolt import App, BoltContext, BoltResponse
from slack_sdk import WebClient

from bot.adapters.slack.events import ThreadReply
from bot.adapters.slack.mrkdwn import render
from bot.adapters.slack.notifier import slack_call
from bot.adapters.slack.sentences import fill
from bot.domain.commands import ThreadDecision, format_request_id, parse_thread_decision
from bot.domain.lifecycle import Verdict
from bot.errors import GpuQuotaError
from bot.services.outcomes import Confirmation
from bot.services.text import Notice, User
from handlers.outcome import attempt

if TYPE_CHECKING:
    from bot.executor import TrackingExecutor
    from bot.services.container import Services

log = logging.getLogger(__name__)


def register(app: App, services: Services, work: TrackingExecutor) -> None:
    @app.middleware
    def once_per_event(body: dict[str, Any], next: Callable[[], None]) -> BoltResponse | None:  # noqa: A002 (Bolt's name)
        if body.get("type") == "app_rate_limited":
            # Slack's notice (no inner event, so no listener: Bolt would answer 404) that it is dropping events.
            log.warning(
                "Slack rate limits this app's events since %s: decisions typed in threads may not arrive (buttons still work)",
                _minute(body),
            )
            return BoltResponse(status=200, body="")
        event_id = body.get("event_id") if body.get("type") == "event_callback" else None
        if event_id and not services.inbox.first_delivery(str(event_id)):
            return BoltResponse(status=200, body="")
        next()
        return None

    @app.event("message")
    def on_message(event: dict[str, Any], client: WebClient, context: BoltContext) -> None:
        reply = ThreadReply.from_event(event)
        decision = parse_thread_decision(reply.text, bot_user_id=context.bot_user_id or "") if reply else None
        if reply is None or decision is None:
            return
        later(work, lambda: _decide_if_a_request(services, client, reply, decision))

    @app.event("app_home_opened")
    def on_home_opened(event: dict[str, Any]) -> None:
        if event.get("tab", "home") == "home" and event.get("user"):
            later(work, lambda: services.home.publish(str(event["user"])))

    # Registered last: an event no listener above took is still answered 200.
    @app.event(re.compile(".*"))
    def on_any_other_event() -> None:
        return None


def later(work: TrackingExecutor, job: Callable[[], None]) -> None:
    """Answer the event at once (Bolt sends 200 when the listener returns) and do ``job`` in the work
    pool; when the pool is full, do it here: the delivery is already claimed, so a re-send would be dropped."""
    work.hand_off(job, ack=lambda: None, busy_ack=job)


def _decide_if_a_request(services: Services, client: WebClient, reply: ThreadReply, decision: ThreadDecision) -> None:
    request_id = services.queries.request_at(reply.channel_id, reply.thread_ts)
    if request_id is not None:
        decide_in_thread(services, client, reply, request_id, decision)


def _minute(body: dict[str, Any]) -> str:
    try:
        return f"{datetime.fromtimestamp(int(body['minute_rate_limited']), timezone.utc):%Y-%m-%d %H:%M} UTC"
    except (KeyError, TypeError, ValueError, OverflowError, OSError):
        return "an unknown minute"


def decide_in_thread(
    services: Services, client: WebClient, reply: ThreadReply, request_id: int, decision: ThreadDecision
) -> None:
    """The same rules as a click; a refusal is answered in the thread, to the person who typed."""
    verdict = Verdict.APPROVE if decision.approve else Verdict.DENY
    if verdict == Verdict.DENY and not decision.reason:
        # As the Deny button does: refused first (nobody is asked for a reason for nothing), then asked why.
        refused = attempt(
            lambda: services.decisions.check_deniable(user=reply.user_id, request_id=request_id),
            user=reply.user_id,
            what=f"typed deny on GQ-{request_id}",
        )
        if refused is not None:
            answer_in_thread(client, reply, addressed(reply, refused))
            return
        log.info("typed deny on GQ-%s by %s without a reason; nothing decided", request_id, reply.user_id)
        said = fill(":no_entry_sign: Say why: type `deny <reason>`; the requester reads it. Nothing was decided.")
        answer_in_thread(client, reply, addressed(reply, render(said)))
        return

    def decide() -> str | None:
        if verdict == Verdict.DENY:
            services.decisions.decide(user=reply.user_id, request_id=request_id, verdict=verdict, reason=decision.reason)
            return None
        outcome = services.decisions.approve_or_confirm(user=reply.user_id, request_id=request_id, reason=decision.reason)
        if not isinstance(outcome, Confirmation):
            return None
        return render(
            fill(
                ":point_up: {request} is a permanent or large change: approve it with its Approve button, which shows"
                " the quota now → after and the monthly cost before your approval counts.",
                request=format_request_id(request_id),
            )
        )

    refusal = attempt(decide, user=reply.user_id, what=f"typed {verdict} on GQ-{request_id}")
    if refusal is not None:
        answer_in_thread(client, reply, addressed(reply, refusal))


def addressed(reply: ThreadReply, answer: str) -> str:
    """``answer`` (mrkdwn) after a mention of the person who typed: the thread is shared, the answer is theirs."""
    return render(Notice((User(reply.user_id),))) + " " + answer


def answer_in_thread(client: WebClient, reply: ThreadReply, text: str) -> None:
    try:
        slack_call(
            "answer in the thread",
            lambda: client.chat_postMessage(channel=reply.channel_id, thread_ts=reply.thread_ts, text=text),
        )
    except GpuQuotaError as error:
        log.error("could not answer %s in a request's thread: %s", reply.user_id, error)
