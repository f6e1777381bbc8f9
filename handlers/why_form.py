"""The ``why`` form: a pending pod picked, the modal turns into the answer (``ack`` first, the reads after).

Its words are made in the current language (set for the request before this listener runs)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from slack_bolt import Ack, App
from slack_sdk import WebClient
from slack_sdk.models.blocks import MarkdownTextObject, SectionBlock
from slack_sdk.models.views import View

from bot.adapters.i18n import tr
from bot.adapters.slack import ids, why_words
from bot.adapters.slack.events import FormSubmission
from bot.adapters.slack.notifier import slack_call
from bot.domain.clusters import is_namespace_key
from bot.errors import GpuQuotaError
from bot.executor import BUSY, EXPIRED
from handlers.outcome import attempt

if TYPE_CHECKING:
    from bot.executor import TrackingExecutor
    from bot.services.container import Services

log = logging.getLogger(__name__)


def _notice(text: str) -> View:
    return View(
        type="modal",
        title=why_words.form_title(),
        close=tr("Close"),
        blocks=[SectionBlock(text=MarkdownTextObject(text=text[:3000]))],
    )


def register(app: App, services: Services, work: TrackingExecutor) -> None:
    def on_why_form(ack: Ack, body: dict[str, Any], client: WebClient) -> None:
        form = FormSubmission.from_body(body)
        namespace, pod = form.metadata.get("namespace"), form.values.get(ids.WHY_POD_BLOCK, "")
        if not isinstance(namespace, str) or not is_namespace_key(namespace) or not pod:
            log.warning("why form from %s without a namespace or pod: %r", form.user_id, form.metadata)
            ack(response_action="errors", errors={ids.WHY_POD_BLOCK: tr("Pick a pod (or ask again with /gpu-quota why).")})
            return
        why = services.why
        if why is None:
            ack(response_action="update", view=_notice(tr("This bot is not set up to answer `why`.")))
            return

        def show(view: View) -> None:
            view_id = (body.get("view") or {}).get("id")
            try:
                slack_call("show the why answer", lambda: client.views_update(view_id=view_id, view=view))
            except GpuQuotaError as error:
                log.error("could not show the why answer to %s: %s", form.user_id, error)

        def answer() -> None:
            outcome = attempt(
                lambda: why.answer(user=form.user_id, target=namespace, name=pod), user=form.user_id, what="why form"
            )
            show(_notice(outcome) if isinstance(outcome, str) else why_words.answer_view(outcome))

        work.hand_off(
            answer,
            ack=lambda: ack(response_action="update", view=_notice(tr(":hourglass_flowing_sand: Reading the cluster…"))),
            busy_ack=lambda: ack(response_action="errors", errors={ids.WHY_POD_BLOCK: BUSY}),
            expired=lambda: show(_notice(EXPIRED)),
            interaction="form",
        )

    app.view(ids.WHY_FORM)(on_why_form)
