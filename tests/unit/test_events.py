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
    fields = {ids.NAMESPACE_BLOCK: "ns-a", ids.GPUS_BLOCK: "+2", ids.DURATION_BLOCK: "", ids.REASON_BLOCK: "r"}
    draft, errors = draft_from_form(fields | {ids.TERM_BLOCK: ids.PERMANENT})
    assert errors == {} and draft.amount == GpuAmount(2, True) and draft.duration is None and draft.permanent
    assert draft.complete
    _, errors = draft_from_form(fields)  # an empty duration is not a choice of permanent
    assert set(errors) == {ids.TERM_BLOCK}
    _, errors = draft_from_form(
        {ids.NAMESPACE_BLOCK: "", ids.GPUS_BLOCK: "lots", ids.TERM_BLOCK: ids.TEMPORARY, ids.DURATION_BLOCK: "soon"}
    )
    assert set(errors) == {ids.NAMESPACE_BLOCK, ids.GPUS_BLOCK, ids.DURATION_BLOCK, ids.REASON_BLOCK}


def test_button_values_the_bot_did_not_make_are_not_ids() -> None:
    body = {"user": {"id": "U2"}, "actions": [{"action_id": ids.ACTION_IDS[ActionKind.APPROVE], "value": ""}]}
    for value in (str(10**23), str(2**31), "0", "-3", "²", "١٢", "17 ", "abc"):
        body["actions"][0]["value"] = value
        assert ButtonClick.from_body(body).request_id is None, value
    body["actions"][0]["value"] = str(2**31 - 1)
    assert ButtonClick.from_body(body).request_id == 2**31 - 1


def test_forged_request_more_and_snooze_values_are_dropped() -> None:
    body = {"user": {"id": "U2"}, "actions": [{"action_id": ids.ACTION_IDS[ActionKind.REQUEST_MORE], "value": ""}]}
    for value in ("[" * 1500, '{"namespace": ["x"], "gpus": "+1"}', '{"namespace": "Bad_NS"}', "[]"):
        body["actions"][0]["value"] = value
        assert ButtonClick.from_body(body).prefill().namespace is None
    body["actions"][0]["value"] = "../etc"
    assert ButtonClick.from_body(body).namespace is None


def test_form_text_loses_control_characters() -> None:
    body = {
        "view": {
            "state": {"values": {ids.REASON_BLOCK: {ids.INPUT_ACTION: {"type": "plain_text_input", "value": "a\x00b\tc\n"}}}}
        }
    }
    assert FormSubmission.from_body(body).values == {ids.REASON_BLOCK: "ab\tc"}


def test_extend_form_metadata_must_name_a_valid_request() -> None:
    for metadata, expected in (({"request_id": 7}, 7), ({"request_id": 10**23}, None), ({}, None), ({"request_id": "x"}, None)):
        assert FormSubmission.from_body({"view": {"private_metadata": json.dumps(metadata)}}).request_id == expected


def test_the_chosen_resource_is_the_draft_s_and_an_empty_choice_is_an_error_under_it() -> None:
    fields = {
        ids.NAMESPACE_BLOCK: "ns-a",
        ids.GPUS_BLOCK: "+2",
        ids.TERM_BLOCK: ids.TEMPORARY,
        ids.DURATION_BLOCK: "1d",
        ids.REASON_BLOCK: "sweep",
    }
    draft, errors = draft_from_form(fields | {ids.RESOURCE_BLOCK: "nvidia.com/mig-3g.40gb"})
    assert errors == {} and draft.resource == "nvidia.com/mig-3g.40gb" and draft.complete
    draft, errors = draft_from_form(fields)  # a form without the choice: one governed resource
    assert errors == {} and draft.resource is None
    _, errors = draft_from_form(fields | {ids.RESOURCE_BLOCK: ""})
    assert errors == {ids.RESOURCE_BLOCK: "Choose a resource."}
    _, errors = draft_from_form(fields | {ids.RESOURCE_BLOCK: "<!here>"})
    assert errors == {ids.RESOURCE_BLOCK: "'<!here>' is not a resource name."}


def test_a_request_more_button_may_carry_the_resource() -> None:
    body = {"user": {"id": "U2"}, "actions": [{"action_id": ids.ACTION_IDS[ActionKind.REQUEST_MORE], "value": ""}]}
    body["actions"][0]["value"] = json.dumps({"namespace": "ns-a", "gpus": "+2", "resource": "nvidia.com/mig-3g.40gb"})
    draft = ButtonClick.from_body(body).prefill()
    assert (draft.namespace, draft.amount, draft.resource) == ("ns-a", GpuAmount(2, True), "nvidia.com/mig-3g.40gb")
    for forged in (["x"], "<!channel>", 3):
        body["actions"][0]["value"] = json.dumps({"namespace": "ns-a", "gpus": "+2", "resource": forged})
        assert ButtonClick.from_body(body).prefill().resource is None
