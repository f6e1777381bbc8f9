from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.domain.commands import (
    USAGE,
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
    StatusCommand,
    ThreadDecision,
    parse_command,
    parse_request_id,
    parse_thread_decision,
)
from bot.domain.durations import format_duration


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
    assert any("`permanent`" in p for p in command.draft.problems)


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
    assert named in command.message


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
    assert "`three` is not a duration" in command.message


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
    assert command.message and command.usage


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
        assert command.message.endswith(f"Did you mean `{suggestion}`?")
    else:
        assert "Did you mean" not in command.message


def test_help_on_an_unknown_command_says_so_and_lists_the_commands() -> None:
    command = parse_command("help stats")
    assert isinstance(command, Malformed)
    assert command.message.startswith("There is no command `stats`. Did you mean `status`?")
    assert command.usage == tuple(USAGE.values())


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
