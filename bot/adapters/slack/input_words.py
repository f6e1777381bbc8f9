"""The words of every typed input problem (``bot.domain.input_problems``) and of each command's usage.

What a person typed is shown as it is (a text value, escaped by ``mrkdwn.render``), and so are the
commands and their keywords (``request``, ``for``, ``permanent``): only the words around them, and the
names of the parts in a usage (``<namespace>``), are translated. A problem of a part (a duration, a GPU
count, a namespace name) is worded as a clause: it is shown in a list of a draft's problems, after
"Not submitted:" and under a form's field; ``sentence`` makes it a sentence of its own. The bootstrap
lends ``plain_text`` to ``ParseError``, so ``str(error)`` (the shell, the policy's errors) says the
same words.
"""

from __future__ import annotations

from functools import singledispatch

from bot.adapters.i18n import N_, format_duration, gettext
from bot.adapters.slack import mrkdwn
from bot.adapters.slack.sentences import fill
from bot.domain.commands import Malformed
from bot.domain.durations import MAX_DURATION
from bot.domain.input_problems import (
    AuditNeedsATarget,
    BadDuration,
    ChangesNothing,
    DoctorTakesACluster,
    DurationFault,
    ExtensionHowLong,
    ForWithoutDuration,
    InputProblem,
    NeedsOneRequestId,
    NoReason,
    NoSuchHelpTopic,
    NotACostTarget,
    NotAGpuCount,
    NotAGpuNumber,
    NotAMonth,
    NotANamespaceName,
    NotAnObjectName,
    NotAResourceName,
    NotAWhyTarget,
    NoTerm,
    NotSubmitted,
    PermanentAfterFor,
    SameSourceAndTarget,
    ShiftSyntax,
    TakesNoArguments,
    TwoTerms,
    UnknownCommand,
    WhyNeedsAPod,
)
from bot.services.text import Code, Notice, Words, plain

# How each command is written: the command and its keywords as typed, the names of its parts translated.
USAGE = {
    "request": N_("request <namespace> <+N|-N|N> [resource] for <duration>|permanent <reason>"),
    "shift": N_("shift <N> from <namespace> to <namespace> [resource] for <duration>|permanent <reason>"),
    "status": N_("status [namespace]"),
    "list": "list",  # no part to name: nothing to translate
    "cancel": N_("cancel <request id>"),
    "release": N_("release <request id>"),
    "extend": N_("extend <request id> <duration> [reason]"),
    "retry": N_("retry <request id>"),
    "audit": N_("audit <namespace|request id>"),
    "cost": N_("cost [team|namespace] [YYYY-MM]"),
    "doctor": N_("doctor [cluster]"),
    "why": N_("why <namespace>[/<pod|job|deployment|workload>]"),
    "help": N_("help [command]"),
}
# A typed duration longer than this is shortened where it is quoted (a pasted paragraph stays one line).
_QUOTED = 30


def usage(command: str) -> str:
    """How ``command`` is written, in the current language (``request <namespace> ...``)."""
    return command if USAGE[command] == command else gettext(USAGE[command])


def usage_line(command: str) -> Notice:
    """``/gpu-quota <usage>`` as a code span."""
    return Notice((Code(f"/gpu-quota {usage(command)}"),))


def render(problem: InputProblem) -> str:
    """The problem as mrkdwn (a clause for a part's problem, a sentence for a command's)."""
    return mrkdwn.render(notice(problem))


def plain_text(problem: InputProblem) -> str:
    """The problem as plain text: a form field's error, ``str(ParseError)``."""
    return plain(notice(problem))


def sentence(problem: InputProblem) -> Notice:
    """The problem as a sentence of its own (a part's clause is made one)."""
    if not isinstance(problem, _CLAUSES):
        return notice(problem)
    # Translators: a problem with what was typed (a clause) said as a sentence of its own.
    said = fill("{problem}.", problem=notice(problem))
    first, *rest = said.parts
    if isinstance(first, Words) and first.text:
        first = Words(first.text[:1].upper() + first.text[1:])  # no case in Chinese: unchanged there
    return Notice((first, *rest))


def malformed_text(command: Malformed) -> str:
    """The answer to a command that could not be understood: why, then how each command named is written."""
    lines = [mrkdwn.render(sentence(command.problem))]
    lines += [mrkdwn.render(usage_line(name)) for name in command.usage]
    return "\n".join(lines)


@singledispatch
def notice(problem: object) -> Notice:
    """The typed parts of a problem (registered per problem class below)."""
    raise TypeError(f"no words for {type(problem).__name__}")


def _longest() -> str:
    return format_duration(MAX_DURATION)


# --- durations ------------------------------------------------------------------------------------

_DURATIONS = {
    DurationFault.NOT_A_DURATION: N_("`{typed}` is not a duration: use 90m, 12h, 3d or 2w, at most {longest}"),
    DurationFault.ZERO: N_("`{typed}` is zero: use 90m, 12h, 3d or 2w, at most {longest}"),
    DurationFault.TOO_LONG: N_(
        "`{typed}` is too long: use 90m, 12h, 3d or 2w, at most {longest} (for longer, ask for a permanent change)"
    ),
}


@notice.register
def _(problem: BadDuration) -> Notice:
    typed = problem.typed if len(problem.typed) <= _QUOTED else problem.typed[:_QUOTED] + "…"
    return fill(_DURATIONS[problem.fault], typed=typed, longest=_longest())


@notice.register
def _(problem: ForWithoutDuration) -> Notice:
    return fill("`for` needs a duration: use 90m, 12h, 3d or 2w, at most {longest}", longest=_longest())


@notice.register
def _(problem: NoTerm) -> Notice:
    return fill(
        "say how long: `for {example}` (use 90m, 12h, 3d or 2w, at most {longest}) or `permanent`",
        example=problem.example,
        longest=_longest(),
    )


@notice.register
def _(problem: PermanentAfterFor) -> Notice:
    return fill("a permanent change is written `permanent`, without `for`")


@notice.register
def _(problem: TwoTerms) -> Notice:
    if problem.duration is None:
        return fill("both a duration and `permanent`: say one")
    if problem.permanent_first:
        return fill("both `permanent` and `for {duration}`: say one", duration=problem.duration)
    return fill("both `for {duration}` and `permanent`: say one", duration=problem.duration)


@notice.register
def _(problem: ExtensionHowLong) -> Notice:
    return fill("how long to extend, e.g. 2d")


# --- the parts of a request or a shift ------------------------------------------------------------


@notice.register
def _(problem: NotAGpuCount) -> Notice:
    return fill("'{typed}' is not a GPU count: use +4 for 4 more, -2 for 2 fewer, or 8 for a total of 8", typed=problem.typed)


@notice.register
def _(problem: ChangesNothing) -> Notice:
    return fill("'{typed}' changes nothing", typed=problem.typed)


@notice.register
def _(problem: NotAGpuNumber) -> Notice:
    return fill("'{typed}' is not a number of GPUs to move (a whole number above 0, like 3)", typed=problem.typed)


@notice.register
def _(problem: NotANamespaceName) -> Notice:
    return fill("'{typed}' is not a namespace name", typed=problem.typed)


@notice.register
def _(problem: NotAResourceName) -> Notice:
    return fill("'{typed}' is not a resource name (like mig-3g.40gb or nvidia.com/gpu)", typed=problem.typed)


@notice.register
def _(problem: ShiftSyntax) -> Notice:
    return fill("write it as `shift 3 from <namespace> to <namespace> [resource] for 30d|permanent <reason>`")


@notice.register
def _(problem: SameSourceAndTarget) -> Notice:
    return fill(
        "the source and the target are both `{namespace}`: a shift moves GPUs between two namespaces",
        namespace=problem.namespace,
    )


@notice.register
def _(problem: NoReason) -> Notice:
    return fill("give a reason after the duration")


# The problems worded as clauses (the rest are sentences).
_CLAUSES = (
    BadDuration,
    ForWithoutDuration,
    NoTerm,
    PermanentAfterFor,
    TwoTerms,
    ExtensionHowLong,
    NotAGpuCount,
    ChangesNothing,
    NotAGpuNumber,
    NotANamespaceName,
    NotAResourceName,
    ShiftSyntax,
    SameSourceAndTarget,
    NoReason,
)


# --- whole commands ---------------------------------------------------------------------------------


@notice.register
def _(problem: NotSubmitted) -> Notice:
    return fill("Not submitted: {problem}.", problem=notice(problem.problem))


@notice.register
def _(problem: UnknownCommand) -> Notice:
    if problem.suggestion:
        return fill("I don't know `{typed}`. Did you mean `{suggestion}`?", typed=problem.typed, suggestion=problem.suggestion)
    return fill("I don't know `{typed}`.", typed=problem.typed)


@notice.register
def _(problem: NoSuchHelpTopic) -> Notice:
    if problem.suggestion:
        return fill(
            "There is no command `{typed}`. Did you mean `{suggestion}`? The commands are:",
            typed=problem.typed,
            suggestion=problem.suggestion,
        )
    return fill("There is no command `{typed}`. The commands are:", typed=problem.typed)


@notice.register
def _(problem: NeedsOneRequestId) -> Notice:
    if problem.only_one:
        return fill("`{command}` needs one request id, like GQ-17.", command=problem.command)
    return fill("`{command}` needs a request id, like GQ-17.", command=problem.command)


@notice.register
def _(problem: TakesNoArguments) -> Notice:
    return fill("`{command}` takes no arguments.", command=problem.command)


@notice.register
def _(problem: AuditNeedsATarget) -> Notice:
    return fill("`audit` needs a namespace or a request id.")


@notice.register
def _(problem: DoctorTakesACluster) -> Notice:
    return fill("`doctor` takes at most a cluster name.")


@notice.register
def _(problem: WhyNeedsAPod) -> Notice:
    return fill("`why` needs a pod (or a Job, Deployment or Workload): `why <namespace>/<name>`.")


@notice.register
def _(problem: NotAWhyTarget) -> Notice:
    return fill("'{typed}' is not a namespace or `<namespace>/<name>`.", typed=problem.typed)


@notice.register
def _(problem: NotAnObjectName) -> Notice:
    return fill("'{typed}' is not a pod, Job, Deployment or Workload name.", typed=problem.typed)


@notice.register
def _(problem: NotAMonth) -> Notice:
    return fill("`{typed}` is not a month: use YYYY-MM, once.", typed=problem.typed)


@notice.register
def _(problem: NotACostTarget) -> Notice:
    return fill("`{typed}` is neither a team, a namespace nor a month (YYYY-MM).", typed=problem.typed)
