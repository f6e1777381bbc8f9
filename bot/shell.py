"""``gpu-quota-bot shell``: the real bot, driven from a terminal instead of Slack.

Typed ``/gpu-quota ...`` lines and button presses become signed Slack requests into the real Bolt
app; what the bot sends to Slack is caught by the Slack stand-in and printed as text. The clusters
are the sandbox's Kubernetes API stand-ins, eu-1 (home) and us-2, which ``down``/``up`` take away and
bring back (or one real cluster with ``--kubeconfig``).

The shell's own lines (its prompts, help, usage errors, summaries and the demo's story) are catalog
sentences in the shell's language (``--lang``); what it prints of Slack messages is the bot's, in the
language the bot chose for each. The bot's work (a Slack request, a scheduled job) runs in a context of
its own, as in a deployment, so the shell's language never decides the bot's words.
"""

from __future__ import annotations

import contextvars
import json
import re
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any, TextIO, TypeVar

from bot.adapters import i18n
from bot.adapters.i18n import N_, format_duration, format_number, format_share, gettext, speaking, tr, tr_n
from bot.adapters.slack.doctor_words import plain_lines
from bot.domain.clusters import cluster_of, namespace_key, split_key
from bot.domain.commands import format_request_id
from bot.domain.durations import MAX_DURATION, parse_duration
from bot.domain.languages import Language
from bot.domain.quota import stamp_annotations
from bot.domain.resources import limits_key
from bot.domain.stack_health import Exporter
from bot.errors import GpuQuotaError
from bot.sandbox.history import A100, History, PodRun
from bot.sandbox.kube_api import KubeApiStandIn, parse_taint, quota_refusal_event, scheduling_failure_event
from bot.sandbox.render import TextRenderer, display_width, pad
from bot.sandbox.scrape import SandboxScrape
from bot.sandbox.session import Sandbox
from bot.sandbox.world import BATCH_QUEUE, CHANNELS, HOME_CLUSTER, PEOPLE, PLATFORM_GROUP, QUOTA, US_CLUSTER, US_SERVING, Person
from bot.services.doctor import Refusal

T = TypeVar("T")

# The shell's own commands: how each is typed (never translated) and what it does (a catalog sentence; what
# follows a line break is shown indented under the first line).
SHELL_COMMANDS: tuple[tuple[str, str], ...] = (
    ("/gpu-quota ...", N_("run the slash command as the current user")),
    (
        "as <name> [<locale>]",
        N_(
            "act as someone else (e.g. `as lee` to approve as a manager)\n"
            "with a Slack locale (`as lee zh-CN`), Slack gives that person's language as it from now on"
        ),
    ),
    ("click <n>", N_("press button [n]")),
    ("time +<duration>", N_("move the clock forward (e.g. time +3d) and run the scheduled reconcile")),
    ("tick", N_("run the scheduled reconcile now")),
    ("quota", N_("what the clusters' ResourceQuotas say now (also: kubectl get quota [-n <ns>])")),
    (
        "down <cluster> [<for>]",
        N_(
            "a cluster refuses connections until `up` (or for a while, e.g. down us-2 1h):\n"
            "its approved changes wait, the other cluster's go on"
        ),
    ),
    ("up <cluster>", N_("it answers again; the next reconcile (`time +1m`) applies what waited for it")),
    ("digest [YYYY-MM-DD]", N_("post the daily cost digest (sandbox metrics), default yesterday")),
    ("jobs", N_("run the budget warnings, idle-GPU nudges and blocked-workload jobs now")),
    ("idle <ns>", N_("the namespace's GPUs go quiet for the idle window (then `jobs` nudges)")),
    (
        "block <ns> [gpus]",
        N_(
            "a workload in the namespace asks for more GPUs than the quota leaves\n"
            "(then `jobs` posts the blocked-workload alert with [Request more])"
        ),
    ),
    (
        "wait <ns> [gpus]",
        N_(
            "a GPU pod within the quota finds no free GPU on the nodes (FailedScheduling);\n"
            "then `jobs` says it waits for the scheduler, not the quota"
        ),
    ),
    ("break device-plugin <node>", N_("the NVIDIA device plugin stops on that node: it advertises no GPUs")),
    (
        "taint <node> <key=value:Effect>",
        N_("taint a node, as kubectl taint does (e.g. taint gpu-node-b nvidia.com/gpu=true:NoSchedule)"),
    ),
    ("untaint <node> <key>", N_("remove that node's taints of that key")),
    ("doctor [cluster]", N_("the GPU stack's checklist, as `gpu-quota-bot doctor` prints it (admins: /gpu-quota doctor)")),
    ("scrape off|on dcgm|kube-state-metrics", N_("Prometheus stops (or starts again) scraping that exporter")),
    ("finish <ns> <gpus>", N_("jobs finish: the namespace's pods now use <gpus> GPUs (then `tick` follows a reclaim)")),
    ("kubectl edit <ns> <n>", N_("change a quota by hand, as an admin with kubectl would (sandbox only)")),
    ("users", N_("who is who")),
    ("quit", N_("leave")),
)
USAGE_WIDTH = 24


@dataclass(frozen=True)
class Said:
    """A line of the demo whose words are a catalog sentence (``words``, its placeholders filled from ``values``):
    a narrator's note, or, when ``typed`` is given, what a person types with the words in place of ``{reason}``."""

    words: str
    typed: str | None = None
    values: tuple[tuple[str, str], ...] = ()

    def line(self) -> str:
        said = tr(self.words, **dict(self.values))
        return f"# {said}" if self.typed is None else self.typed.replace("{reason}", said)


# The demo's story: typed lines, the narrator's notes, and requests whose reason is a catalog sentence too: the
# story is told, and its people type, in the shell's language.
DEMO: tuple[str | Said, ...] = (
    Said(N_("Every morning each team gets its GPU cost digest (here from a synthetic month of metrics), with a chart.")),
    "digest",
    Said(N_("A researcher asks for 4 more GPUs for three days.")),
    Said(N_("fine-tune on the new corpus"), "/gpu-quota request ai-frontier-research +4 for 3d {reason}"),
    Said(N_("Her manager approves in the request's thread; the bot patches the quota.")),
    "as lee",
    "click 1",
    "quota",
    "as alice",
    "/gpu-quota status",
    Said(N_("Three days pass: a reminder an hour before, then the quota goes back by itself.")),
    "time +71h",
    "time +1h",
    "quota",
    Said(N_("Strategy shift: slow frontier research down and move 3 GPUs to the validated business models, as one request.")),
    "as pat",
    Said(
        N_("GPUs move to proven business models"),
        "/gpu-quota shift 3 from ai-frontier-research to biz-model-serving permanent {reason}",
    ),
    Said(N_("One card, in both teams' channels: one approver of each team approves.")),
    "as maya",
    "click 5",
    "as lee",
    "click 7",
    Said(N_("Frontier was lowered first, then business raised by what frontier gave up; running frontier pods keep running.")),
    "quota",
    "/gpu-quota status ai-frontier-research",
    Said(N_("Two days later frontier's sweep has finished; one notebook keeps its GPU. The bot says so in the shift's thread.")),
    "finish ai-frontier-research 1",
    "time +2d",
    "/gpu-quota audit GQ-2",
    Said(N_("Inference runs on MIG slices: one more 1g.10gb slice for four hours is within auto-approval.")),
    "as alice",
    Said(N_("load test of the new ranker"), "/gpu-quota request ai-frontier-inference +1 for 4h {reason}"),
    Said(
        N_("Batch training is queued by Kueue: its GPUs are the ClusterQueue {queue}'s nominalQuota."),
        values=(("queue", BATCH_QUEUE),),
    ),
    Said(N_("nightly sweep"), "/gpu-quota request ai-frontier-batch +2 for 1d {reason}"),
    "as lee",
    "click 9",
    "quota",
    Said(N_("A day later both grants have ended: the slice and the queue's GPUs are back where they were.")),
    "time +1d",
    "quota",
    Said(
        N_("Business also serves models in a second cluster, {cluster}: there its namespace is {namespace}."),
        values=(("cluster", US_CLUSTER), ("namespace", namespace_key(US_CLUSTER, US_SERVING))),
    ),
    "as bob",
    Said(N_("canary of the new ranker"), "/gpu-quota request us-2/biz-model-serving-us +2 for 1d {reason}"),
    "as maya",
    "click 11",
    Said(
        N_("{engineer} asks for more there; then {cluster} stops answering, before {approver} approves."),
        values=(("engineer", "Bob"), ("cluster", US_CLUSTER), ("approver", "Maya")),
    ),
    "as bob",
    Said(N_("US traffic peak"), "/gpu-quota request us-2/biz-model-serving-us +2 for 2d {reason}"),
    "down us-2",
    "as maya",
    "click 13",
    Said(
        N_("The approval is kept and waits for {cluster}. A change in the home cluster, {home}, is applied at once."),
        values=(("cluster", US_CLUSTER), ("home", HOME_CLUSTER)),
    ),
    "as bob",
    Said(N_("EU traffic peak"), "/gpu-quota request biz-model-serving +2 for 2d {reason}"),
    "as maya",
    "click 15",
    Said(
        N_("{cluster} answers again: the next reconcile applies the change that waited, once."), values=(("cluster", US_CLUSTER),)
    ),
    "up us-2",
    "time +1m",
    "quota",
    Said(
        N_("{researcher}'s fine-tune job has been pending for a while. The bot says why, with the fix (it only reads)."),
        values=(("researcher", "Alice"),),
    ),
    "as alice",
    "/gpu-quota why ai-frontier-research/llm-finetune",
    Said(N_("A GPU node's device plugin dies; the admins' checklist names it (`gpu-quota-bot doctor` exits 1).")),
    "break device-plugin gpu-node-b",
    "doctor eu-1",
)


def demo_script(language: Language = Language.EN) -> list[str]:
    """The demo's lines as the shell reads them, its notes and typed reasons in ``language``."""
    with speaking(language):
        return [step if isinstance(step, str) else step.line() for step in DEMO]


def shell_help() -> str:
    """The shell's own commands, in the current language."""
    lines = []
    for usage, meaning in SHELL_COMMANDS:
        first, *more = gettext(meaning).split("\n")
        lines.append(f"  {usage:<{USAGE_WIDTH}}{first}" if len(usage) < USAGE_WIDTH else f"  {usage}  {first}")
        lines.extend(" " * (USAGE_WIDTH + 2) + line for line in more)
    lines.append(
        tr(
            "<ns> is a namespace as the bot names it: {home_namespace} (in {home}, the home cluster), {other_namespace}.",
            home_namespace="ai-frontier-research",
            home=HOME_CLUSTER,
            other_namespace=namespace_key(US_CLUSTER, US_SERVING),
        )
    )
    lines.append(tr("Up/Down recall earlier lines; the line can be edited (readline)."))
    return "\n".join(lines)


@dataclass
class _Button:
    action_id: str
    value: str
    label: str
    channel: str | None
    ts: str | None


class Shell:
    def __init__(
        self,
        sandbox: Sandbox,
        *,
        out: TextIO = sys.stdout,
        read: Callable[[str], str] = input,
        echo: bool = False,
        history: History | None = None,
        language: Language = Language.EN,
    ) -> None:
        """``history``: the synthetic GPU use behind the sandbox's metrics, which ``idle`` changes; ``language``: the
        shell's own (its lines, the demo's story), not the bot's (the policy and each person's Slack locale say that)."""
        self._sandbox = sandbox
        self._history = history
        self._out = out
        self._read = read
        self._echo = echo
        self._language = language
        people = {p.name: p.user_id for p in PEOPLE}
        self._people = people
        self._user = people["alice"]
        self._names = {user_id: name for name, user_id in people.items()}
        self._render = TextRenderer(users=self._names, channels=dict(CHANNELS))
        self._buttons: dict[int, _Button] = {}
        self._titles: dict[str, str] = {}
        self._seen = 0
        self._script: Iterator[str] | None = None
        # Charts the bot uploads during the session, removed when it ends.
        self._charts: tempfile.TemporaryDirectory[str] | None = None
        self._blocked = 0
        # Clusters taken away with `down`, by their part of a key: when `time` brings each back (None: at `up`).
        self._down: dict[str, datetime | None] = {}

    # --- loop ------------------------------------------------------------------------------

    def run(self, script: Iterable[str] | None = None) -> None:
        """Read lines (from ``script`` when given, else the terminal) until quit or end of input."""
        with speaking(self._language):
            self._banner()
        self._script = iter(script) if script is not None else None
        if self._script is None and not self._echo and self._read is input:
            import readline  # noqa: F401  # line editing and history for input(): the Up arrow recalls

        try:
            while True:
                try:
                    line = self._next_line(f"\n{self._names[self._user]}> ")
                except (EOFError, KeyboardInterrupt):
                    self._say("")
                    return
                if not self.execute(line.strip()):
                    return
        finally:
            self.close()

    def close(self) -> None:
        """Remove the session's chart files."""
        if self._charts is not None:
            self._charts.cleanup()
            self._charts = None

    def _next_line(self, prompt: str) -> str:
        """The next line of the script or of the terminal; echoed when it does not come from a person typing."""
        if self._script is not None:
            line = next(self._script, None)
            if line is None:
                raise EOFError
        elif self._echo:
            line = self._read("")
        else:
            return self._read(prompt)
        self._say(f"{prompt}{line}")
        return line

    def execute(self, line: str) -> bool:
        """Do what one line says (False: the session ends); the shell's words in its language."""
        with speaking(self._language):
            return self._execute(line)

    def _execute(self, line: str) -> bool:
        if not line or line.startswith("#"):
            return True
        if line in ("quit", "exit"):
            return False
        words = line.split()
        command = {
            "as": self._switch_user,
            "click": self._click,
            "press": self._click,
            "time": self._advance,
            "tick": lambda _: self._tick(),
            "quota": lambda _: self._quota(),
            "down": self._take_down,
            "up": self._bring_up,
            "digest": self._digest,
            "jobs": lambda _: self._metric_jobs(),
            "kubectl": self._kubectl,
            "idle": self._idle,
            "block": self._block,
            "wait": self._wait,
            "finish": self._finish,
            "break": self._break,
            "taint": self._taint,
            "untaint": self._untaint,
            "doctor": self._doctor,
            "scrape": self._scrape,
            "users": lambda _: self._users(),
            "help": lambda _: self._say(shell_help()),
        }.get(words[0])
        if line.startswith("/gpu-quota"):
            self._slash(line[len("/gpu-quota") :].strip())
        elif command is not None:
            command(words[1:])
        else:
            self._say(tr("Not a shell command; type `help`, or start with /gpu-quota."))
        return True

    def _as_bot(self, work: Callable[[], T]) -> T:
        """``work`` (a Slack request, a scheduled job) as a deployment runs it: in a context of its own, starting in
        the bot's default language, so the bot words each message itself (for its channel's team or its reader)
        and nothing of the shell's language goes into it or comes back out of it."""

        def in_the_default_language() -> T:
            i18n.use(Language.EN)
            return work()

        return contextvars.copy_context().run(in_the_default_language)

    def _send(self, body: str) -> Any:
        return self._as_bot(lambda: self._sandbox.send(body))

    # --- commands --------------------------------------------------------------------------

    def _slash(self, text: str) -> None:
        side = self._side()
        response = self._send(side.slash_command(user_id=self._user, text=text))
        self._show_ack(response.body)
        self._show_new()

    def _click(self, args: list[str]) -> None:
        if not args or not args[0].isdigit() or int(args[0]) not in self._buttons:
            typed = args[0] if args else ""
            self._say(tr("No button [{number}]; the numbers are shown next to each button.", number=typed))
            return
        button = self._buttons[int(args[0])]
        body = self._side().block_action(
            user_id=self._user,
            action_id=button.action_id,
            value=button.value,
            channel_id=button.channel,
            message_ts=button.ts,
            label=button.label,
        )
        self._send(body)
        self._show_new()

    def _switch_user(self, args: list[str]) -> None:
        """``as <name> [<locale>]``: act as that person; a locale is what Slack gives as their language from now on."""
        name = (args[0] if args else "").lstrip("@")
        locale = args[1] if len(args) == 2 else None
        if name not in self._people:
            self._say(tr("Who? {names}", names=_listed(self._people)))
            return
        if len(args) > 2 or (locale is not None and not _SLACK_LOCALE.fullmatch(locale)):
            self._say(
                tr(
                    "Usage: {usage}, e.g. {example}; a locale as Slack writes it, such as en-US or zh-CN.",
                    usage="as <name> [<locale>]",
                    example="as lee zh-CN",
                )
            )
            return
        self._user = self._people[name]
        role = self._role(next(p for p in PEOPLE if p.name == name))
        if locale is None:
            self._say(tr("You are now @{name} ({role}).", name=name, role=role))
            return
        self._sandbox.set_locale(self._user, locale)
        self._say(tr("You are now @{name} ({role}); Slack gives your language as {locale}.", name=name, role=role, locale=locale))

    def _role(self, person: Person) -> str:
        team = self._sandbox.policy.teams.get(person.team)
        return tr(
            person.role,
            namespace=person.namespace,
            team=team.display_name if team is not None else person.team,
            group=PLATFORM_GROUP,
        )

    def _duration(self, typed: str) -> timedelta | None:
        """The duration ``typed`` says, or None after saying what a duration is."""
        try:
            return parse_duration(typed.lstrip("+"))
        except ValueError:
            self._say(
                tr(
                    "`{typed}` is not a duration: use 90m, 12h, 3d or 2w, at most {longest}.",
                    typed=typed,
                    longest=format_duration(MAX_DURATION),
                )
            )
            return None

    def _advance(self, args: list[str]) -> None:
        typed = args[0] if args else ""
        delta = self._duration(typed)
        if delta is None:
            return
        moment = self._sandbox.clock.advance(delta)  # type: ignore[attr-defined]
        self._say(
            tr(
                "⏩ The clock moved {duration}: it is now {moment} UTC. Running the reconcile job…",
                duration=typed,
                moment=moment.strftime("%Y-%m-%d %H:%M"),
            )
        )
        self._tick()

    def _tick(self) -> None:
        services = self._services()
        for part, back in list(self._down.items()):
            if back is not None and back <= self._sandbox.clock.now():
                self._bring_up([self._cluster_name(part)])
        report = self._as_bot(services.reconciler.tick)
        reclaimed = self._as_bot(services.reclaims.check).finished
        self._show_new()
        done = [
            tr(template, ids=_listed([format_request_id(i) for i in ids]))
            for template, ids in (
                (N_("expired: {ids}"), report.expired),
                (N_("reminded: {ids}"), report.reminded),
                (N_("grants ended: {ids}"), report.grants_ended),
                (N_("applies resumed: {ids}"), report.resumed),
            )
            if ids
        ]
        if reclaimed:
            done.append(tr("reclaimed: {namespaces}", namespaces=_listed(reclaimed)))
        summary = tr("reconcile: {done}", done=_listed(done, clauses=True)) if done else tr("reconcile: nothing due")
        self._say("  " + summary)

    def _digest(self, args: list[str]) -> None:
        digest = self._services().digest
        assert digest is not None, "the sandbox always has metrics"
        try:
            day = date.fromisoformat(args[0]) if args else (self._sandbox.clock.now() - timedelta(days=1)).date()
        except ValueError:
            self._say(tr("Usage: {usage}", usage="digest [YYYY-MM-DD]"))
            return
        try:
            posted = self._as_bot(lambda: digest.publish(day))
        except GpuQuotaError as error:  # a day not over yet, or before the sandbox's metrics: worded here, in the shell's
            self._say(f"  {error}")
            return
        self._show_new()
        if posted:
            self._say("  " + tr("digest for {day}: posted ({digests})", day=day.isoformat(), digests=_listed(posted)))
        else:
            self._say("  " + tr("digest for {day}: already posted for that day", day=day.isoformat()))

    def _metric_jobs(self) -> None:
        services = self._services()
        assert services.budget is not None and services.idle is not None
        warnings = self._as_bot(services.budget.check)
        nudged = self._as_bot(services.idle.check)
        blocked = self._as_bot(services.blocked.check)
        self._show_new()
        counts = {"warnings": format_number(len(warnings)), "blocked": format_number(len(blocked))}
        if nudged:
            summary = tr(
                "budget warnings: {warnings}; idle nudges: {namespaces}; blocked workloads: {blocked}",
                namespaces=_listed(nudged),
                **counts,
            )
        else:
            summary = tr("budget warnings: {warnings}; idle nudges: none; blocked workloads: {blocked}", **counts)
        self._say("  " + summary)

    def _services(self):  # type: ignore[no-untyped-def]
        assert self._sandbox.services is not None
        return self._sandbox.services

    def _quota(self, only: str | None = None) -> None:
        """Every stand-in's quotas, then the policy's ClusterQueues, by namespace key; ``only``: one namespace."""
        if not self._sandbox.kubes:
            self._say(tr("`quota` reads the sandbox clusters only; use kubectl against your cluster."))
            return
        wanted = self._key(only) if only is not None else None
        self._say("".join(pad(gettext(label), width) for label, width in QUOTA_COLUMNS).rstrip())
        for part, kube in self._sandbox.kubes.items():
            for (namespace, name), quota in sorted(kube.quotas.items()):
                if wanted in (None, namespace_key(part, namespace)):
                    self._quota_rows(namespace_key(part, namespace), name, quota)
        for key, resource, ref in self._sandbox.policy.cluster_queues():
            holder = self._sandbox.kubes.get(cluster_of(key))
            queue = holder.cluster_queue(ref.name) if holder is not None and wanted in (None, key) else None
            if holder is None or queue is None:
                continue
            nominal = holder.nominal_quota(ref.name, ref.flavor, resource)
            annotations = queue["metadata"].get("annotations") or {}
            by = annotations.get(stamp_annotations(resource, qualifier=ref.flavor)[1]) or tr("(by hand)")
            where, what = f"clusterqueue/{ref.name}", f"{resource} ({ref.flavor})"
            self._say(f"{key:<28}{where:<30}{what:<30}{'-/' + str(nominal):<11}{'-':<8}{by}")

    def _quota_rows(self, key: str, name: str, quota: dict[str, Any]) -> None:
        """A row per extended resource the ResourceQuota ``name`` of namespace ``key`` governs."""
        hard, used = quota["spec"]["hard"], quota["status"]["used"]
        annotations = quota["metadata"].get("annotations") or {}
        for quantity in sorted(k for k in hard if k.startswith("requests.") and "/" in k):
            resource = quantity.removeprefix("requests.")
            by = annotations.get(stamp_annotations(resource)[1]) or tr("(by hand)")
            self._say(
                f"{key:<28}{name:<30}{resource:<30}{used.get(quantity, '0') + '/' + hard[quantity]:<11}"
                f"{hard.get(limits_key(resource), '-'):<8}{by}"
            )

    def _take_down(self, args: list[str]) -> None:
        """The cluster's API server refuses connections, until ``up`` or for a while of the sandbox's time."""
        part = self._cluster_part(args[0]) if args else None
        if part is None or len(args) > 2:
            self._say(
                tr(
                    "Usage (sandbox only): {usage}, e.g. {example}; the clusters: {clusters}",
                    usage="down <cluster> [duration]",
                    example="down us-2 1h",
                    clusters=self._clusters(),
                )
            )
            return
        delta = self._duration(args[1]) if len(args) == 2 else None
        if len(args) == 2 and delta is None:
            return
        name = self._cluster_name(part)
        if part not in self._down:
            self._sandbox.kubes[part].refuse_connections()
        self._down[part] = self._sandbox.clock.now() + delta if delta is not None else None
        if delta is not None:
            said = tr(
                "🔌 Cluster {cluster} refuses connections for {duration} (of `time`): approvals of its changes are kept "
                "and wait for it; the other cluster's go on.",
                cluster=name,
                duration=args[1],
            )
        else:
            said = tr(
                "🔌 Cluster {cluster} refuses connections until `up {cluster}`: approvals of its changes are kept and "
                "wait for it; the other cluster's go on.",
                cluster=name,
            )
        self._say(said)

    def _bring_up(self, args: list[str]) -> None:
        part = self._cluster_part(args[0]) if args else None
        if part is None:
            self._say(
                tr("Usage (sandbox only): {usage}; the clusters: {clusters}", usage="up <cluster>", clusters=self._clusters())
            )
            return
        name = self._cluster_name(part)
        if part not in self._down:
            self._say(tr("Cluster {cluster} is up.", cluster=name))
            return
        del self._down[part]
        self._sandbox.kubes[part].accept_connections()
        self._say(
            tr("🔌 Cluster {cluster} answers again. The next reconcile (`time +1m`) applies what waits for it.", cluster=name)
        )

    def _cluster_part(self, name: str) -> str | None:
        """The key part of the sandbox cluster ``name`` (the home cluster's: HOME), or None for no such cluster."""
        return next((part for part in self._sandbox.kubes if self._cluster_name(part) == name), None)

    def _cluster_name(self, part: str) -> str:
        return self._sandbox.policy.cluster_label(part) or "home"

    def _clusters(self) -> str:
        return _listed([self._cluster_name(part) for part in self._sandbox.kubes]) or tr("none (a real cluster)")

    def _key(self, typed: str) -> str:
        """The namespace key ``typed`` names: as the policy resolves it, else as typed (``eu-1/x``: ``x``)."""
        resolved = self._sandbox.policy.namespace_key(typed)
        if isinstance(resolved, str):
            return resolved
        cluster, name = split_key(typed)
        return name if cluster and cluster == self._sandbox.policy.home_cluster() else typed

    def _place(self, typed: str) -> tuple[KubeApiStandIn, str] | None:
        """The stand-in that holds namespace ``typed`` and its bare name there; None: no sandbox cluster has it."""
        part, name = split_key(self._key(typed))
        kube = self._sandbox.kubes.get(part)
        return (kube, name) if kube is not None and name in kube.namespaces else None

    def _kubectl(self, args: list[str]) -> None:
        if args[:1] == ["get"] and len(args) >= 2 and args[1] in QUOTA_NAMES:
            self._kubectl_get_quota(args[2:])
            return
        if len(args) != 3 or args[0] != "edit" or not args[2].isdigit() or not self._sandbox.kubes:
            self._say(
                tr(
                    "Usage (sandbox only): {usage}",
                    usage="kubectl get quota [-n <namespace> | -A], kubectl edit <namespace> <gpus>",
                )
            )
            return
        place = self._place(args[1])
        if place is None or (place[1], QUOTA) not in place[0].quotas:
            self._say(tr("No quota {quota} in {namespace}.", quota=QUOTA, namespace=args[1]))
            return
        kube, namespace = place
        for resource in ("requests.nvidia.com/gpu", "limits.nvidia.com/gpu"):
            kube.edit_quota(namespace, QUOTA, resource, args[2])
        self._say(
            tr(
                "resourcequota/{quota} edited in {namespace}: GPUs set to {gpus} by hand.",
                quota=QUOTA,
                namespace=args[1],
                gpus=args[2],
            )
        )

    def _kubectl_get_quota(self, flags: list[str]) -> None:
        if flags in ([], ["-A"], ["--all-namespaces"]):
            self._quota()
        elif len(flags) == 2 and flags[0] in ("-n", "--namespace"):
            self._quota(flags[1])
        else:
            self._say(tr("Usage: {usage}", usage="kubectl get quota [-n <namespace> | -A]"))

    def _idle(self, args: list[str]) -> None:
        """The namespace's running pods go quiet, and a one-GPU notebook sits idle, for the whole idle window."""
        namespace = args[0] if args else ""
        if self._history is None or namespace not in self._sandbox.policy.managed_namespaces():
            self._say(
                tr(
                    "Usage (sandbox metrics only): {usage}, e.g. {example}",
                    usage="idle <namespace>",
                    example="idle ai-frontier-research",
                )
            )
            return
        window = self._sandbox.policy.metrics.idle_window
        since = self._sandbox.clock.now() - window - timedelta(minutes=30)
        pods: list[PodRun] = []
        for pod in self._history.pods:
            if pod.namespace != namespace or pod.end <= since:
                pods.append(pod)
            elif pod.start >= since:
                pods.append(replace(pod, utilisation=0.01, wobble=0.0))
            else:  # busy until `since`, quiet after
                pods += [replace(pod, end=since), replace(pod, start=since, utilisation=0.01, wobble=0.0)]
        node = next((p.node for p in self._history.pods if p.namespace == namespace), "gpu-node-a")
        pods.append(PodRun(namespace, f"notebook-{len(pods)}", 1, node, A100, since, self._history.end, 0.01))
        self._history.pods = pods
        self._say(
            tr(
                "The GPUs of {namespace} have stayed under {threshold} utilisation for the last {hours} h. "
                "Type `jobs` to run the idle-GPU check.",
                namespace=namespace,
                threshold=format_share(self._sandbox.policy.metrics.idle_threshold_percent / 100),
                hours=format_number(window.total_seconds() / 3600),
            )
        )

    def _block(self, args: list[str]) -> None:
        """A FailedCreate event, as the ReplicaSet controller records it when the GPU quota refuses a pod."""
        place = self._place(args[0]) if args else None
        if place is None or (place[1], QUOTA) not in place[0].quotas or (len(args) > 1 and not args[1].isdigit()):
            self._say(
                tr(
                    "Usage (sandbox only): {usage}, e.g. {example}",
                    usage="block <namespace> [gpus]",
                    example="block ai-frontier-research 2",
                )
            )
            return
        (kube, bare), namespace = place, args[0]
        quota = kube.quotas[(bare, QUOTA)]
        hard = int(quota["spec"]["hard"].get("requests.nvidia.com/gpu", "0"))
        used = int(quota["status"]["used"].get("requests.nvidia.com/gpu", "0"))
        wanted = int(args[1]) if len(args) > 1 else max(1, hard - used + 1)
        counts = {"namespace": namespace, "used": format_number(used), "hard": format_number(hard)}
        if used + wanted <= hard:
            self._say(
                tr_n(
                    "{count} GPU fits in {namespace} ({used} of {hard} in use): the quota lets that pod start.",
                    "{count} GPUs fit in {namespace} ({used} of {hard} in use): the quota lets that pod start.",
                    wanted,
                    **counts,
                )
            )
            return
        self._blocked += 1
        name = f"train-{self._blocked}-6d5f8b"
        kube.add_event(quota_refusal_event(bare, "ReplicaSet", name, requested=wanted, used=used, limited=hard))
        self._say(
            tr_n(
                "ReplicaSet {name} in {namespace} asks for {count} GPU with {used} of {hard} in use: its pods are refused "
                "(`exceeded quota`). Type `jobs` to run the blocked-workload check.",
                "ReplicaSet {name} in {namespace} asks for {count} GPUs with {used} of {hard} in use: its pods are refused "
                "(`exceeded quota`). Type `jobs` to run the blocked-workload check.",
                wanted,
                name=name,
                **counts,
            )
        )

    def _wait(self, args: list[str]) -> None:
        """A pending GPU pod and the scheduler's FailedScheduling event: no node has the GPUs, nothing to preempt."""
        place = self._place(args[0]) if args else None
        if place is None or (len(args) > 1 and not args[1].isdigit()):
            self._say(
                tr(
                    "Usage (sandbox only): {usage}, e.g. {example}",
                    usage="wait <namespace> [gpus]",
                    example="wait ai-frontier-research 2",
                )
            )
            return
        (kube, bare), namespace, gpus = place, args[0], int(args[1]) if len(args) > 1 else 1
        self._blocked += 1
        name = f"sweep-{self._blocked}-0"
        priority_class = "low-priority-experiment"
        kube.add_pod(bare, name, gpus=gpus, priority_class=priority_class, phase="Pending")
        kube.add_event(scheduling_failure_event(bare, name, nodes=len(kube.nodes)))
        self._say(
            tr_n(
                "Pod {name} in {namespace} ({priority_class}) asks for {count} GPU; the scheduler finds none free "
                "(`Insufficient nvidia.com/gpu`). Type `jobs` to run the blocked-workload check.",
                "Pod {name} in {namespace} ({priority_class}) asks for {count} GPUs; the scheduler finds none free "
                "(`Insufficient nvidia.com/gpu`). Type `jobs` to run the blocked-workload check.",
                gpus,
                name=name,
                namespace=namespace,
                priority_class=priority_class,
            )
        )

    def _finish(self, args: list[str]) -> None:
        """Running pods end: the quota controller's ``status.used`` drops (nothing is evicted by the bot)."""
        place = self._place(args[0]) if len(args) == 2 else None
        if place is None or (place[1], QUOTA) not in place[0].quotas or not args[1].isdigit():
            self._say(
                tr(
                    "Usage (sandbox only): {usage}, e.g. {example}",
                    usage="finish <namespace> <gpus still in use>",
                    example="finish ai-frontier-research 1",
                )
            )
            return
        kube, bare = place
        finished = kube.finish_pods(bare, int(args[1]))
        if finished:
            said = tr_n(
                "Jobs finished in {namespace}: {pods} finished; {count} GPU in use now. Type `tick` to run the scheduled jobs.",
                "Jobs finished in {namespace}: {pods} finished; {count} GPUs in use now. Type `tick` to run the scheduled jobs.",
                kube.used[bare],
                namespace=args[0],
                pods=_listed(finished),
            )
        else:
            said = tr_n(
                "Jobs finished in {namespace}: {count} GPU in use now. Type `tick` to run the scheduled jobs.",
                "Jobs finished in {namespace}: {count} GPUs in use now. Type `tick` to run the scheduled jobs.",
                kube.used[bare],
                namespace=args[0],
            )
        self._say(said)

    def _node(self, name: str) -> KubeApiStandIn | None:
        """The sandbox cluster that has node ``name``."""
        return next((kube for kube in self._sandbox.kubes.values() if name in kube.nodes), None)

    def _nodes(self) -> str:
        names = sorted(name for kube in self._sandbox.kubes.values() for name in kube.nodes)
        return _listed(names) or tr("none (a real cluster)")

    def _break(self, args: list[str]) -> None:
        """The device plugin is gone from a node: the kubelet advertises 0 GPUs there, its DaemonSet has a pod fewer ready."""
        kube = self._node(args[1]) if len(args) == 2 and args[0] == "device-plugin" else None
        if kube is None:
            self._say(
                tr("Usage (sandbox only): {usage}; the nodes: {nodes}", usage="break device-plugin <node>", nodes=self._nodes())
            )
            return
        kube.break_device_plugin(args[1])
        self._say(
            tr(
                "The NVIDIA device plugin stopped on {node}: the node advertises no GPUs, and its DaemonSet has a pod "
                "fewer ready. Pods asking for GPUs are not placed there.",
                node=args[1],
            )
        )

    def _taint(self, args: list[str]) -> None:
        kube = self._node(args[0]) if len(args) == 2 else None
        usage = "taint <node> <key=value:Effect>"
        if kube is None:
            self._say(tr("Usage (sandbox only): {usage}; the nodes: {nodes}", usage=usage, nodes=self._nodes()))
            return
        try:
            parse_taint(args[1])
        except ValueError:
            self._say(
                tr(
                    "Usage (sandbox only): {usage}: `{typed}` is not a taint (its effect is one of {effects}); "
                    "the nodes: {nodes}",
                    usage=usage,
                    typed=args[1],
                    effects=_listed(TAINT_EFFECTS),
                    nodes=self._nodes(),
                )
            )
            return
        kube.taint_node(args[0], args[1])
        self._say(
            tr(
                "node/{node} tainted {taint}: pods without a matching toleration are not placed there.",
                node=args[0],
                taint=args[1],
            )
        )

    def _untaint(self, args: list[str]) -> None:
        kube = self._node(args[0]) if len(args) == 2 else None
        if kube is None:
            self._say(tr("Usage (sandbox only): {usage}; the nodes: {nodes}", usage="untaint <node> <key>", nodes=self._nodes()))
            return
        kube.untaint_node(args[0], args[1])
        self._say(tr("node/{node} untainted: no {key} taint left.", node=args[0], key=args[1]))

    def _doctor(self, args: list[str]) -> None:
        doctor = self._sandbox.services.doctor if self._sandbox.services is not None else None
        if doctor is None or len(args) > 1:
            self._say(tr("Usage: {usage}", usage="doctor [cluster]"))
            return
        answer = doctor.examine_named(args[0] if args else None)
        if isinstance(answer, Refusal):
            self._say(tr("No cluster {cluster}; the clusters: {clusters}", cluster=args[0], clusters=self._clusters()))
            return
        policy = self._sandbox.policy
        for line in plain_lines(answer, {part: policy.cluster_label(part) for part in policy.cluster_names()}):
            self._say(f"  {line}")

    def _scrape(self, args: list[str]) -> None:
        """Prometheus stops or starts scraping an exporter (the sandbox's scrape side)."""
        scrape = self._sandbox.scrape
        exporters = {exporter.value: exporter for exporter in Exporter}
        if not isinstance(scrape, SandboxScrape) or len(args) != 2 or args[0] not in ("off", "on") or args[1] not in exporters:
            self._say(tr("Usage (sandbox only): {usage}", usage="scrape off|on dcgm|kube-state-metrics"))
            return
        exporter = exporters[args[1]]
        if args[0] == "off":
            scrape.off.add(exporter)
            self._say(
                tr(
                    "Prometheus no longer reaches {exporter}: its targets are down and its series gone (try `doctor`).",
                    exporter=args[1],
                )
            )
        else:
            scrape.off.discard(exporter)
            self._say(tr("Prometheus scrapes {exporter} again.", exporter=args[1]))

    def _users(self) -> None:
        for person in PEOPLE:
            self._say(f"  @{person.name:<6} {self._role(person)}")

    # --- output ----------------------------------------------------------------------------

    def _show_ack(self, body: str) -> None:
        if not body:
            return
        try:
            payload = json.loads(body)
        except ValueError:
            payload = {"text": body}  # Bolt acknowledges with bare text when there is nothing else
        if payload.get("text"):
            self._section(tr("only visible to you"), self._render.mrkdwn(payload["text"]).splitlines())
        if payload.get("response_action") == "errors":
            self._section(tr("the form says"), [f"{k}: {v}" for k, v in payload.get("errors", {}).items()])

    def _show_new(self) -> None:
        for record in self._sandbox.slack.since(self._seen):
            self._seen = record.seq
            number = lambda button, r=record: self._number(button, r.channel, r.ts)  # noqa: E731
            where = self._render.where(record.channel)
            if record.kind == "message":
                lines = self._render.blocks(record.blocks, number) if record.blocks else [self._render.mrkdwn(record.text)]
                if record.thread_ts:
                    thread = self._titles.get(record.thread_ts) or tr("a message")
                    title = tr("{where} › thread of {title}", where=where, title=thread)
                else:
                    title = where
                    self._titles[record.ts or ""] = _title_of(record.blocks) or ""
                self._section(title, lines)
            elif record.kind == "update":
                updated = self._titles.get(record.ts or "") or tr("message")
                self._section(
                    tr("{where} › {title} updated", where=where, title=updated), self._render.blocks(record.blocks, number)
                )
            elif record.kind == "response":
                lines = self._render.blocks(record.blocks, number) if record.blocks else [self._render.mrkdwn(record.text)]
                self._section(tr("only visible to you"), lines)
            elif record.kind in ("view_open", "view_update"):
                assert record.view is not None
                self._section(tr("form"), self._render.form(record.view))
                if record.kind == "view_open" and record.view.get("submit"):
                    self._fill(record.view)
            elif record.kind == "file":
                if self._charts is None:
                    self._charts = tempfile.TemporaryDirectory(prefix="gpu-quota-charts-")
                path = Path(self._charts.name) / (record.filename or "chart.png")
                path.write_bytes(record.content)
                saved = tr("{file}: saved to {path}", file=record.filename, path=path)
                self._section(tr("{where} › file", where=where), [saved])

    def _fill(self, view: dict[str, Any]) -> None:
        """Ask for each field of a form (Enter keeps the prefilled value), then submit it.

        A form without fields (the approval form) is submitted only on an explicit yes, as a person
        would press its button; anything else closes it and records nothing.
        """
        if not any(block.get("type") == "input" for block in view["blocks"]):
            try:
                answer = self._next_line("    " + tr("{button}? [y/N]: ", button=view["submit"]["text"]))
            except EOFError:
                answer = ""
            if answer.strip().lower() not in YES:
                self._say("    " + tr("(form closed: nothing recorded)"))
                return
        values: dict[str, str] = {}
        for block in view["blocks"]:
            if block.get("type") != "input":
                continue
            element = block["element"]
            initial = element.get("initial_value") or (element.get("initial_option") or {}).get("value", "")
            choices = [o["value"] for o in element.get("options", [])]
            hint = f" ({', '.join(choices)})" if choices else (f" ({block['hint']['text']})" if block.get("hint") else "")
            try:
                answer = self._next_line(f"    {block['label']['text']}{hint} [{initial}]: ")
            except EOFError:
                answer = ""
            values[block["block_id"]] = answer.strip() or initial
        response = self._send(self._side().view_submission(user_id=self._user, view=view, values=values))
        self._show_ack(response.body)
        self._show_new()

    def _number(self, button: dict[str, Any], channel: str | None, ts: str | None) -> int:
        for number, known in self._buttons.items():
            if (known.action_id, known.value, known.ts) == (button["action_id"], button.get("value", ""), ts):
                return number
        number = len(self._buttons) + 1
        self._buttons[number] = _Button(button["action_id"], button.get("value", ""), button["text"]["text"], channel, ts)
        return number

    def _section(self, title: str, lines: list[str]) -> None:
        self._say(f"── {title} " + "─" * max(3, 70 - display_width(title)))
        for line in lines:
            self._say("  " + line)

    def _banner(self) -> None:
        real, several = not self._sandbox.kubes, len(self._sandbox.kubes) > 1
        teams = {"frontier": "frontier", "business": "business"}  # the policy's ids of the sandbox's two teams
        if real:
            first = tr("gpu-quota-bot SANDBOX — no Slack workspace, no real cluster: a REAL cluster")
            second = tr("Slack is a local stand-in; changes go to the cluster of --kubeconfig!")
        elif several:
            first = tr("gpu-quota-bot SANDBOX — no Slack workspace, no real cluster: sandbox clusters")
            second = tr(
                "Slack is a local stand-in; {home} {frontier} 4 GPUs, {business} 16; {other} {business} 8",
                home=HOME_CLUSTER,
                other=US_CLUSTER,
                **teams,
            )
        else:
            first = tr("gpu-quota-bot SANDBOX — no Slack workspace, no real cluster: sandbox cluster")
            second = tr("Slack is a local stand-in; {frontier} 4 GPUs, {business} 16, 24 allocatable", **teams)
        width = max(BANNER_WIDTH, display_width(first), display_width(second))
        for line in (
            "╭" + "─" * (width + 1) + "╮",
            "│ " + pad(first, width) + "│",
            "│ " + pad(second, width) + "│",
            "╰" + "─" * (width + 1) + "╯",
            tr("People: {people}", people=_listed([f"@{p.name}" for p in PEOPLE])),
            tr("Type /gpu-quota help, or `help` for the shell's own commands. You are @{user}.", user=self._names[self._user]),
        ):
            self._say(line)

    def _side(self):  # type: ignore[no-untyped-def]
        assert self._sandbox.side is not None
        return self._sandbox.side

    def _say(self, text: str) -> None:
        print(text, file=self._out, flush=True)


QUOTA_NAMES = ("quota", "quotas", "resourcequota", "resourcequotas")
# The quota table's columns (``kubectl get quota`` style): each heading and its width in terminal columns.
QUOTA_COLUMNS = (
    (N_("NAMESPACE"), 28),
    (N_("NAME"), 30),
    (N_("RESOURCE"), 30),
    (N_("USED/HARD"), 11),
    (N_("LIMITS"), 8),
    (N_("APPLIED BY"), 0),
)
BANNER_WIDTH = 77  # the banner's text columns (the box is two more each side)
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
YES = ("y", "yes", "是")
# A locale as Slack writes one (en-US, zh-CN, ja-JP; a bare language too).
_SLACK_LOCALE = re.compile(r"[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{2,8})*")
_REQUEST_ID = re.compile(r"\bGQ-\d+\b")
# How each language lists names (", " / "、") and clauses ("; " / "；").
_SEPARATORS = {Language.EN: (", ", "; "), Language.ZH_CN: ("、", "；")}


def _listed(items: Iterable[str], *, clauses: bool = False) -> str:
    """``items`` listed as the current language writes a list: of names, or of clauses."""
    names, sentences = _SEPARATORS[i18n.current()]
    return (sentences if clauses else names).join(items)


def _title_of(blocks: list[dict[str, Any]]) -> str | None:
    """What the shell calls a message's thread: the request id its header names (in any language), else the header."""
    for block in blocks:
        if block.get("type") == "header":
            text: str = block["text"]["text"]
            ids = _REQUEST_ID.findall(text)
            return ids[0] if len(ids) == 1 else text
    return None
