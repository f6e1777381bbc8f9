"""The Helm chart, rendered by the real helm: lint clean, every object valid against the Kubernetes
1.30 OpenAPI schemas, RBAC exactly what the code calls, the hardening the issue asks for."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

ROOT = Path(__file__).parents[2]
CHART = ROOT / "deploy" / "helm" / "gpu-quota-bot"
KUBERNETES = "1.30.0"
CRDS = {"ServiceMonitor", "PrometheusRule"}  # Prometheus Operator kinds: not in the core schemas

NON_DEFAULT = [
    "replicaCount=3",
    "database.external=true",
    "socketMode=false",
    "secret.create=true",
    "secret.name=bot-tokens",
    "secret.slackBotToken=xoxb-1",
    "secret.slackSigningSecret=s3cret",
    "secret.databaseUrl=postgresql://bot@db/bot",
    "serviceMonitor.enabled=true",
    "prometheusRule.enabled=true",
    "env.PROMETHEUS_URL=http://prometheus:9090",
    "service.type=NodePort",
    "image.tag=1.2.3",
]


def helm() -> str:
    found = shutil.which("helm") or str(ROOT / ".tools" / "bin" / "helm")
    if not Path(found).exists():
        pytest.fail("helm is missing: ./scripts/test puts it in .tools/bin (scripts/tools)")
    return found


def render(*sets: str, values: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The chart's objects; ``values`` is merged into values.yaml (``-f -``: a list replaces a list), then ``sets``."""
    args = [helm(), "template", "gpu", str(CHART), "--namespace", "gpu-system"] + (["-f", "-"] if values else [])
    for value in sets:
        args += ["--set", value]
    stdin = yaml.safe_dump(values) if values else None
    result = subprocess.run(args, input=stdin, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def of(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == kind]


@pytest.mark.helm
def test_lint_is_clean() -> None:
    result = subprocess.run([helm(), "lint", str(CHART), "--strict"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "[ERROR]" not in result.stdout and "[WARNING]" not in result.stdout


# Merged into values.yaml's example policy: the frontier team's namespace keeps its GPUs in a Kueue ClusterQueue.
ONE_CLUSTER_QUEUE = {
    "policy": {
        "teams": {
            "frontier": {
                "namespaces": [
                    {
                        "name": "ai-frontier-batch",
                        "resources": [{"name": "nvidia.com/gpu", "cluster_queue": {"name": "frontier-batch", "flavor": "a100"}}],
                    }
                ]
            }
        }
    }
}


@pytest.mark.helm
@pytest.mark.parametrize(
    ("sets", "values"),
    [
        ([], None),
        (NON_DEFAULT, None),
        (["rbac.clusterWideWrites=true", "serviceAccount.name=custom"], None),
        ([], ONE_CLUSTER_QUEUE),
        (["rbac.clusterWideWrites=true"], ONE_CLUSTER_QUEUE),
    ],
    ids=["default", "production", "cluster-wide", "kueue", "kueue-cluster-wide"],
)
def test_every_object_is_valid_kubernetes(sets: list[str], values: dict[str, Any] | None) -> None:
    objects = render(*sets, values=values)
    assert objects
    for obj in objects:
        if obj["kind"] in CRDS:
            assert obj["apiVersion"] == "monitoring.coreos.com/v1" and obj["spec"]
            continue
        kubernetes_validate.validate(obj, KUBERNETES, strict=True)


# Every client call in bot/adapters/kube.py, and the grant it needs (resources of the core group unless named).
GRANTS = {
    "read_namespaced_resource_quota": ("resourcequotas", "get"),
    "create_namespaced_resource_quota": ("resourcequotas", "create"),
    "patch_namespaced_resource_quota": ("resourcequotas", "patch"),
    "list_resource_quota_for_all_namespaces": ("resourcequotas", "list"),
    "read_namespace": ("namespaces", "get"),
    "list_node": ("nodes", "list"),
    "list_event_for_all_namespaces": ("events", "list"),
    "list_namespaced_pod": ("pods", "list"),
    "list_priority_class": ("scheduling.k8s.io/priorityclasses", "list"),
}


def grants_the_code_needs() -> set[tuple[str, str]]:
    calls = set(re.findall(r"self\._(?:core|scheduling)\.(\w+)\(", (ROOT / "bot" / "adapters" / "kube.py").read_text()))
    unknown = calls - set(GRANTS)
    assert not unknown, f"new Kubernetes calls need a grant in the chart and in GRANTS: {unknown}"
    return {GRANTS[call] for call in calls}


def granted(objects: list[dict[str, Any]]) -> set[tuple[str, str]]:
    rules = [rule for o in objects if o["kind"] in ("ClusterRole", "Role") for rule in o["rules"]]
    assert all(len(rule["apiGroups"]) == 1 for rule in rules)
    return {
        ("/".join(filter(None, (rule["apiGroups"][0], resource))), verb)
        for rule in rules
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


# Every call of KueueCalls (bot/adapters/kueue.py, through ``self._calls``), and the grant it needs; None: none,
# as discovery (GET /apis/kueue.x-k8s.io) is allowed to every authenticated user by the default
# system:discovery ClusterRole. A dry run (dryRun=All) is the same verb as the write.
KUEUE_GRANTS: dict[str, tuple[str, str] | None] = {
    "get_kueue_group": None,
    "get_cluster_queue": ("kueue.x-k8s.io/clusterqueues", "get"),
    "patch_cluster_queue": ("kueue.x-k8s.io/clusterqueues", "patch"),
    "list_workloads": ("kueue.x-k8s.io/workloads", "list"),
    # On the Karmada plane, another API server: its Role is made there (docs/clusters.md), not by this chart.
    "get_policy_group": None,
    "get_federated_quota": None,
    "patch_federated_quota": None,
    # bot/adapters/inspect.py: every read a GET of its own path, named by the permission it needs (INSPECT_GRANTS).
    "get_raw": None,
}
# Every permission bot/adapters/inspect.py names (what a refusal says to grant), and the grant it is.
INSPECT_GRANTS = {
    "get pods -n {namespace}": ("pods", "get"),
    "get jobs.batch -n {namespace}": ("batch/jobs", "get"),
    "get deployments.apps -n {namespace}": ("apps/deployments", "get"),
    "get statefulsets.apps -n {namespace}": ("apps/statefulsets", "get"),
    "get workloads.{KUEUE_GROUP} -n {namespace}": ("kueue.x-k8s.io/workloads", "get"),
    "list pods -n {namespace}": ("pods", "list"),
    "list nodes": ("nodes", "list"),
    "list pods -A": ("pods", "list"),
    "list events -n {namespace}": ("events", "list"),
    "list priorityclasses.scheduling.k8s.io": ("scheduling.k8s.io/priorityclasses", "list"),
    "get configmaps/{AUTOSCALER_STATUS} -n {AUTOSCALER_NAMESPACE}": ("configmaps", "get"),
    "list daemonsets.apps": ("apps/daemonsets", "list"),
}


def inspect_grants(*, kueue: bool) -> set[tuple[str, str]]:
    """What the inspector's reads need (Workloads only with Kueue), after checking it names no other permission."""
    named = set(re.findall(r'f?"((?:get|list) [^"]*)"', (ROOT / "bot" / "adapters" / "inspect.py").read_text()))
    assert named == set(INSPECT_GRANTS), (
        f"a new read of the inspector needs a grant in the chart and in INSPECT_GRANTS: {named ^ set(INSPECT_GRANTS)}"
    )
    return {grant for grant in INSPECT_GRANTS.values() if kueue or not grant[0].startswith("kueue")}


def kueue_grants() -> set[tuple[str, str]]:
    """What the Kueue calls need, after checking that every ``self._calls`` call of bot/adapters has its entry."""
    calls = {
        call
        for path in (ROOT / "bot" / "adapters").rglob("*.py")
        for call in re.findall(r"self\._calls\.(\w+)", path.read_text())
    }
    unknown = calls - set(KUEUE_GRANTS)
    assert not unknown, f"new Kueue calls need a grant in the chart and in KUEUE_GRANTS: {unknown}"
    return {grant for grant in KUEUE_GRANTS.values() if grant is not None}


@pytest.mark.helm
@pytest.mark.parametrize("sets", [[], ["rbac.clusterWideWrites=true"]])
def test_rbac_is_exactly_what_the_code_calls(sets: list[str]) -> None:
    assert granted(render(*sets)) == grants_the_code_needs() | inspect_grants(kueue=False)
    assert granted(render(*sets, values=ONE_CLUSTER_QUEUE)) == grants_the_code_needs() | kueue_grants() | inspect_grants(
        kueue=True
    )


@pytest.mark.helm
def test_writes_are_limited_to_the_managed_namespaces() -> None:
    objects = render()
    cluster_verbs = {verb for o in of(objects, "ClusterRole") for rule in o["rules"] for verb in rule["verbs"]}
    assert cluster_verbs == {"get", "list"} and not {"create", "patch"} & cluster_verbs
    roles = [r for r in of(objects, "Role") if r["metadata"]["namespace"] != "kube-system"]
    assert sorted(r["metadata"]["namespace"] for r in roles) == ["ai-frontier-research", "biz-model-serving"]
    assert all(
        r["rules"]
        == [
            {"apiGroups": [""], "resources": ["resourcequotas"], "verbs": ["get", "create", "patch"]},
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]},
            {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["get"]},
            {"apiGroups": ["apps"], "resources": ["deployments", "statefulsets"], "verbs": ["get"]},
        ]
        for r in roles
    )
    # Pods are listed cluster-wide, read-only: a node's free GPUs are what the pods of every namespace leave.
    pod_rules = [rule for o in of(objects, "ClusterRole") for rule in o["rules"] if "pods" in rule["resources"]]
    assert pod_rules == [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}]
    bindings = of(objects, "RoleBinding") + of(objects, "ClusterRoleBinding")
    assert {(b["subjects"][0]["name"], b["subjects"][0]["namespace"]) for b in bindings} == {("gpu-gpu-quota-bot", "gpu-system")}


AUTOSCALER_STATUS = {
    "apiGroups": [""],
    "resources": ["configmaps"],
    "resourceNames": ["cluster-autoscaler-status"],
    "verbs": ["get"],
}


@pytest.mark.helm
@pytest.mark.parametrize("sets", [[], ["rbac.clusterWideWrites=true"]], ids=["roles", "cluster-wide-writes"])
def test_the_autoscaler_status_is_read_by_name_in_kube_system_only(sets: list[str]) -> None:
    objects = render(*sets)
    configmap_rules = [
        (o["kind"], o["metadata"].get("namespace"), rule)
        for o in objects
        if o["kind"] in ("Role", "ClusterRole")
        for rule in o["rules"]
        if "configmaps" in rule["resources"]
    ]
    assert configmap_rules == [("Role", "kube-system", AUTOSCALER_STATUS)]
    (binding,) = [b for b in of(objects, "RoleBinding") if b["metadata"]["namespace"] == "kube-system"]
    assert binding["roleRef"]["name"] == "gpu-gpu-quota-bot-autoscaler-status"


@pytest.mark.helm
def test_the_pod_is_hardened_and_probed() -> None:
    deployment = of(render(), "Deployment")[0]
    pod = deployment["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    containers = pod["initContainers"] + pod["containers"]
    for container in containers:
        assert container["securityContext"] == {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        }
        assert {"name": "tmp", "mountPath": "/tmp"} in container["volumeMounts"]
    bot = pod["containers"][0]
    assert bot["args"] == ["run"] and bot["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert bot["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert pod["initContainers"][0]["args"] == ["db", "upgrade"]  # migrations before the new version serves
    assert bot["resources"]["limits"]["memory"]


@pytest.mark.helm
def test_production_values() -> None:
    objects = render(*NON_DEFAULT)
    deployment = of(objects, "Deployment")[0]
    assert deployment["spec"]["replicas"] == 3 and deployment["spec"]["strategy"]["type"] == "RollingUpdate"
    assert not of(objects, "PersistentVolumeClaim")
    bot = deployment["spec"]["template"]["spec"]["containers"][0]
    assert {"secretRef": {"name": "bot-tokens"}} in bot["envFrom"]
    assert {"name": "PROMETHEUS_URL", "value": "http://prometheus:9090"} in bot["env"]
    assert bot["image"] == "ghcr.io/example/gpu-quota-bot:1.2.3"
    secret = of(objects, "Secret")[0]
    assert secret["metadata"]["name"] == "bot-tokens" and secret["stringData"]["SLACK_SIGNING_SECRET"] == "s3cret"
    assert of(objects, "ServiceMonitor")[0]["spec"]["endpoints"][0]["path"] == "/metrics"
    rules = of(objects, "PrometheusRule")[0]["spec"]["groups"][0]["rules"]
    assert {r["alert"] for r in rules} >= {"GpuQuotaBotDown", "GpuQuotaApplyFailures", "GpuQuotaJobFailing"}


@pytest.mark.helm
def test_the_mail_server_is_an_env_value_and_its_password_a_secret_key() -> None:
    url = "smtp://gpu-bot%40example.com@smtp.example.com:587?from=gpu-bot@example.com"
    objects = render(
        values={
            "env": {"SMTP_URL": url},
            "secret": {"create": True, "slackBotToken": "xoxb-1", "smtpPassword": "p4ss", "slackAppToken": "xapp-1"},
        }
    )
    bot = of(objects, "Deployment")[0]["spec"]["template"]["spec"]["containers"][0]
    assert {"name": "SMTP_URL", "value": url} in bot["env"]
    assert all(entry["name"] != "SMTP_PASSWORD" for entry in bot["env"])  # never a plain env value
    assert of(objects, "Secret")[0]["stringData"]["SMTP_PASSWORD"] == "p4ss"
    assert all(
        entry["name"] != "SMTP_URL" for entry in of(render(), "Deployment")[0]["spec"]["template"]["spec"]["containers"][0]["env"]
    )


@pytest.mark.helm
def test_the_policy_values_become_the_configmap() -> None:
    objects = render("policy.teams.frontier.namespaces[0]=ns-one")
    policy = yaml.safe_load(of(objects, "ConfigMap")[0]["data"]["policy.yaml"])
    assert policy["teams"]["frontier"]["namespaces"] == ["ns-one"]
    assert "ns-one" in {r["metadata"]["namespace"] for r in of(objects, "Role")}


@pytest.mark.helm
@pytest.mark.parametrize(
    ("sets", "message"),
    [
        (["replicaCount=2"], "needs an external PostgreSQL"),
        (["secret.create=true"], "needs secret.slackBotToken"),
        (["secret.create=true", "secret.slackBotToken=xoxb-1"], "socketMode needs secret.slackAppToken"),
    ],
)
def test_unsafe_values_are_refused(sets: list[str], message: str) -> None:
    args = [helm(), "template", "gpu", str(CHART)] + [arg for value in sets for arg in ("--set", value)]
    result = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert result.returncode != 0 and message in result.stderr


def test_alert_rules_are_valid_prometheus_rules() -> None:
    if shutil.which("promtool") is None:
        pytest.fail("promtool is missing: ./scripts/test installs Debian's prometheus package")
    result = subprocess.run(
        ["promtool", "check", "rules", str(CHART / "files" / "alert-rules.yaml")], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_grafana_dashboard_is_current_and_uses_the_digests_queries() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("dashboard", ROOT / "scripts" / "dashboard.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    committed = (ROOT / "deploy" / "grafana-dashboard.json").read_text()
    assert committed == module.render(), "run: .venv/bin/python scripts/dashboard.py"
    from bot.adapters.prometheus import running_gpu_samples

    expressions = [t["expr"] for p in json.loads(committed)["panels"] for t in p.get("targets", [])]
    assert sum(running_gpu_samples(86400, by=("$cluster_label",)) in e for e in expressions) == 2
    variables = {v["name"]: v for v in json.loads(committed)["templating"]["list"]}
    assert variables["cluster"]["allValue"] == ".*" and variables["cluster_label"]["query"] == "cluster"


def refused(*sets: str) -> str:
    """The error helm prints for values the chart refuses."""
    args = [helm(), "template", "gpu", str(CHART)] + [arg for value in sets for arg in ("--set", value)]
    result = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert result.returncode != 0, "the chart rendered values it should refuse"
    return result.stderr


def notes(*sets: str) -> str:
    """NOTES.txt as `helm install` prints it (a client-side dry run: no cluster needed)."""
    args = [helm(), "install", "gpu", str(CHART), "--namespace", "gpu-system", "--dry-run=client"]
    for value in sets:
        args += ["--set", value]
    result = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout.split("NOTES:", 1)[1]


EXISTING = ["existingPolicyConfigMap=team-policy", "managedNamespaces={research-a,serving-b}"]


@pytest.mark.helm
def test_an_existing_policy_configmap_without_its_namespaces_is_refused() -> None:
    assert "existingPolicyConfigMap needs managedNamespaces" in refused("existingPolicyConfigMap=team-policy")


@pytest.mark.helm
def test_an_existing_policy_configmap_grants_writes_in_its_managed_namespaces_only() -> None:
    objects = render(*EXISTING)
    writers = [
        r for r in of(objects, "Role") if r["metadata"]["namespace"] != "kube-system"
    ]  # kube-system: the autoscaler status
    assert sorted(r["metadata"]["namespace"] for r in writers) == ["research-a", "serving-b"]
    assert sorted(b["metadata"]["namespace"] for b in of(objects, "RoleBinding")) == ["kube-system", "research-a", "serving-b"]
    assert not of(objects, "ConfigMap")  # the named one is used, the inline example policy is not rendered
    pod = of(objects, "Deployment")[0]["spec"]["template"]["spec"]
    assert {"name": "policy", "configMap": {"name": "team-policy"}} in pod["volumes"]
    assert "Managed namespaces: research-a, serving-b" in notes(*EXISTING)


def checksum(*sets: str) -> str:
    return of(render(*sets), "Deployment")[0]["spec"]["template"]["metadata"]["annotations"]["checksum/policy"]


@pytest.mark.helm
def test_the_policy_checksum_follows_the_policy_in_use() -> None:
    existing = checksum(*EXISTING)
    assert existing != checksum()  # not the inline example policy's
    assert checksum(*EXISTING, "policy.teams.frontier.channel=C0OTHER") == existing  # the inline policy is not in use
    assert checksum("existingPolicyConfigMap=team-policy", "managedNamespaces={research-a}") != existing
    assert checksum("existingPolicyConfigMap=other-policy", "managedNamespaces={research-a,serving-b}") != existing


@pytest.mark.helm
def test_managed_namespaces_without_an_existing_configmap_are_refused() -> None:
    # The inline policy names its own namespaces; a second list would silently disagree with it.
    assert "managedNamespaces is only read with existingPolicyConfigMap" in refused("managedNamespaces={x}")


HTTP_INGRESS = ["socketMode=false", "ingress.enabled=true", "ingress.host=gpu-bot.example.com", "ingress.className=nginx"]


@pytest.mark.helm
def test_http_mode_renders_an_ingress_to_the_slack_events_path_only() -> None:
    objects = render(*HTTP_INGRESS, "ingress.tlsSecretName=gpu-bot-tls")
    (ingress,) = of(objects, "Ingress")
    kubernetes_validate.validate(ingress, KUBERNETES, strict=True)
    assert ingress["spec"]["ingressClassName"] == "nginx"
    (rule,) = ingress["spec"]["rules"]
    assert rule["host"] == "gpu-bot.example.com"
    # Only Slack's path is public: /metrics, /healthz and /readyz stay inside the cluster.
    assert rule["http"]["paths"] == [
        {
            "path": "/slack/events",
            "pathType": "Exact",
            "backend": {"service": {"name": "gpu-gpu-quota-bot", "port": {"name": "http"}}},
        }
    ]
    assert ingress["spec"]["tls"] == [{"hosts": ["gpu-bot.example.com"], "secretName": "gpu-bot-tls"}]
    assert not of(render(), "Ingress")


@pytest.mark.helm
def test_an_ingress_in_socket_mode_or_without_a_host_is_refused() -> None:
    assert "ingress.enabled needs HTTP mode" in refused("ingress.enabled=true", "ingress.host=gpu-bot.example.com")
    assert "ingress.enabled needs ingress.host" in refused("socketMode=false", "ingress.enabled=true")


DIGEST = "sha256:" + "0123456789abcdef" * 4


@pytest.mark.helm
def test_the_image_reference_carries_the_digest() -> None:
    pod = of(render("image.tag=1.2.3", f"image.digest={DIGEST}"), "Deployment")[0]["spec"]["template"]["spec"]
    assert {c["image"] for c in pod["initContainers"] + pod["containers"]} == {f"ghcr.io/example/gpu-quota-bot:1.2.3@{DIGEST}"}
    assert "image.digest must look like sha256:" in refused("image.digest=1.2.3")


def test_the_base_image_is_pinned_by_tag_and_digest() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    pinned = re.search(r"^ARG PYTHON_IMAGE=python:3\.11-slim@sha256:[0-9a-f]{64}$", dockerfile, flags=re.MULTILINE)
    assert pinned, "the base image needs its tag and its digest"
    assert re.findall(r"^FROM (\S+)", dockerfile, flags=re.MULTILINE) == ["${PYTHON_IMAGE}", "${PYTHON_IMAGE}"]


# Merged into values.yaml's example policy: its two teams now name these namespaces (a list replaces a list).
TWO_NAMESPACES = {
    "policy": {
        "teams": {
            "frontier": {"namespaces": ["research-a"]},
            "business": {"namespaces": [{"name": "serving-b", "quota_name": "gpu"}]},
        },
    }
}


def namespace_rules(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        rule for o in objects if o["kind"] in ("ClusterRole", "Role") for rule in o["rules"] if "namespaces" in rule["resources"]
    ]


BY_NAME = {"apiGroups": [""], "resources": ["namespaces"], "resourceNames": ["research-a", "serving-b"], "verbs": ["get"]}
# clusterWideWrites is for namespaces that come and go (values.yaml): their reads follow the writes.
CLUSTER_WIDE = {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get"]}


@pytest.mark.helm
@pytest.mark.parametrize(
    ("sets", "rule"), [([], BY_NAME), (["rbac.clusterWideWrites=true"], CLUSTER_WIDE)], ids=["roles", "cluster-wide-writes"]
)
def test_namespaces_are_read_by_name_the_policys_only(sets: list[str], rule: dict[str, Any]) -> None:
    objects = render(*sets, values=TWO_NAMESPACES)
    policy = yaml.safe_load(of(objects, "ConfigMap")[0]["data"]["policy.yaml"])
    assert {name: team["namespaces"] for name, team in policy["teams"].items()} == {
        name: team["namespaces"] for name, team in TWO_NAMESPACES["policy"]["teams"].items()
    }
    # One rule: by name unless the writes are cluster-wide (an empty resourceNames would be every namespace).
    assert namespace_rules(objects) == [rule]


@pytest.mark.helm
def test_an_existing_policy_configmap_reads_its_managed_namespaces_by_name() -> None:
    assert namespace_rules(render(*EXISTING)) == [
        {"apiGroups": [""], "resources": ["namespaces"], "resourceNames": ["research-a", "serving-b"], "verbs": ["get"]}
    ]


def test_the_code_reads_namespaces_one_by_name_and_never_lists_them() -> None:
    """What the by-name grant rests on (a grep of the client calls; no RBAC-enforcing API server here):
    a ``list``/``watch`` cannot be limited by resourceNames. The only namespace read is ``read_namespace``
    (GET /api/v1/namespaces/{name}), made by ``namespace_exists`` alone: from ``_require_namespace``
    (a quota the bot reads or writes was not found) and from ``check-config`` for the policy's namespaces."""
    source = (ROOT / "bot" / "adapters" / "kube.py").read_text()
    paths = set(re.findall(r'"(/api[^"]*)"', source))
    assert {p for p in paths if re.fullmatch(r"/api/v1/namespaces(/\{\w+\})?", p)} == {"/api/v1/namespaces/{name}"}
    assert len(re.findall(r"\bread_namespace\(", source)) == 2  # KubeCalls' method and its one call
    assert len(re.findall(r"\bnamespace_exists\(", source)) == 2  # its definition and _require_namespace
    assert "watch" not in source.lower()
    callers = [
        line.strip()
        for package in ("bot", "handlers", "jobs")
        for path in (ROOT / package).rglob("*.py")
        if path.name != "kube.py"
        for line in path.read_text().splitlines()
        if "namespace_exists(" in line
    ]
    assert callers == [
        "missing = [key for key in keys if not cluster.namespace_exists(split_key(key)[1])]",  # check-config, other clusters
        "missing = [ns for ns in keys if not cluster.namespace_exists(ns)]",  # check-config, the home cluster
        "def namespace_exists(self, namespace: str) -> bool:",  # ClusterSet: routes the one read by name to its cluster
        "return self._call(cluster, lambda: self._kube[cluster].namespace_exists(bare), one_object=True)",
    ]


def test_the_deployment_docs_name_every_rules_file_for_a_prometheus_without_the_operator() -> None:
    """The PrometheusRule carries alert and recording rules; a plain Prometheus needs each file it reads."""
    template = (CHART / "templates" / "prometheusrule.yaml").read_text()
    files = re.findall(r'\.Files\.Get "files/([^"]+)"', template)
    assert sorted(files) == ["alert-rules.yaml", "recording-rules.yaml"]
    readme = re.sub(r"\s+", " ", (ROOT / "docs" / "deployment.md").read_text())
    at = readme.lower().index("prometheus without the operator")
    advice = readme[max(at - 200, 0) : at + 300]  # the sentence around it, either side
    assert [name for name in files if name not in advice] == [], advice
