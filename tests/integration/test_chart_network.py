"""The chart's Slack mode and NetworkPolicy, rendered by the real helm: ``socketMode`` decides the mode
the pod runs in, and the NetworkPolicy (on by default) admits the metrics scraper and, in HTTP mode
only, the ingress controller. The policy is checked against the Kubernetes 1.30 schema and then
evaluated the way the NetworkPolicy API defines it (peers: podSelector AND namespaceSelector; no
namespaceSelector means the policy's own namespace; rules are ORed)."""

from __future__ import annotations

import subprocess
from typing import Any

import kubernetes_validate
import pytest

from tests.integration.test_chart import CHART, KUBERNETES, helm, of, render

NAMESPACE = "gpu-system"  # what render() installs into


def the_policy(*sets: str) -> dict[str, Any]:
    policies = of(render(*sets), "NetworkPolicy")
    assert len(policies) == 1
    kubernetes_validate.validate(policies[0], KUBERNETES, strict=True)
    return policies[0]


def _selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    assert set(selector) <= {"matchLabels"}, "the evaluator only knows matchLabels"
    return all(labels.get(key) == value for key, value in (selector.get("matchLabels") or {}).items())


def admits(
    policy: dict[str, Any], *, namespace: str, pod: dict[str, str], port: str = "http", labels: dict[str, str] | None = None
) -> bool:
    """Would ``policy`` let a pod with labels ``pod`` in ``namespace`` (with ``labels``) connect to the bot's ``port``?"""
    spec = policy["spec"]
    assert "Ingress" in spec["policyTypes"]
    namespace_labels = {**(labels or {}), "kubernetes.io/metadata.name": namespace}  # the API server sets the name label
    for rule in spec.get("ingress") or []:
        if rule.get("ports") and not any(p["port"] == port for p in rule["ports"]):
            continue
        for peer in rule.get("from") or []:
            if "namespaceSelector" in peer:
                in_namespace = _selects(peer["namespaceSelector"], namespace_labels)
            else:
                in_namespace = namespace == policy["metadata"]["namespace"]
            if in_namespace and _selects(peer.get("podSelector", {}), pod):
                return True
    return False


PROMETHEUS = {"app.kubernetes.io/name": "prometheus", "prometheus": "k8s"}
INGRESS_NGINX = {"app.kubernetes.io/name": "ingress-nginx", "app.kubernetes.io/component": "controller"}


@pytest.mark.helm
def test_by_default_only_the_metrics_scraper_may_connect() -> None:
    objects = render()
    policy = the_policy()
    pod_labels = of(objects, "Deployment")[0]["spec"]["template"]["metadata"]["labels"]
    assert _selects(policy["spec"]["podSelector"], pod_labels)  # it applies to the bot's pods
    assert policy["spec"]["policyTypes"] == ["Ingress"]  # egress left open
    assert admits(policy, namespace="monitoring", pod=PROMETHEUS)
    assert not admits(policy, namespace="monitoring", pod=PROMETHEUS, port="other")
    assert not admits(policy, namespace="ingress-nginx", pod=INGRESS_NGINX)  # Socket Mode: nothing to route to
    assert not admits(policy, namespace="ai-frontier-research", pod={"app": "notebook"})  # a team's pod
    assert not admits(policy, namespace="ai-frontier-research", pod=PROMETHEUS)  # the label alone is not enough
    assert not admits(policy, namespace=NAMESPACE, pod={"app": "anything"})


@pytest.mark.helm
def test_http_mode_also_admits_the_ingress_controller() -> None:
    policy = the_policy("socketMode=false", "secret.create=true", "secret.slackBotToken=xoxb-1", "secret.slackSigningSecret=x1")
    assert admits(policy, namespace="ingress-nginx", pod=INGRESS_NGINX)
    assert admits(policy, namespace="monitoring", pod=PROMETHEUS)
    assert not admits(policy, namespace="ai-frontier-research", pod=INGRESS_NGINX)
    assert not admits(policy, namespace="ingress-nginx", pod={"app": "something-else"})


@pytest.mark.helm
def test_selectors_and_egress_are_configurable() -> None:
    policy = the_policy(
        "networkPolicy.metricsFrom[0].namespaceSelector.matchLabels.team=observability",
        "networkPolicy.metricsFrom[0].podSelector.matchLabels.app=vmagent",
        "networkPolicy.egress[0].ports[0].port=443",
    )
    assert admits(policy, namespace="obs", labels={"team": "observability"}, pod={"app": "vmagent"})
    assert not admits(policy, namespace="obs", pod={"app": "vmagent"})  # a namespace without team=observability
    assert not admits(policy, namespace="monitoring", pod=PROMETHEUS)  # the defaults were replaced
    assert policy["spec"]["policyTypes"] == ["Ingress", "Egress"]
    assert policy["spec"]["egress"] == [{"ports": [{"port": 443}]}]
    same_namespace = the_policy("networkPolicy.metricsFrom[0].podSelector.matchLabels.app\\.kubernetes\\.io/name=prometheus")
    assert admits(same_namespace, namespace=NAMESPACE, pod=PROMETHEUS)  # no namespaceSelector: the bot's namespace
    assert not admits(same_namespace, namespace="monitoring", pod=PROMETHEUS)


@pytest.mark.helm
@pytest.mark.parametrize(
    "sets", [["networkPolicy.metricsFrom=null"], ["socketMode=false", "networkPolicy.ingressControllerFrom=null"]]
)
def test_an_empty_peer_list_is_refused_as_it_would_admit_everyone(sets: list[str]) -> None:
    args = [helm(), "template", "gpu", str(CHART)] + [arg for value in sets for arg in ("--set", value)]
    result = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert result.returncode != 0 and "would admit every source" in result.stderr


@pytest.mark.helm
def test_network_policy_can_be_switched_off() -> None:
    assert not of(render("networkPolicy.enabled=false"), "NetworkPolicy")


@pytest.mark.helm
@pytest.mark.parametrize(("socket_mode", "expected"), [("true", "socket"), ("false", "http")])
def test_socket_mode_value_decides_the_pods_mode(socket_mode: str, expected: str) -> None:
    deployment = of(render(f"socketMode={socket_mode}"), "Deployment")[0]
    bot = deployment["spec"]["template"]["spec"]["containers"][0]
    assert {"name": "SLACK_MODE", "value": expected} in bot["env"]
