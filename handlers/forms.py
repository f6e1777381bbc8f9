"""Modal submissions: the request form and the extend form.

Field errors go back inline (``response_action=errors``). A valid form is acknowledged by turning
the modal into a "submitting" notice, which is then updated with the outcome.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from slack_bolt import Ack, App
from slack_sdk import WebClient
from slack_sdk.models.blocks import MarkdownTextObject, SectionBlock
from slack_sdk.models.views import View

from bot.adapters.slack import ids
from bot.adapters.slack.events import FormSubmission, draft_from_form
from bot.adapters.slack.notifier import slack_call
from bot.domain.durations import parse_duration
from bot.errors import GpuQuotaError
from bot.executor import BUSY
from handlers.commands import submitted_text
from handlers.outcome import attempt

if TYPE_CHECKING:
    from bot.bootstrap import Services
    from bot.executor import TrackingExecutor

log = logging.getLogger(__name__)


def notice_view(title: str, text: str) -> View:
    return View(type="modal", title=title[:24], close="Close", blocks=[SectionBlock(text=MarkdownTextObject(text=text[:3000]))])


def register(app: App, services: Services, work: TrackingExecutor) -> None:
    def hand_off(ack: Ack, title: str, outcome: Callable[[], str], body: dict[str, Any], client: WebClient) -> None:
        """Show "Submitting…" in the ack and the outcome later; when busy, keep the form open with a note."""
        work.hand_off(
            lambda: show(client, body, notice_view(title, outcome())),
            ack=lambda: ack(response_action="update", view=notice_view(title, ":hourglass_flowing_sand: Submitting…")),
            busy_ack=lambda: ack(response_action="errors", errors={ids.REASON_BLOCK: BUSY}),
        )

    @app.view(ids.REQUEST_FORM)
    def on_request_form(ack: Ack, body: dict[str, Any], client: WebClient) -> None:
        form = FormSubmission.from_body(body)
        draft, errors = draft_from_form(form.values)
        if errors:
            ack(response_action="errors", errors=errors)
            return
        hand_off(
            ack,
            "GPU quota request",
            lambda: attempt(
                lambda: submitted_text(services.requests.submit(requester=form.user_id, draft=draft)),
                user=form.user_id,
                what="request form",
            ),
            body,
            client,
        )

    @app.view(ids.EXTEND_FORM)
    def on_extend_form(ack: Ack, body: dict[str, Any], client: WebClient) -> None:
        form = FormSubmission.from_body(body)
        try:
            duration = parse_duration(form.values.get(ids.DURATION_BLOCK, ""))
        except ValueError as error:
            ack(response_action="errors", errors={ids.DURATION_BLOCK: str(error)})
            return
        request_id = int(form.metadata.get("request_id", 0))
        hand_off(
            ack,
            "Extend a grant",
            lambda: attempt(
                lambda: submitted_text(
                    services.requests.extend(
                        requester=form.user_id,
                        request_id=request_id,
                        duration=duration,
                        reason=form.values.get(ids.REASON_BLOCK, ""),
                    )
                ),
                user=form.user_id,
                what="extend form",
            ),
            body,
            client,
        )


def show(client: WebClient, body: dict[str, Any], view: View) -> None:
    """Replace the open modal with the outcome; a failure is logged (the person sees 'Submitting…')."""
    view_id = (body.get("view") or {}).get("id")
    try:
        slack_call("show the outcome in the form", lambda: client.views_update(view_id=view_id, view=view))
    except GpuQuotaError as error:
        log.error("could not show the outcome of a form to %s: %s", (body.get("user") or {}).get("id"), error)
