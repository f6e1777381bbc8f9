"""Buttons: Approve / Deny on the request message, Retry in its thread, Extend / Release in reminders,
Snooze and Release on idle-GPU nudges, Request more on quota-blocked workload alerts."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from slack_bolt import Ack, App, Respond
from slack_sdk import WebClient

from bot.adapters.slack import ids
from bot.adapters.slack.events import ButtonClick
from bot.domain.lifecycle import Verdict
from bot.executor import BUSY
from bot.services.ports import ActionKind
from handlers.commands import open_extend_form, open_form, say
from handlers.outcome import attempt

if TYPE_CHECKING:
    from bot.bootstrap import Services
    from bot.executor import TrackingExecutor


def register(app: App, services: Services, work: TrackingExecutor) -> None:
    def on_click(ack: Ack, body: dict[str, Any], respond: Respond, client: WebClient) -> None:
        # Slack shows nothing of a click's ack body: the busy answer goes through response_url.
        work.hand_off(lambda: click_work(body, respond, client), ack=ack, busy_ack=ack, busy_notice=lambda: say(respond, BUSY))

    def click_work(body: dict[str, Any], respond: Respond, client: WebClient) -> None:
        click = ButtonClick.from_body(body)
        user = click.user_id
        if click.kind == ActionKind.REQUEST_MORE:
            open_form(services, user, click.prefill(), client, respond, trigger_id=click.trigger_id, channel_id=None)
            return
        if click.kind == ActionKind.SNOOZE:
            idle = services.idle
            if idle is not None:
                say(respond, attempt(lambda: idle.snooze(user=user, namespace=click.value), user=user, what="snooze"))
            return
        request_id = click.request_id
        if request_id is None:
            say(respond, ":no_entry_sign: This button carries no request id; it may come from an old message.")
            return
        if click.kind == ActionKind.EXTEND:
            open_extend_form(client, respond, click.trigger_id, request_id)
            return
        work: dict[ActionKind, Callable[[], str]] = {
            ActionKind.APPROVE: lambda: services.requests.decide(user=user, request_id=request_id, verdict=Verdict.APPROVE),
            ActionKind.DENY: lambda: services.requests.decide(user=user, request_id=request_id, verdict=Verdict.DENY),
            ActionKind.RETRY: lambda: services.requests.retry(user=user, request_id=request_id),
            ActionKind.RELEASE: lambda: services.requests.release(user=user, request_id=request_id),
        }
        say(respond, attempt(work[click.kind], user=user, what=f"{click.kind} on GQ-{request_id}"))

    for action_id in ids.ACTION_IDS.values():
        app.action(action_id)(on_click)
