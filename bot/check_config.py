"""``gpu-quota-bot check-config``: is the policy sound, and does what it names exist?

Checks the settings and the policy file, then, for each system it can reach, that the namespaces,
the governed resources and the Kueue ClusterQueues (Kubernetes), the users, user groups and
channels (Slack) and the GPU metrics (Prometheus) are there, that each exporter's sample
spacing matches ``metrics.sample_interval``, that the nodes' capacity-type and pool labels are known to the
price list (each value it does not know named once), and that mail can go where the policy sends it (``SMTP_URL``
set when a team lists ``budget.mail``; with ``--smtp-login``, a login to the server, nothing sent). Prints one line per problem and exits 1 if there is any; systems it
cannot reach are reported as skipped, not as problems; a setting that cannot work (a DATABASE_URL
that does not parse or answer, a missing or corrupt kubeconfig) is a problem. A governed resource
no node advertises is a warning only: a MIG node being re-partitioned, or a node pool scaled to
zero, advertises nothing for a while.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta, timezone
from functools import partial
from typing import TYPE_CHECKING, Any

from slack_sdk import WebClient

from bot.adapters.i18n import tr
from bot.adapters.metrics_clusters import label_problems
from bot.adapters.prometheus import PrometheusMetrics
from bot.adapters.slack.notifier import slack_call
from bot.bootstrap import connect_cluster_metrics, connect_karmada, connect_kueue, connect_mail, connect_metrics, slack_client
from bot.domain.capacity import SplitState, allowlist_flag
from bot.domain.clusters import HOME, cluster_of, split_key
from bot.domain.costs import Window
from bot.domain.policy import Policy, PolicyError, load_policy
from bot.errors import GpuQuotaError, KarmadaObjectMissing, KueueObjectMissing, KueuePart
from bot.services.ports import ClusterCoverage
from bot.settings import Settings, SettingsError, load_settings
from bot.startup_checks import SettingsProblem, check_database, load_cluster

if TYPE_CHECKING:
    from bot.adapters.kube import KubernetesCluster
    from bot.services.ports import KueueQuotas


def run(
    *,
    out: Callable[[str], None] = print,
    err: Callable[[str], None] = lambda line: print(line, file=sys.stderr),
    smtp_login: bool = False,
) -> int:
    """``smtp_login``: also log in to the mail server (and quit without sending)."""
    problems: list[str] = []
    try:
        settings = load_settings()
    except SettingsError as error:
        problems.extend(str(error).splitlines())
        return _finish(problems, out, err)
    problems.extend(settings.runtime_problems())
    try:
        check_database(settings.database_url)
    except SettingsProblem as error:
        problems.append(str(error))
    if settings.gpu_quota_config is None:
        return _finish(problems, out, err)
    try:
        policy = load_policy(settings.gpu_quota_config)
    except PolicyError as error:
        problems.extend(str(error).splitlines())
        return _finish(problems, out, err)
    out(f"policy {settings.gpu_quota_config}: {len(policy.teams)} teams, {len(policy.managed_namespaces())} namespaces")
    problems.extend(_kubernetes(settings, policy, out))
    problems.extend(_slack(settings, policy, out))
    problems.extend(_prometheus(settings, policy, out))
    problems.extend(_mail(settings, policy, out, login=smtp_login))
    return _finish(problems, out, err)


def _finish(problems: list[str], out: Callable[[str], None], err: Callable[[str], None]) -> int:
    for problem in problems:
        err(f"problem: {problem}")
    out("configuration OK" if not problems else f"{len(problems)} problem(s)")
    return 1 if problems else 0


def _kubernetes(settings: Settings, policy: Policy, out: Callable[[str], None]) -> list[str]:
    """Every cluster of the policy, each reached through its own context: one that fails is named, and the
    others are checked all the same."""
    problems: list[str] = []
    for part in policy.cluster_names():
        name = policy.cluster_label(part)
        context = policy.clusters[name].context if name in policy.clusters else None
        where = f"cluster {name}: " if name else ""
        try:
            cluster = load_cluster(settings.kubeconfig, context=context, timeout=(5.0, 10.0))
        except SettingsProblem as error:
            problems.append(f"{where}{error}")  # a missing or corrupt kubeconfig (or context) is a problem to fix
            continue
        keys = [key for key in policy.managed_namespaces() if cluster_of(key) == part]
        if part == HOME:
            problems += _home_cluster(cluster, policy, keys, out)
            continue
        try:
            missing = [key for key in keys if not cluster.namespace_exists(split_key(key)[1])]
        except GpuQuotaError as error:
            out(f"skipped the namespaces of cluster {name}: cannot reach it ({error})")
            continue
        problems += [f"namespace {key} (policy) does not exist in cluster {name}" for key in missing]
        problems += _cluster_queues(cluster, policy, part)
    return problems + _federated_quotas(settings, policy)


def _home_cluster(cluster: KubernetesCluster, policy: Policy, keys: list[str], out: Callable[[str], None]) -> list[str]:
    try:
        missing = [ns for ns in keys if not cluster.namespace_exists(ns)]
    except GpuQuotaError as error:
        out(f"skipped the namespaces: cannot reach the cluster ({error})")
        return []
    problems = [f"namespace {ns} (policy) does not exist in the cluster" for ns in missing]
    _warn_unadvertised(cluster, policy, out)
    problems += _cluster_queues(cluster, policy)
    named = sorted({name for ns in policy.managed_namespaces() for name in policy.borrowed_priority_classes(ns)})
    if named:
        try:
            known = cluster.priority_classes()
        except GpuQuotaError as error:
            out(f"skipped the priority classes: cannot list them ({error})")
            return problems
        problems += [
            f"priority class {name} (borrowed_priority_classes) does not exist in the cluster"
            for name in named
            if name not in known
        ]
    return problems


def _warn_unadvertised(cluster: KubernetesCluster, policy: Policy, out: Callable[[str], None]) -> None:
    """A warning for each governed resource no node advertises (the nodes are read once)."""
    try:
        offered = dict(cluster.gpu_nodes().allocatable)
    except GpuQuotaError as error:
        out(f"skipped the governed resources: cannot list the nodes ({error})")
        return
    for line in unadvertised_resources(policy, offered):
        out(f"warning: {line}")


def unadvertised_resources(policy: Policy, offered: Mapping[str, int]) -> list[str]:
    """One line per governed resource that no node advertises in its allocatable, naming what the nodes do offer."""
    on_nodes = ", ".join(sorted(name for name, count in offered.items() if count > 0)) or "no extended resources"
    lines = []
    for resource in policy.all_governed_resources():
        if offered.get(resource, 0) > 0:
            continue
        where = ", ".join(ns for ns in policy.managed_namespaces() if resource in policy.governed_resources(ns))
        lines.append(f"no node advertises {resource} (governed in {where}); the nodes offer {on_nodes}")
    return lines


def _cluster_queues(cluster: KubernetesCluster, policy: Policy, part: str = HOME) -> list[str]:
    """The ClusterQueues the policy keeps quota in in cluster ``part``, read as the bot's writes read them."""
    if not any(cluster_of(ns) == part for ns, _, _ in policy.cluster_queues()):
        return []
    try:
        return cluster_queue_problems(connect_kueue(cluster), policy, cluster=part)
    except GpuQuotaError as error:
        return [f"cannot read the ClusterQueues the policy names: {error}"]


def _federated_quotas(settings: Settings, policy: Policy) -> list[str]:
    """The FederatedResourceQuotas the policy keeps quota in, on the Karmada plane, read as the writes read them."""
    targets = [
        (ns, resource, ref)
        for ns in policy.managed_namespaces()
        for resource in policy.governed_resources(ns)
        if (ref := policy.federated_quota(ns, resource)) is not None
    ]
    if not targets:
        return []
    try:
        plane = connect_karmada(policy, settings.kubeconfig)
    except GpuQuotaError as error:
        return [f"Karmada (karmada.context): {error}"]
    assert plane is not None
    problems = []
    for ns, resource, ref in targets:
        try:
            plane.read_federated_quota(ns, split_key(ns)[1], ref.name, ref.member, resource)
        except KarmadaObjectMissing as missing:
            problems.append(f"{missing} (policy: {resource} of {ns})")
        except GpuQuotaError as error:
            return problems + [f"cannot read the Karmada plane: {error}"]
    return problems


def cluster_queue_problems(kueue: KueueQuotas, policy: Policy, *, cluster: str = HOME) -> list[str]:
    """What is wrong with the ClusterQueues the policy keeps quota in, in ``cluster``: Kueue missing, a queue, a
    flavor or a resource missing, or a borrowingLimit to move on a queue without a cohort (Kueue refuses one there)."""
    targets = [(ns, resource, ref) for ns, resource, ref in policy.cluster_queues() if cluster_of(ns) == cluster]
    if not targets:
        return []
    if kueue.api_version() is None:
        queues = ", ".join(sorted({ref.name for _, _, ref in targets}))
        return [
            f"Kueue is not installed (the cluster serves no kueue.x-k8s.io) but the policy keeps quota in ClusterQueues {queues}"
        ]
    problems = []
    for namespace, resource, ref in targets:
        where = f"(policy: {resource} of {namespace})"
        try:
            queue = kueue.read_cluster_queue(namespace, ref.name, ref.flavor, resource)
        except KueueObjectMissing as missing:
            present = ", ".join(sorted(missing.present))
            problems.append(
                {
                    KueuePart.KUEUE: f"Kueue serves no version the bot speaks {where}; it serves {present or 'none'}",
                    KueuePart.CLUSTER_QUEUE: f"ClusterQueue {ref.name} {where} does not exist in the cluster",
                    KueuePart.FLAVOR: f"ClusterQueue {ref.name} has no flavor {ref.flavor} {where}; it has {present or 'none'}",
                    KueuePart.RESOURCE: f"ClusterQueue {ref.name} flavor {ref.flavor} has no quota of {resource} {where};"
                    f" it lists {present or 'nothing'}",
                }[missing.missing]
            )
            continue
        if ref.adjust_borrowing_limit and queue.cohort is None:
            problems.append(
                f"ClusterQueue {ref.name} is in no cohort, so it has no borrowingLimit to move {where}: set adjust_borrowing_limit: false"
            )
    return problems


def _slack(settings: Settings, policy: Policy, out: Callable[[str], None]) -> list[str]:
    if settings.slack_bot_token is None:
        out("skipped the Slack users, groups and channels: SLACK_BOT_TOKEN is not set")
        return []
    client = slack_client(settings.slack_bot_token.get_secret_value(), base_url=settings.slack_api_url)
    try:
        slack_call("check SLACK_BOT_TOKEN", client.auth_test)
    except GpuQuotaError as error:
        return [f"SLACK_BOT_TOKEN: {error}"]
    problems = []
    users = set(policy.admins.users)
    groups = set(policy.admins.usergroups)
    channels = {policy.admin_channel} if policy.admin_channel else set()
    for team in policy.teams.values():
        channels.add(team.channel)
        for people in (team.members, team.approvers, team.owners):
            users |= people.users
            groups |= people.usergroups
    for user in sorted(users):
        problems.extend(_exists(partial(client.users_info, user=user), f"user {user}", deleted_key="user"))
    for group in sorted(groups):
        problems.extend(_exists(partial(client.usergroups_users_list, usergroup=group), f"user group {group}"))
    for channel in sorted(channels):
        problems.extend(_channel(client, channel))
    return problems


def _exists(call: Callable[[], Any], what: str, *, deleted_key: str | None = None) -> list[str]:
    try:
        response = slack_call(f"look up the {what}", call)
    except GpuQuotaError as error:
        return [f"{what} (policy): {error}"]
    if deleted_key and (response.get(deleted_key) or {}).get("deleted"):
        return [f"{what} (policy) is deactivated in Slack"]
    return []


def _channel(client: WebClient, channel: str) -> list[str]:
    try:
        response = slack_call(f"look up the channel {channel}", lambda: client.conversations_info(channel=channel))
    except GpuQuotaError as error:
        return [f"channel {channel} (policy): {error}"]
    info = response.get("channel") or {}
    if not info.get("is_member", False):
        return [f"channel {channel} (policy): the bot is not a member; /invite it there"]
    return []


def _mail(settings: Settings, policy: Policy, out: Callable[[str], None], *, login: bool) -> list[str]:
    """Mail for the teams that list ``budget.mail``: SMTP_URL set and complete; with ``login``, the server lets the
    bot in (connected, secured, logged in, then quit: no mail is sent)."""
    listed = sorted(team.name for team in policy.teams.values() if team.budget is not None and team.budget.mail)
    server = settings.smtp_server()
    if server is None:
        problems = settings.mail_problems()
        if listed:
            problems.append(f"teams {', '.join(listed)} list budget.mail but SMTP_URL is not set: no mail would be sent")
        else:
            out("skipped mail: SMTP_URL is not set and no team lists budget.mail")
        return problems
    problems = settings.mail_problems()
    if not listed:
        out("warning: SMTP_URL is set but no team lists budget.mail: the bot sends no mail")
    if not login:
        out(f"mail through {server.where} as {server.sender} (not tried: --smtp-login logs in without sending)")
        return problems
    if problems:
        return problems
    mailer = connect_mail(server, policy)
    assert mailer is not None
    try:
        mailer.check_login()
    except GpuQuotaError as error:
        return [f"SMTP_URL: {error}"]
    out(f"mail server {server.where}: " + (f"logged in as {server.user}" if server.user else "connected (no login asked)"))
    return problems


def _prometheus(settings: Settings, policy: Policy, out: Callable[[str], None]) -> list[str]:
    problems = _cluster_metrics(settings, policy)
    if not settings.prometheus_url:
        out("skipped Prometheus: PROMETHEUS_URL is not set (no digests, budgets or idle nudges)")
        return problems
    metrics = connect_metrics(settings, policy)
    assert metrics is not None
    try:
        present = metrics.series_present(
            ["kube_pod_status_phase", "kube_pod_container_resource_requests", "DCGM_FI_DEV_GPU_UTIL"]
        )
        intervals = interval_problems(metrics, policy, datetime.now(timezone.utc))
        capacity = capacity_problems(metrics, policy, datetime.now(timezone.utc))
    except GpuQuotaError as error:
        return [*problems, f"PROMETHEUS_URL: {error}"]
    return (
        problems
        + intervals
        + capacity
        + [
            f"Prometheus has no {name} series: is {source} scraped?"
            for name, source in (
                ("kube_pod_status_phase", "kube-state-metrics"),
                ("kube_pod_container_resource_requests", "kube-state-metrics"),
                ("DCGM_FI_DEV_GPU_UTIL", "the NVIDIA DCGM exporter"),
            )
            if not present.get(name)
        ]
    )


def _cluster_metrics(settings: Settings, policy: Policy) -> list[str]:
    """With clusters: each cluster's metrics over the last hour (a cluster label a shared Prometheus lacks, a
    cluster's own Prometheus that does not answer, a cluster with none), one line each."""
    if not policy.clusters:
        return []
    metrics = connect_cluster_metrics(settings, policy)
    if not isinstance(metrics, ClusterCoverage):
        return []
    names = {part: policy.cluster_label(part) for part in policy.cluster_names()}
    try:
        return label_problems(metrics, at=datetime.now(timezone.utc), names=names)
    except GpuQuotaError as error:
        return [f"the clusters' Prometheus: {error}"]


EXPORTERS = {"ksm": "kube-state-metrics", "dcgm": "the DCGM exporter"}


def capacity_problems(metrics: PrometheusMetrics, policy: Policy, at: datetime) -> list[str]:
    """What the nodes' labels in ``kube_node_labels`` (the hour before ``at``) say against the price list: each
    capacity-type value the bot does not know, once (its nodes are priced on-demand), each pool label value
    ``pricing.pools`` does not price, once (priced by capacity type), and, when prices depend on the node, labels
    that kube-state-metrics does not export (everything is then priced on-demand)."""
    facts = metrics.node_label_facts(at)
    pricing = policy.pricing
    flag = allowlist_flag(pricing.pool_label)
    lines = [
        tr(
            "node label {label}={value} is not a capacity type the bot knows: those nodes' GPU-hours are priced on-demand",
            label=label,
            value=value,
        )
        for label, value in facts.unknown_values
    ]
    lines += [
        tr(
            "node label {label}={value} is not in pricing.pools: those nodes' GPU-hours are priced by their capacity type",
            label=pricing.pool_label,
            value=value,
        )
        for value in facts.unpriced_pools
    ]
    if pricing.by_node and facts.state == SplitState.NO_NODE_LABELS:
        lines.append(
            tr(
                "Prometheus has no {metric} series: spot, on-demand and pools are not told apart (every GPU-hour is"
                " priced on-demand); enable kube-state-metrics' nodes metrics with {flag}",
                flag=flag,
                metric="kube_node_labels",
            )
        )
    elif pricing.by_node and facts.state == SplitState.NO_CAPACITY_LABELS:
        lines.append(
            tr(
                "{metric} carries none of the capacity-type or pool labels: every GPU-hour is priced on-demand;"
                " start kube-state-metrics with {flag}",
                flag=flag,
                metric="kube_node_labels",
            )
        )
    return lines


def interval_problems(metrics: PrometheusMetrics, policy: Policy, at: datetime) -> list[str]:
    """Where the sample spacing Prometheus holds for the last hour differs from ``metrics.sample_interval``.
    The bot measures and uses the real spacing; the configured one is its fallback (and the idle
    nudges' sample count), so a mismatch is worth fixing."""
    configured = policy.metrics.sample_interval.total_seconds()
    window = Window(at.date(), at - timedelta(hours=1), at)
    measured = metrics.sample_spacing([window])[window.day]
    return [
        f"metrics.sample_interval is {configured:g}s but {EXPORTERS[name]} samples every {seconds:g}s in Prometheus"
        for name, seconds in measured.items()
        if name in EXPORTERS and abs(seconds - configured) > 0.03 * configured
    ]
