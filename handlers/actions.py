"""Buttons: Approve / Deny on the request message, Retry in its thread, Extend / Release in reminders,
Snooze and Release on idle-GPU nudges, Request more on quota-blocked workload alerts."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from slack_bolt import Ack, App, Respond
from slack_sdk import WebClient

from bot.adapters.slack import blocks, ids
from bot.adapters.slack.events import ButtonClick, click_surface
from bot.domain.lifecycle import Verdict
from bot.services.ports import ActionKind
from handlers.commands import open_extend_form, open_form, open_view, say
from handlers.outcome import attempt

if TYPE_CHECKING:
    from bot.bootstrap import Services

log = logging.getLogger(__name__)


def register(app: App, services: Services) -> None:
    def on_click(ack: Ack, body: dict[str, Any], respond: Respond, client: WebClient) -> None:
        ack()
        click = ButtonClick.from_body(body)
        user = click.user_id

        def answer(text: str) -> None:
            """Ephemeral under the message; on the App Home tab (no response_url) the tab shows it."""
            if click_surface(body) == "home":
                services.home.publish(user, notice=text)
            else:
                say(respond, text)

        if click.kind == ActionKind.REQUEST_MORE:
            open_form(services, user, click.prefill(), client, respond, trigger_id=click.trigger_id, channel_id=None)
            return
        if click.kind == ActionKind.SNOOZE:
            idle, namespace = services.idle, click.namespace
            if namespace is None:
                invalid_button(answer, click)
            elif idle is not None:
                answer(attempt(lambda: idle.snooze(user=user, namespace=namespace), user=user, what="snooze"))
            return
        request_id = click.request_id
        if request_id is None:
            invalid_button(answer, click)
            return
        if click.kind == ActionKind.EXTEND:
            refused = attempt(lambda: services.requests.check_extendable(request_id), user=user, what=f"extend GQ-{request_id}")
            if refused is not None:
                answer(refused)
                return
            open_extend_form(client, respond, click.trigger_id, request_id)
            return
        if click.kind == ActionKind.DENY:
            open_view(
                client,
                answer,
                click.trigger_id,
                blocks.deny_form(request_id),
                instead=f"Press Deny again, or type `deny <reason>` in the thread of GQ-{request_id}.",
            )
            return
        work: dict[ActionKind, Callable[[], str]] = {
            ActionKind.APPROVE: lambda: services.requests.decide(user=user, request_id=request_id, verdict=Verdict.APPROVE),
            ActionKind.RETRY: lambda: services.requests.retry(user=user, request_id=request_id),
            ActionKind.RELEASE: lambda: services.requests.release(user=user, request_id=request_id),
        }
        answer(attempt(work[click.kind], user=user, what=f"{click.kind} on GQ-{request_id}"))

    for action_id in ids.ACTION_IDS.values():
        app.action(action_id)(on_click)


def invalid_button(answer: Callable[[str], None], click: ButtonClick) -> None:
    """A button value the bot did not make: forged, or from a message it no longer understands."""
    log.warning("invalid %s button value from %s: %r", click.kind, click.user_id, click.value[:100])
    answer(":no_entry_sign: This button is not valid (it does not name a request the bot made); nothing was done.")
