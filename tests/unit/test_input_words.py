"""What is wrong with what a person typed, worded at the edge in English and in Chinese: every input
problem, every command's usage, every answer to a command that could not be understood."""

from __future__ import annotations

import dataclasses
from typing import Any, get_type_hints

import pytest

import bot.bootstrap  # noqa: F401  (lends the edge's wording to ``str(ParseError)``)
from bot.adapters.i18n import speaking
from bot.adapters.slack import input_words
from bot.domain import input_problems as p
from bot.domain.commands import COMMANDS, Malformed, parse_command
from bot.domain.durations import parse_duration
from bot.domain.languages import Language
from tests.language_checks import catalog_misses, foreign_words

TYPED = "Bad_NS!"  # every text field of the fixtures: what a person typed


def _examples(kind: type[p.InputProblem]) -> list[p.InputProblem]:
    """An instance of ``kind`` per choice it has (each fault, yes and no, a duration or none)."""
    values: dict[str, list[Any]] = {}
    for name, hint in get_type_hints(kind).items():
        if hint is p.DurationFault:
            values[name] = list(p.DurationFault)
        elif hint is bool:
            values[name] = [False, True]
        elif hint is p.InputProblem:
            values[name] = [p.BadDuration(TYPED, p.DurationFault.ZERO), p.ShiftSyntax()]
        elif name == "command":
            values[name] = ["list"]
        elif "None" in str(hint):
            values[name] = [None, TYPED]
        else:
            values[name] = [TYPED]
    examples = [kind(**{name: choices[0] for name, choices in values.items()})]
    for name, choices in values.items():
        examples += [kind(**{n: (value if n == name else c[0]) for n, c in values.items()}) for value in choices[1:]]
    return examples


KINDS = [k for k in vars(p).values() if isinstance(k, type) and issubclass(k, p.InputProblem) and dataclasses.is_dataclass(k)]
EXAMPLES = [problem for kind in KINDS for problem in _examples(kind)]


def test_every_kind_has_examples() -> None:
    assert len(KINDS) >= 25 and len(EXAMPLES) > len(KINDS)


@pytest.mark.parametrize("problem", EXAMPLES, ids=repr)
@pytest.mark.parametrize("language", list(Language))
def test_every_problem_is_worded_as_a_clause_and_as_a_sentence(problem: p.InputProblem, language: Language) -> None:
    with catalog_misses() as missed, speaking(language):
        clause, sentence = input_words.render(problem), input_words.mrkdwn.render(input_words.sentence(problem))
    assert missed == set()
    assert clause and "{" not in clause and "{" not in sentence
    assert sentence.endswith((".", "?", ":", "。", "？", "：")), sentence
    if language == Language.ZH_CN:
        assert foreign_words(sentence, values=[TYPED]) == [], sentence
        assert not sentence.endswith("."), sentence  # a Chinese sentence ends with Chinese punctuation


@pytest.mark.parametrize("problem", EXAMPLES, ids=repr)
def test_what_was_typed_is_shown_as_it_is_in_both_languages(problem: p.InputProblem) -> None:
    with speaking(Language.EN):
        english = input_words.plain_text(problem)
    with speaking(Language.ZH_CN):
        chinese = input_words.plain_text(problem)
    assert (TYPED in english) == (TYPED in chinese) and english != chinese


def test_a_long_paste_is_shortened_where_it_is_quoted() -> None:
    problem = p.BadDuration("9" * 40, p.DurationFault.NOT_A_DURATION)
    assert input_words.plain_text(problem) == f"`{'9' * 30}…` is not a duration: use 90m, 12h, 3d or 2w, at most 366d"
    with speaking(Language.ZH_CN):
        assert input_words.plain_text(problem) == f"`{'9' * 30}…` 不是时长：请用 90m、12h、3d 或 2w 这样的写法，最长 366 天"


def test_a_parse_error_says_the_edge_s_words_in_the_current_language() -> None:
    with pytest.raises(ValueError) as raised:
        parse_duration("-3d")
    assert str(raised.value) == "`-3d` is not a duration: use 90m, 12h, 3d or 2w, at most 366d"
    with speaking(Language.ZH_CN):
        assert str(raised.value) == "`-3d` 不是时长：请用 90m、12h、3d 或 2w 这样的写法，最长 366 天"


def test_every_command_has_its_usage_in_the_order_help_lists_them() -> None:
    assert tuple(input_words.USAGE) == COMMANDS


@pytest.mark.parametrize("command", COMMANDS)
def test_a_usage_keeps_the_command_and_its_keywords_and_translates_the_parts(command: str) -> None:
    english = input_words.usage(command)
    with catalog_misses() as missed, speaking(Language.ZH_CN):
        chinese = input_words.usage(command)
    assert missed == set()
    assert chinese.split()[0] == english.split()[0] == command
    keywords = {"for", "permanent", "from", "to", "+N|-N|N", "[YYYY-MM]", "<N>"}
    assert [w for w in english.split() if w in keywords] == [w for w in chinese.split() if w in keywords]
    assert foreign_words(chinese) == []
    if "<" in english or "[" in english:
        assert chinese != english  # the names of the parts are translated
    assert not {"namespace", "reason", "duration", "cluster", "team"} & set(chinese.replace("|", " ").split())


# Every answer to a command that could not be understood (one per problem the parser gives a command),
# and what it said in English before the words moved to the edge.
MALFORMED = {
    "frobnicate": "I don't know `frobnicate`.",
    "stauts": "I don't know `stauts`. Did you mean `status`?",
    "help stats": "There is no command `stats`. Did you mean `status`? The commands are:",
    "help frobnicate": "There is no command `frobnicate`. The commands are:",
    "cancel": "`cancel` needs one request id, like GQ-17.",
    "extend": "`extend` needs a request id, like GQ-17.",
    "list x": "`list` takes no arguments.",
    "audit": "`audit` needs a namespace or a request id.",
    "doctor a b": "`doctor` takes at most a cluster name.",
    "why": "`why` needs a pod (or a Job, Deployment or Workload): `why <namespace>/<name>`.",
    "why Bad!": "'Bad!' is not a namespace or `<namespace>/<name>`.",
    "why ns-a bad_name": "'bad_name' is not a pod, Job, Deployment or Workload name.",
    "cost 2026-13": "`2026-13` is not a month: use YYYY-MM, once.",
    "cost Research!": "`Research!` is neither a team, a namespace nor a month (YYYY-MM).",
    "status a b": "'a b' is not a namespace name.",
    "request ns-a +4 for -3d x": "Not submitted: `-3d` is not a duration: use 90m, 12h, 3d or 2w, at most 366d.",
    "request ns-a +4 for 0m x": "Not submitted: `0m` is zero: use 90m, 12h, 3d or 2w, at most 366d.",
    "request ns-a +4 for 400d x": (
        "Not submitted: `400d` is too long: use 90m, 12h, 3d or 2w, at most 366d (for longer, ask for a permanent change)."
    ),
    "request ns-a +4 for": "Not submitted: `for` needs a duration: use 90m, 12h, 3d or 2w, at most 366d.",
    "request ns-a +4 for permanent x": "Not submitted: a permanent change is written `permanent`, without `for`.",
    "request ns-a +4 for 3d permanent x": "Not submitted: both `for 3d` and `permanent`: say one.",
    "request ns-a +4 permanent for 3d x": "Not submitted: both `permanent` and `for 3d`: say one.",
    "shift 3 ns-a ns-b for 1d r": (
        "Not submitted: write it as `shift 3 from <namespace> to <namespace> [resource] for 30d|permanent <reason>`."
    ),
    "shift 0 from ns-a to ns-b for 1d r": (
        "Not submitted: '0' is not a number of GPUs to move (a whole number above 0, like 3)."
    ),
    "shift 3 from ns-a to Bad! for 1d r": "Not submitted: 'Bad!' is not a namespace name.",
    "shift 3 from ns-a to ns-a for 1d r": (
        "Not submitted: the source and the target are both `ns-a`: a shift moves GPUs between two namespaces."
    ),
    "shift 3 from ns-a to ns-b soon r": (
        "Not submitted: say how long: `for 30d` (use 90m, 12h, 3d or 2w, at most 366d) or `permanent`."
    ),
    "shift 3 from ns-a to ns-b for 1d permanent r": "Not submitted: both a duration and `permanent`: say one.",
    "shift 3 from ns-a to ns-b for 1d": "Not submitted: give a reason after the duration.",
    "shift 2 from ns-a to ns-b <@U0EVE> for 1d r": (
        "Not submitted: '<@U0EVE>' is not a resource name (like mig-3g.40gb or nvidia.com/gpu)."
    ),
}
TYPED_WORDS = ["frobnicate", "stauts", "stats", "Bad!", "bad_name", "Research!", "ns-a", "ns-b", "&lt;@U0EVE&gt;", "a b"]


def malformed(text: str) -> Malformed:
    command = parse_command(text)
    assert isinstance(command, Malformed), command
    return command


def test_every_problem_a_command_can_be_refused_for_has_an_example() -> None:
    problems = [malformed(text).problem for text in MALFORMED]
    kinds = {type(problem) for problem in problems}
    kinds |= {type(problem.problem) for problem in problems if isinstance(problem, p.NotSubmitted)}
    only_in_drafts = {p.NotAGpuCount, p.ChangesNothing, p.ExtensionHowLong}  # listed by the form, never refused
    assert kinds == set(KINDS) - only_in_drafts


@pytest.mark.parametrize(("text", "said"), MALFORMED.items())
def test_a_malformed_command_is_answered_as_before_in_english(text: str, said: str) -> None:
    answer = input_words.malformed_text(malformed(text)).replace("&lt;", "<").replace("&gt;", ">")
    assert answer.split("\n")[0] == said
    assert all(line.startswith("`/gpu-quota ") for line in answer.split("\n")[1:])


@pytest.mark.parametrize("text", MALFORMED)
def test_a_malformed_command_is_answered_in_chinese_with_commands_and_what_was_typed_kept(text: str) -> None:
    command = malformed(text)
    with catalog_misses() as missed, speaking(Language.ZH_CN):
        answer = input_words.malformed_text(command)
    assert missed == set()
    first, *usages = answer.split("\n")
    assert foreign_words(first, values=TYPED_WORDS) == [], first
    assert len(usages) == len(command.usage)
    for usage, name in zip(usages, command.usage, strict=True):
        assert usage.startswith(f"`/gpu-quota {name}") and usage.endswith("`")


def test_mentions_in_what_was_typed_stay_inert() -> None:
    answer = input_words.malformed_text(malformed("shift 2 from ns-a to ns-b <!channel> for 1d r"))
    assert "<!channel>" not in answer and "&lt;!channel&gt;" in answer
