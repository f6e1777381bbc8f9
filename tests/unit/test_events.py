import json

from bot.adapters.slack import ids
from bot.adapters.slack.events import ButtonClick, FormSubmission, SlashCommand, draft_from_form
from bot.domain.commands import GpuAmount
from bot.services.ports import ActionKind


def test_slash_command() -> None:
    command = SlashCommand.from_payload({"user_id": "U1", "channel_id": "C1", "text": "status", "trigger_id": "t"})
    assert command == SlashCommand("U1", "C1", "status", "t")


def test_button_click() -> None:
    body = {"user": {"id": "U2"}, "trigger_id": "t", "actions": [{"action_id": ids.ACTION_IDS[ActionKind.DENY], "value": "17"}]}
    assert ButtonClick.from_body(body) == ButtonClick("U2", ActionKind.DENY, "17", "t")
    assert ButtonClick.from_body(body).request_id == 17
    body["actions"][0]["value"] = "not-a-number"
    assert ButtonClick.from_body(body).request_id is None


def test_form_submission_reads_text_and_select_inputs() -> None:
    body = {
        "user": {"id": "U3"},
        "view": {
            "callback_id": ids.REQUEST_FORM,
            "private_metadata": json.dumps({"channel": "C9"}),
            "state": {
                "values": {
                    ids.NAMESPACE_BLOCK: {ids.INPUT_ACTION: {"type": "static_select", "selected_option": {"value": "ns-a"}}},
                    ids.GPUS_BLOCK: {ids.INPUT_ACTION: {"type": "plain_text_input", "value": " +2 "}},
                    ids.DURATION_BLOCK: {ids.INPUT_ACTION: {"type": "plain_text_input", "value": None}},
                }
            },
        },
    }
    form = FormSubmission.from_body(body)
    assert form.values == {ids.NAMESPACE_BLOCK: "ns-a", ids.GPUS_BLOCK: "+2", ids.DURATION_BLOCK: ""}
    assert form.metadata == {"channel": "C9"} and form.user_id == "U3"


def test_broken_metadata_is_ignored() -> None:
    assert FormSubmission.from_body({"view": {"private_metadata": "{not json"}}).metadata == {}


def test_form_fields_are_checked_one_by_one() -> None:
    draft, errors = draft_from_form(
        {ids.NAMESPACE_BLOCK: "ns-a", ids.GPUS_BLOCK: "+2", ids.DURATION_BLOCK: "", ids.REASON_BLOCK: "r"}
    )
    assert errors == {} and draft.amount == GpuAmount(2, True) and draft.duration is None and draft.complete
    _, errors = draft_from_form(
        {ids.NAMESPACE_BLOCK: "", ids.GPUS_BLOCK: "lots", ids.DURATION_BLOCK: "soon", ids.REASON_BLOCK: ""}
    )
    assert set(errors) == {ids.NAMESPACE_BLOCK, ids.GPUS_BLOCK, ids.DURATION_BLOCK, ids.REASON_BLOCK}
