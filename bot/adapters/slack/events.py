"""Slack payloads, translated once into typed values. Nothing else digs into ``body[...]``.

User text is cleaned of control characters here, and button values are checked here: a value the
bot did not make (forged, or cut) becomes None, never an exception further in. A form's field errors
are plain text (Slack shows them under the field) in the reader's language; what was typed is quoted
as it is (``input_words`` words the parsers' problems).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from bot.adapters.i18n import format_duration, tr
from bot.adapters.slack import ids, input_words
from bot.domain.clusters import is_namespace_key
from bot.domain.commands import (
    PERMANENT_WORD,
    GpuAmount,
    RequestDraft,
    ShiftDraft,
    clean_text,
    is_resource_word,
    parse_request_id,
    parse_shift_words,
)
from bot.domain.durations import MAX_DURATION, parse_duration
from bot.domain.input_problems import BadDuration, NoTerm, ParseError, PermanentAfterFor, TwoTerms
from bot.services.ports import ActionKind
from bot.services.text import plain


@dataclass(frozen=True)
class SlashCommand:
    user_id: str
    channel_id: str
    text: str
    trigger_id: str | None

    @classmethod
    def from_payload(cls, command: dict[str, Any]) -> SlashCommand:
        return cls(
            user_id=str(command.get("user_id", "")),
            channel_id=str(command.get("channel_id", "")),
            text=clean_text(str(command.get("text", ""))),  # a NUL would not even fit a PostgreSQL text column
            trigger_id=command.get("trigger_id"),
        )


@dataclass(frozen=True)
class ButtonClick:
    user_id: str
    kind: ActionKind
    value: str
    trigger_id: str | None

    @property
    def request_id(self) -> int | None:
        """The request a button is about (Approve, Deny, Retry, Extend, Release carry its id); None when not a valid id."""
        return parse_request_id(self.value) if self.value.isascii() and self.value.isdigit() else None

    @property
    def namespace(self) -> str | None:
        """The namespace a Snooze button is about; None when the value is not a namespace name."""
        return self.value if is_namespace_key(self.value) else None

    @classmethod
    def from_body(cls, body: dict[str, Any]) -> ButtonClick:
        action = (body.get("actions") or [{}])[0]
        return cls(
            user_id=str((body.get("user") or {}).get("id", "")),
            kind=ids.ACTION_KINDS[action.get("action_id", "")],
            value=str(action.get("value", "")),
            trigger_id=body.get("trigger_id"),
        )

    def shift_prefill(self) -> tuple[str, str, int] | None:
        """Source, target and GPUs of a [Propose shift] button (``"<source>:<target>:<gpus>"``); None when not valid."""
        parts = self.value.split(":")
        if len(parts) != 3 or not all(map(is_namespace_key, parts[:2])) or not (parts[2].isascii() and parts[2].isdigit()):
            return None
        gpus = int(parts[2])
        return (parts[0], parts[1], gpus) if 0 < gpus <= 10_000 else None

    def prefill(self) -> RequestDraft:
        """The draft a [Request more] button carries (JSON: namespace, GPUs and, optionally, the resource)."""
        try:
            data = json.loads(self.value)
            namespace, resource = data.get("namespace"), data.get("resource")
            return RequestDraft(
                namespace=namespace if isinstance(namespace, str) and is_namespace_key(namespace) else None,
                amount=GpuAmount.parse(str(data.get("gpus", "+1"))),
                resource=resource if isinstance(resource, str) and is_resource_word(resource) else None,
            )
        except (ValueError, AttributeError, RecursionError):
            return RequestDraft()


@dataclass(frozen=True)
class FormSubmission:
    user_id: str
    values: dict[str, str] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_body(cls, body: dict[str, Any]) -> FormSubmission:
        view = body.get("view") or {}
        values: dict[str, str] = {}
        for block_id, elements in ((view.get("state") or {}).get("values") or {}).items():
            element = elements.get(ids.INPUT_ACTION) or {}
            value = element.get("value")
            if value is None:
                value = (element.get("selected_option") or {}).get("value")
            values[block_id] = clean_text(value or "").strip()
        try:
            metadata = json.loads(view.get("private_metadata") or "{}")
        except ValueError:
            metadata = {}
        return cls(
            user_id=str((body.get("user") or {}).get("id", "")),
            values=values,
            metadata=metadata if isinstance(metadata, dict) else {},
        )

    @property
    def request_id(self) -> int | None:
        """The request a form is about (its private metadata); None when missing or not valid."""
        return parse_request_id(str(self.metadata.get("request_id", "")))


def draft_from_form(values: dict[str, str]) -> tuple[RequestDraft, dict[str, str]]:
    """The request form's fields as a draft, plus an error per invalid field (Slack shows them inline)."""
    errors: dict[str, str] = {}
    namespace = values.get(ids.NAMESPACE_BLOCK, "")
    if not is_namespace_key(namespace):
        errors[ids.NAMESPACE_BLOCK] = (
            tr("Choose a namespace.") if not namespace else tr("'{typed}' is not a namespace name.", typed=namespace)
        )
    amount = None
    try:
        amount = GpuAmount.parse(values.get(ids.GPUS_BLOCK, ""))
    except ParseError as error:
        errors[ids.GPUS_BLOCK] = input_words.plain_text(error.problem)
    term = values.get(ids.TERM_BLOCK, "")
    typed_duration = values.get(ids.DURATION_BLOCK, "")
    duration = None
    if term not in (ids.TEMPORARY, ids.PERMANENT):
        errors[ids.TERM_BLOCK] = tr("Choose temporary (for the duration below) or permanent.")
    elif term == ids.PERMANENT and typed_duration:
        errors[ids.DURATION_BLOCK] = tr("A permanent change has no duration: clear this field, or choose temporary.")
    elif term == ids.TEMPORARY and not typed_duration:
        errors[ids.DURATION_BLOCK] = tr("How long? Use 90m, 12h, 3d or 2w, at most {longest}.", longest=_longest())
    elif term == ids.TEMPORARY:
        try:
            duration = parse_duration(typed_duration)
        except ParseError as error:
            errors[ids.DURATION_BLOCK] = input_words.plain_text(error.problem)
    reason = values.get(ids.REASON_BLOCK, "")
    if not reason:
        errors[ids.REASON_BLOCK] = tr("Say why: approvers read it and the audit trail keeps it.")
    resource = values.get(ids.RESOURCE_BLOCK)  # absent: the form had no choice (one governed resource)
    if resource is not None and not is_resource_word(resource):
        errors[ids.RESOURCE_BLOCK] = (
            tr("Choose a resource.") if not resource else tr("'{typed}' is not a resource name.", typed=resource)
        )
    draft = RequestDraft(
        namespace=namespace or None,
        amount=amount,
        duration=duration,
        permanent=term == ids.PERMANENT,
        reason=reason,
        resource=resource or None,
    )
    return draft, errors


def shift_from_form(values: dict[str, str]) -> tuple[ShiftDraft | None, dict[str, str]]:
    """The shift form's fields as a draft, or errors for Slack to show inline (the whole-form problem under the GPUs)."""
    words = [values.get(ids.GPUS_BLOCK, ""), "from", values.get(ids.SOURCE_BLOCK, ""), "to", values.get(ids.TARGET_BLOCK, "")]
    term = values.get(ids.DURATION_BLOCK, "").strip()
    words += ([PERMANENT_WORD] if term.lower() == PERMANENT_WORD else ["for", term]) + values.get(ids.REASON_BLOCK, "").split()
    if not term:
        return None, {
            ids.DURATION_BLOCK: tr("How long? Use 90m, 12h, 3d or 2w, at most {longest}, or permanent.", longest=_longest())
        }
    if not values.get(ids.REASON_BLOCK, "").strip():
        return None, {ids.REASON_BLOCK: tr("Say why: approvers read it and the audit trail keeps it.")}
    try:
        return parse_shift_words([w.strip() for w in words]), {}
    except ParseError as error:
        about_the_term = isinstance(error.problem, BadDuration | PermanentAfterFor | TwoTerms | NoTerm)
        block = ids.DURATION_BLOCK if about_the_term and term.lower() != PERMANENT_WORD else ids.GPUS_BLOCK
        return None, {block: plain(input_words.sentence(error.problem))}


def _longest() -> str:
    return format_duration(MAX_DURATION)


@dataclass(frozen=True)
class ThreadReply:
    """A person's reply in a thread (a ``message`` event); bots' messages and edits are not replies."""

    user_id: str
    channel_id: str
    thread_ts: str
    text: str

    @classmethod
    def from_event(cls, event: dict[str, Any]) -> ThreadReply | None:
        """The reply, or None for anything else: a top-level message, a bot's post, an edit or deletion."""
        if event.get("bot_id") or event.get("subtype") not in (None, "thread_broadcast"):
            return None
        thread_ts, ts = event.get("thread_ts"), event.get("ts")
        if not thread_ts or thread_ts == ts or not event.get("user"):
            return None
        return cls(
            user_id=str(event["user"]),
            channel_id=str(event.get("channel", "")),
            thread_ts=str(thread_ts),
            text=str(event.get("text") or ""),
        )


def click_surface(body: dict[str, Any]) -> str:
    """Where a button was pressed: ``message`` (has a response_url) or ``home`` (the App Home tab)."""
    return "home" if (body.get("view") or {}).get("type") == "home" else "message"
