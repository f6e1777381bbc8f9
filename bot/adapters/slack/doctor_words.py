"""The words of ``doctor``: each check's evidence and fix as a sentence, for Slack (mrkdwn lines, every piece of
cluster-provided text escaped with ``mrkdwn.escape``) and for the terminal (``plain_lines``, ``gpu-quota-bot doctor``).

A line is ``<status>  <evidence> -> <fix>``; the results come from ``bot.services.doctor`` as data.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from bot.adapters.slack.mrkdwn import escape
from bot.domain.stack_health import (
    DEVICE_PLUGIN_NAMES,
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

TITLES = {
    Check.DEVICE_PLUGIN: "device plugin",
    Check.NODE_GPUS: "GPUs in allocatable",
    Check.MIG: "MIG",
    Check.DCGM_TARGET: "DCGM exporter target",
    Check.KSM_TARGET: "kube-state-metrics target",
    Check.DCGM_SERIES: "DCGM series",
    Check.PROFILING_SERIES: "DCGM profiling series",
    Check.KSM_SERIES: "kube-state-metrics series",
    Check.PRIORITY_CLASSES: "PriorityClasses",
    Check.QUOTA_OBJECTS: "quota objects",
    Check.UNLIMITED_PODS: "GPU pods without limits",
}
STATUS_WORDS = {Status.OK: "ok", Status.WARNING: "warning", Status.BROKEN: "BROKEN", Status.UNCHECKED: "could not check"}
STATUS_EMOJI = {
    Status.OK: ":white_check_mark:",
    Status.WARNING: ":warning:",
    Status.BROKEN: ":x:",
    Status.UNCHECKED: ":grey_question:",
}
EXPORTER_WORDS = {Exporter.DCGM: "the DCGM exporter", Exporter.KSM: "kube-state-metrics"}
SHOWN = 5  # names listed before "and N more"


# --- the two renderings -----------------------------------------------------------------------


def plain_lines(checkup: Checkup, names: Mapping[str, str]) -> list[str]:
    """One line per check for the terminal: ``ok / warning / BROKEN  <evidence> -> <fix>``."""
    width = max(len(word) for word in STATUS_WORDS.values())
    lines = []
    for result in checkup.results:
        evidence, fix = worded(result)
        where = _where(result.cluster, names)
        lines.append(
            f"{STATUS_WORDS[result.status]:<{width}}  {where}{TITLES[result.check]}: {evidence}" + (f" -> {fix}" if fix else "")
        )
    return lines


def slack_lines(answer: Checkup | Refusal, names: Mapping[str, str]) -> list[str]:
    """The ephemeral answer to ``/gpu-quota doctor``: a summary, then one mrkdwn line per check."""
    if isinstance(answer, Refusal):
        return [refusal_text(answer)]
    counts = {status: sum(1 for r in answer.results if r.status is status) for status in Status}
    summary = ", ".join(f"{counts[s]} {STATUS_WORDS[s].lower()}" for s in Status if counts[s])
    lines = [f"*{'Something is broken' if answer.broken else 'Nothing is broken'}*: {summary}."]
    for result in answer.results:
        evidence, fix = worded(result)
        where = escape(_where(result.cluster, names))
        line = f"{STATUS_EMOJI[result.status]} {where}*{TITLES[result.check]}*: {escape(evidence)}"
        lines.append(line + (f" → {escape(fix)}" if fix else ""))
    return lines


def refusal_text(refusal: Refusal) -> str:
    if refusal.reason is DoctorRefusal.NOT_ADMIN:
        return ":no_entry_sign: `doctor` is for the platform admins (the policy's `admins`)."
    known = ", ".join(f"`{escape(name)}`" for name in refusal.known) or "none"
    return f":no_entry_sign: There is no cluster `{escape(refusal.cluster)}` in the policy; its clusters: {known}."


def stack_broken_notice(said: StackBroken) -> Notice:
    """The weekly run's post to the admin channel: what broke since the last run, and where to read more."""
    parts: list[Part] = [Words(":rotating_light: Broken since the last weekly check of the GPU stack: ")]
    for index, check in enumerate(said.checks):
        where = f"[{check.cluster}] " if check.cluster else ""
        parts.append(Words("; " if index else ""))
        parts.append(Strong(f"{where}{TITLES[check.check]}"))
        if check.subjects:
            parts.append(Words(f" ({_list(check.subjects)})"))
    parts += [Words(". "), Code("/gpu-quota doctor"), Words(" has the evidence and the fixes.")]
    return Notice(tuple(parts))


# --- evidence and fix, per check ----------------------------------------------------------------


def worded(result: CheckResult) -> tuple[str, str]:
    """(evidence, fix) of a result as plain sentences ("" fix: nothing to do)."""
    evidence = result.evidence
    if isinstance(evidence, Unchecked):
        said = f"{evidence.cause.value.replace('_', ' ')}" + (f": {evidence.detail}" if evidence.detail else "")
        if evidence.permission:
            return said, f"grant the bot's ServiceAccount `{evidence.permission}` (the Helm chart's RBAC does)"
        if evidence.cause.value == "not_connected":
            return "no connection configured for it", _not_connected(result.check)
        return said, "try again when it answers"
    if isinstance(evidence, DevicePluginEvidence):
        return _device_plugin(evidence, result.fix)
    if isinstance(evidence, NodeGpusEvidence):
        return _node_gpus(evidence)
    if isinstance(evidence, MigEvidence):
        return _mig(evidence, result.fix)
    if isinstance(evidence, TargetEvidence):
        return _target(evidence, result.fix)
    if isinstance(evidence, SeriesEvidence):
        return _series(result.check, evidence, result.fix)
    if isinstance(evidence, PriorityClassEvidence):
        return _priority_classes(evidence)
    if isinstance(evidence, QuotaEvidence):
        return _quotas(evidence)
    return _unlimited(evidence, result.status)


def _not_connected(check: Check) -> str:
    if check in (Check.DCGM_TARGET, Check.KSM_TARGET, Check.DCGM_SERIES, Check.PROFILING_SERIES, Check.KSM_SERIES):
        return "set PROMETHEUS_URL (or clusters.<name>.prometheus_url)"
    return "give the bot a kubeconfig (KUBECONFIG) or run it in the cluster"


def _device_plugin(e: DevicePluginEvidence, fix: Fix | None) -> tuple[str, str]:
    found = _list(e.daemon_sets)
    if fix is Fix.INSTALL_DEVICE_PLUGIN:
        return (
            f"no device plugin DaemonSet, and none of the {e.gpu_nodes} GPU nodes advertises a GPU",
            "install NVIDIA's device plugin: the GPU operator, or `helm install nvdp nvdp/nvidia-device-plugin -n nvidia-device-plugin --create-namespace`",
        )
    if fix is Fix.NAME_DEVICE_PLUGIN:
        return (
            f"no DaemonSet of the known names ({', '.join(sorted(DEVICE_PLUGIN_NAMES))}, app.kubernetes.io/name=nvidia-device-plugin), yet nodes advertise GPUs",
            "nothing to do if it runs under another name",
        )
    if not e.daemon_sets:
        return "no GPU node in the cluster (no GPU label, no nvidia.com/* in allocatable)", ""
    if fix is Fix.READY_DEVICE_PLUGIN:
        return (
            f"{found}: {e.ready} of {e.desired} pods ready",
            f"`kubectl -n {e.not_ready_namespace} get pods -o wide` and describe / read the logs of those not Ready",
        )
    if fix is Fix.PLACE_DEVICE_PLUGIN:
        return (
            f"{found} does not run on GPU nodes {_list(e.not_covered)}: its nodeSelector, affinity or tolerations leave them out",
            f"tolerate their taints or match their labels in its pod template (`kubectl describe node {e.not_covered[0]}`)",
        )
    return f"{found}: {e.ready} of {e.desired} ready, on every GPU node ({e.gpu_nodes})", ""


def _node_gpus(e: NodeGpusEvidence) -> tuple[str, str]:
    if e.silent:
        node = e.silent[0]
        return (
            f"device plugin not running on {_list(e.silent)}: GPU-labelled, advertises no nvidia.com/gpu",
            f"`kubectl get pods -A -o wide --field-selector spec.nodeName={node} | grep device-plugin`: read its logs, delete it"
            " to restart it; `nvidia-smi` on the node if the driver is in doubt",
        )
    return f"{_count(e.gpu_nodes, 'GPU node')}, each advertising GPUs", ""


def _mig(e: MigEvidence, fix: Fix | None) -> tuple[str, str]:
    states = _list([f"{s.node} ({s.state or 'no state'})" for s in e.unsettled])
    if fix is Fix.REPAIR_MIG:
        return (
            f"MIG reconfiguration failed on {states}",
            "read the MIG manager's logs (`kubectl logs -l app=nvidia-mig-manager -A`) and check the node's nvidia.com/mig.config label",
        )
    if fix is Fix.WAIT_MIG:
        return f"MIG layout being applied on {states}", "wait: its GPUs come back when the state is success"
    if not e.mig_nodes:
        return "no MIG node", ""
    return f"{_count(e.mig_nodes, 'MIG node')}, nvidia.com/mig.config.state=success", ""


def _target(e: TargetEvidence, fix: Fix | None) -> tuple[str, str]:
    who = EXPORTER_WORDS[e.exporter]
    every = _list([_seconds(s) for s in e.intervals]) or "an unknown interval"
    if fix is Fix.SCRAPE_EXPORTER:
        how = (
            "a ServiceMonitor for nvidia-dcgm-exporter (the GPU operator's dcgmExporter.serviceMonitor.enabled)"
            if e.exporter is Exporter.DCGM
            else "kube-prometheus-stack's kube-state-metrics, or a scrape job for it"
        )
        return f"Prometheus has no target of {who}", f"scrape it: {how}"
    if fix is Fix.REPAIR_TARGET:
        down = _list([f"{t.url} ({t.health}: {t.last_error or 'no error given'})" for t in e.down])
        return (
            f"{len(e.down)} of {len(e.down) + e.up} targets of {who} down: {down}",
            "fix what the last error says (404: wrong path or port; connection refused: the exporter does not listen)",
        )
    if fix is Fix.SET_SAMPLE_INTERVAL:
        return (
            f"{who} scraped every {every}, but metrics.sample_interval is {_seconds(e.expected_seconds)}",
            f"set metrics.sample_interval: {_seconds(e.intervals[0])} in the policy",
        )
    return f"{e.up} targets of {who} up, scraped every {every}", ""


def _series(check: Check, e: SeriesEvidence, fix: Fix | None) -> tuple[str, str]:
    if not e.present:
        if check is Check.PROFILING_SERIES:
            return (
                f"no {e.metric} series: utilisation falls back to DCGM_FI_DEV_GPU_UTIL",
                "enable DCGM's profiling metrics where the GPUs have them (not every GPU does)",
            )
        source = "kube-state-metrics" if check is Check.KSM_SERIES else "the DCGM exporter"
        return f"no {e.metric} series", f"scrape {source} (its target line says more)"
    if fix is Fix.MAP_PODS:
        return (
            f"{e.metric} carries neither namespace nor exported_namespace: GPU use cannot be told per namespace",
            "turn on the exporter's Kubernetes pod mapping (DCGM_EXPORTER_KUBERNETES=true, the kubelet pod-resources socket mounted)",
        )
    if e.namespace_labels:
        return f"{e.metric} present, the pod's namespace in {' and '.join(e.namespace_labels)}", ""
    return f"{e.metric} present", ""


def _priority_classes(e: PriorityClassEvidence) -> tuple[str, str]:
    if e.missing:
        missing = _list([f"{m.name} (named for {', '.join(m.namespaces)})" for m in e.missing])
        return (
            f"no PriorityClass {missing} in the cluster",
            f"create it (`kubectl create priorityclass {e.missing[0].name} --value=<priority>`) or fix borrowed_priority_classes in the policy",
        )
    if not e.named:
        return "the policy names no PriorityClass", ""
    return f"{_list(e.named)} {'exists' if len(e.named) == 1 else 'exist'}", ""


def _quotas(e: QuotaEvidence) -> tuple[str, str]:
    if e.missing:
        return (
            _list([_gap(m) for m in e.missing]),
            "create what is missing; a missing ResourceQuota the bot's sweep creates at the policy's default quota",
        )
    return f"{_count(e.scopes, 'governed resource')} of the managed namespaces, each in its quota object", ""


def _gap(m: MissingQuota) -> str:
    if m.gap is QuotaGap.NAMESPACE:
        return f"namespace {m.namespace} does not exist"
    if m.gap is QuotaGap.OBJECT:
        return f"{m.namespace}: no {m.kind.value} {m.name}"
    return f"{m.namespace}: {m.kind.value} {m.name} does not count {m.resource}"


def _unlimited(e: UnlimitedPodsEvidence, status: Status) -> tuple[str, str]:
    if not e.unlimited:
        return f"none among the {e.pods_read} pods of the managed namespaces", ""
    pods = _list([f"{p.pod} (on {p.node})" if p.node else f"{p.pod} (pending)" for p in e.unlimited])
    where = "on GPU nodes" if status is Status.BROKEN else "that may land on GPU nodes"
    return (
        f"{len(e.unlimited)} pods {where} without nvidia.com/* limits: {pods}; outside the quota they see no GPU, or every GPU of the node",
        "give their containers `resources.limits: {nvidia.com/gpu: N}` (or drop the GPU toleration)",
    )


# --- small pieces ----------------------------------------------------------------------------


def _where(cluster: str, names: Mapping[str, str]) -> str:
    """``[us-2] `` before a line when the policy has several clusters (``names``: each part's name)."""
    return f"[{names.get(cluster, cluster)}] " if len(names) > 1 else ""


def _list(items: Sequence[str]) -> str:
    shown = ", ".join(items[:SHOWN])
    return shown + (f" and {len(items) - SHOWN} more" if len(items) > SHOWN else "")


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _seconds(seconds: float) -> str:
    return f"{seconds:g}s"
