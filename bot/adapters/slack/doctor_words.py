"""The words of ``doctor``: each check's evidence and fix as a sentence, for Slack (mrkdwn lines, every piece of
cluster-provided text escaped with ``mrkdwn``) and for the terminal (``plain_lines``, ``gpu-quota-bot doctor``), in
the current language (``bot.adapters.i18n``).

A line is ``<status>  <evidence> -> <fix>``; the results come from ``bot.services.doctor`` as data. Every sentence
is a catalog entry (``tr`` / ``tr_n``: plain text, escaped for Slack as a whole); names, metrics, URLs, commands,
policy keys and the errors the API server or Prometheus gave are its values, shown as they are.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping, Sequence
from datetime import timedelta

from babel.lists import format_list

from bot.adapters import i18n
from bot.adapters.i18n import N_, format_duration, format_number, gettext, tr, tr_n
from bot.adapters.slack.mrkdwn import escape, render
from bot.adapters.slack.sentences import fill, fill_n
from bot.domain.stack_health import (
    DEVICE_PLUGIN_NAMES,
    Cause,
    Check,
    CheckResult,
    Checkup,
    DevicePluginEvidence,
    Exporter,
    Fix,
    MigEvidence,
    MissingQuota,
    NodeGpusEvidence,
    PriorityClassEvidence,
    QuotaEvidence,
    QuotaGap,
    SeriesEvidence,
    Status,
    TargetEvidence,
    Unchecked,
    UnlimitedPodsEvidence,
)
from bot.services.doctor import DoctorRefusal, Refusal
from bot.services.messages import StackBroken
from bot.services.text import Code, Notice, Part, Strong, Words

# Each table holds catalog ids, translated where they are shown.
TITLES = {
    Check.DEVICE_PLUGIN: N_("device plugin"),
    Check.NODE_GPUS: N_("GPUs in allocatable"),
    Check.MIG: N_("MIG"),
    Check.DCGM_TARGET: N_("DCGM exporter target"),
    Check.KSM_TARGET: N_("kube-state-metrics target"),
    Check.DCGM_SERIES: N_("DCGM series"),
    Check.PROFILING_SERIES: N_("DCGM profiling series"),
    Check.KSM_SERIES: N_("kube-state-metrics series"),
    Check.PRIORITY_CLASSES: N_("PriorityClasses"),
    Check.QUOTA_OBJECTS: N_("quota objects"),
    Check.UNLIMITED_PODS: N_("GPU pods without limits"),
}
# The terminal's status words (English: the first word of each line, as scripts read it).
STATUS_WORDS = {
    Status.OK: N_("ok"),
    Status.WARNING: N_("warning"),
    Status.BROKEN: N_("BROKEN"),
    Status.UNCHECKED: N_("could not check"),
}
STATUS_EMOJI = {
    Status.OK: ":white_check_mark:",
    Status.WARNING: ":warning:",
    Status.BROKEN: ":x:",
    Status.UNCHECKED: ":grey_question:",
}
CAUSE_WORDS = {
    Cause.UNREACHABLE: N_("unreachable"),
    Cause.FORBIDDEN: N_("forbidden"),
    Cause.FAILED: N_("failed"),
    Cause.NOT_CONNECTED: N_("not connected"),
}
EXPORTER_WORDS = {Exporter.DCGM: N_("the DCGM exporter")}  # kube-state-metrics is called by its name in every language
SHOWN = 5  # names listed before "and N more"


# --- the two renderings -----------------------------------------------------------------------


def plain_lines(checkup: Checkup, names: Mapping[str, str]) -> list[str]:
    """One line per check for the terminal: ``ok / warning / BROKEN  <evidence> -> <fix>``."""
    words = {status: gettext(word) for status, word in STATUS_WORDS.items()}
    width = max(_width(word) for word in words.values())
    lines = []
    for result in checkup.results:
        evidence, fix = worded(result)
        title = gettext(TITLES[result.check])
        line = (
            tr("{title}: {evidence} -> {fix}", title=title, evidence=evidence, fix=fix)
            if fix
            else tr("{title}: {evidence}", title=title, evidence=evidence)
        )
        status = words[result.status]
        lines.append(f"{status}{' ' * (width - _width(status))}  {_where(result.cluster, names)}{line}")
    return lines


def slack_lines(answer: Checkup | Refusal, names: Mapping[str, str]) -> list[str]:
    """The ephemeral answer to ``/gpu-quota doctor``: a summary, then one mrkdwn line per check."""
    if isinstance(answer, Refusal):
        return [refusal_text(answer)]
    lines = [render(_summary(answer))]
    for result in answer.results:
        evidence, fix = worded(result)
        title = gettext(TITLES[result.check])
        line = (
            fill("*{title}*: {evidence} → {fix}", title=title, evidence=evidence, fix=fix)
            if fix
            else fill("*{title}*: {evidence}", title=title, evidence=evidence)
        )
        lines.append(f"{STATUS_EMOJI[result.status]} {escape(_where(result.cluster, names))}{render(line)}")
    return lines


def _summary(checkup: Checkup) -> Notice:
    counts = {status: sum(1 for r in checkup.results if r.status is status) for status in Status}
    counted = {
        Status.OK: lambda n: fill_n("{count} ok", "{count} ok", n),
        Status.WARNING: lambda n: fill_n("{count} warning", "{count} warnings", n),
        Status.BROKEN: lambda n: fill_n("{count} broken", "{count} broken", n),
        Status.UNCHECKED: lambda n: fill_n("{count} could not check", "{count} could not check", n),
    }
    summary = _parts_series([counted[status](counts[status]) for status in Status if counts[status]])
    if checkup.broken:
        return fill("*Something is broken*: {summary}.", summary=summary)
    return fill("*Nothing is broken*: {summary}.", summary=summary)


def refusal_text(refusal: Refusal) -> str:
    if refusal.reason is DoctorRefusal.NOT_ADMIN:
        return render(fill(":no_entry_sign: `doctor` is for the platform admins (the policy's `admins`)."))
    cluster = Code(refusal.cluster)
    if not refusal.known:
        return render(
            fill(":no_entry_sign: There is no cluster {cluster} in the policy, which names no cluster.", cluster=cluster)
        )
    return render(
        fill(
            ":no_entry_sign: There is no cluster {cluster} in the policy; its clusters: {known}.",
            cluster=cluster,
            known=_parts_series([Code(name) for name in refusal.known]),
        )
    )


def stack_broken_notice(said: StackBroken) -> Notice:
    """The weekly run's post to the admin channel: what broke since the last run, and where to read more."""
    checks: Notice | None = None
    for check in said.checks:
        title = gettext(TITLES[check.check])
        name = Strong(f"[{check.cluster}] {title}" if check.cluster else title)
        item = fill("{check} ({subjects})", check=name, subjects=_list(check.subjects)) if check.subjects else Notice((name,))
        # Translators: two items of a list whose items hold commas.
        checks = item if checks is None else fill("{first}; {second}", first=checks, second=item)
    return fill(
        ":rotating_light: Broken since the last weekly check of the GPU stack: {checks}. "
        "`/gpu-quota doctor` has the evidence and the fixes.",
        checks=checks or Notice(()),
    )


# --- evidence and fix, per check ----------------------------------------------------------------


def worded(result: CheckResult) -> tuple[str, str]:
    """(evidence, fix) of a result as plain sentences ("" fix: nothing to do)."""
    evidence = result.evidence
    if isinstance(evidence, Unchecked):
        return _unchecked(result.check, evidence)
    if isinstance(evidence, DevicePluginEvidence):
        return _device_plugin(evidence, result.fix)
    if isinstance(evidence, NodeGpusEvidence):
        return _node_gpus(evidence)
    if isinstance(evidence, MigEvidence):
        return _mig(evidence, result.fix)
    if isinstance(evidence, TargetEvidence):
        return _target(evidence, result.fix)
    if isinstance(evidence, SeriesEvidence):
        return _series_words(result.check, evidence, result.fix)
    if isinstance(evidence, PriorityClassEvidence):
        return _priority_classes(evidence)
    if isinstance(evidence, QuotaEvidence):
        return _quotas(evidence)
    return _unlimited(evidence, result.status)


def _unchecked(check: Check, evidence: Unchecked) -> tuple[str, str]:
    if evidence.cause is Cause.NOT_CONNECTED and not evidence.permission:
        return tr("no connection configured for it"), _not_connected(check)
    cause = gettext(CAUSE_WORDS[evidence.cause])
    said = tr("{cause}: {detail}", cause=cause, detail=evidence.detail) if evidence.detail else cause
    if evidence.permission:
        return said, tr(
            "grant the bot's ServiceAccount `{permission}` (the Helm chart's RBAC does)", permission=evidence.permission
        )
    return said, tr("try again when it answers")


def _not_connected(check: Check) -> str:
    if check in (Check.DCGM_TARGET, Check.KSM_TARGET, Check.DCGM_SERIES, Check.PROFILING_SERIES, Check.KSM_SERIES):
        return tr("set PROMETHEUS_URL (or `clusters.<name>.prometheus_url`)")
    return tr("give the bot a kubeconfig (KUBECONFIG) or run it in the cluster")


def _device_plugin(e: DevicePluginEvidence, fix: Fix | None) -> tuple[str, str]:
    found = _list(e.daemon_sets)
    if fix is Fix.INSTALL_DEVICE_PLUGIN:
        return (
            tr_n(
                "no device plugin DaemonSet, and the {count} GPU node advertises no GPU",
                "no device plugin DaemonSet, and none of the {count} GPU nodes advertises a GPU",
                e.gpu_nodes,
            ),
            tr(
                "install NVIDIA's device plugin: the GPU operator (`gpu-operator`), or {command}",
                command="`helm install nvdp nvdp/nvidia-device-plugin -n nvidia-device-plugin --create-namespace`",
            ),
        )
    if fix is Fix.NAME_DEVICE_PLUGIN:
        return (
            tr(
                "no DaemonSet of the known names ({names}, `app.kubernetes.io/name=nvidia-device-plugin`), yet nodes advertise GPUs",
                names=_series(sorted(DEVICE_PLUGIN_NAMES)),
            ),
            tr("nothing to do if it runs under another name"),
        )
    if not e.daemon_sets:
        return tr("no GPU node in the cluster (no GPU label, no nvidia.com/* in allocatable)"), ""
    if fix is Fix.READY_DEVICE_PLUGIN:
        return (
            tr("{daemon_sets}: {ready} of {desired} pods ready", daemon_sets=found, ready=e.ready, desired=e.desired),
            tr(
                "`kubectl -n {namespace} get pods -o wide` and describe / read the logs of those not Ready",
                namespace=e.not_ready_namespace,
            ),
        )
    if fix is Fix.PLACE_DEVICE_PLUGIN:
        return (
            tr(
                "{daemon_sets} does not run on GPU nodes {nodes}: its nodeSelector, affinity or tolerations leave them out",
                daemon_sets=found,
                nodes=_list(e.not_covered),
            ),
            tr(
                "tolerate their taints or match their labels in its pod template (`kubectl describe node {node}`)",
                node=e.not_covered[0],
            ),
        )
    return (
        tr(
            "{daemon_sets}: {ready} of {desired} ready, on every GPU node ({gpu_nodes})",
            daemon_sets=found,
            ready=e.ready,
            desired=e.desired,
            gpu_nodes=e.gpu_nodes,
        ),
        "",
    )


def _node_gpus(e: NodeGpusEvidence) -> tuple[str, str]:
    if e.silent:
        node = e.silent[0]
        return (
            tr("device plugin not running on {nodes}: GPU-labelled, advertises no nvidia.com/gpu", nodes=_list(e.silent)),
            tr(
                "`kubectl get pods -A -o wide --field-selector spec.nodeName={node} | grep device-plugin`: read its logs, "
                "delete it to restart it; `nvidia-smi` on the node if the driver is in doubt",
                node=node,
            ),
        )
    return tr_n("{count} GPU node, each advertising GPUs", "{count} GPU nodes, each advertising GPUs", e.gpu_nodes), ""


def _mig(e: MigEvidence, fix: Fix | None) -> tuple[str, str]:
    states = _list(
        [
            tr("{node} ({state})", node=s.node, state=s.state) if s.state else tr("{node} (no state)", node=s.node)
            for s in e.unsettled
        ]
    )
    if fix is Fix.REPAIR_MIG:
        return (
            tr("MIG reconfiguration failed on {nodes}", nodes=states),
            tr(
                "read the MIG manager's logs ({command}) and check the node's nvidia.com/mig.config label",
                command="`kubectl logs -l app=nvidia-mig-manager -A`",
            ),
        )
    if fix is Fix.WAIT_MIG:
        return tr("MIG layout being applied on {nodes}", nodes=states), tr("wait: its GPUs come back when the state is `success`")
    if not e.mig_nodes:
        return tr("no MIG node"), ""
    return (
        tr_n(
            "{count} MIG node, `nvidia.com/mig.config.state=success`",
            "{count} MIG nodes, `nvidia.com/mig.config.state=success`",
            e.mig_nodes,
        ),
        "",
    )


def _target(e: TargetEvidence, fix: Fix | None) -> tuple[str, str]:
    who = gettext(EXPORTER_WORDS[e.exporter]) if e.exporter in EXPORTER_WORDS else e.exporter.value
    every = _list([_seconds(s) for s in e.intervals]) or tr("an unknown interval")
    if fix is Fix.SCRAPE_EXPORTER:
        how = (
            tr(
                "scrape it: a ServiceMonitor for `nvidia-dcgm-exporter` (the GPU operator's `dcgmExporter.serviceMonitor.enabled`)"
            )
            if e.exporter is Exporter.DCGM
            else tr("scrape it: `kube-prometheus-stack`'s kube-state-metrics, or a scrape job for it")
        )
        return tr("Prometheus has no target of {exporter}", exporter=who), how
    if fix is Fix.REPAIR_TARGET:
        down = _list(
            [
                tr("{url} ({health}: {error})", url=t.url, health=t.health, error=t.last_error)
                if t.last_error
                else tr("{url} ({health}: no error given)", url=t.url, health=t.health)
                for t in e.down
            ]
        )
        return (
            tr(
                "{down} of {total} targets of {exporter} down: {targets}",
                down=len(e.down),
                total=len(e.down) + e.up,
                exporter=who,
                targets=down,
            ),
            tr("fix what the last error says (404: wrong path or port; connection refused: the exporter does not listen)"),
        )
    if fix is Fix.SET_SAMPLE_INTERVAL:
        return (
            tr(
                "{exporter} scraped every {intervals}, but metrics.sample_interval is {expected}",
                exporter=who,
                intervals=every,
                expected=_seconds(e.expected_seconds),
            ),
            # The value as the policy takes it (a duration such as 30s), not words.
            tr("set `metrics.sample_interval: {interval}` in the policy", interval=_typed_seconds(e.intervals[0])),
        )
    return (
        tr_n(
            "{count} target of {exporter} up, scraped every {intervals}",
            "{count} targets of {exporter} up, scraped every {intervals}",
            e.up,
            exporter=who,
            intervals=every,
        ),
        "",
    )


def _series_words(check: Check, e: SeriesEvidence, fix: Fix | None) -> tuple[str, str]:
    if not e.present:
        if check is Check.PROFILING_SERIES:
            return (
                tr("no {metric} series: utilisation falls back to DCGM_FI_DEV_GPU_UTIL", metric=e.metric),
                tr("enable DCGM's profiling metrics where the GPUs have them (not every GPU does)"),
            )
        if check is Check.KSM_SERIES:
            return tr("no {metric} series", metric=e.metric), tr("scrape kube-state-metrics (its target line says more)")
        return tr("no {metric} series", metric=e.metric), tr("scrape the DCGM exporter (its target line says more)")
    if fix is Fix.MAP_PODS:
        return (
            tr(
                "{metric} carries neither `namespace` nor `exported_namespace`: GPU use cannot be told per namespace",
                metric=e.metric,
            ),
            tr(
                "turn on the exporter's Kubernetes pod mapping (`DCGM_EXPORTER_KUBERNETES=true`, the `kubelet` "
                "pod-resources socket mounted)"
            ),
        )
    if e.namespace_labels:
        labels = format_list([f"`{label}`" for label in e.namespace_labels], locale=i18n.locale())
        return tr("{metric} present, the pod's namespace in {labels}", metric=e.metric, labels=labels), ""
    return tr("{metric} present", metric=e.metric), ""


def _priority_classes(e: PriorityClassEvidence) -> tuple[str, str]:
    if e.missing:
        missing = _list([tr("{name} (named for {namespaces})", name=m.name, namespaces=_series(m.namespaces)) for m in e.missing])
        return (
            tr("no PriorityClass {classes} in the cluster", classes=missing),
            tr(
                "create it (`kubectl create priorityclass {name} --value=<priority>`) or fix `borrowed_priority_classes` in the policy",
                name=e.missing[0].name,
            ),
        )
    if not e.named:
        return tr("the policy names no PriorityClass"), ""
    return tr_n("{classes} exists", "{classes} exist", len(e.named), classes=_list(e.named)), ""


def _quotas(e: QuotaEvidence) -> tuple[str, str]:
    if e.missing:
        return (
            _list([_gap(m) for m in e.missing]),
            tr("create what is missing; a missing ResourceQuota the bot's sweep creates at the policy's default quota"),
        )
    return (
        tr_n(
            "{count} governed resource of the managed namespaces, each in its quota object",
            "{count} governed resources of the managed namespaces, each in its quota object",
            e.scopes,
        ),
        "",
    )


def _gap(m: MissingQuota) -> str:
    if m.gap is QuotaGap.NAMESPACE:
        return tr("namespace {namespace} does not exist", namespace=m.namespace)
    if m.gap is QuotaGap.OBJECT:
        return tr("{namespace}: no {kind} {name}", namespace=m.namespace, kind=m.kind.value, name=m.name)
    return tr(
        "{namespace}: {kind} {name} does not count {resource}",
        namespace=m.namespace,
        kind=m.kind.value,
        name=m.name,
        resource=m.resource,
    )


def _unlimited(e: UnlimitedPodsEvidence, status: Status) -> tuple[str, str]:
    if not e.unlimited:
        return (
            tr_n(
                "none among the {count} pod of the managed namespaces",
                "none among the {count} pods of the managed namespaces",
                e.pods_read,
            ),
            "",
        )
    pods = _list(
        [tr("{pod} (on {node})", pod=p.pod, node=p.node) if p.node else tr("{pod} (pending)", pod=p.pod) for p in e.unlimited]
    )
    if status is Status.BROKEN:
        evidence = tr_n(
            "{count} pod on GPU nodes without nvidia.com/* limits: {pods}; outside the quota it sees no GPU, or every GPU of the node",
            "{count} pods on GPU nodes without nvidia.com/* limits: {pods}; outside the quota they see no GPU, or every GPU of the node",
            len(e.unlimited),
            pods=pods,
        )
    else:
        evidence = tr_n(
            "{count} pod that may land on GPU nodes without nvidia.com/* limits: {pods}; outside the quota it sees no GPU, "
            "or every GPU of the node",
            "{count} pods that may land on GPU nodes without nvidia.com/* limits: {pods}; outside the quota they see no GPU, "
            "or every GPU of the node",
            len(e.unlimited),
            pods=pods,
        )
    return evidence, tr(
        "give their containers {limits} (or drop the GPU toleration)", limits="`resources.limits: {nvidia.com/gpu: N}`"
    )


# --- small pieces ----------------------------------------------------------------------------


def _where(cluster: str, names: Mapping[str, str]) -> str:
    """``[us-2] `` before a line when the policy has several clusters (``names``: each part's name)."""
    return f"[{names.get(cluster, cluster)}] " if len(names) > 1 else ""


def _separator() -> str:
    """The locale's list separator (CLDR: ", " in English, "、" in Chinese)."""
    return str(i18n.locale().list_patterns["standard"]["middle"]).format("", "")


def _series(items: Sequence[str]) -> str:
    return _separator().join(items)


def _parts_series(items: Sequence[Notice | Part]) -> Notice:
    parts: list[Part] = []
    for index, item in enumerate(items):
        if index:
            parts.append(Words(_separator()))
        parts.extend(item.parts if isinstance(item, Notice) else (item,))
    return Notice(tuple(parts))


def _list(items: Sequence[str]) -> str:
    shown = _series(items[:SHOWN])
    if len(items) <= SHOWN:
        return shown
    return tr_n("{names} and {count} more", "{names} and {count} more", len(items) - SHOWN, names=shown)


def _seconds(seconds: float) -> str:
    """A scrape interval in words (``30s``, ``30 秒``); a fraction of a second as a number of seconds."""
    if seconds == int(seconds):
        return format_duration(timedelta(seconds=seconds))
    return tr("{seconds} s", seconds=format_number(seconds))


def _typed_seconds(seconds: float) -> str:
    """A duration as the policy takes it (``30s``): a value, never words."""
    return "{:g}s".format(seconds)


def _width(text: str) -> int:
    """Columns a terminal gives the text: two for each wide (CJK) character."""
    return sum(2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in text)
