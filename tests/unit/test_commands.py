from dataclasses import replace
from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.adapters.slack.input_words import USAGE, sentence
from bot.domain.commands import (
    COMMANDS,
    AuditCommand,
    CancelCommand,
    ExtendCommand,
    GpuAmount,
    HelpCommand,
    ListCommand,
    Malformed,
    ReleaseCommand,
    RequestCommand,
    RetryCommand,
    ShiftCommand,
    ShiftDraft,
    StatusCommand,
    ThreadDecision,
    parse_command,
    parse_request_id,
    parse_thread_decision,
)
from bot.domain.durations import format_duration
from bot.domain.input_problems import NotAResourceName, NoTerm, UnknownCommand
from bot.services.text import plain


def message(command: Malformed) -> str:
    """What the person reads first (English): the problem as a sentence."""
    return plain(sentence(command.problem))


def test_full_request_is_complete() -> None:
    command = parse_command("request ai-frontier-research +4 for 3d fine-tune on the new corpus")
    assert isinstance(command, RequestCommand)
    draft = command.draft
    assert draft.complete
    assert (draft.namespace, draft.amount, draft.duration) == ("ai-frontier-research", GpuAmount(4, True), timedelta(days=3))
    assert draft.reason == "fine-tune on the new corpus"


def test_permanent_only_by_the_word() -> None:
    command = parse_command("request biz-model-serving 8 permanent serving capacity for launch")
    assert isinstance(command, RequestCommand)
    assert command.draft.permanent and command.draft.duration is None and command.draft.complete
    assert command.draft.amount == GpuAmount(8, False)
    assert command.draft.reason == "serving capacity for launch"


def test_a_request_without_for_or_permanent_is_incomplete_not_permanent() -> None:
    command = parse_command("request biz-model-serving 8 serving capacity for launch")
    assert isinstance(command, RequestCommand)
    assert not command.draft.complete and not command.draft.permanent
    assert command.draft.problems == (NoTerm(example="3d"),)


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("request ai-frontier-research +4 for -3d x", "`-3d` is not a duration: use 90m, 12h, 3d or 2w, at most 366d"),
        ("request ai-frontier-research +4 for 99y x", "`99y` is not a duration"),
        ("request ai-frontier-research +4 for 400d x", "`400d` is too long"),
        ("request ai-frontier-research +4 for permanent x", "written `permanent`, without `for`"),
        ("request ai-frontier-research +4 for", "`for` needs a duration"),
        ("request ai-frontier-research +4 permanent for 3d x", "both `permanent` and `for 3d`: say one"),
        ("request ai-frontier-research +4 for 3d permanent x", "both `for 3d` and `permanent`: say one"),
    ],
)
def test_a_bad_duration_is_an_error_naming_it(text: str, named: str) -> None:
    command = parse_command(text)
    assert isinstance(command, Malformed)
    assert named in message(command)


def test_control_characters_are_removed() -> None:
    command = parse_command("request ai-frontier-research +4 for 3d a\x00b\x1b[31mc\x7f")
    assert isinstance(command, RequestCommand)
    assert command.draft.reason == "ab[31mc"


@pytest.mark.parametrize("text", ["0", "GQ-0", str(2**31), "99999999999", str(10**23), "²", "-1"])
def test_request_ids_out_of_range_are_not_ids(text: str) -> None:
    assert parse_request_id(text) is None


def test_decrease_is_allowed() -> None:
    command = parse_command("request ai-frontier-research -3 permanent slow down")
    assert isinstance(command, RequestCommand)
    assert command.draft.amount == GpuAmount(-3, True)


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("request", {}),
        ("request ai-frontier-research", {"namespace": "ai-frontier-research"}),
        ("request ai-frontier-research +4 for 3d", {"amount": GpuAmount(4, True), "duration": timedelta(days=3)}),
        ("request +4 for 3d more data", {"amount": GpuAmount(4, True), "reason": "more data"}),
    ],
)
def test_incomplete_requests_become_drafts_that_keep_the_valid_parts(text: str, kept: dict) -> None:
    command = parse_command(text)
    assert isinstance(command, RequestCommand)
    assert not command.draft.complete
    for field, value in kept.items():
        assert getattr(command.draft, field) == value


def test_for_without_a_duration_is_an_error_not_a_permanent_request() -> None:
    command = parse_command("request ai-frontier-research +4 for three days to train")
    assert isinstance(command, Malformed)
    assert "`three` is not a duration" in message(command)


@pytest.mark.parametrize("text", ["request Bad_Namespace +1 x", "request ai-frontier-research four reason"])
def test_invalid_parts_are_listed(text: str) -> None:
    command = parse_command(text)
    assert isinstance(command, RequestCommand)
    assert command.draft.problems


def test_the_word_payload_in_a_reason_is_just_a_word() -> None:
    command = parse_command("request ai-frontier-research +1 for 1d payload tests")
    assert isinstance(command, RequestCommand)
    assert command.draft.reason == "payload tests"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("status", StatusCommand()),
        ("status ai-frontier-research", StatusCommand("ai-frontier-research")),
        ("list", ListCommand()),
        ("cancel GQ-17", CancelCommand(17)),
        ("release gq-17", ReleaseCommand(17)),
        ("retry #17", RetryCommand(17)),
        ("extend GQ-17 2d more epochs", ExtendCommand(17, timedelta(days=2), "more epochs")),
        ("audit ai-frontier-research", AuditCommand(namespace="ai-frontier-research")),
        ("audit GQ-3", AuditCommand(request_id=3)),
        ("", HelpCommand()),
        ("help request", HelpCommand("request")),
        ("HELP", HelpCommand()),
    ],
)
def test_other_commands(text: str, expected: object) -> None:
    assert parse_command(text) == expected


@pytest.mark.parametrize("text", ["frobnicate", "cancel", "cancel 17 18", "status a b", "list x", "audit", "extend"])
def test_malformed_commands_say_how_to_write_them(text: str) -> None:
    command = parse_command(text)
    assert isinstance(command, Malformed)
    assert message(command) and command.usage and set(command.usage) <= set(COMMANDS)


def test_extend_without_a_valid_duration_lists_the_problem() -> None:
    command = parse_command("extend GQ-4 soon")
    assert isinstance(command, ExtendCommand)
    assert command.duration is None and command.problems


def test_request_ids() -> None:
    assert parse_request_id("GQ-17") == parse_request_id("17") == parse_request_id("#17") == 17
    assert parse_request_id("GQ17x") is None


@given(st.text(max_size=200))
def test_parsing_never_raises(text: str) -> None:
    parse_command(text)


namespaces = st.from_regex(r"[a-z][a-z0-9-]{0,20}[a-z0-9]", fullmatch=True)
amounts = st.builds(GpuAmount, value=st.integers(min_value=1, max_value=999), relative=st.booleans()) | st.builds(
    GpuAmount, value=st.integers(min_value=-999, max_value=-1), relative=st.just(True)
)
durations = st.none() | st.integers(min_value=1, max_value=60 * 24 * 300).map(lambda m: timedelta(minutes=m))
reasons = st.lists(st.from_regex(r"[A-Za-z][A-Za-z0-9,.:]{0,12}", fullmatch=True), min_size=1, max_size=8).map(" ".join)


@given(namespaces, amounts, durations, reasons)
def test_typed_requests_round_trip(namespace: str, amount: GpuAmount, duration: timedelta | None, reason: str) -> None:
    span = f" for {format_duration(duration)}" if duration else " permanent"
    command = parse_command(f"request {namespace} {amount}{span} {reason}")
    assert isinstance(command, RequestCommand)
    draft = command.draft
    assert draft.complete and draft.permanent == (duration is None)
    assert (draft.namespace, draft.amount, draft.duration, draft.reason) == (namespace, amount, duration, reason)


resource_words = st.from_regex(
    r"(nvidia\.com/)?mig-[1-7]g\.[1-9][0-9]{0,2}gb(\.me)?|[a-z]{1,8}\.com/[a-z][a-z.-]{0,10}[a-z]|[1-7]g", fullmatch=True
)


@given(namespaces, amounts, durations, reasons, resource_words)
def test_a_resource_word_before_the_term_changes_only_the_resource(
    namespace: str, amount: GpuAmount, duration: timedelta | None, reason: str, word: str
) -> None:
    span = f"for {format_duration(duration)}" if duration else "permanent"
    without = parse_command(f"request {namespace} {amount} {span} {reason}")
    named = parse_command(f"request {namespace} {amount} {word} {span} {reason}")
    assert isinstance(without, RequestCommand) and isinstance(named, RequestCommand)
    assert without.draft.resource is None and named.draft == replace(without.draft, resource=word)


@given(st.integers(min_value=1, max_value=999), durations, reasons, st.none() | resource_words)
def test_typed_shifts_round_trip_with_an_optional_resource(
    gpus: int, duration: timedelta | None, reason: str, word: str | None
) -> None:
    span = f"for {format_duration(duration)}" if duration else "permanent"
    named = f" {word}" if word else ""
    command = parse_command(f"shift {gpus} from ns-a to ns-b{named} {span} {reason}")
    assert command == ShiftCommand(ShiftDraft(gpus, "ns-a", "ns-b", duration, reason, resource=word))


@pytest.mark.parametrize(
    ("text", "resource"),
    [
        ("request ns-a +2 mig-3g.40gb for 1d eval sweep", "mig-3g.40gb"),
        ("request ns-a 4 nvidia.com/mig-1g.10gb.me permanent media", "nvidia.com/mig-1g.10gb.me"),
        ("request ns-a -1 3g PERMANENT done", "3g"),
        ("request ns-a +2 for 1d mig-3g.40gb sweep", None),  # after the term it is part of the reason
        ("request ns-a +2 serving capacity for launch", None),  # without a term right after, nothing is a resource
    ],
)
def test_the_resource_is_the_word_between_the_amount_and_the_term(text: str, resource: str | None) -> None:
    command = parse_command(text)
    assert isinstance(command, RequestCommand) and command.draft.resource == resource


def test_a_word_no_resource_is_spelt_as_is_a_problem_and_the_rest_is_kept() -> None:
    command = parse_command("request ns-a +2 <@U0EVE> for 1d sweep")
    assert isinstance(command, RequestCommand)
    draft = command.draft
    assert draft.resource is None and draft.problems == (NotAResourceName("<@U0EVE>"),)
    assert (draft.amount, draft.duration, draft.reason) == (GpuAmount(2, True), timedelta(days=1), "sweep")
    shift = parse_command("shift 2 from ns-a to ns-b <@U0EVE> for 1d sweep")
    assert isinstance(shift, Malformed) and "'<@U0EVE>' is not a resource name" in message(shift)


def test_the_usage_of_request_and_shift_names_the_optional_resource() -> None:
    assert "<+N|-N|N> [resource] for <duration>|permanent" in USAGE["request"]
    assert "to <namespace> [resource] for <duration>|permanent" in USAGE["shift"]


@given(st.integers(min_value=0, max_value=1000), st.integers(min_value=0, max_value=1000))
def test_absolute_amounts_are_read_against_the_current_quota(current: int, total: int) -> None:
    assert current + GpuAmount(total, relative=False).delta_from(current) == total


@pytest.mark.parametrize(
    ("text", "suggestion"), [("stauts", "status"), ("reqeust ns +1", "request"), ("cancle GQ-1", "cancel"), ("frobnicate", None)]
)
def test_a_mistyped_verb_gets_did_you_mean(text: str, suggestion: str | None) -> None:
    command = parse_command(text)
    assert isinstance(command, Malformed)
    if suggestion:
        assert message(command).endswith(f"Did you mean `{suggestion}`?")
    else:
        assert "Did you mean" not in message(command)


def test_help_on_an_unknown_command_says_so_and_lists_the_commands() -> None:
    command = parse_command("help stats")
    assert isinstance(command, Malformed)
    assert message(command).startswith("There is no command `stats`. Did you mean `status`?")
    assert command.usage == COMMANDS == tuple(USAGE)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("approve", ThreadDecision(approve=True)),
        ("Approve!", ThreadDecision(approve=True)),
        ("<@UBOT> approve", ThreadDecision(approve=True)),
        ("<@UBOT|gpu-quota> <@UBOT> deny no", ThreadDecision(approve=False, reason="no")),
        ("<@U0PAT> approve", None),
        ("Deny: no budget this month", ThreadDecision(approve=False, reason="no budget this month")),
        ("denied, too expensive", ThreadDecision(approve=False, reason="too expensive")),
        ("deny - not now", ThreadDecision(approve=False, reason="- not now")),
        ("approve:", ThreadDecision(approve=True)),
        ("<@UBOT> <@U0PAT|pat> deny", None),
        ("approved.", ThreadDecision(approve=True)),
        ("deny", ThreadDecision(approve=False)),
        ("Deny the corpus is not ready", ThreadDecision(approve=False, reason="the corpus is not ready")),
        ("I approve of the idea", None),
        ("approve it after lunch", None),
        ("looks good", None),
        ("", None),
    ],
)
def test_decisions_typed_in_a_thread(text: str, expected: ThreadDecision | None) -> None:
    assert parse_thread_decision(text, bot_user_id="UBOT") == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("批准", ThreadDecision(approve=True)),
        ("批准。", ThreadDecision(approve=True)),
        ("批准！", ThreadDecision(approve=True)),
        ("批准!", ThreadDecision(approve=True)),
        ("  批准  ", ThreadDecision(approve=True)),
        ("批准了", ThreadDecision(approve=True)),
        ("<@UBOT> 批准", ThreadDecision(approve=True)),
        ("<@UBOT>批准。", ThreadDecision(approve=True)),
        ("<@U0PAT> 批准", None),
        ("批准吗？", None),
        ("批准，但是下周再说", None),
        ("不批准", None),
        ("我批准", None),
        ("拒绝 预算不足", ThreadDecision(approve=False, reason="预算不足")),
        ("拒绝：预算不足", ThreadDecision(approve=False, reason="预算不足")),
        ("拒绝，预算不足。", ThreadDecision(approve=False, reason="预算不足。")),
        ("拒绝预算不够", ThreadDecision(approve=False, reason="预算不够")),
        ("拒绝: budget", ThreadDecision(approve=False, reason="budget")),
        ("拒绝了，数据还没清洗", ThreadDecision(approve=False, reason="数据还没清洗")),
        ("拒绝", ThreadDecision(approve=False)),
        ("拒绝。", ThreadDecision(approve=False)),
        ("<@UBOT> 拒绝 这个月没有预算", ThreadDecision(approve=False, reason="这个月没有预算")),
        ("拒绝吗？", None),
        ("拒绝的话怎么办", None),
        ("拒绝：的确不需要", ThreadDecision(approve=False, reason="的确不需要")),
        ("我拒绝", None),
        ("approve。", ThreadDecision(approve=True)),
        ("Deny：", ThreadDecision(approve=False)),
    ],
)
def test_decisions_typed_in_chinese_in_a_thread(text: str, expected: ThreadDecision | None) -> None:
    assert parse_thread_decision(text, bot_user_id="UBOT") == expected


_SEPARATORS = ["", " ", "：", "，", ": ", "， ", "\u3000"]
_PARTICLES = ("吗", "么", "呢", "的", "了")
# A reason as a Chinese team writes it: Chinese characters, Latin words, digits, spaces and punctuation inside.
chinese_reasons = st.text(
    alphabet=st.sampled_from("预算不足够数据还没清洗本月已超标请下周再申请GPU ab1，。、"), min_size=1, max_size=40
).filter(lambda text: text.strip() and text.strip()[0] not in "，。、" and not text.strip().startswith(_PARTICLES))


@given(st.sampled_from(_SEPARATORS), chinese_reasons)
def test_a_chinese_denial_takes_the_reason_after_it_with_or_without_a_space(separator: str, reason: str) -> None:
    assert parse_thread_decision(f"拒绝{separator}{reason}", bot_user_id="UBOT") == ThreadDecision(
        approve=False, reason=reason.strip()
    )


@given(st.text(alphabet=st.sampled_from(" 。！!.，,：:；;、\u3000"), max_size=6))
def test_a_chinese_approval_stands_alone_whatever_punctuation_follows(punctuation: str) -> None:
    assert parse_thread_decision(f"批准{punctuation}", bot_user_id="UBOT") == ThreadDecision(approve=True)


@given(chinese_reasons)
def test_a_chinese_approval_followed_by_words_is_chat_not_a_decision(words: str) -> None:
    assert parse_thread_decision(f"批准，{words}", bot_user_id="UBOT") is None


@given(st.sampled_from(["批准", "拒绝 预算不足", "approve", "deny no budget", "looks good"]), st.sampled_from(["", " ", "  "]))
def test_a_mention_of_the_bot_before_a_decision_changes_nothing_and_of_someone_else_makes_it_chat(text: str, space: str) -> None:
    assert parse_thread_decision(f"<@UBOT>{space}{text}", bot_user_id="UBOT") == parse_thread_decision(text, bot_user_id="UBOT")
    assert parse_thread_decision(f"<@U0PAT>{space}{text}", bot_user_id="UBOT") is None


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_listed_is_one_the_parser_knows(command: str) -> None:
    parsed = parse_command(command)
    assert not (isinstance(parsed, Malformed) and isinstance(parsed.problem, UnknownCommand))
