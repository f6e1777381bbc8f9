"""What the listeners answer, in English and in Chinese: the help, what a submission became, errors and
refusals, busy and expired notices, form titles and field errors, and the answers in a request's thread.

English is what it always said (the msgid is the English); in Chinese nothing is missing from the
catalog, no English word is left but what is shown as it is, and what Slack shows fits its limits.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from slack_sdk.models.blocks import Block
from slack_sdk.models.views import View

from bot.adapters.i18n import speaking
from bot.adapters.slack import ids
from bot.adapters.slack.blocks import lines_to_blocks
from bot.adapters.slack.events import ThreadReply, draft_from_form, shift_from_form
from bot.domain.commands import COMMANDS, parse_thread_decision
from bot.domain.failure_reasons import AsSaid
from bot.domain.languages import Language
from bot.domain.lifecycle import RequestState
from bot.errors import LostRace, PermanentError, TemporaryError
from bot.executor import BUSY, EXPIRED
from bot.services.outcomes import Submitted
from bot.services.quota_sync import QuotaBusy
from bot.services.refusals import NotAnApprover, Refused
from handlers import actions, commands, events, forms, outcome, replies
from tests.language_checks import catalog_misses, foreign_words
from tests.unit.conftest import World

LANGUAGES = list(Language)


@pytest.fixture(params=LANGUAGES, ids=str)
def language(request: pytest.FixtureRequest) -> Iterator[Language]:
    """Each test in each language; in Chinese, every sentence asked for is in the catalog."""
    with catalog_misses() as missed, speaking(request.param):
        yield request.param
    assert missed == set()


def chinese_only(language: Language, text: str, *, values: list[str] = []) -> None:  # noqa: B006 (read only)
    """In Chinese, no English word is left but what is shown as it is."""
    if language == Language.ZH_CN:
        assert foreign_words(text, values=values) == [], text


def fits_a_reply(text: str) -> None:
    for block in lines_to_blocks([text]):
        parsed = Block.parse(block)
        assert parsed is not None
        parsed.validate_json()


# --- the help ----------------------------------------------------------------------------------------


def test_the_help_lists_every_command_with_its_usage(language: Language) -> None:
    text = commands.help_text()
    lines = text.split("\n")
    assert len(lines) == 1 + len(COMMANDS)
    for line, command in zip(lines[1:], COMMANDS, strict=True):
        assert line.startswith(f"• `/gpu-quota {command}")
    chinese_only(language, text)
    if language == Language.EN:
        assert lines[0] == "*gpu-quota-bot*: ask for GPU quota, approve it in the thread, and see what it costs."
        assert "at most 366d) or the word `permanent`" in text
    else:
        assert lines[0].startswith("*gpu-quota-bot*：") and "最长 366 天" in text


@pytest.mark.parametrize("topic", COMMANDS)
def test_the_help_of_one_command_is_its_usage_and_what_it_does(language: Language, topic: str) -> None:
    usage, said = commands.help_text(topic).split("\n")
    assert usage.startswith(f"`/gpu-quota {topic}") and said
    chinese_only(language, said)


def test_the_help_keeps_the_commands_and_their_keywords_in_chinese() -> None:
    with speaking(Language.ZH_CN):
        text = commands.help_text("request")
    shown = text.replace("&lt;", "<").replace("&gt;", ">")  # escaped for Slack, as every usage
    assert "`/gpu-quota request <命名空间> <+N|-N|N> [资源] for <时长>|permanent <理由>`" in shown
    assert "`/gpu-quota request ai-frontier-research +4 for 3d 在新语料上微调`" in shown


# --- what a submission became ------------------------------------------------------------------------

SUBMITTED = [
    Submitted(7, "C0FRONTIER", RequestState.APPLIED, 1, None),
    Submitted(7, "C0FRONTIER", RequestState.FAILED, 1, None),
    Submitted(7, "C0FRONTIER", RequestState.PENDING, 1, None, post_waits=True),
    Submitted(7, "C0FRONTIER", RequestState.PENDING, 1, "Slack refused to post the card: channel_not_found"),
    Submitted(7, "C0FRONTIER", RequestState.PENDING, 1, None),
    Submitted(7, "C0FRONTIER", RequestState.PENDING, 2, None),
]


@pytest.mark.parametrize("submitted", SUBMITTED, ids=repr)
def test_what_a_submission_became_names_the_request_and_its_channel(language: Language, submitted: Submitted) -> None:
    text = replies.submitted_text(submitted)
    assert "GQ-7" in text and "<#C0FRONTIER>" in text
    chinese_only(language, text, values=[submitted.post_error or "GQ-7"])
    fits_a_reply(text)


def test_the_approvals_needed_are_counted_in_each_language() -> None:
    one, two = SUBMITTED[-2:]
    assert replies.submitted_text(one).endswith("for approval (1 approval needed).")
    assert replies.submitted_text(two).endswith("for approval (2 approvals needed).")
    with speaking(Language.ZH_CN):
        assert replies.submitted_text(two).endswith("等待批准（需要 2 个批准）。")


def test_slack_s_own_error_is_quoted_as_it_said_it() -> None:
    error = "<!channel> refused"
    with speaking(Language.ZH_CN):
        text = replies.submitted_text(Submitted(7, "C1", RequestState.PENDING, 1, error))
    assert "&lt;!channel&gt; refused" in text and "<!channel>" not in text


# --- errors and refusals -----------------------------------------------------------------------------


def _raise(error: BaseException) -> Callable[[], str]:
    def work() -> str:
        raise error

    return work


ERRORS: list[tuple[BaseException, str]] = [
    (Refused(NotAnApprover("Frontier research", 3)), ":no_entry_sign: You are not an approver for Frontier research"),
    (TemporaryError("Kubernetes API timed out"), ":warning: Kubernetes API timed out. Nothing was lost; please try again"),
    (QuotaBusy(AsSaid("the quota is being changed")), ":warning: the quota is being changed. Nothing was lost"),
    (PermanentError("the cluster refused <it>"), ":x: the cluster refused &lt;it&gt;. A platform admin needs to look"),
    (LostRace(), ":warning: Many changes arrived at once and yours could not be recorded; please try again."),
    (RuntimeError("boom"), ":x: Something went wrong on the bot's side (reference `"),
]


@pytest.mark.parametrize(("error", "english"), ERRORS, ids=lambda e: type(e).__name__)
def test_a_failure_is_worded_for_the_person(language: Language, error: BaseException, english: str) -> None:
    text = outcome.attempt(_raise(error), user="U0ALICE", what="test")
    assert isinstance(text, str)
    if language == Language.EN:
        assert text.startswith(english), text
    else:
        assert text.split(" ")[0] == english.split(" ")[0]  # the same emoji first
        detail = str(error).replace("<", "&lt;").replace(">", "&gt;")
        chinese_only(language, text, values=[detail, "Frontier research", "GQ-3"])
        assert "boom" not in text  # a crash's own words stay in the logs


def test_an_adapter_s_message_is_a_quoted_detail_inside_a_chinese_sentence() -> None:
    with speaking(Language.ZH_CN):
        text = outcome.attempt(_raise(TemporaryError("Kubernetes API timed out")), user="U0ALICE", what="test")
    assert text == ":warning: 暂时无法完成（Kubernetes API timed out）。没有丢失任何内容；请一分钟后再试。"


def test_busy_and_expired_are_in_the_reader_s_language(language: Language) -> None:
    for text, english in ((outcome.busy(), BUSY), (outcome.expired(), EXPIRED)):
        assert text.startswith(":hourglass:")
        assert (text == english) == (language == Language.EN)
        chinese_only(language, text)


# --- forms: titles, notices, field errors ------------------------------------------------------------


@dataclass
class AckedWork:
    """A work pool that only acknowledges: what the form's ack shows, the work itself never run."""

    acks: list[dict[str, Any]] = field(default_factory=list)

    def hand_off(self, work: Callable[[], object], *, ack: Callable[[], object], **_: Any) -> bool:
        ack()
        return True


def _form_body(values: dict[str, str], metadata: str = "{}") -> dict[str, Any]:
    state = {block: {ids.INPUT_ACTION: {"type": "plain_text_input", "value": value}} for block, value in values.items()}
    return {"user": {"id": "U0ALICE"}, "view": {"id": "V1", "private_metadata": metadata, "state": {"values": state}}}


REQUEST_FORM = {
    ids.NAMESPACE_BLOCK: "ai-frontier-research",
    ids.GPUS_BLOCK: "+2",
    ids.TERM_BLOCK: ids.TEMPORARY,
    ids.DURATION_BLOCK: "3d",
    ids.REASON_BLOCK: "eval",
}
SHIFT_FORM = {
    ids.GPUS_BLOCK: "3",
    ids.SOURCE_BLOCK: "ai-frontier-research",
    ids.TARGET_BLOCK: "biz-model-serving",
    ids.DURATION_BLOCK: "7d",
    ids.REASON_BLOCK: "serving",
}
FORMS = [
    ("on_request_form", REQUEST_FORM, "{}"),
    ("on_shift_form", SHIFT_FORM, "{}"),
    ("on_extend_form", {ids.DURATION_BLOCK: "2d", ids.REASON_BLOCK: ""}, '{"request_id": 7}'),
    ("on_deny_form", {ids.REASON_BLOCK: "no budget"}, '{"request_id": 7}'),
    ("on_confirm_approval", {}, '{"request_id": 7}'),
    ("on_confirm_approval", {}, "{}"),  # not a request the bot made
]


@pytest.mark.parametrize(("listener", "values", "metadata"), FORMS)
def test_a_valid_form_turns_into_a_notice_in_the_reader_s_language(
    language: Language, listener: str, values: dict[str, str], metadata: str
) -> None:
    acked: list[dict[str, Any]] = []
    listeners = forms.FormListeners(services=None, work=AckedWork())  # type: ignore[arg-type]
    getattr(listeners, listener)(lambda **answer: acked.append(answer), _form_body(values, metadata), client=None)
    (answer,) = acked
    assert answer["response_action"] == "update"
    view: View = answer["view"]
    view.validate_json()  # the title within Slack's 24 characters, the text within 3,000
    text = view.blocks[0].text.text  # type: ignore[union-attr]
    assert len(view.title.text) <= 24  # type: ignore[union-attr]
    chinese_only(language, f"{view.title.text} {view.close.text} {text}", values=["GQ-7"])  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("listener", "values", "metadata", "field_id"),
    [
        ("on_deny_form", {ids.REASON_BLOCK: ""}, '{"request_id": 7}', ids.REASON_BLOCK),
        ("on_deny_form", {ids.REASON_BLOCK: "no"}, "{}", ids.REASON_BLOCK),
        ("on_extend_form", {ids.DURATION_BLOCK: "soon"}, '{"request_id": 7}', ids.DURATION_BLOCK),
        ("on_extend_form", {ids.DURATION_BLOCK: "2d"}, "{}", ids.DURATION_BLOCK),
        ("on_shift_form", SHIFT_FORM | {ids.TARGET_BLOCK: "ai-frontier-research"}, "{}", ids.GPUS_BLOCK),
        ("on_shift_form", SHIFT_FORM | {ids.DURATION_BLOCK: "1y"}, "{}", ids.DURATION_BLOCK),
        ("on_request_form", REQUEST_FORM | {ids.GPUS_BLOCK: "lots"}, "{}", ids.GPUS_BLOCK),
    ],
)
def test_a_form_field_s_error_is_in_the_reader_s_language(
    language: Language, listener: str, values: dict[str, str], metadata: str, field_id: str
) -> None:
    acked: list[dict[str, Any]] = []
    listeners = forms.FormListeners(services=None, work=AckedWork())  # type: ignore[arg-type]
    getattr(listeners, listener)(lambda **answer: acked.append(answer), _form_body(values, metadata), client=None)
    (answer,) = acked
    assert answer["response_action"] == "errors" and set(answer["errors"]) == {field_id}
    chinese_only(language, answer["errors"][field_id], values=["soon", "1y", "lots", "ai-frontier-research"])


def test_the_request_form_s_errors_are_whole_sentences_in_each_language(language: Language) -> None:
    _, errors = draft_from_form(
        {ids.NAMESPACE_BLOCK: "", ids.GPUS_BLOCK: "lots", ids.TERM_BLOCK: ids.TEMPORARY, ids.DURATION_BLOCK: ""}
        | {ids.RESOURCE_BLOCK: "<!here>"}
    )
    assert set(errors) == {ids.NAMESPACE_BLOCK, ids.GPUS_BLOCK, ids.DURATION_BLOCK, ids.REASON_BLOCK, ids.RESOURCE_BLOCK}
    for text in errors.values():
        chinese_only(language, text, values=["lots", "<!here>"])
    _, errors = draft_from_form(REQUEST_FORM | {ids.TERM_BLOCK: ids.PERMANENT})
    assert set(errors) == {ids.DURATION_BLOCK}
    _, errors = draft_from_form(REQUEST_FORM | {ids.TERM_BLOCK: ""})
    chinese_only(language, errors[ids.TERM_BLOCK])
    _, no_term = shift_from_form(SHIFT_FORM | {ids.DURATION_BLOCK: ""})
    _, no_reason = shift_from_form(SHIFT_FORM | {ids.REASON_BLOCK: ""})
    chinese_only(language, no_term[ids.DURATION_BLOCK] + no_reason[ids.REASON_BLOCK])


def test_a_shift_form_s_error_is_a_sentence() -> None:
    _, errors = shift_from_form(SHIFT_FORM | {ids.TARGET_BLOCK: "ai-frontier-research"})
    assert errors[ids.GPUS_BLOCK] == (
        "The source and the target are both `ai-frontier-research`: a shift moves GPUs between two namespaces."
    )
    with speaking(Language.ZH_CN):
        _, errors = shift_from_form(SHIFT_FORM | {ids.TARGET_BLOCK: "ai-frontier-research"})
    assert errors[ids.GPUS_BLOCK] == "来源和目标都是 `ai-frontier-research`：转移是在两个命名空间之间移动 GPU。"


# --- buttons ------------------------------------------------------------------------------------------


def test_an_invalid_button_is_answered_in_the_reader_s_language(language: Language) -> None:
    answers: list[str] = []
    click = actions.ButtonClick("U0ALICE", actions.ActionKind.APPROVE, "abc", None)
    actions.invalid_button(answers.append, click)
    (text,) = answers
    assert text.startswith(":no_entry_sign:")
    chinese_only(language, text)


class RefusingSlack:
    """A Web API client whose views.open Slack refuses (an expired trigger)."""

    def views_open(self, **_: Any) -> None:
        raise PermanentError("Slack refused to open the form: expired_trigger_id")


def test_a_form_that_cannot_open_says_what_to_type_instead(language: Language) -> None:
    answers: list[str] = []
    replies.open_view(RefusingSlack(), answers.append, "t", view=None, instead=replies.type_instead("shift"))  # type: ignore[arg-type]
    (text,) = answers
    first, instead = text.split("\n")
    assert "expired_trigger_id" in first and instead.endswith("`") and "`/gpu-quota shift " in instead
    chinese_only(language, text, values=["Slack refused to open the form: expired_trigger_id"])


# --- answers in a request's thread ---------------------------------------------------------------------


@dataclass
class ThreadSlack:
    """A Web API client that keeps what the bot posted in threads."""

    posted: list[str] = field(default_factory=list)

    def chat_postMessage(self, *, channel: str, thread_ts: str, text: str) -> dict[str, Any]:  # noqa: N802 (Slack's name)
        self.posted.append(text)
        return {"ok": True}


def _typed(world: World, user: str, text: str, request_id: int) -> list[str]:
    slack = ThreadSlack()
    decision = parse_thread_decision(text, bot_user_id="UBOT")
    assert decision is not None
    reply = ThreadReply(user, "C0FRONTIER", "1.0", text)
    events.decide_in_thread(world.services, slack, reply, request_id, decision)  # type: ignore[arg-type]
    return slack.posted


@pytest.mark.parametrize("typed", ["deny", "拒绝"])
def test_a_denial_without_a_reason_is_asked_why_in_the_reader_s_language(world: World, language: Language, typed: str) -> None:
    request_id = world.submit("request ai-frontier-research +4 for 3d fine-tune").request_id
    (asked,) = _typed(world, "U0LEE", typed, request_id)
    assert asked.startswith("<@U0LEE> :no_entry_sign:")
    if language == Language.EN:  # the bot's own <...> escaped too, so Slack shows it as written
        assert asked.endswith("Say why: type `deny &lt;reason&gt;`; the requester reads it. Nothing was decided.")
    else:
        assert "`拒绝 &lt;理由&gt;`" in asked
    chinese_only(language, asked)
    assert world.request(request_id).state == RequestState.PENDING


def test_a_typed_decision_s_refusal_is_answered_to_the_person(world: World, language: Language) -> None:
    request_id = world.submit("request ai-frontier-research +4 for 3d fine-tune").request_id
    (refused,) = _typed(world, "U0BOB", "批准", request_id)
    assert refused.startswith("<@U0BOB> :no_entry_sign:")
    chinese_only(language, refused, values=["Frontier research", "GQ-1"])


def test_a_permanent_change_typed_as_approved_points_to_its_button(world: World, language: Language) -> None:
    request_id = world.submit("request ai-frontier-research +2 permanent serving").request_id
    (pointed,) = _typed(world, "U0LEE", "批准", request_id)
    assert pointed.startswith("<@U0LEE> :point_up: GQ-1")
    chinese_only(language, pointed, values=["GQ-1"])
    assert world.request(request_id).state == RequestState.PENDING
