"""The doctor's Prometheus side against a real Prometheus that scrapes: exporters served on loopback (DCGM-like and
kube-state-metrics-like series), one DCGM target on a closed port. The targets API is parsed (health, lastError,
scrapeInterval), the series and the namespace label they carry are found, and the checks judge them."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
import requests

from bot.adapters.metrics_clusters import ClusterMetrics
from bot.adapters.prometheus import PrometheusMetrics
from bot.domain.clusters import HOME
from bot.domain.stack_health import Check, Fix, Status
from bot.errors import PermanentError, TemporaryError
from bot.sandbox.httpserver import Incoming, LoopbackServer, Outgoing
from tests.prometheus_server import PrometheusServer, binaries_available
from tests.unit.conftest import POLICY, make_world
from tests.unit.test_doctor import doctor

pytestmark = pytest.mark.skipif(not binaries_available(), reason="needs the prometheus binary")

DCGM = """\
# TYPE DCGM_FI_DEV_GPU_UTIL gauge
DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-1",modelName="NVIDIA A100-SXM4-80GB",Hostname="gpu-node-1",namespace="ai-frontier-research",pod="train-0",container="main"} 87
# TYPE DCGM_FI_PROF_GR_ENGINE_ACTIVE gauge
DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="0",UUID="GPU-1",modelName="NVIDIA A100-SXM4-80GB",Hostname="gpu-node-1",namespace="ai-frontier-research",pod="train-0",container="main"} 0.81
"""
KSM = """\
# TYPE kube_pod_container_resource_requests gauge
kube_pod_container_resource_requests{namespace="ai-frontier-research",pod="train-0",uid="u1",container="main",node="gpu-node-1",resource="nvidia_com_gpu",unit="integer"} 2
"""


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def exporters(incoming: Incoming) -> Outgoing:
    text = {"/dcgm": DCGM, "/ksm": KSM}.get(incoming.path)
    return Outgoing(200, text.encode(), {"Content-Type": "text/plain; version=0.0.4"}) if text else Outgoing(404)


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusServer]:
    served = LoopbackServer(exporters).start()
    address = served.url.removeprefix("http://")
    down = f"127.0.0.1:{closed_port()}"
    # The DCGM job's targets carry a namespace label (as Kubernetes service discovery gives them): behind
    # honor_labels false the pod's namespace arrives as exported_namespace. kube-state-metrics keeps its own.
    # Timeouts are generous: a scrape that fails on a busy machine would mark the series stale.
    config = f"""\
global:
  scrape_interval: 5s
  scrape_timeout: 4s
scrape_configs:
  - job_name: nvidia-dcgm-exporter
    metrics_path: /dcgm
    static_configs:
      - targets: ["{address}", "{down}"]
        labels: {{namespace: gpu-operator}}
  - job_name: kube-state-metrics
    honor_labels: true
    scrape_interval: 10s
    scrape_timeout: 8s
    metrics_path: /ksm
    static_configs:
      - targets: ["{address}"]
"""
    server = PrometheusServer(tmp_path_factory.mktemp("prometheus-doctor")).start(config_text=config)
    _wait_for_first_scrapes(server.url)
    yield server
    server.stop()
    served.stop()


def _wait_for_first_scrapes(url: str) -> None:
    """Until every target has been scraped once and the series are queryable (readiness, not a measure)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        targets = requests.get(f"{url}/api/v1/targets", params={"state": "active"}, timeout=5).json()["data"]["activeTargets"]
        query = "count(kube_pod_container_resource_requests) and on () count(DCGM_FI_DEV_GPU_UTIL)"
        found = requests.get(f"{url}/api/v1/query", params={"query": query}, timeout=5)
        if len(targets) == 3 and all(t["health"] != "unknown" for t in targets) and found.json()["data"]["result"]:
            return
        time.sleep(0.5)
    raise RuntimeError("Prometheus did not scrape its targets")


def source(url: str, cluster: str = HOME) -> PrometheusMetrics:
    return PrometheusMetrics.connect(url, interval=timedelta(seconds=30), idle_threshold=0.05, timeout=5, cluster=cluster)


def test_the_targets_api_is_read_with_health_last_error_and_interval(prometheus: PrometheusServer) -> None:
    targets = sorted(source(prometheus.url).targets(), key=lambda t: (t.job, t.health))
    assert [(t.pool, t.job, t.health, t.interval_seconds) for t in targets] == [
        ("kube-state-metrics", "kube-state-metrics", "up", 10.0),
        ("nvidia-dcgm-exporter", "nvidia-dcgm-exporter", "down", 5.0),
        ("nvidia-dcgm-exporter", "nvidia-dcgm-exporter", "up", 5.0),
    ]
    assert "connection refused" in targets[1].last_error and targets[1].url.endswith("/dcgm")
    assert targets[2].last_error == ""


def test_series_present_and_the_namespace_labels_they_carry(prometheus: PrometheusServer) -> None:
    series = source(prometheus.url).series(
        ["DCGM_FI_DEV_GPU_UTIL", "kube_pod_container_resource_requests", "DCGM_FI_DEV_NOT_A_METRIC"],
        labels=("namespace", "exported_namespace"),
    )
    assert series["DCGM_FI_DEV_GPU_UTIL"].present
    assert series["DCGM_FI_DEV_GPU_UTIL"].labels == ("namespace", "exported_namespace")
    assert series["kube_pod_container_resource_requests"].labels == ("namespace",)  # honor_labels: its own
    assert not series["DCGM_FI_DEV_NOT_A_METRIC"].present


def test_the_doctor_judges_what_prometheus_answers(prometheus: PrometheusServer) -> None:
    world = make_world(POLICY)
    checkup = doctor(world, None, source(prometheus.url)).examine()  # type: ignore[arg-type]
    found = {r.check: (r.status, r.fix) for r in checkup.results}
    assert found[Check.DCGM_TARGET] == (Status.WARNING, Fix.REPAIR_TARGET)  # one of two DCGM targets down
    assert found[Check.KSM_TARGET] == (Status.WARNING, Fix.SET_SAMPLE_INTERVAL)  # 10s, the policy says 30s
    assert found[Check.DCGM_SERIES] == (Status.OK, None)
    assert found[Check.PROFILING_SERIES] == (Status.OK, None)
    assert found[Check.KSM_SERIES] == (Status.OK, None)


def test_several_prometheus_answer_for_their_own_cluster_and_a_cluster_none_holds_is_said(prometheus: PrometheusServer) -> None:
    metrics = ClusterMetrics(
        [source(prometheus.url), source(prometheus.url, cluster="us-2")],
        names={HOME: "eu-1", "us-2": "us-2", "ap-3": "ap-3"},
        unread={"ap-3": "no Prometheus for cluster ap-3: set clusters.ap-3.prometheus_url or PROMETHEUS_URL"},
    )
    assert len(metrics.targets("us-2")) == 3
    assert metrics.series(["DCGM_FI_DEV_GPU_UTIL"], cluster="us-2")["DCGM_FI_DEV_GPU_UTIL"].present
    with pytest.raises(PermanentError, match="no Prometheus for cluster ap-3"):
        metrics.targets("ap-3")


def test_a_prometheus_that_does_not_answer_is_a_temporary_error(tmp_path: Path) -> None:
    with pytest.raises(TemporaryError):
        source(f"http://127.0.0.1:{closed_port()}").targets()
