"""``gpu-quota-bot shell``: the real bot, driven from a terminal instead of Slack.

Typed ``/gpu-quota ...`` lines and button presses become signed Slack requests into the real Bolt
app; what the bot sends to Slack is caught by the Slack stand-in and printed as text. The clusters
are the sandbox's Kubernetes API stand-ins, eu-1 (home) and us-2, which ``down``/``up`` take away and
bring back (or one real cluster with ``--kubeconfig``).
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any, TextIO

from bot.adapters.slack.doctor_words import plain_lines
from bot.domain.clusters import cluster_of, namespace_key, split_key
from bot.domain.durations import parse_duration
from bot.domain.quota import stamp_annotations
from bot.domain.resources import limits_key
from bot.domain.stack_health import Exporter
from bot.errors import GpuQuotaError
from bot.sandbox.history import A100, History, PodRun
from bot.sandbox.kube_api import KubeApiStandIn, quota_refusal_event, scheduling_failure_event
from bot.sandbox.render import TextRenderer
from bot.sandbox.scrape import SandboxScrape
from bot.sandbox.session import Sandbox
from bot.sandbox.world import CHANNELS, PEOPLE, QUOTA
from bot.services.doctor import Refusal

BANNER = """\
╭──────────────────────────────────────────────────────────────────────────────╮
│ gpu-quota-bot SANDBOX — no Slack workspace, no real cluster: {cluster:<16}│
│ Slack is a local stand-in; {cluster_note:<50}│
╰──────────────────────────────────────────────────────────────────────────────╯
People: {people}
Type /gpu-quota help, or `help` for the shell's own commands. You are @{user}."""

SHELL_HELP = """\
  /gpu-quota ...          run the slash command as the current user
  as <name>               act as someone else (e.g. `as lee` to approve as a manager)
  click <n>               press button [n]
  time +<duration>        move the clock forward (e.g. time +3d) and run the scheduled reconcile
  tick                    run the scheduled reconcile now
  quota                   what the clusters' ResourceQuotas say now (also: kubectl get quota [-n <ns>])
  down <cluster> [<for>]  a cluster refuses connections until `up` (or for a while, e.g. down us-2 1h):
                          its approved changes wait, the other cluster's go on
  up <cluster>            it answers again; the next reconcile (`time +1m`) applies what waited for it
  digest [YYYY-MM-DD]     post the daily cost digest (sandbox metrics), default yesterday
  jobs                    run the budget warnings, idle-GPU nudges and blocked-workload jobs now
  idle <ns>               the namespace's GPUs go quiet for the idle window (then `jobs` nudges)
  block <ns> [gpus]       a workload in the namespace asks for more GPUs than the quota leaves
                          (then `jobs` posts the blocked-workload alert with [Request more])
  wait <ns> [gpus]        a GPU pod within the quota finds no free GPU on the nodes (FailedScheduling);
                          then `jobs` says it waits for the scheduler, not the quota
  break device-plugin <node>   the NVIDIA device plugin stops on that node: it advertises no GPUs
  taint <node> <key=value:Effect>  taint a node, as kubectl taint does (e.g. taint gpu-node-b nvidia.com/gpu=true:NoSchedule)
  untaint <node> <key>    remove that node's taints of that key
  doctor [cluster]        the GPU stack's checklist, as `gpu-quota-bot doctor` prints it (admins: /gpu-quota doctor)
  scrape off|on dcgm|kube-state-metrics   Prometheus stops (or starts again) scraping that exporter
  finish <ns> <gpus>      jobs finish: the namespace's pods now use <gpus> GPUs (then `tick` follows a reclaim)
  kubectl edit <ns> <n>   change a quota by hand, as an admin with kubectl would (sandbox only)
  users                   who is who
  quit                    leave
<ns> is a namespace as the bot names it: ai-frontier-research (in eu-1, the home cluster), us-2/biz-model-serving-us.
Up/Down recall earlier lines; the line can be edited (readline)."""

DEMO = [
    "# Every morning each team gets its GPU cost digest (here from a synthetic month of metrics), with a chart.",
    "digest",
    "# A researcher asks for 4 more GPUs for three days.",
    "/gpu-quota request ai-frontier-research +4 for 3d fine-tune on the new corpus",
    "# Her manager approves in the request's thread; the bot patches the quota.",
    "as lee",
    "click 1",
    "quota",
    "as alice",
    "/gpu-quota status",
    "# Three days pass: a reminder an hour before, then the quota goes back by itself.",
    "time +71h",
    "time +1h",
    "quota",
    "# Strategy shift: slow frontier research down and move 3 GPUs to the validated business models, as one request.",
    "as pat",
    "/gpu-quota shift 3 from ai-frontier-research to biz-model-serving permanent GPUs move to proven business models",
    "# One card, in both teams' channels: one approver of each team approves.",
    "as maya",
    "click 5",
    "as lee",
    "click 7",
    "# Frontier was lowered first, then business raised by what frontier gave up; running frontier pods keep running.",
    "quota",
    "/gpu-quota status ai-frontier-research",
    "# Two days later frontier's sweep has finished; one notebook keeps its GPU. The bot says so in the shift's thread.",
    "finish ai-frontier-research 1",
    "time +2d",
    "/gpu-quota audit GQ-2",
    "# Inference runs on MIG slices: one more 1g.10gb slice for four hours is within auto-approval.",
    "as alice",
    "/gpu-quota request ai-frontier-inference +1 for 4h load test of the new ranker",
    "# Batch training is queued by Kueue: its GPUs are the ClusterQueue frontier-batch's nominalQuota.",
    "/gpu-quota request ai-frontier-batch +2 for 1d nightly sweep",
    "as lee",
    "click 9",
    "quota",
    "# A day later both grants have ended: the slice and the queue's GPUs are back where they were.",
    "time +1d",
    "quota",
    "# Business also serves models in a second cluster, us-2: there its namespace is us-2/biz-model-serving-us.",
    "as bob",
    "/gpu-quota request us-2/biz-model-serving-us +2 for 1d canary of the new ranker",
    "as maya",
    "click 11",
    "# Bob asks for more there; then us-2 stops answering, before Maya approves.",
    "as bob",
    "/gpu-quota request us-2/biz-model-serving-us +2 for 2d US traffic peak",
    "down us-2",
    "as maya",
    "click 13",
    "# The approval is kept and waits for us-2. A change in the home cluster, eu-1, is applied at once.",
    "as bob",
    "/gpu-quota request biz-model-serving +2 for 2d EU traffic peak",
    "as maya",
    "click 15",
    "# us-2 answers again: the next reconcile applies the change that waited, once.",
    "up us-2",
    "time +1m",
    "quota",
    "# Alice's fine-tune job has been pending for a while. The bot says why, with the fix (it only reads).",
    "as alice",
    "/gpu-quota why ai-frontier-research/llm-finetune",
    "# A GPU node's device plugin dies; the admins' checklist names it (`gpu-quota-bot doctor` exits 1).",
    "break device-plugin gpu-node-b",
    "doctor eu-1",
]


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
    ) -> None:
        """``history``: the synthetic GPU use behind the sandbox's metrics, which ``idle`` changes."""
        self._sandbox = sandbox
        self._history = history
        self._out = out
        self._read = read
        self._echo = echo
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
            "help": lambda _: self._say(SHELL_HELP),
        }.get(words[0])
        if line.startswith("/gpu-quota"):
            self._slash(line[len("/gpu-quota") :].strip())
        elif command is not None:
            command(words[1:])
        else:
            self._say("Not a shell command; type `help`, or start with /gpu-quota.")
        return True

    # --- commands --------------------------------------------------------------------------

    def _slash(self, text: str) -> None:
        side = self._side()
        response = self._sandbox.send(side.slash_command(user_id=self._user, text=text))
        self._show_ack(response.body)
        self._show_new()

    def _click(self, args: list[str]) -> None:
        if not args or not args[0].isdigit() or int(args[0]) not in self._buttons:
            self._say(f"No button [{args[0] if args else ''}]; the numbers are shown next to each button.")
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
        self._sandbox.send(body)
        self._show_new()

    def _switch_user(self, args: list[str]) -> None:
        name = (args[0] if args else "").lstrip("@")
        if name not in self._people:
            self._say("Who? " + ", ".join(self._people))
            return
        self._user = self._people[name]
        self._say(f"You are now @{name} ({next(p.role for p in PEOPLE if p.name == name)}).")

    def _advance(self, args: list[str]) -> None:
        try:
            delta = parse_duration((args[0] if args else "").lstrip("+"))
        except ValueError as error:
            self._say(str(error))
            return
        moment = self._sandbox.clock.advance(delta)  # type: ignore[attr-defined]
        self._say(f"⏩ The clock moved {args[0]}: it is now {moment:%Y-%m-%d %H:%M} UTC. Running the reconcile job…")
        self._tick()

    def _tick(self) -> None:
        assert self._sandbox.services is not None
        for part, back in list(self._down.items()):
            if back is not None and back <= self._sandbox.clock.now():
                self._bring_up([self._cluster_name(part)])
        report = self._sandbox.services.reconciler.tick()
        reclaimed = self._sandbox.services.reclaims.check().finished
        self._show_new()
        done = [
            f"{name}: {', '.join(f'GQ-{i}' for i in ids)}"
            for name, ids in (
                ("expired", report.expired),
                ("reminded", report.reminded),
                ("grants ended", report.grants_ended),
                ("applies resumed", report.resumed),
            )
            if ids
        ]
        if reclaimed:
            done.append("reclaimed: " + ", ".join(reclaimed))
        self._say("  reconcile: " + ("; ".join(done) if done else "nothing due"))

    def _digest(self, args: list[str]) -> None:
        digest = self._services().digest
        assert digest is not None, "the sandbox always has metrics"
        try:
            day = date.fromisoformat(args[0]) if args else (self._sandbox.clock.now() - timedelta(days=1)).date()
        except ValueError:
            self._say("Usage: digest [YYYY-MM-DD]")
            return
        try:
            posted = digest.publish(day)
        except GpuQuotaError as error:  # a day not over yet, or before the sandbox's metrics
            self._say(f"  {error}")
            return
        self._show_new()
        self._say(f"  digest for {day}: " + (f"posted ({', '.join(posted)})" if posted else "already posted for that day"))

    def _metric_jobs(self) -> None:
        services = self._services()
        assert services.budget is not None and services.idle is not None
        warnings = services.budget.check()
        nudged = services.idle.check()
        blocked = services.blocked.check()
        self._show_new()
        self._say(
            f"  budget warnings: {len(warnings)}; idle nudges: {', '.join(nudged) or 'none'}; blocked workloads: {len(blocked)}"
        )

    def _services(self):  # type: ignore[no-untyped-def]
        assert self._sandbox.services is not None
        return self._sandbox.services

    def _quota(self, only: str | None = None) -> None:
        """Every stand-in's quotas, then the policy's ClusterQueues, by namespace key; ``only``: one namespace."""
        if not self._sandbox.kubes:
            self._say("`quota` reads the sandbox clusters only; use kubectl against your cluster.")
            return
        wanted = self._key(only) if only is not None else None
        self._say(f"{'NAMESPACE':<28}{'NAME':<30}{'RESOURCE':<30}{'USED/HARD':<11}{'LIMITS':<8}APPLIED BY")
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
            by = annotations.get(stamp_annotations(resource, qualifier=ref.flavor)[1], "(by hand)")
            where, what = f"clusterqueue/{ref.name}", f"{resource} ({ref.flavor})"
            self._say(f"{key:<28}{where:<30}{what:<30}{'-/' + str(nominal):<11}{'-':<8}{by}")

    def _quota_rows(self, key: str, name: str, quota: dict[str, Any]) -> None:
        """A row per extended resource the ResourceQuota ``name`` of namespace ``key`` governs."""
        hard, used = quota["spec"]["hard"], quota["status"]["used"]
        annotations = quota["metadata"].get("annotations") or {}
        for quantity in sorted(k for k in hard if k.startswith("requests.") and "/" in k):
            resource = quantity.removeprefix("requests.")
            by = annotations.get(stamp_annotations(resource)[1], "(by hand)")
            self._say(
                f"{key:<28}{name:<30}{resource:<30}{used.get(quantity, '0') + '/' + hard[quantity]:<11}"
                f"{hard.get(limits_key(resource), '-'):<8}{by}"
            )

    def _take_down(self, args: list[str]) -> None:
        """The cluster's API server refuses connections, until ``up`` or for a while of the sandbox's time."""
        part = self._cluster_part(args[0]) if args else None
        try:
            delta = parse_duration(args[1]) if part is not None and len(args) == 2 else None
        except ValueError as error:
            self._say(str(error))
            return
        if part is None or len(args) > 2:
            self._say(f"Usage (sandbox only): down <cluster> [duration], e.g. down us-2 1h; the clusters: {self._clusters()}")
            return
        name = self._cluster_name(part)
        if part not in self._down:
            self._sandbox.kubes[part].refuse_connections()
        self._down[part] = self._sandbox.clock.now() + delta if delta is not None else None
        until = f" for {args[1]} (of `time`)" if delta is not None else f" until `up {name}`"
        self._say(
            f"🔌 Cluster {name} refuses connections{until}: approvals of its changes are kept and wait for it; "
            "the other cluster's go on."
        )

    def _bring_up(self, args: list[str]) -> None:
        part = self._cluster_part(args[0]) if args else None
        if part is None:
            self._say(f"Usage (sandbox only): up <cluster>; the clusters: {self._clusters()}")
            return
        name = self._cluster_name(part)
        if part not in self._down:
            self._say(f"Cluster {name} is up.")
            return
        del self._down[part]
        self._sandbox.kubes[part].accept_connections()
        self._say(f"🔌 Cluster {name} answers again. The next reconcile (`time +1m`) applies what waits for it.")

    def _cluster_part(self, name: str) -> str | None:
        """The key part of the sandbox cluster ``name`` (the home cluster's: HOME), or None for no such cluster."""
        return next((part for part in self._sandbox.kubes if self._cluster_name(part) == name), None)

    def _cluster_name(self, part: str) -> str:
        return self._sandbox.policy.cluster_label(part) or "home"

    def _clusters(self) -> str:
        return ", ".join(self._cluster_name(part) for part in self._sandbox.kubes) or "none (a real cluster)"

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
            self._say("Usage (sandbox only): kubectl get quota [-n <namespace> | -A], kubectl edit <namespace> <gpus>")
            return
        place = self._place(args[1])
        if place is None or (place[1], QUOTA) not in place[0].quotas:
            self._say(f"No quota {QUOTA} in {args[1]}.")
            return
        kube, namespace = place
        for resource in ("requests.nvidia.com/gpu", "limits.nvidia.com/gpu"):
            kube.edit_quota(namespace, QUOTA, resource, args[2])
        self._say(f"resourcequota/{QUOTA} edited in {args[1]}: GPUs set to {args[2]} by hand.")

    def _kubectl_get_quota(self, flags: list[str]) -> None:
        if flags in ([], ["-A"], ["--all-namespaces"]):
            self._quota()
        elif len(flags) == 2 and flags[0] in ("-n", "--namespace"):
            self._quota(flags[1])
        else:
            self._say("Usage: kubectl get quota [-n <namespace> | -A]")

    def _idle(self, args: list[str]) -> None:
        """The namespace's running pods go quiet, and a one-GPU notebook sits idle, for the whole idle window."""
        namespace = args[0] if args else ""
        if self._history is None or namespace not in self._sandbox.policy.managed_namespaces():
            self._say("Usage (sandbox metrics only): idle <namespace>, e.g. idle ai-frontier-research")
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
        threshold = self._sandbox.policy.metrics.idle_threshold_percent
        self._say(
            f"The GPUs of {namespace} have stayed under {threshold:g}% utilisation for the last "
            f"{window.total_seconds() / 3600:g} h. Type `jobs` to run the idle-GPU check."
        )

    def _block(self, args: list[str]) -> None:
        """A FailedCreate event, as the ReplicaSet controller records it when the GPU quota refuses a pod."""
        place = self._place(args[0]) if args else None
        if place is None or (place[1], QUOTA) not in place[0].quotas or (len(args) > 1 and not args[1].isdigit()):
            self._say("Usage (sandbox only): block <namespace> [gpus], e.g. block ai-frontier-research 2")
            return
        (kube, bare), namespace = place, args[0]
        quota = kube.quotas[(bare, QUOTA)]
        hard = int(quota["spec"]["hard"].get("requests.nvidia.com/gpu", "0"))
        used = int(quota["status"]["used"].get("requests.nvidia.com/gpu", "0"))
        wanted = int(args[1]) if len(args) > 1 else max(1, hard - used + 1)
        if used + wanted <= hard:
            self._say(f"{wanted} GPU(s) fit in {namespace} ({used} of {hard} in use): the quota lets that pod start.")
            return
        self._blocked += 1
        name = f"train-{self._blocked}-6d5f8b"
        kube.add_event(quota_refusal_event(bare, "ReplicaSet", name, requested=wanted, used=used, limited=hard))
        self._say(
            f"ReplicaSet {name} in {namespace} asks for {wanted} GPU(s) with {used} of {hard} in use: its pods are refused "
            "(`exceeded quota`). Type `jobs` to run the blocked-workload check."
        )

    def _wait(self, args: list[str]) -> None:
        """A pending GPU pod and the scheduler's FailedScheduling event: no node has the GPUs, nothing to preempt."""
        place = self._place(args[0]) if args else None
        if place is None or (len(args) > 1 and not args[1].isdigit()):
            self._say("Usage (sandbox only): wait <namespace> [gpus], e.g. wait ai-frontier-research 2")
            return
        (kube, bare), namespace, gpus = place, args[0], int(args[1]) if len(args) > 1 else 1
        self._blocked += 1
        name = f"sweep-{self._blocked}-0"
        kube.add_pod(bare, name, gpus=gpus, priority_class="low-priority-experiment", phase="Pending")
        kube.add_event(scheduling_failure_event(bare, name, nodes=len(kube.nodes)))
        self._say(
            f"Pod {name} in {namespace} (low-priority-experiment) asks for {gpus} GPU(s); the scheduler finds none free "
            "(`Insufficient nvidia.com/gpu`). Type `jobs` to run the blocked-workload check."
        )

    def _finish(self, args: list[str]) -> None:
        """Running pods end: the quota controller's ``status.used`` drops (nothing is evicted by the bot)."""
        place = self._place(args[0]) if len(args) == 2 else None
        if place is None or (place[1], QUOTA) not in place[0].quotas or not args[1].isdigit():
            self._say("Usage (sandbox only): finish <namespace> <gpus still in use>, e.g. finish ai-frontier-research 1")
            return
        kube, bare = place
        finished = kube.finish_pods(bare, int(args[1]))
        ended = f"{', '.join(finished)} finished; " if finished else ""
        self._say(
            f"Jobs finished in {args[0]}: {ended}{kube.used[bare]} GPU(s) in use now. Type `tick` to run the scheduled jobs."
        )

    def _node(self, name: str) -> KubeApiStandIn | None:
        """The sandbox cluster that has node ``name``."""
        return next((kube for kube in self._sandbox.kubes.values() if name in kube.nodes), None)

    def _nodes(self) -> str:
        return ", ".join(sorted(name for kube in self._sandbox.kubes.values() for name in kube.nodes)) or "none (a real cluster)"

    def _break(self, args: list[str]) -> None:
        """The device plugin is gone from a node: the kubelet advertises 0 GPUs there, its DaemonSet has a pod fewer ready."""
        kube = self._node(args[1]) if len(args) == 2 and args[0] == "device-plugin" else None
        if kube is None:
            self._say(f"Usage (sandbox only): break device-plugin <node>; the nodes: {self._nodes()}")
            return
        kube.break_device_plugin(args[1])
        self._say(
            f"The NVIDIA device plugin stopped on {args[1]}: the node advertises no GPUs, and its DaemonSet has a pod "
            "fewer ready. Pods asking for GPUs are not placed there."
        )

    def _taint(self, args: list[str]) -> None:
        kube = self._node(args[0]) if len(args) == 2 else None
        try:
            if kube is None:
                raise ValueError("no such node")
            kube.taint_node(args[0], args[1])
        except ValueError as error:
            self._say(f"Usage (sandbox only): taint <node> <key=value:Effect> ({error}); the nodes: {self._nodes()}")
            return
        self._say(f"node/{args[0]} tainted {args[1]}: pods without a matching toleration are not placed there.")

    def _untaint(self, args: list[str]) -> None:
        kube = self._node(args[0]) if len(args) == 2 else None
        if kube is None:
            self._say(f"Usage (sandbox only): untaint <node> <key>; the nodes: {self._nodes()}")
            return
        kube.untaint_node(args[0], args[1])
        self._say(f"node/{args[0]} untainted: no {args[1]} taint left.")

    def _doctor(self, args: list[str]) -> None:
        doctor = self._sandbox.services.doctor if self._sandbox.services is not None else None
        if doctor is None or len(args) > 1:
            self._say("Usage: doctor [cluster]")
            return
        answer = doctor.examine_named(args[0] if args else None)
        if isinstance(answer, Refusal):
            self._say(f"No cluster {args[0]}; the clusters: {self._clusters()}")
            return
        policy = self._sandbox.policy
        for line in plain_lines(answer, {part: policy.cluster_label(part) for part in policy.cluster_names()}):
            self._say(f"  {line}")

    def _scrape(self, args: list[str]) -> None:
        """Prometheus stops or starts scraping an exporter (the sandbox's scrape side)."""
        scrape = self._sandbox.scrape
        exporters = {exporter.value: exporter for exporter in Exporter}
        if not isinstance(scrape, SandboxScrape) or len(args) != 2 or args[0] not in ("off", "on") or args[1] not in exporters:
            self._say("Usage (sandbox only): scrape off|on dcgm|kube-state-metrics")
            return
        exporter = exporters[args[1]]
        if args[0] == "off":
            scrape.off.add(exporter)
            self._say(f"Prometheus no longer reaches {args[1]}: its targets are down and its series gone (try `doctor`).")
        else:
            scrape.off.discard(exporter)
            self._say(f"Prometheus scrapes {args[1]} again.")

    def _users(self) -> None:
        for person in PEOPLE:
            self._say(f"  @{person.name:<6} {person.role}")

    # --- output ----------------------------------------------------------------------------

    def _show_ack(self, body: str) -> None:
        if not body:
            return
        try:
            payload = json.loads(body)
        except ValueError:
            payload = {"text": body}  # Bolt acknowledges with bare text when there is nothing else
        if payload.get("text"):
            self._section("only visible to you", self._render.mrkdwn(payload["text"]).splitlines())
        if payload.get("response_action") == "errors":
            self._section("the form says", [f"{k}: {v}" for k, v in payload.get("errors", {}).items()])

    def _show_new(self) -> None:
        for record in self._sandbox.slack.since(self._seen):
            self._seen = record.seq
            number = lambda button, r=record: self._number(button, r.channel, r.ts)  # noqa: E731
            if record.kind == "message":
                lines = self._render.blocks(record.blocks, number) if record.blocks else [self._render.mrkdwn(record.text)]
                if record.thread_ts:
                    title = f"{self._render.where(record.channel)} › thread of {self._titles.get(record.thread_ts, 'a message')}"
                else:
                    title = self._render.where(record.channel)
                    self._titles[record.ts or ""] = _title_of(record.blocks) or "a message"
                self._section(title, lines)
            elif record.kind == "update":
                self._section(
                    f"{self._render.where(record.channel)} › {self._titles.get(record.ts or '', 'message')} updated",
                    self._render.blocks(record.blocks, number),
                )
            elif record.kind == "response":
                lines = self._render.blocks(record.blocks, number) if record.blocks else [self._render.mrkdwn(record.text)]
                self._section("only visible to you", lines)
            elif record.kind in ("view_open", "view_update"):
                assert record.view is not None
                self._section("form", self._render.form(record.view))
                if record.kind == "view_open" and record.view.get("submit"):
                    self._fill(record.view)
            elif record.kind == "file":
                if self._charts is None:
                    self._charts = tempfile.TemporaryDirectory(prefix="gpu-quota-charts-")
                path = Path(self._charts.name) / (record.filename or "chart.png")
                path.write_bytes(record.content)
                self._section(f"{self._render.where(record.channel)} › file", [f"{record.filename}: saved to {path}"])

    def _fill(self, view: dict[str, Any]) -> None:
        """Ask for each field of a form (Enter keeps the prefilled value), then submit it.

        A form without fields (the approval form) is submitted only on an explicit yes, as a person
        would press its button; anything else closes it and records nothing.
        """
        if not any(block.get("type") == "input" for block in view["blocks"]):
            try:
                answer = self._next_line(f"    {view['submit']['text']}? [y/N]: ")
            except EOFError:
                answer = ""
            if answer.strip().lower() not in ("y", "yes"):
                self._say("    (form closed: nothing recorded)")
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
        response = self._sandbox.send(self._side().view_submission(user_id=self._user, view=view, values=values))
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
        self._say(f"── {title} " + "─" * max(3, 70 - len(title)))
        for line in lines:
            self._say("  " + line)

    def _banner(self) -> None:
        real, several = not self._sandbox.kubes, len(self._sandbox.kubes) > 1
        self._say(
            BANNER.format(
                cluster="a REAL cluster" if real else "sandbox clusters" if several else "sandbox cluster",
                cluster_note="changes go to the cluster of --kubeconfig!"
                if real
                else "eu-1 frontier 4 GPUs, business 16; us-2 business 8"
                if several
                else "frontier 4 GPUs, business 16, 24 allocatable",
                people=", ".join(f"@{p.name}" for p in PEOPLE),
                user=self._names[self._user],
            )
        )

    def _side(self):  # type: ignore[no-untyped-def]
        assert self._sandbox.side is not None
        return self._sandbox.side

    def _say(self, text: str) -> None:
        print(text, file=self._out, flush=True)


QUOTA_NAMES = ("quota", "quotas", "resourcequota", "resourcequotas")


def _title_of(blocks: list[dict[str, Any]]) -> str | None:
    for block in blocks:
        if block.get("type") == "header":
            text = block["text"]["text"]
            return text.rsplit(" ", 1)[-1] if text.startswith("GPU quota request") else text
    return None
