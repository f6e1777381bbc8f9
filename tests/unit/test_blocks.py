import json
from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from slack_sdk.models.blocks import Block

from bot.adapters import i18n
from bot.adapters.slack import blocks, ids, modals
from bot.adapters.slack.reports import Report, ReportSection
from bot.domain.commands import GpuAmount, RequestDraft
from bot.domain.failure_reasons import AsSaid
from bot.domain.input_problems import NotAGpuCount
from bot.domain.languages import Language
from bot.domain.lifecycle import GrantState, RequestKind, RequestState
from bot.domain.prices import Basis, BasisAsStored, CostBasis, Price
from bot.domain.priority import GpuPod, borrowed_class_warnings, pod_mix
from bot.domain.quota import CapacityImpact
from bot.domain.resources import GPU
from bot.services.ports import Action, ActionKind
from bot.services.views import PodsInView, RequestCard

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=timezone.utc)


def card(**changes: object) -> RequestCard:
    base = RequestCard(
        request_id=17,
        kind=RequestKind.CHANGE,
        state=RequestState.PENDING,
        namespace="ai-frontier-research",
        resource=GPU,
        team_label="Frontier research",
        requester_id="U0ALICE",
        amount_text="+4",
        delta=4,
        hard_before=4,
        used_before=3,
        duration=timedelta(days=3),
        reason="fine-tune on the new corpus",
        approvals=(),
        approvals_required=1,
        denied_by=None,
        auto_approved=False,
        capacity=CapacityImpact(24, 24),
        cost=720.0,
        cost_basis=BasisAsStored("for the grant"),  # as the version before stored it
        currency="USD",
        decide_by=NOW + timedelta(hours=24),
        grant_ends_at=None,
        grant_state=None,
        extends_id=None,
        failure_reason=None,
        channel_id="C0FRONTIER",
        message_ts=None,
    )
    return replace(base, **changes)


def rendered(block_list: list) -> str:
    return json.dumps(block_list, ensure_ascii=False)


def buttons(block_list: list) -> list[dict]:
    return [e for b in block_list if b["type"] == "actions" for e in b["elements"]]


def test_pending_request_shows_everything_an_approver_needs() -> None:
    text = rendered(blocks.request_message(card()))
    for expected in [
        "GQ-17",
        "<@U0ALICE>",
        "ai-frontier-research",
        "Frontier research",
        "4 hard / 3 used",
        "4 → *8* (+4)",
        "3d from approval",
        "720.00 USD for the grant",
        "24 allocatable",
        "fine-tune on the new corpus",
        "0 of 1",
    ]:
        assert expected in text


def test_pending_request_has_approve_and_deny_with_the_request_id() -> None:
    found = buttons(blocks.request_message(card()))
    assert [(b["action_id"], b["value"]) for b in found] == [
        (ids.ACTION_IDS[ActionKind.APPROVE], "17"),
        (ids.ACTION_IDS[ActionKind.DENY], "17"),
    ]
    assert "confirm" not in found[1]  # Deny opens the reason form, which is its confirmation


def test_deny_form_asks_why_and_carries_the_request() -> None:
    view = modals.deny_form(17).to_dict()
    assert view["callback_id"] == ids.DENY_FORM and json.loads(view["private_metadata"]) == {"request_id": 17}
    (field,) = view["blocks"]
    assert field["block_id"] == ids.REASON_BLOCK and field.get("optional") is not True
    assert view["title"]["text"] == "Deny GQ-17"


PER_MONTH = CostBasis(grant=False, price=Price(2.5, Basis.RAN_ON, ("NVIDIA A100 <80GB>",), "USD", 7))


def test_a_typed_cost_basis_reads_as_before_and_an_old_one_as_stored() -> None:
    typed = rendered(blocks.request_message(card(cost=100.0, cost_basis=PER_MONTH)))
    assert "100.00 USD per month, at 2.50 USD/h, the NVIDIA A100 &lt;80GB&gt; price this namespace ran on" in typed
    old = rendered(blocks.request_message(card(cost=100.0, cost_basis=BasisAsStored("per month, at <b>2</b>"))))
    assert "100.00 USD per month, at &lt;b&gt;2&lt;/b&gt;" in old


@pytest.mark.parametrize("state", [s for s in RequestState if s != RequestState.PENDING])
def test_decided_requests_have_no_buttons(state: RequestState) -> None:
    assert buttons(blocks.request_message(card(state=state, denied_by="U0LEE", failure_reason=AsSaid("HTTP 403")))) == []


def test_final_states_are_spelled_out() -> None:
    assert "Denied by <@U0LEE>" in rendered(blocks.request_message(card(state=RequestState.DENIED, denied_by="U0LEE")))
    assert "Failed: HTTP 403" in rendered(
        blocks.request_message(card(state=RequestState.FAILED, failure_reason=AsSaid("HTTP 403")))
    )
    applied = card(state=RequestState.APPLIED, grant_ends_at=NOW + timedelta(days=3), grant_state=GrantState.ACTIVE)
    text = rendered(blocks.request_message(applied))
    assert "Applied" in text and "until <!date^" in text
    ended = rendered(blocks.request_message(replace(applied, grant_state=GrantState.ENDED)))
    assert "quota is back" in ended


def test_oversubscription_and_unknown_capacity_are_visible() -> None:
    assert "oversubscribed by 4" in rendered(blocks.request_message(card(capacity=CapacityImpact(24, 28))))
    assert "unknown" in rendered(blocks.request_message(card(capacity=None)))


def test_a_decrease_shows_savings_and_permanence() -> None:
    text = rendered(blocks.request_message(card(delta=-3, amount_text="1", duration=None, cost=5475.0, cost_basis=PER_MONTH)))
    assert "3 GPUs fewer" in text and "permanent" in text and "saves 5,475.00 USD per month" in text


def test_a_huge_reason_is_cut_to_slacks_limits() -> None:
    message = blocks.request_message(card(reason="x" * 10_000))
    for block in message:
        if block["type"] == "section" and "text" in block:
            assert len(block["text"]["text"]) <= 3000


def test_messages_with_actions() -> None:
    found = blocks.message_blocks("hi", [Action(ActionKind.RETRY, "Retry", "17", "primary")])
    assert found[1]["elements"][0]["action_id"] == ids.ACTION_IDS[ActionKind.RETRY]


def test_long_lists_stay_within_fifty_blocks_and_say_how_many_are_left() -> None:
    lines = [f"line {i} " + "y" * 200 for i in range(2000)]
    packed = blocks.lines_to_blocks(lines, title="Audit trail")
    assert len(packed) <= 50
    shown = sum(b["text"]["text"].count("line ") for b in packed if b["type"] == "section")
    last = packed[-1]
    assert last["type"] == "context" and f"and {2000 - shown:,} more" in last["elements"][0]["text"]


def test_short_lists_are_packed_whole() -> None:
    packed = blocks.lines_to_blocks(["a", "b"])
    assert [b["text"]["text"] for b in packed] == ["a\nb"]


def test_request_form_is_prefilled_and_lists_problems() -> None:
    draft = RequestDraft(
        namespace="ai-frontier-research", amount=GpuAmount(4, True), duration=timedelta(days=3), problems=(NotAGpuCount("lots"),)
    )
    view = modals.request_form(draft, ["ai-frontier-research", "biz-model-serving"], channel_id="C0GENERAL").to_dict()
    assert view["callback_id"] == ids.REQUEST_FORM
    inputs = {b["block_id"]: b["element"] for b in view["blocks"] if b["type"] == "input"}
    assert inputs[ids.NAMESPACE_BLOCK]["initial_option"]["value"] == "ai-frontier-research"
    assert [o["value"] for o in inputs[ids.NAMESPACE_BLOCK]["options"]] == ["ai-frontier-research", "biz-model-serving"]
    assert inputs[ids.GPUS_BLOCK]["initial_value"] == "+4"
    assert inputs[ids.DURATION_BLOCK]["initial_value"] == "3d"
    assert "'lots' is not a GPU count" in json.dumps(view["blocks"][0])
    assert json.loads(view["private_metadata"]) == {"channel": "C0GENERAL"}


def test_request_form_falls_back_to_typing_when_there_are_too_many_namespaces() -> None:
    view = modals.request_form(RequestDraft(), [f"ns-{i}" for i in range(150)], channel_id=None).to_dict()
    namespace = next(b for b in view["blocks"] if b.get("block_id") == ids.NAMESPACE_BLOCK)
    assert namespace["element"]["type"] == "plain_text_input"


def test_extend_form_carries_the_request_id() -> None:
    view = modals.extend_form(17, duration=timedelta(days=1)).to_dict()
    assert view["callback_id"] == ids.EXTEND_FORM and json.loads(view["private_metadata"]) == {"request_id": 17}


def test_the_card_escapes_everything_a_person_typed() -> None:
    hostile = card(
        reason="<!channel> & <http://evil.example|click here>\x00", amount_text="<@U123>", failure_reason=AsSaid("<!here>")
    )
    for state in (RequestState.PENDING, RequestState.FAILED):
        message = blocks.request_message(replace(hostile, state=state))
        text = rendered(message) + blocks.request_fallback_text(hostile)
        assert "<!channel>" not in text and "<http" not in text and "<@U123>" not in text and "<!here>" not in text
        assert "\x00" not in text
    assert "&lt;!channel&gt; &amp; &lt;http://evil.example|click here&gt;" in rendered(blocks.request_message(hostile))
    sections = [b for b in blocks.request_message(hostile) if b["type"] == "section" and "text" in b]
    assert all(s["text"]["verbatim"] is True for s in sections)  # bare URLs and names a person typed stay text


def test_the_card_shows_the_change_actually_applied() -> None:
    text = rendered(blocks.request_message(card(state=RequestState.APPLIED, applied_from=5, applied_to=9)))
    assert "*Applied*\\n5 → *9*" in text  # the rendered JSON keeps the newline escaped
    assert "*Applied*" not in rendered(blocks.request_message(card()))


def test_the_card_shows_the_pods_by_class_and_warns_with_cluster_text_escaped() -> None:
    pods = [GpuPod("ns", "a", 2, "research-low", "Running", None), GpuPod("ns", "b", 1, "<!here>", "Running", None)]
    warnings = borrowed_class_warnings(pods, allowed=["research-low"], values={"research-low": 100})
    view = PodsInView(pod_mix(pods), tuple(pods), ("research-low",), tuple(warnings))
    text = rendered(blocks.request_message(card(pods=view)))
    assert "running: 3 GPUs in 2 pods — 2 × research-low, 1 × &lt;!here&gt;" in text
    assert ":warning: 1 GPU in 1 pod run as &lt;!here&gt;, not one of the classes borrowed GPUs are meant for" in text
    assert "<!here>" not in text
    unreadable = rendered(blocks.request_message(card(pods=PodsInView(pod_mix([]), error="HTTP 403"))))
    assert "GPU pods unreadable: HTTP 403" in unreadable and ":warning:" not in unreadable
    assert "GPU pods in" not in rendered(blocks.request_message(card()))


# --- every message within Slack's limits: the validation slack_sdk's models would do, done here ---------

HOSTILE = st.text(alphabet=st.sampled_from("ab <>&*_~`|!@#\n\t\x00\u200b\u202eé😀"), max_size=12)
# Long text cheaply: a hostile piece repeated up to a few thousand characters.
TEXT = st.one_of(HOSTILE, st.builds(lambda piece, times: piece * times, HOSTILE, st.integers(0, 800)))
ACTION = st.builds(Action, st.sampled_from(ActionKind), TEXT, TEXT, st.sampled_from([None, "primary", "danger"]))


def assert_valid_message(message: list[dict]) -> None:
    """What Slack would accept: at most 50 blocks, each one slack_sdk parses back to the same dict and
    validates (``to_dict`` raises on a limit its models know), fields within the limit its models skip."""
    assert len(message) <= blocks.MAX_BLOCKS
    for block in message:
        parsed = Block.parse(block)
        assert parsed is not None and type(parsed) is not Block, block["type"]
        assert parsed.to_dict() == block
        for field in block.get("fields", []):
            assert len(field["text"]) <= blocks.FIELD_LIMIT
        for element in block.get("elements", []):
            assert len(element.get("text", "")) <= blocks.SECTION_LIMIT


@settings(max_examples=60, deadline=None)
@given(
    reason=TEXT,
    namespace=TEXT,
    team_label=TEXT,
    amount_text=TEXT,
    failure_reason=TEXT,
    cost_basis=TEXT,
    auto_note=TEXT,
    approvals=st.lists(TEXT, max_size=30),
    state=st.sampled_from(RequestState),
    request_id=st.integers(1, 10**12),
    language=st.sampled_from(Language),
)
def test_every_request_card_is_a_message_slack_accepts(
    reason: str,
    namespace: str,
    team_label: str,
    amount_text: str,
    failure_reason: str,
    cost_basis: str,
    auto_note: str,
    approvals: list[str],
    state: RequestState,
    request_id: int,
    language: Language,
) -> None:
    hostile = card(
        reason=reason,
        namespace=namespace,
        team_label=team_label,
        amount_text=amount_text,
        failure_reason=AsSaid(failure_reason),
        cost_basis=BasisAsStored(cost_basis),
        auto_note=auto_note,
        approvals=tuple(approvals),
        state=state,
        denied_by=reason,
        request_id=request_id,
    )
    with i18n.speaking(language):  # the longer text of either language stays within the limits
        assert_valid_message(blocks.request_message(hostile))


@settings(max_examples=60, deadline=None)
@given(text=TEXT, buttons=st.lists(ACTION, max_size=30))
def test_every_plain_message_is_one_slack_accepts(text: str, buttons: list[Action]) -> None:
    assert_valid_message(blocks.message_blocks(text or "-", buttons))


@settings(max_examples=60, deadline=None)
@given(lines=st.lists(TEXT, max_size=300), title=st.one_of(st.none(), TEXT.filter(bool)), language=st.sampled_from(Language))
def test_every_packed_answer_is_one_slack_accepts(lines: list[str], title: str | None, language: Language) -> None:
    with i18n.speaking(language):
        assert_valid_message(blocks.lines_to_blocks(lines or ["-"], title=title))


@settings(max_examples=40, deadline=None)
@given(
    title=TEXT.filter(bool),
    summary=TEXT.filter(bool),
    sections=st.lists(st.builds(ReportSection, st.one_of(st.none(), TEXT), st.lists(TEXT, max_size=80)), max_size=12),
    buttons=st.lists(ACTION, max_size=5),
)
def test_every_report_is_a_message_slack_accepts(
    title: str, summary: str, sections: list[ReportSection], buttons: list[Action]
) -> None:
    assert_valid_message(blocks.report_blocks(Report(title=title, summary=summary, sections=sections, actions=buttons)))
