"""Events API: decisions typed in a request's thread, the App Home tab, and a 200 for everything else.

Slack re-sends an event that got no 200 within 3 seconds, and switches an app's subscription off
when too many deliveries fail; Bolt answers 404 to an event no listener takes. So every event is
answered 200, a re-sent one (same ``event_id``) is dropped before any listener sees it, and
messages that are not decisions are left alone.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from slack_bolt import App, BoltResponse
from slack_sdk import WebClient

from bot.adapters.slack.events import ThreadReply
from bot.adapters.slack.notifier import slack_call
from bot.domain.commands import ThreadDecision, format_request_id, parse_thread_decision
from bot.domain.lifecycle import Verdict
from bot.errors import GpuQuotaError
from handlers.outcome import attempt

if TYPE_CHECKING:
    from bot.services.container import Services

log = logging.getLogger(__name__)


def register(app: App, services: Services) -> None:
    @app.middleware
    def once_per_event(body: dict[str, Any], next: Callable[[], None]) -> BoltResponse | None:  # noqa: A002 (Bolt's name)
        event_id = body.get("event_id") if body.get("type") == "event_callback" else None
        if event_id and not services.inbox.first_delivery(str(event_id)):
            return BoltResponse(status=200, body="")
        next()
        return None

    @app.event("message")
    def on_message(event: dict[str, Any], client: WebClient) -> None:
        reply = ThreadReply.from_event(event)
        decision = parse_thread_decision(reply.text) if reply else None
        if reply is None or decision is None:
            return
        request_id = services.queries.request_at(reply.channel_id, reply.thread_ts)
        if request_id is not None:
            decide_in_thread(services, client, reply, request_id, decision)

    @app.event("app_home_opened")
    def on_home_opened(event: dict[str, Any]) -> None:
        if event.get("tab", "home") == "home" and event.get("user"):
            services.home.publish(str(event["user"]))

    # Registered last: an event no listener above took is still answered 200.
    @app.event(re.compile(".*"))
    def on_any_other_event() -> None:
        return None


def decide_in_thread(
    services: Services, client: WebClient, reply: ThreadReply, request_id: int, decision: ThreadDecision
) -> None:
    """The same rules as a click; a refusal is answered in the thread, to the person who typed."""
    verdict = Verdict.APPROVE if decision.approve else Verdict.DENY

    def decide() -> str | None:
        if verdict == Verdict.APPROVE and services.requests.confirmation(user=reply.user_id, request_id=request_id):
            return (
                f":point_up: {format_request_id(request_id)} is a permanent or large change: approve it with its Approve"
                " button, which shows the quota now → after and the monthly cost before your approval counts."
            )
        services.requests.decide(user=reply.user_id, request_id=request_id, verdict=verdict, reason=decision.reason)
        return None

    refusal = attempt(decide, user=reply.user_id, what=f"typed {verdict} on GQ-{request_id}")
    if refusal is not None:
        answer_in_thread(client, reply, f"<@{reply.user_id}> {refusal}")


def answer_in_thread(client: WebClient, reply: ThreadReply, text: str) -> None:
    try:
        slack_call(
            "answer in the thread",
            lambda: client.chat_postMessage(channel=reply.channel_id, thread_ts=reply.thread_ts, text=text),
        )
    except GpuQuotaError as error:
        log.error("could not answer %s in a request's thread: %s", reply.user_id, error)
