"""Slack payloads, translated once into typed values. Nothing else digs into ``body[...]``."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from bot.adapters.slack import ids
from bot.adapters.slack.mrkdwn import clean
from bot.domain.commands import GpuAmount, RequestDraft, is_namespace_name
from bot.domain.durations import parse_duration
from bot.services.ports import ActionKind


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
            text=clean(str(command.get("text", ""))),  # a NUL would not even fit a PostgreSQL text column
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
        """The request a button is about (Approve, Deny, Retry, Extend, Release carry its id)."""
        return int(self.value) if self.value.isdigit() else None

    @classmethod
    def from_body(cls, body: dict[str, Any]) -> ButtonClick:
        action = (body.get("actions") or [{}])[0]
        return cls(
            user_id=str((body.get("user") or {}).get("id", "")),
            kind=ids.ACTION_KINDS[action.get("action_id", "")],
            value=str(action.get("value", "")),
            trigger_id=body.get("trigger_id"),
        )

    def prefill(self) -> RequestDraft:
        """The draft a [Request more] button carries (JSON: namespace and GPUs)."""
        try:
            data = json.loads(self.value)
            return RequestDraft(namespace=data.get("namespace"), amount=GpuAmount.parse(str(data.get("gpus", "+1"))))
        except (ValueError, AttributeError):
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
            values[block_id] = clean(value or "").strip()
        try:
            metadata = json.loads(view.get("private_metadata") or "{}")
        except ValueError:
            metadata = {}
        return cls(
            user_id=str((body.get("user") or {}).get("id", "")),
            values=values,
            metadata=metadata if isinstance(metadata, dict) else {},
        )


def draft_from_form(values: dict[str, str]) -> tuple[RequestDraft, dict[str, str]]:
    """The request form's fields as a draft, plus an error per invalid field (Slack shows them inline)."""
    errors: dict[str, str] = {}
    namespace = values.get(ids.NAMESPACE_BLOCK, "")
    if not is_namespace_name(namespace):
        errors[ids.NAMESPACE_BLOCK] = "Choose a namespace." if not namespace else f"'{namespace}' is not a namespace name."
    amount = None
    try:
        amount = GpuAmount.parse(values.get(ids.GPUS_BLOCK, ""))
    except ValueError as error:
        errors[ids.GPUS_BLOCK] = str(error)
    duration = None
    if values.get(ids.DURATION_BLOCK):
        try:
            duration = parse_duration(values[ids.DURATION_BLOCK])
        except ValueError as error:
            errors[ids.DURATION_BLOCK] = str(error)
    reason = values.get(ids.REASON_BLOCK, "")
    if not reason:
        errors[ids.REASON_BLOCK] = "Say why: approvers read it and the audit trail keeps it."
    draft = RequestDraft(namespace=namespace or None, amount=amount, duration=duration, reason=reason)
    return draft, errors
