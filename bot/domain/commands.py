"""Parse the text of ``/gpu-quota ...`` into typed commands.

Parsing never raises: bad input becomes a ``Malformed`` command naming its problem, and a
``request`` with missing or invalid parts becomes a draft that lists its problems (the handler then
opens the request form prefilled with what was valid). A bad duration is the exception: it is
answered at once, because the form must never turn a typo into a permanent change. Control
characters are removed from the text before anything else reads it. Problems are typed
(``bot.domain.input_problems``); the Slack edge words them, and the usage of each command
(``bot.adapters.slack.input_words``), in the reader's language.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from datetime import date, timedelta

from bot.domain.clusters import is_label, is_namespace_key
from bot.domain.durations import parse_duration
from bot.domain.input_problems import (
    AuditNeedsATarget,
    ChangesNothing,
    DoctorTakesACluster,
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
    ParseError,
    PermanentAfterFor,
    SameSourceAndTarget,
    ShiftSyntax,
    TakesNoArguments,
    TwoTerms,
    UnknownCommand,
    WhyNeedsAPod,
)

_AMOUNT_PATTERN = re.compile(r"([+-]?)(\d{1,6})")
_REQUEST_ID_PATTERN = re.compile(r"(?:gq-|#)?(\d{1,10})", re.IGNORECASE | re.ASCII)
REQUEST_ID_PREFIX = "GQ-"
# Request ids are the database's integer primary keys: anything above is forged or mistyped, and
# must not reach a query (10**23 overflows the driver).
MAX_REQUEST_ID = 2**31 - 1
# C0 control characters (and DEL) but newline and tab: a NUL is refused by PostgreSQL, the rest
# are invisible in Slack and would hide what a reason really says.
_CONTROL_CHARACTERS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # C0 but tab and newline, DEL, C1
PERMANENT_WORD = "permanent"
_TERM_WORDS = ("for", PERMANENT_WORD)
# What a person may type for a resource: a full name (nvidia.com/mig-3g.40gb), a short one (mig-3g.40gb, 3g).
_RESOURCE_WORD = re.compile(r"[A-Za-z0-9][-A-Za-z0-9._/+]{0,252}")


def clean_text(text: str) -> str:
    """User text without control characters (newline and tab stay)."""
    return _CONTROL_CHARACTERS.sub("", text)


def format_request_id(request_id: int) -> str:
    return f"{REQUEST_ID_PREFIX}{request_id}"


def parse_request_id(text: str) -> int | None:
    """``GQ-17``, ``gq-17``, ``#17`` or ``17`` -> 17; anything else (0, too large) -> None."""
    match = _REQUEST_ID_PATTERN.fullmatch(text.strip())
    if match is None:
        return None
    request_id = int(match.group(1))
    return request_id if 0 < request_id <= MAX_REQUEST_ID else None


@dataclass(frozen=True)
class GpuAmount:
    """What the person asked for: ``+4`` / ``-2`` (relative) or ``8`` (a new total)."""

    value: int
    relative: bool

    @classmethod
    def parse(cls, text: str) -> GpuAmount:
        match = _AMOUNT_PATTERN.fullmatch(text.strip())
        if not match:
            raise ParseError(NotAGpuCount(text))
        sign, digits = match.groups()
        value = int(digits) * (-1 if sign == "-" else 1)
        if sign and value == 0:
            raise ParseError(ChangesNothing(text))
        return cls(value=value, relative=bool(sign))

    def delta_from(self, current: int) -> int:
        """The change this amount makes to a quota that is ``current`` now."""
        return self.value if self.relative else self.value - current

    def __str__(self) -> str:
        return f"{self.value:+d}" if self.relative else str(self.value)


@dataclass(frozen=True)
class RequestDraft:
    """A quota request as typed; complete when it names a namespace, an amount and a reason."""

    namespace: str | None = None
    amount: GpuAmount | None = None
    duration: timedelta | None = None  # with ``permanent`` False: not chosen yet
    reason: str = ""
    problems: tuple[InputProblem, ...] = ()
    permanent: bool = False  # only ever by an explicit choice: the word or the form's radio button
    resource: str | None = None  # the resource word as typed (mig-3g.40gb); None: not named

    @property
    def term_chosen(self) -> bool:
        """Exactly one of a duration and ``permanent`` was given."""
        return (self.duration is not None) != self.permanent

    @property
    def complete(self) -> bool:
        return bool(self.namespace and self.amount and self.reason.strip() and self.term_chosen and not self.problems)


@dataclass(frozen=True)
class RequestCommand:
    draft: RequestDraft


@dataclass(frozen=True)
class ShiftDraft:
    """``shift <N> from <source> to <target> [resource] for <duration>|permanent <reason>``: GPUs moved between two
    namespaces."""

    gpus: int
    source: str
    target: str
    duration: timedelta | None  # None: permanent
    reason: str
    resource: str | None = None  # the resource word as typed; None: not named

    @property
    def permanent(self) -> bool:
        return self.duration is None


@dataclass(frozen=True)
class ShiftCommand:
    draft: ShiftDraft | None = None  # None: open the shift form


@dataclass(frozen=True)
class StatusCommand:
    namespace: str | None = None


@dataclass(frozen=True)
class ListCommand:
    pass


@dataclass(frozen=True)
class CancelCommand:
    request_id: int


@dataclass(frozen=True)
class ReleaseCommand:
    request_id: int


@dataclass(frozen=True)
class ExtendCommand:
    request_id: int
    duration: timedelta | None
    reason: str = ""
    problems: tuple[InputProblem, ...] = ()


@dataclass(frozen=True)
class RetryCommand:
    request_id: int


@dataclass(frozen=True)
class AuditCommand:
    namespace: str | None = None
    request_id: int | None = None


@dataclass(frozen=True)
class CostCommand:
    """``cost [team|namespace] [YYYY-MM]``: the ledger's figures; no target means the person's teams."""

    target: str | None = None
    month: date | None = None  # the first of the month; None: this month


@dataclass(frozen=True)
class WhyCommand:
    """``why <namespace>/<pod>`` (or a Job, Deployment or Kueue Workload name), ``why <namespace> <name>``, or
    ``why <namespace>`` (the form: its pending GPU pods to pick). ``target`` is the words' first part as typed:
    ``ns/pod``, ``us-2/ns/pod``, ``ns`` or ``us-2/ns`` (which of the last two is meant the policy's clusters tell:
    ``bot.domain.diagnosis``); ``name`` the second word, when given."""

    target: str
    name: str | None = None


@dataclass(frozen=True)
class DoctorCommand:
    """``doctor [cluster]``: the GPU stack's checklist (admins)."""

    cluster: str | None = None


@dataclass(frozen=True)
class HelpCommand:
    topic: str | None = None


@dataclass(frozen=True)
class Malformed:
    """The text could not be understood: ``problem`` says why, ``usage`` names the commands (``COMMANDS``)
    whose usage the answer shows."""

    problem: InputProblem
    usage: tuple[str, ...] = field(default_factory=tuple)


Command = (
    RequestCommand
    | ShiftCommand
    | StatusCommand
    | ListCommand
    | CancelCommand
    | ReleaseCommand
    | ExtendCommand
    | RetryCommand
    | AuditCommand
    | CostCommand
    | DoctorCommand
    | WhyCommand
    | HelpCommand
    | Malformed
)

# The commands, in the order help lists them (their usage is worded at the edge).
COMMANDS = (
    "request",
    "shift",
    "status",
    "list",
    "cancel",
    "release",
    "extend",
    "retry",
    "audit",
    "cost",
    "doctor",
    "why",
    "help",
)


def parse_command(text: str) -> Command:
    """Turn the text after ``/gpu-quota`` into a command."""
    words = clean_text(text).split()
    if not words:
        return HelpCommand()
    verb, args = words[0].lower(), words[1:]
    parser = _PARSERS.get(verb)
    if parser is None:
        return Malformed(UnknownCommand(words[0], _close_to(verb)), usage=COMMANDS)
    return parser(args)


def _close_to(word: str) -> str | None:
    """The command a mistyped verb is close to (``stauts``: ``status``); None when nothing is."""
    close = difflib.get_close_matches(word, COMMANDS, n=1, cutoff=0.6)
    return close[0] if close else None


@dataclass(frozen=True)
class ThreadDecision:
    """``approve`` / ``批准`` or ``deny <reason>`` / ``拒绝 <理由>`` typed as a reply in a request's thread."""

    approve: bool
    reason: str = ""


_LEADING_MENTION = re.compile(r"\s*<@([A-Z0-9]+)(?:\|[^>]*)?>")
# What may follow a verb before the reason, or after an approval that stands alone: a hurried person's
# punctuation, half-width or full-width (Chinese is typed with the latter: "拒绝：预算不够", "批准！").
_PUNCTUATION = ".!:,;。！：，；、"
# The Chinese verbs (a keyword, as typed; ``了`` is the particle of a thing done: 批准了, as "approved").
# Chinese is written without spaces, so the reason may follow the verb at once: 拒绝预算不够.
_CHINESE_DECISION = re.compile(r"(?P<verb>批准|拒绝)了?(?P<rest>.*)", re.DOTALL)
# A denial's "reason" beginning with one of these makes the reply a question or a clause about denying
# (拒绝吗？, 拒绝的话…), not a denial.
_NOT_A_REASON = ("吗", "么", "呢", "的")


def parse_thread_decision(text: str, *, bot_user_id: str) -> ThreadDecision | None:
    """A decision typed in a request's thread, or None for an ordinary reply (left alone).

    ``approve`` (``批准``) must stand alone (an "approve of the idea, but..." reply is chat, not a
    decision); ``deny`` (``拒绝``) may be followed by the reason. A leading @-mention of the bot is
    ignored; a reply addressed to someone else ("@pat approve") asks them, so it is not the writer's
    decision.
    """
    while mention := _LEADING_MENTION.match(text):
        if mention.group(1) != bot_user_id:
            return None
        text = text[mention.end() :]
    text = text.strip()
    chinese = _CHINESE_DECISION.fullmatch(text)
    if chinese:
        return _chinese_decision(chinese.group("verb"), chinese.group("rest"))
    words = text.split(maxsplit=1)
    if not words:
        return None
    verb = words[0].lower().rstrip(_PUNCTUATION)  # "Deny: no budget" is a denial, as a hurried person types it
    rest = words[1].strip() if len(words) > 1 else ""
    if verb in ("approve", "approved") and not rest.strip(_PUNCTUATION + " "):
        return ThreadDecision(approve=True)
    if verb in ("deny", "denied"):
        return ThreadDecision(approve=False, reason=rest)
    return None


def _chinese_decision(verb: str, rest: str) -> ThreadDecision | None:
    reason = rest.lstrip(_PUNCTUATION + " \t\n\u3000").strip()
    if verb == "批准":
        return None if reason else ThreadDecision(approve=True)
    if reason.startswith(_NOT_A_REASON) and not rest[:1].isspace() and rest[:1] not in _PUNCTUATION:
        return None
    return ThreadDecision(approve=False, reason=reason)


def is_resource_word(text: str) -> bool:
    """True for what could name a resource: a full name (nvidia.com/mig-3g.40gb) or a short one (mig-3g.40gb, 3g)."""
    return _RESOURCE_WORD.fullmatch(text) is not None


def _resource_word(rest: list[str]) -> str | None:
    """The resource word at the head of ``rest`` (taken off it): a word right before ``for`` or ``permanent``.

    Only there: before resources could be named, the word after the amount had to be ``for`` or
    ``permanent``, so any other word followed by one of them was never valid, and a command without
    either keeps reading as it did. Raises ParseError for a word no resource could be spelt as."""
    if len(rest) < 2 or rest[0].lower() in _TERM_WORDS or rest[1].lower() not in _TERM_WORDS:
        return None
    word = rest.pop(0)
    if not is_resource_word(word):
        raise ParseError(NotAResourceName(word))
    return word


def parse_request_words(words: list[str]) -> RequestDraft:
    """Parse ``<namespace> <gpus> [resource] for <duration>|permanent <reason>``, keeping what is valid.

    Raises ParseError (naming it) for a bad duration.
    """
    problems: list[InputProblem] = []
    namespace: str | None = None
    amount: GpuAmount | None = None
    duration: timedelta | None = None
    permanent = False
    rest = list(words)

    if rest and not _AMOUNT_PATTERN.fullmatch(rest[0]):
        candidate = rest.pop(0)
        if is_namespace_key(candidate):
            namespace = candidate
        else:
            problems.append(NotANamespaceName(candidate))
    if rest:
        try:
            amount = GpuAmount.parse(rest[0])
            rest.pop(0)
        except ParseError as error:
            problems.append(error.problem)
            rest.pop(0)
    resource = None
    try:
        resource = _resource_word(rest)
    except ParseError as error:
        problems.append(error.problem)
    if rest and rest[0].lower() == "for":
        rest.pop(0)
        if not rest:
            raise ParseError(ForWithoutDuration())
        typed = rest.pop(0)
        duration = _duration_after_for(typed)
        if rest and rest[0].lower() == PERMANENT_WORD:
            raise ParseError(TwoTerms(duration=typed))
    elif rest and rest[0].lower() == PERMANENT_WORD:
        rest.pop(0)
        permanent = True
        if len(rest) > 1 and rest[0].lower() == "for" and _is_duration(rest[1]):
            # A hurried "permanent for 3d" must not become a permanent change with "for 3d" as its reason.
            raise ParseError(TwoTerms(duration=rest[1], permanent_first=True))
    else:
        problems.append(NoTerm(example="3d"))
    return RequestDraft(
        namespace=namespace,
        amount=amount,
        duration=duration,
        permanent=permanent,
        reason=" ".join(rest),
        problems=tuple(problems),
        resource=resource,
    )


def _is_duration(word: str) -> bool:
    try:
        parse_duration(word)
    except ValueError:
        return False
    return True


def _duration_after_for(word: str) -> timedelta:
    if word.lower() == PERMANENT_WORD:
        raise ParseError(PermanentAfterFor())
    return parse_duration(word)


def _parse_request(args: list[str]) -> Command:
    try:
        return RequestCommand(parse_request_words(args))
    except ParseError as error:
        return Malformed(NotSubmitted(error.problem), usage=("request",))


def parse_shift_words(words: list[str]) -> ShiftDraft:
    """Parse ``<N> from <source> to <target> [resource] for <duration>|permanent <reason>``; ParseError names what
    is wrong."""
    if len(words) < 5 or words[1].lower() != "from" or words[3].lower() != "to":
        raise ParseError(ShiftSyntax())
    count, source, target, rest = words[0], words[2], words[4], words[5:]
    if not count.isascii() or not count.isdigit() or len(count) > 6 or int(count) == 0:
        raise ParseError(NotAGpuNumber(count))
    for name in (source, target):
        if not is_namespace_key(name):
            raise ParseError(NotANamespaceName(name))
    if source == target:
        raise ParseError(SameSourceAndTarget(source))
    resource = _resource_word(rest)
    duration: timedelta | None = None
    if rest and rest[0].lower() == "for" and len(rest) > 1:
        duration = _duration_after_for(rest[1])
        rest = rest[2:]
    elif rest and rest[0].lower() == PERMANENT_WORD:
        rest = rest[1:]
    else:
        raise ParseError(NoTerm(example="30d"))
    if rest and rest[0].lower() in _TERM_WORDS:
        raise ParseError(TwoTerms())
    if not " ".join(rest).strip():
        raise ParseError(NoReason())
    return ShiftDraft(gpus=int(count), source=source, target=target, duration=duration, reason=" ".join(rest), resource=resource)


def _parse_shift(args: list[str]) -> Command:
    if not args:
        return ShiftCommand()
    try:
        return ShiftCommand(parse_shift_words(args))
    except ParseError as error:
        return Malformed(NotSubmitted(error.problem), usage=("shift",))


def _parse_status(args: list[str]) -> Command:
    if not args:
        return StatusCommand()
    if len(args) == 1 and is_namespace_key(args[0]):
        return StatusCommand(namespace=args[0])
    return Malformed(NotANamespaceName(" ".join(args)), usage=("status",))


# What ``why`` takes: a namespace key and optionally an object's name after a slash (a DNS subdomain: pods may
# have dots), at most a cluster, a namespace and a name long.
_WHY_TARGET = re.compile(r"[a-z0-9][-a-z0-9./]{0,380}")
_OBJECT_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")


def _parse_why(args: list[str]) -> WhyCommand | Malformed:
    usage = ("why",)
    if not args or len(args) > 2:
        return Malformed(WhyNeedsAPod(), usage=usage)
    target, name = args[0], args[1] if len(args) == 2 else None
    parts = target.split("/")
    if _WHY_TARGET.fullmatch(target) is None or len(parts) > 3 or not all(parts) or (name is not None and len(parts) > 2):
        return Malformed(NotAWhyTarget(target), usage=usage)
    if name is not None and _OBJECT_NAME.fullmatch(name) is None or _OBJECT_NAME.fullmatch(parts[-1]) is None:
        return Malformed(NotAnObjectName(name or parts[-1]), usage=usage)
    return WhyCommand(target=target, name=name)


def _parse_doctor(args: list[str]) -> DoctorCommand | Malformed:
    if not args:
        return DoctorCommand()
    if len(args) == 1 and is_label(args[0]):
        return DoctorCommand(cluster=args[0])
    return Malformed(DoctorTakesACluster(), usage=("doctor",))


def _parse_list(args: list[str]) -> Command:
    return ListCommand() if not args else Malformed(TakesNoArguments("list"), usage=("list",))


def _request_id_command(verb: str, build: type[CancelCommand] | type[ReleaseCommand] | type[RetryCommand]):
    def parse(args: list[str]) -> Command:
        request_id = parse_request_id(args[0]) if len(args) == 1 else None
        if request_id is None:
            return Malformed(NeedsOneRequestId(verb), usage=(verb,))
        return build(request_id)

    return parse


def _parse_extend(args: list[str]) -> Command:
    request_id = parse_request_id(args[0]) if args else None
    if request_id is None:
        return Malformed(NeedsOneRequestId("extend", only_one=False), usage=("extend",))
    if len(args) < 2:
        return ExtendCommand(request_id, None, problems=(ExtensionHowLong(),))
    try:
        duration = parse_duration(args[1])
    except ParseError as error:
        return ExtendCommand(request_id, None, " ".join(args[2:]), problems=(error.problem,))
    return ExtendCommand(request_id, duration, " ".join(args[2:]))


def _parse_audit(args: list[str]) -> Command:
    if len(args) == 1:
        request_id = parse_request_id(args[0])
        if request_id is not None:
            return AuditCommand(request_id=request_id)
        if is_namespace_key(args[0]):
            return AuditCommand(namespace=args[0])
    return Malformed(AuditNeedsATarget(), usage=("audit",))


_MONTH_PATTERN = re.compile(r"(\d{4})-(\d{2})")


def _parse_cost(args: list[str]) -> Command:
    target = month = None
    for word in args:
        found = _MONTH_PATTERN.fullmatch(word)
        if found:
            if month is not None or not 1 <= int(found.group(2)) <= 12:
                return Malformed(NotAMonth(word), usage=("cost",))
            month = date(int(found.group(1)), int(found.group(2)), 1)
        elif target is None and is_namespace_key(word):
            target = word
        else:
            return Malformed(NotACostTarget(word), usage=("cost",))
    return CostCommand(target=target, month=month)


def _parse_help(args: list[str]) -> Command:
    if not args:
        return HelpCommand()
    topic = args[0].lower()
    if topic not in COMMANDS:
        return Malformed(NoSuchHelpTopic(args[0], _close_to(topic)), usage=COMMANDS)
    return HelpCommand(topic=topic)


_PARSERS = {
    "request": _parse_request,
    "shift": _parse_shift,
    "status": _parse_status,
    "list": _parse_list,
    "cancel": _request_id_command("cancel", CancelCommand),
    "release": _request_id_command("release", ReleaseCommand),
    "retry": _request_id_command("retry", RetryCommand),
    "extend": _parse_extend,
    "audit": _parse_audit,
    "cost": _parse_cost,
    "doctor": _parse_doctor,
    "why": _parse_why,
    "help": _parse_help,
}
