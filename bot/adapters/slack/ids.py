"""Action and callback ids, shared by the Block Kit builders and the listener registrations."""

from __future__ import annotations

from bot.services.ports import ActionKind

SLASH_COMMAND = "/gpu-quota"

ACTION_IDS: dict[ActionKind, str] = {
    ActionKind.APPROVE: "gq_approve",
    ActionKind.DENY: "gq_deny",
    ActionKind.RETRY: "gq_retry",
    ActionKind.EXTEND: "gq_extend",
    ActionKind.RELEASE: "gq_release",
    ActionKind.SNOOZE: "gq_snooze",
    ActionKind.REQUEST_MORE: "gq_request_more",
    ActionKind.PROPOSE_SHIFT: "gq_propose_shift",
}
ACTION_KINDS: dict[str, ActionKind] = {action_id: kind for kind, action_id in ACTION_IDS.items()}

REQUEST_FORM = "gq_request_form"
EXTEND_FORM = "gq_extend_form"
SHIFT_FORM = "gq_shift_form"
DENY_FORM = "gq_deny_form"
CONFIRM_APPROVAL_FORM = "gq_confirm_approval"  # approving a permanent or large change
WHY_FORM = "gq_why_form"  # ``why <namespace>``: pick a pending pod

# Input blocks of the forms; each holds one element whose action_id is INPUT_ACTION.
NAMESPACE_BLOCK = "namespace"
GPUS_BLOCK = "gpus"
RESOURCE_BLOCK = "resource"  # the request form: which governed resource, when the namespace has several
TERM_BLOCK = "term"  # radio buttons: TEMPORARY or PERMANENT, no default
TEMPORARY = "temporary"
PERMANENT = "permanent"
DURATION_BLOCK = "duration"
SOURCE_BLOCK = "source"  # the shift form: where the GPUs come from
TARGET_BLOCK = "target"  # and where they go
REASON_BLOCK = "reason"
WHY_POD_BLOCK = "why_pod"  # the why form: the pending pod picked
INPUT_ACTION = "value"
