"""Modal submissions: the request form, the extend form, the deny form and the approval form.

Field errors go back inline (``response_action=errors``). A valid form is acknowledged by turning
the modal into a "submitting" notice, which is then updated with the outcome. Titles, notices and
errors are in the reader's language (field errors are plain text; a notice is mrkdwn).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from slack_bolt import Ack, App
from slack_sdk import WebClient
from slack_sdk.models.blocks import MarkdownTextObject, SectionBlock
from slack_sdk.models.views import View

from bot.adapters.i18n import tr
from bot.adapters.slack import ids, input_words
from bot.adapters.slack.events import FormSubmission, draft_from_form, shift_from_form
from bot.adapters.slack.notifier import slack_call
from bot.adapters.slack.replies import reply_text
from bot.domain.commands import format_request_id
from bot.domain.durations import parse_duration
from bot.domain.input_problems import ParseError
from bot.domain.lifecycle import Verdict
from bot.errors import GpuQuotaError
from handlers.outcome import attempt, busy, expired
from handlers.replies import submitted_text

if TYPE_CHECKING:
    from bot.executor import TrackingExecutor
    from bot.services.container import Services

log = logging.getLogger(__name__)


def notice_view(title: str, text: str) -> View:
    """A modal showing ``text`` (mrkdwn) under ``title`` (plain text, cut to Slack's 24 characters)."""
    return View(
        type="modal", title=title[:24], close=tr("Close"), blocks=[SectionBlock(text=MarkdownTextObject(text=text[:3000]))]
    )


class FormListeners:
    """The listeners of the bot's forms, sharing how a valid submission is acknowledged and answered."""

    def __init__(self, services: Services, work: TrackingExecutor) -> None:
        self._services = services
        self._work = work

    def _hand_off(
        self,
        ack: Ack,
        body: dict[str, Any],
        client: WebClient,
        *,
        title: str,
        progress: str,
        outcome: Callable[[], str],
        what: str,
        busy_field: str | None,
    ) -> None:
        """Show ``progress`` in the ack and the ``outcome`` (or why it failed) later; when busy, keep the form
        open with a note."""
        user = str((body.get("user") or {}).get("id", ""))
        when_busy: Callable[[], object] = (
            (lambda: ack(response_action="errors", errors={busy_field: busy()}))
            if busy_field
            else (lambda: ack(response_action="update", view=notice_view(title, busy())))
        )
        self._work.hand_off(
            lambda: show(client, body, notice_view(title, attempt(outcome, user=user, what=what))),
            ack=lambda: ack(response_action="update", view=notice_view(title, progress)),
            busy_ack=when_busy,
            expired=lambda: show(client, body, notice_view(title, expired())),
            interaction="form",
        )

    def on_request_form(self, ack: Ack, body: dict[str, Any], client: WebClient) -> None:
        form = FormSubmission.from_body(body)
        draft, errors = draft_from_form(form.values)
        if errors:
            ack(response_action="errors", errors=errors)
            return
        self._hand_off(
            ack,
            body,
            client,
            title=tr("GPU quota request"),
            progress=tr(":hourglass_flowing_sand: Submitting…"),
            outcome=lambda: submitted_text(self._services.submissions.submit(requester=form.user_id, draft=draft)),
            what="request form",
            busy_field=ids.REASON_BLOCK,
        )

    def on_shift_form(self, ack: Ack, body: dict[str, Any], client: WebClient) -> None:
        form = FormSubmission.from_body(body)
        draft, errors = shift_from_form(form.values)
        if draft is None:
            log.info("shift form from %s refused: %s", form.user_id, errors)
            ack(response_action="errors", errors=errors)
            return
        self._hand_off(
            ack,
            body,
            client,
            title=tr("Shift GPUs"),
            progress=tr(":hourglass_flowing_sand: Submitting…"),
            outcome=lambda: submitted_text(self._services.shifts.submit(requester=form.user_id, draft=draft)),
            what="shift form",
            busy_field=ids.REASON_BLOCK,
        )

    def on_extend_form(self, ack: Ack, body: dict[str, Any], client: WebClient) -> None:
        form = FormSubmission.from_body(body)
        try:
            duration = parse_duration(form.values.get(ids.DURATION_BLOCK, ""))
        except ParseError as error:
            ack(response_action="errors", errors={ids.DURATION_BLOCK: input_words.plain_text(error.problem)})
            return
        request_id = form.request_id
        if request_id is None:
            log.warning("extend form from %s without a valid request id: %r", form.user_id, form.metadata.get("request_id"))
            ack(response_action="errors", errors={ids.DURATION_BLOCK: tr("This form is not valid; use the Extend button again.")})
            return
        self._hand_off(
            ack,
            body,
            client,
            title=tr("Extend a grant"),
            progress=tr(":hourglass_flowing_sand: Submitting…"),
            outcome=lambda: submitted_text(
                self._services.submissions.extend(
                    requester=form.user_id,
                    request_id=request_id,
                    duration=duration,
                    reason=form.values.get(ids.REASON_BLOCK, ""),
                )
            ),
            what="extend form",
            busy_field=ids.REASON_BLOCK,
        )

    def on_deny_form(self, ack: Ack, body: dict[str, Any], client: WebClient) -> None:
        form = FormSubmission.from_body(body)
        reason = form.values.get(ids.REASON_BLOCK, "")
        if not reason:
            ack(response_action="errors", errors={ids.REASON_BLOCK: tr("Say why: the requester reads it.")})
            return
        request_id = form.request_id
        if request_id is None:
            log.warning("deny form from %s without a valid request id: %r", form.user_id, form.metadata.get("request_id"))
            ack(response_action="errors", errors={ids.REASON_BLOCK: tr("This form is not valid; use the Deny button again.")})
            return
        self._hand_off(
            ack,
            body,
            client,
            title=tr("Deny a request"),
            progress=tr(":hourglass_flowing_sand: Denying…"),
            outcome=lambda: reply_text(
                self._services.decisions.decide(user=form.user_id, request_id=request_id, verdict=Verdict.DENY, reason=reason)
            ),
            what="deny form",
            busy_field=ids.REASON_BLOCK,
        )

    def on_confirm_approval(self, ack: Ack, body: dict[str, Any], client: WebClient) -> None:
        form = FormSubmission.from_body(body)
        request_id = form.request_id
        if request_id is None:
            log.warning("approval form from %s without a valid request id: %r", form.user_id, form.metadata.get("request_id"))
            invalid = tr(":no_entry_sign: This form is not valid (it does not name a request the bot made); nothing was done.")
            ack(response_action="update", view=notice_view(tr("Approve a request"), invalid))
            return
        self._hand_off(
            ack,
            body,
            client,
            title=tr("Approve {request}", request=format_request_id(request_id)),
            progress=tr(":hourglass_flowing_sand: Recording your approval…"),
            outcome=lambda: reply_text(
                self._services.decisions.decide(user=form.user_id, request_id=request_id, verdict=Verdict.APPROVE)
            ),
            what=f"approval form of {format_request_id(request_id)}",
            busy_field=None,  # the form has no field to show it on
        )


def register(app: App, services: Services, work: TrackingExecutor) -> None:
    listeners = FormListeners(services, work)
    app.view(ids.REQUEST_FORM)(listeners.on_request_form)
    app.view(ids.SHIFT_FORM)(listeners.on_shift_form)
    app.view(ids.EXTEND_FORM)(listeners.on_extend_form)
    app.view(ids.DENY_FORM)(listeners.on_deny_form)
    app.view(ids.CONFIRM_APPROVAL_FORM)(listeners.on_confirm_approval)


def show(client: WebClient, body: dict[str, Any], view: View) -> None:
    """Replace the open modal with the outcome; a failure is logged (the person sees 'Submitting…')."""
    view_id = (body.get("view") or {}).get("id")
    try:
        slack_call("show the outcome in the form", lambda: client.views_update(view_id=view_id, view=view))
    except GpuQuotaError as error:
        log.error("could not show the outcome of a form to %s: %s", (body.get("user") or {}).get("id"), error)
