"""Buttons: Approve (one click, or a confirmation form for permanent and large changes) and Deny (a
form asking why; both refuse at the click whoever may not decide) on the request message and the App
Home tab, Retry in its thread, Extend / Release in reminders, Snooze and Release on idle-GPU nudges,
Request more on quota-blocked workload alerts, Propose shift on a proposal (opens the shift form
prefilled; nothing is submitted by the click). Every answer is in the reader's language."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from slack_bolt import Ack, App, Respond
from slack_sdk import WebClient

from bot.adapters.slack import ids, modals, mrkdwn
from bot.adapters.slack.events import ButtonClick, click_surface
from bot.adapters.slack.notifier import slack_call
from bot.adapters.slack.replies import reply_text
from bot.adapters.slack.sentences import fill
from bot.adapters.slack.words import render
from bot.domain.commands import format_request_id
from bot.errors import GpuQuotaError
from bot.services.outcomes import Confirmation
from bot.services.ports import ActionKind
from handlers.outcome import attempt, busy, expired
from handlers.replies import open_extend_form, open_request_form, open_shift_form, open_view, reply_privately

if TYPE_CHECKING:
    from bot.executor import TrackingExecutor
    from bot.services.container import Services

log = logging.getLogger(__name__)


def register(app: App, services: Services, work: TrackingExecutor) -> None:
    def on_click(ack: Ack, body: dict[str, Any], respond: Respond, client: WebClient) -> None:
        answer = answerer(services, body, respond)
        # Slack shows nothing of a click's ack body: the busy answer goes where the answer would.
        work.hand_off(
            lambda: click_work(body, answer, respond, client),
            ack=ack,
            busy_ack=ack,
            busy_notice=lambda: answer(busy()),
            expired=lambda: answer(expired()),
            interaction="click",
        )

    def click_work(body: dict[str, Any], answer: Callable[[str], None], respond: Respond, client: WebClient) -> None:
        click = ButtonClick.from_body(body)
        user = click.user_id

        if click.kind == ActionKind.REQUEST_MORE:
            open_request_form(services, user, click.prefill(), client, respond, trigger_id=click.trigger_id, channel_id=None)
            return
        if click.kind == ActionKind.PROPOSE_SHIFT:
            proposal = click.shift_prefill()
            if proposal is None:
                invalid_button(answer, click)
                return
            source, target, moved = proposal
            open_shift_form(client, respond, click.trigger_id, source=source, target=target, gpus_moved=moved)
            return
        if click.kind == ActionKind.SNOOZE:
            idle, namespace = services.idle, click.namespace
            if namespace is None:
                invalid_button(answer, click)
            elif idle is not None:
                answer(attempt(lambda: render(idle.snooze(user=user, namespace=namespace)), user=user, what="snooze"))
            return
        request_id = click.request_id
        if request_id is None:
            invalid_button(answer, click)
            return
        if click.kind == ActionKind.EXTEND:
            refused = attempt(
                lambda: services.submissions.check_extendable(request_id), user=user, what=f"extend GQ-{request_id}"
            )
            if refused is not None:
                answer(refused)
                return
            open_extend_form(client, respond, click.trigger_id, request_id)
            return
        if click.kind == ActionKind.DENY:
            # As Approve does: whom the form's submission would refuse is refused at the click.
            refused = attempt(
                lambda: services.decisions.check_deniable(user=user, request_id=request_id),
                user=user,
                what=f"deny on GQ-{request_id}",
            )
            if refused is not None:
                answer(refused)
                return
            open_view(
                client,
                answer,
                click.trigger_id,
                modals.deny_form(request_id),
                instead=mrkdwn.render(
                    fill(
                        "Press Deny again, or type `deny <reason>` in the thread of {request}.",
                        request=format_request_id(request_id),
                    )
                ),
            )
            return
        if click.kind == ActionKind.APPROVE:
            # A permanent or large change is approved by submitting a form; the click itself then records nothing.
            outcome = attempt(
                lambda: services.decisions.approve_or_confirm(user=user, request_id=request_id),
                user=user,
                what=f"approve on GQ-{request_id}",
            )
            if isinstance(outcome, Confirmation):
                open_confirmation(client, answer, click.trigger_id, outcome)
            else:
                answer(outcome if isinstance(outcome, str) else reply_text(outcome))
            return
        work: dict[ActionKind, Callable[[], str]] = {
            ActionKind.RETRY: lambda: reply_text(services.lifecycle.retry(user=user, request_id=request_id)),
            ActionKind.RELEASE: lambda: reply_text(services.lifecycle.release(user=user, request_id=request_id)),
        }
        answer(attempt(work[click.kind], user=user, what=f"{click.kind} on GQ-{request_id}"))

    for action_id in ids.ACTION_IDS.values():
        app.action(action_id)(on_click)


def answerer(services: Services, body: dict[str, Any], respond: Respond) -> Callable[[str], None]:
    """How to answer the person who clicked: ephemeral under the message; on the App Home tab (no
    response_url) the tab shows it."""
    user = str((body.get("user") or {}).get("id", ""))

    def answer(text: str) -> None:
        if click_surface(body) == "home":
            services.home.publish(user, notice=text)
        else:
            reply_privately(respond, text)

    return answer


def invalid_button(answer: Callable[[str], None], click: ButtonClick) -> None:
    """A button value the bot did not make: forged, or from a message it no longer understands."""
    log.warning("invalid %s button value from %s: %r", click.kind, click.user_id, click.value[:100])
    answer(
        mrkdwn.render(
            fill(":no_entry_sign: This button is not valid (it does not name a request the bot made); nothing was done.")
        )
    )


def open_confirmation(
    client: WebClient, answer: Callable[[str], None], trigger_id: str | None, confirmation: Confirmation
) -> None:
    try:
        slack_call(
            "open the approval form",
            lambda: client.views_open(trigger_id=trigger_id, view=modals.confirm_approval_form(confirmation)),
        )
    except GpuQuotaError as error:
        log.warning("could not open the approval form of %s: %s", confirmation.display_id, error)
        answer(
            mrkdwn.render(
                fill(
                    ":warning: Could not open the approval form ({detail}). Nothing was recorded; click Approve again.",
                    detail=str(error),
                )
            )
        )
