"""Costs per resource against a real Prometheus (Debian's 2.42) holding MIG series, on SQLite and PostgreSQL
(issue 20): slices counted in slice-hours of their profile at their price, never added to GPUs, and the
whole GPUs' figures what they were.

Two days (1-2 November 2026, UTC) sampled every 5 minutes, as kube-state-metrics and two generations of the
DCGM exporter expose them:

- ``gpu-node``, an older exporter (``Hostname``): a whole A100 of ns-mixed, busy at 60 %, and a second A100 in
  MIG mode with a ``1g.10gb`` instance of ns-mig (2 Nov, 00:00-12:00) for which the exporter still writes
  ``DCGM_FI_DEV_GPU_UTIL`` as 0 while the profiling metric says 30 % (NVIDIA/dcgm-exporter#216);
- ``gpu-node-2``, a newer exporter (``hostname``, NVIDIA/dcgm-exporter#655): two whole H100s of ns-whole, and
  an idle one of ns-parked (outside the policy);
- ``mig-node``, a newer exporter behind a ServiceMonitor with ``honorLabels: false`` (``exported_namespace``):
  two A100s in MIG mode, with two ``3g.40gb`` instances of ns-mig (one busy, one idle at 1 %), a busy
  ``1g.10gb`` of ns-parked, one ``3g.40gb`` of ns-mixed, and of ns-whole a ``2g.20gb`` (a profile no namespace
  governs) and an instance whose profile label names no profile; MIG instances have no
  ``DCGM_FI_DEV_GPU_UTIL`` (only the profiling metric), ``GPU_I_PROFILE`` and ``GPU_I_ID``, and their parent's
  ``modelName``.

The 3g.40gb slice has no price of its own: 3/7 of the A100's 2.80, 1.20 a slice-hour; the 1g.10gb costs the
0.50 the policy lists.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import pytest

from bot.adapters.db.database import Database
from bot.adapters.db.migrate import upgrade
from bot.adapters.prometheus import PrometheusMetrics
from bot.adapters.slack.reports import digest_report
from bot.bootstrap import build_digest
from bot.clock import ManualClock
from bot.domain.costs import CostLine
from bot.domain.policy import Policy, parse_policy
from bot.domain.resources import GPU
from bot.ledger_cli import EXPORT_FIELDS
from bot.sandbox.history import A100, H100
from bot.services.ledger import Ledger, export_rows
from bot.services.spend import SpendReader
from tests.prometheus_server import PrometheusServer, binaries_available

UTC = timezone.utc
START, END = datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 11, 3, tzinfo=UTC)
NOON = datetime(2026, 11, 2, 12, tzinfo=UTC)
NOW = datetime(2026, 11, 3, 9, tzinfo=UTC)
STEP = timedelta(minutes=5)
DAYS = [date(2026, 11, 1), date(2026, 11, 2)]
MIG3, MIG1 = "nvidia.com/mig-3g.40gb", "nvidia.com/mig-1g.10gb"
GOVERNED = (GPU, MIG3, MIG1)

POLICY = {
    "schedules": {"timezone": "UTC"},
    "pricing": {"currency": "USD", "default_per_gpu_hour": 1.0, "models": {A100: 2.8, H100: 4.0}, "resources": {MIG1: 0.5}},
    "metrics": {"idle_threshold_percent": 5, "sample_interval": "5m"},
    "teams": {
        "research": {
            "display_name": "Research",
            "channel": "C0RESEARCH",
            "namespaces": ["ns-mig", "ns-mixed"],
            "approvers": {"users": ["U0LEE"]},
        },
        "serving": {
            "display_name": "Serving",
            "channel": "C0SERVING",
            "namespaces": ["ns-whole"],
            "approvers": {"users": ["U0MAYA"]},
        },
    },
}

# (namespace, pod, kube-state-metrics resource, node, start, end, [(DCGM labels, utilisation, writes GPU_UTIL)])
OLD, NEW = "Hostname", "hostname"
Device = tuple[dict[str, str], float, bool]


def gpu(node: str, host_label: str, index: int, model: str) -> dict[str, str]:
    return {"gpu": str(index), "UUID": f"GPU-{node}-{index}", "device": f"nvidia{index}", "modelName": model, host_label: node}


def mig(parent: dict[str, str], profile: str, instance: int) -> dict[str, str]:
    return {**parent, "GPU_I_PROFILE": profile, "GPU_I_ID": str(instance)}


A100_OLD, A100_OLD_MIG = gpu("gpu-node", OLD, 0, A100), gpu("gpu-node", OLD, 1, A100)
H100_NEW = [gpu("gpu-node-2", NEW, i, H100) for i in (0, 1)]
MIG_A, MIG_B = gpu("mig-node", NEW, 0, A100), gpu("mig-node", NEW, 1, A100)

PODS: list[tuple[str, str, str, str, datetime, datetime, list[Device]]] = [
    ("ns-mixed", "train", "nvidia_com_gpu", "gpu-node", START, END, [(A100_OLD, 0.6, True)]),
    (
        "ns-mig",
        "small",
        "nvidia_com_mig_1g_10gb",
        "gpu-node",
        datetime(2026, 11, 2, tzinfo=UTC),
        NOON,
        [(mig(A100_OLD_MIG, "1g.10gb", 7), 0.3, True)],
    ),
    ("ns-whole", "serve", "nvidia_com_gpu", "gpu-node-2", START, END, [(labels, 0.5, True) for labels in H100_NEW]),
    (
        "ns-mig",
        "sweep",
        "nvidia_com_mig_3g_40gb",
        "mig-node",
        START,
        END,
        [(mig(MIG_A, "3g.40gb", 1), 0.5, False), (mig(MIG_A, "3g.40gb", 2), 0.01, False)],
    ),
    ("ns-mixed", "eval", "nvidia_com_mig_3g_40gb", "mig-node", START, END, [(mig(MIG_B, "3g.40gb", 1), 0.4, False)]),
    # A profile no namespace governs, and a series whose profile label names none (NVIDIA/gpu-monitoring-tools#193).
    ("ns-whole", "stray", "nvidia_com_mig_2g_20gb", "mig-node", START, END, [(mig(MIG_B, "2g.20gb", 3), 0.5, False)]),
    ("ns-whole", "odd", "nvidia_com_mig_1g_5gb", "mig-node", START, END, [(mig(MIG_B, "<<<NULL>>>", 4), 0.5, False)]),
    # Outside the policy: an idle whole GPU beside a busy slice.
    ("ns-parked", "notebook", "nvidia_com_gpu", "gpu-node-2", START, END, [(gpu("gpu-node-2", NEW, 2, H100), 0.02, True)]),
    ("ns-parked", "worker", "nvidia_com_mig_1g_10gb", "mig-node", START, END, [(mig(MIG_A, "1g.10gb", 9), 0.7, False)]),
]


def openmetrics() -> str:
    """The pods as the exporters exposed them (every family's series together, as OpenMetrics wants)."""
    families: dict[str, list[str]] = {}

    def series(name: str, labels: dict[str, str], value: float, start: datetime, end: datetime) -> None:
        text = ",".join(f'{k}="{v}"' for k, v in labels.items())
        stamps = range(int(start.timestamp()), int(end.timestamp()), int(STEP.total_seconds()))
        families.setdefault(name, []).extend(f"{name}{{{text}}} {value:g} {stamp}" for stamp in stamps)

    for namespace, pod, resource, node, start, end, devices in PODS:
        owner = {"namespace": namespace, "pod": pod, "uid": f"uid-{pod}"}
        request = {**owner, "container": "main", "node": node, "resource": resource, "unit": "integer"}
        series("kube_pod_container_resource_requests", request, len(devices), start, end)
        series("kube_pod_status_phase", {**owner, "phase": "Running"}, 1.0, start, end)
        for labels, utilisation, gpu_util in devices:
            if node == "mig-node":  # scraped with honorLabels: false
                mapped = {
                    "namespace": "gpu-operator",
                    "pod": "dcgm-exporter-mig",
                    "exported_namespace": namespace,
                    "exported_pod": pod,
                }
            else:
                mapped = {"namespace": namespace, "pod": pod, "container": "main"}
            series("DCGM_FI_PROF_GR_ENGINE_ACTIVE", {**labels, **mapped}, utilisation, start, end)
            if gpu_util:  # an older exporter writes 0 for a MIG instance
                series(
                    "DCGM_FI_DEV_GPU_UTIL",
                    {**labels, **mapped},
                    0.0 if "GPU_I_PROFILE" in labels else utilisation * 100,
                    start,
                    end,
                )
    lines = [line for name, samples in families.items() for line in (f"# TYPE {name} gauge", *samples)]
    return "\n".join([*lines, "# EOF", ""])


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusServer]:
    if not binaries_available():
        pytest.fail("the prometheus and promtool binaries are missing: ./scripts/test installs Debian's prometheus package")
    server = PrometheusServer(tmp_path_factory.mktemp("prometheus"))
    server.add_openmetrics(openmetrics(), name="mig")
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def policy() -> Policy:
    return parse_policy(POLICY)


def metrics(prometheus: PrometheusServer, resources: tuple[str, ...] = GOVERNED) -> PrometheusMetrics:
    return PrometheusMetrics.connect(prometheus.url, interval=STEP, idle_threshold=0.05, resources=resources)


def day_lines(prometheus: PrometheusServer, policy: Policy, resources: tuple[str, ...] = GOVERNED) -> dict[str, CostLine]:
    spend = SpendReader(policy=policy, metrics=metrics(prometheus, resources)).month_through(DAYS[-1])
    return {line.namespace: line for line in spend.lines([DAYS[-1]])}


@pytest.mark.prometheus
def test_slices_are_counted_per_profile_at_their_price_and_never_as_gpus(
    prometheus: PrometheusServer, policy: Policy, caplog: pytest.LogCaptureFixture
) -> None:
    lines = day_lines(prometheus, policy)
    assert "DCGM series with a GPU_I_PROFILE that names no MIG profile, not counted: <<<NULL>>>" in caplog.text
    mig, mixed = lines["ns-mig"], lines["ns-mixed"]
    assert mig.gpu_hours == 0 and mig.by_model == {} and set(mig.by_resource) == {MIG3, MIG1}
    assert mig.by_resource[MIG3].hours == pytest.approx(48) and mig.by_resource[MIG3].cost == pytest.approx(48 * 1.2)
    assert mig.by_resource[MIG3].idle_hours == pytest.approx(24)  # one instance of two at 1 %: per instance
    assert mig.by_resource[MIG3].utilisation == pytest.approx((0.5 + 0.01) / 2)
    # The old exporter's GPU_UTIL of 0 for a MIG instance is not utilisation: the profiling metric is.
    assert mig.by_resource[MIG1].hours == pytest.approx(12) and mig.by_resource[MIG1].cost == pytest.approx(12 * 0.5)
    assert mig.by_resource[MIG1].idle_hours == 0 and mig.by_resource[MIG1].utilisation == pytest.approx(0.3)
    assert mixed.gpu_hours == pytest.approx(24) and mixed.by_model == {A100: (pytest.approx(24), pytest.approx(24 * 2.8))}
    assert mixed.by_resource[MIG3].hours == pytest.approx(24)
    assert mixed.cost == pytest.approx(24 * 2.8 + 24 * 1.2)  # the namespace's money: every resource
    whole = lines["ns-whole"]  # a newer exporter's whole GPUs; its 2g.20gb slice is governed nowhere: not counted
    assert set(whole.by_resource) == {GPU} and whole.observed_hours == pytest.approx(48)
    assert whole.gpu_hours == pytest.approx(48) and whole.cost == pytest.approx(48 * 4.0)


@pytest.mark.prometheus
def test_whole_gpu_figures_are_what_they_were(prometheus: PrometheusServer, policy: Policy) -> None:
    """Counting whole GPUs alone, as the bot did before it governed other resources, gives the same GPU
    figures (the MIG series, which a query by model alone used to count as GPUs, are left out either way)."""
    before, now = day_lines(prometheus, policy, (GPU,)), day_lines(prometheus, policy)
    assert set(now) - set(before) == {"ns-mig"}  # it holds slices only: nothing of it is a GPU
    for namespace, line in before.items():
        assert set(line.by_resource) <= {GPU}
        for field in ("gpu_hours", "by_model", "idle_hours", "idle_cost", "utilisation", "observed_hours"):
            assert getattr(now[namespace], field) == getattr(line, field), (namespace, field)
    assert now["ns-whole"] == before["ns-whole"]
    assert now["ns-mixed"].utilisation == pytest.approx(0.6)  # the A100 behind the older exporter


@pytest.mark.prometheus
def test_idle_nudges_are_about_whole_gpus(prometheus: PrometheusServer) -> None:
    """An idle GPU is not hidden by a busy MIG slice of the same namespace, and slices alone are no GPUs held."""
    source, at = metrics(prometheus), datetime(2026, 11, 2, 18, tzinfo=UTC)
    idle = source.idle_namespaces(at, window=timedelta(hours=6), threshold=0.05)
    assert idle == {"ns-parked": pytest.approx(0.02)}  # ns-mig's idle slice beside a busy one is not a GPU
    held = source.allocated_at(at)
    assert held["ns-parked"] == 1 and "ns-mig" not in held


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path}/bot.db" if request.param == "sqlite" else request.getfixturevalue("postgres_url")
    upgrade(url)
    return url


@pytest.mark.prometheus
def test_the_ledger_keeps_each_resource_and_the_digest_shows_them_beside_whole_gpus(
    prometheus: PrometheusServer, policy: Policy, database_url: str
) -> None:
    database = Database.from_url(database_url)
    try:
        ledger = Ledger(policy=policy, metrics=metrics(prometheus), database=database, clock=ManualClock(NOW))
        assert ledger.catch_up(DAYS[-1]).recorded == DAYS
        rows = export_rows(ledger, DAYS[0], currency="USD")
        assert {(r["namespace"], r["resource"], r["gpu_model"]) for r in rows if r["day"] == "2026-11-02"} == {
            ("ns-mig", MIG3, A100),
            ("ns-mig", MIG1, A100),
            ("ns-mixed", GPU, A100),
            ("ns-mixed", MIG3, A100),
            ("ns-whole", GPU, H100),
        }
        assert [r["price_per_gpu_hour"] for r in rows if r["resource"] == MIG3] == [
            pytest.approx(1.2)
        ] * 4  # a day keeps its price
        assert list(rows[0]) == list(EXPORT_FIELDS) and EXPORT_FIELDS[-4:] == ("resource", "cluster", "capacity_type", "pool")
        # Budgets: the team's spend is the money of every resource.
        costs = ledger.team_day_costs(DAYS[0], DAYS[-1])["research"]
        assert costs[DAYS[-1]] == pytest.approx(24 * 2.8 + 72 * 1.2 + 12 * 0.5)
        digest = build_digest(policy=policy, metrics=metrics(prometheus), database=database, clock=ManualClock(NOW)).build(
            DAYS[-1]
        )
        research = next(t for t in digest.teams if t.team.name == "research")
        sections = {s.heading: list(s.lines) for s in digest_report(research, with_chart=False).sections}
        assert sections["Per resource (month to date)"] == [
            "Whole GPUs: 48 GPU-hours, 134.40 USD",
            "MIG 1g.10gb: 12 slice-hours, 6.00 USD",
            "MIG 3g.40gb: 144 slice-hours, 172.80 USD (idle 48 slice-hours, 57.60 USD)",
        ]
        assert sections["Per GPU model (month to date)"] == [f"{A100}: 48.0 GPU-h · 134.40 USD"]
        assert research.spent == pytest.approx(134.40 + 6.00 + 172.80)
        serving = next(t for t in digest.teams if t.team.name == "serving")
        report = digest_report(serving, with_chart=False)
        assert "Per resource (month to date)" not in {s.heading for s in report.sections}
        assert report.summary == "Yesterday *48.0 GPU-h · 192.00 USD*. Month to date *96.0 GPU-h · 384.00 USD*."
    finally:
        database.dispose()


@pytest.mark.prometheus
def test_the_cost_command_shows_the_slices_beside_the_gpus(
    prometheus: PrometheusServer, policy: Policy, database_url: str
) -> None:
    from bot.sandbox.session import Sandbox

    box = Sandbox(policy=policy, clock=ManualClock(NOW), metrics=metrics(prometheus), seed=False, database_url=database_url)
    box.start()
    try:
        assert box.services.ledger is not None
        box.services.ledger.catch_up(DAYS[-1])
        box.send(box.side.slash_command(user_id="U0LEE", text="cost research 2026-11"))
        answer = [r.text for r in box.slack.records if r.kind == "response"][-1]
        assert (
            "*Research* · November 2026 (through Nov 2): 48.0 GPU-h, 12.0 slice-h MIG 1g.10gb, and 144.0 slice-h MIG 3g.40gb"
            in answer
        )
        assert "MIG 3g.40gb: 144 slice-hours, 172.80 USD (idle 48 slice-hours, 57.60 USD)" in answer
        assert f"{A100}: 48.0 GPU-h · 134.40 USD" in answer
    finally:
        box.stop()
